"""Issue 25's low findings: before accepting or consenting a visitor sees the instructions and
one fixed example, the same on every page, never a real item."""

import re

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


# Before accepting (MTurk's preview) or consenting (panel, Prolific) a visitor sees the
# instructions and one fixed example, the same on all three pages, never a real item.


def _example(body: str) -> str:

    found = re.search(r'<section id="example">.*?</section>', body, re.S)
    assert found, "no example section"
    return found.group(0)


def _real_items(run, pages: list[str]) -> tuple[set[str], set[str]]:
    """Every caption text of the run's dataset, and every image address the real task pages
    (after accepting) show."""
    import html

    from annotation.models import Caption

    texts = set(Caption.objects.filter(image__dataset=run.dataset).values_list("text", flat=True))
    texts |= {html.escape(t) for t in texts}
    images = {src for page in pages for src in re.findall(r'<img[^>]*src="([^"]+)"', page)}
    assert images, "the real task pages show images"
    return texts, images


def _leaks(body: str, texts: set[str], images: set[str]) -> list[str]:
    marks = ["/img/", "/staff/images/", "COCO_val2014_", 'class="question"', "data-total"]
    return [t for t in texts | images | set(marks) if t in body]


def test_previews_and_visitor_pages_show_a_fixed_example_and_no_real_item(
    client, dataset, run_on_commit, settings
):
    from annotation.flows.bison.vocabulary import BisonStage
    from annotation.services.runs.batches import batch_create, batch_publish
    from tests.annotation.crowd.prolific.player import ProlificDriver
    from tests.annotation.drivers import MTurkDriver
    from tests.factories import paired_run_factory

    settings.CROWDVL_PUBLIC_URL = "https://crowd.example.org"

    def stage2(provider):  # a run of its own each: one stage-2 batch takes a run's pairs
        run = paired_run_factory(dataset, run_on_commit=run_on_commit)
        return batch_create(run=run, stage=BisonStage.SELECTION, provider=provider, items_per_hit=3)

    # MTurk: the anonymous preview, with MTurk's preview id and with none.
    mt = MTurkDriver(Client())
    mturk = mt.publish(stage2("mturk"))
    hit = mturk.hits.order_by("position").first()
    previews = [
        client.get(f"/mturk/hit/{hit.pk}/", query).content.decode()
        for query in (
            {"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE", "hitId": hit.provider_hit_id},
            {},
        )
    ]
    taken = mt.take(mturk, "WORKER1")  # accepted: the HIT's real questions
    real_pages = [
        client.get(
            f"/mturk/hit/{hit.pk}/",
            {
                "assignmentId": taken.provider_assignment_id,
                "hitId": hit.provider_hit_id,
                "workerId": "WORKER1",
                "turkSubmitTo": "https://workersandbox.mturk.com",
            },
        ).content.decode()
    ]
    mt.submit(taken, {f"q{q.position}": "none" for q in hit.questions.all()})
    taken.refresh_from_db()
    assert taken.confirmed and taken.answers.count() == hit.questions.count()
    mt.done()

    # The panel: the study link, then the page before consent.
    panel = batch_publish(batch=stage2("panel"))
    visitor = Client()
    visitor.get(f"/panel/{panel.pk}/", {"participantId": "P1"})
    previews.append(visitor.get(f"/panel/{panel.pk}/").content.decode())
    from annotation.selectors.work.invitations import run_consent

    version = run_consent(panel.run)["version"]
    assert visitor.post(f"/panel/{panel.pk}/", {"version": version}).status_code == 302
    task = visitor.get(f"/panel/{panel.pk}/next/")["Location"]
    real_pages.append(visitor.get(task).content.decode())
    assert real_pages[-1].count('class="question"') == 3

    # Prolific: the study link's page before consent.
    pro = ProlificDriver(Client())
    prolific = pro.publish(stage2("prolific"))
    previews.append(pro.arrive(prolific, "PARTICIPANT1").content.decode())
    pro.done()

    texts, images = _real_items(mturk.run, real_pages)
    assert any(t in real_pages[0] for t in texts)  # the real page does show captions
    for body in previews:
        assert 'id="instructions"' in body
        assert _leaks(body, texts, images) == []
    assert len({_example(body) for body in previews}) == 1  # one shared example
