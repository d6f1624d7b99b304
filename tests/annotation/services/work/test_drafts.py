"""A worker's answers in progress kept on the server (issue 46: `services/work/drafts.py`, the
draft endpoints of every provider's task page, `pages/work/drafts.py`): saved only by the
holder of the open assignment, for its own questions and within bounds; restored on the page;
never counted, never exported; gone with the submit."""

import json
import re
from datetime import timedelta
from pathlib import Path

import pytest
from django.contrib.sessions.models import Session
from django.test import Client
from django.utils import timezone

from annotation.errors import NotAssignmentHolder, ServiceError, TooLate
from annotation.flows.bison.vocabulary import BisonStage
from annotation.flows.quality.services.export import EXPERT_FILE, quality_export_start
from annotation.flows.quality.vocabulary import QualityStage
from annotation.models import (
    Answer,
    Assignment,
    AssignmentDraft,
    AssignmentState,
    Export,
    HitStatus,
    JobState,
)
from annotation.selectors.counting import counted
from annotation.services.runs.batches import batch_create, batch_pause, batch_publish
from annotation.services.work.claim import assignment_claim_next
from annotation.services.work.drafts import draft_save
from annotation.services.work.submit import assignment_submit
from annotation.services.work.worker_identity import worker_get_or_create
from tests.annotation.crowd.panel.player import PanelDriver
from tests.annotation.flows.quality.test_quality_flow import quality_run  # noqa: F401
from tests.factories import join

pytestmark = pytest.mark.django_db
DRAFT = re.compile(r'<script id="task-draft" type="application/json">(.*?)</script>', re.S)


def local_batch(run, **options):
    options.setdefault("items_per_hit", 3)
    return batch_publish(
        batch=batch_create(run=run, stage=BisonStage.SELECTION, provider="local", **options)
    )


def claim(client, batch) -> str:
    response = client.get(f"/work/{batch.pk}/next/")
    assert response.status_code == 302, response.content
    return response["Location"]


def post_draft(client, url: str, answers, **extra):
    return client.post(
        f"{url}draft/", json.dumps({"answers": answers}), content_type="application/json", **extra
    )


def restored(page) -> dict | None:
    """The answers a task page restores (None: it restores none)."""
    found = DRAFT.search(page.content.decode())
    return None if found is None else json.loads(found.group(1))["answers"]


def test_a_draft_is_saved_replaced_and_restored_then_gone_with_the_submit(client, paired_run):
    batch = local_batch(paired_run)
    join(client, paired_run, "alice")
    url = claim(client, batch)
    page = client.get(url)
    assert 'data-draft="draft/"' in page.content.decode() and restored(page) is None
    saved = post_draft(client, url, {"q0": ["none"], "started_at": ["1767225600000"]})
    assert saved.status_code == 200 and saved.json()["saved"] > 0
    assert post_draft(client, url, {"q0": ["none"], "q1": "none"}).status_code == 200
    page = client.get(url)
    assert restored(page) == {"q0": ["none"], "q1": ["none"]}
    # Another device: the same worker signs in again by their link (a new session).
    other = Client()
    join(other, paired_run, "alice")
    assert restored(other.get(url)) == {"q0": ["none"], "q1": ["none"]}
    sent = client.post(url, {"q0": "none", "q1": "none", "q2": "none"})
    assert sent.status_code == 302
    assert not AssignmentDraft.objects.exists()
    assert Answer.objects.count() == 3
    assert post_draft(client, url, {"q0": ["none"]}).status_code == 409  # submitted: not kept
    assert not AssignmentDraft.objects.exists()


def test_only_the_holder_saves_a_draft(client, paired_run):
    batch = local_batch(paired_run)
    alice = join(client, paired_run, "alice")
    url = claim(client, batch)
    mallory = Client()
    join(mallory, paired_run, "mallory")
    assert post_draft(mallory, url, {"q0": ["none"]}).status_code == 404
    nobody = post_draft(Client(), url, {"q0": ["none"]})
    assert nobody.status_code == 403 and nobody.json()["error"] == "your session ended"
    assert client.get(f"{url}draft/").status_code == 405  # only posted
    assignment = Assignment.objects.get(worker=alice)
    other = worker_get_or_create(provider="local", external_id="mallory")
    with pytest.raises(NotAssignmentHolder):
        draft_save(assignment_id=assignment.pk, worker_id=other.pk, answers={"q0": ["none"]})
    assert not AssignmentDraft.objects.exists()


@pytest.mark.parametrize(
    "answers",
    [
        {"q3": ["none"]},  # the HIT has q0..q2
        {"q0_comment": ["free text"]},
        {"csrfmiddlewaretoken": ["x"]},
        {"q0": ["c" * 65]},
        {"q0": ["none"] * 17},
        {"q0": [1]},
        {"q0": {"a": "b"}},
        ["q0", "none"],
        None,
    ],
)
def test_foreign_names_and_oversized_values_are_refused(client, paired_run, answers):
    batch = local_batch(paired_run)
    join(client, paired_run, "alice")
    url = claim(client, batch)
    response = post_draft(client, url, answers)
    assert response.status_code == 400, response.content
    assert not AssignmentDraft.objects.exists()


def test_a_body_too_large_or_not_json_is_refused(client, paired_run):
    batch = local_batch(paired_run)
    join(client, paired_run, "alice")
    url = claim(client, batch)
    big = post_draft(client, url, {"q0": ["none"], "pad": ["x" * 40_000]})
    assert big.status_code == 413
    junk = client.post(f"{url}draft/", "q0=none", content_type="application/json")
    assert junk.status_code == 400
    many = {f"q{n}": ["none"] for n in range(3)} | {f"q0_x{n}": ["a"] for n in range(20)}
    assert post_draft(client, url, many).status_code == 400
    assert not AssignmentDraft.objects.exists()


def test_drafts_are_rate_limited_per_worker(client, paired_run, settings, one_rate_window):
    settings.CROWDVL_RATE_LIMITS = {"draft-save": 2}
    batch = local_batch(paired_run)
    join(client, paired_run, "alice")
    url = claim(client, batch)
    assert [post_draft(client, url, {"q0": ["none"]}).status_code for _ in range(3)] == [
        200,
        200,
        429,
    ]
    # Another worker has their own allowance.
    bob = Client()
    join(bob, paired_run, "bob")
    assert post_draft(bob, claim(bob, batch), {"q0": ["none"]}).status_code == 200


def test_a_closed_or_late_assignment_keeps_no_draft(paired_run):
    batch = local_batch(paired_run, limit=6)
    worker = worker_get_or_create(provider="local", external_id="w")
    assignment = assignment_claim_next(batch=batch, worker=worker)
    Assignment.objects.filter(pk=assignment.pk).update(state=AssignmentState.ABANDONED)
    with pytest.raises(ServiceError, match="submitted or closed"):
        draft_save(assignment_id=assignment.pk, worker_id=worker.pk, answers={"q0": ["none"]})
    other = worker_get_or_create(provider="local", external_id="v")
    late = assignment_claim_next(batch=batch, worker=other)
    past = timezone.now() + timedelta(seconds=batch.assignment_duration_seconds + 1)
    with pytest.raises(TooLate):
        draft_save(assignment_id=late.pk, worker_id=other.pk, answers={"q0": ["none"]}, now=past)
    assert not AssignmentDraft.objects.exists()


def test_a_paused_batch_keeps_the_open_task_and_its_draft(client, paired_run):
    batch = local_batch(paired_run)
    alice = join(client, paired_run, "alice")
    url = claim(client, batch)
    batch_pause(batch=batch)
    assert post_draft(client, url, {"q0": ["none"], "q1": ["none"]}).status_code == 200
    # Back by the link on another device: the paused batch is not offered, the task is.
    other = Client()
    join(other, paired_run, "alice")
    invitation = alice.invitations.get()
    home = other.get(f"/join/{invitation.token}/").content.decode()
    assert f'href="{url}"' in home and 'id="no-batches"' not in home
    assert restored(other.get(url)) == {"q0": ["none"], "q1": ["none"]}
    assert other.post(url, {"q0": "none", "q1": "none", "q2": "none"}).status_code == 302
    assert Assignment.objects.get(worker=alice).state == AssignmentState.SUBMITTED
    assert not AssignmentDraft.objects.exists()


def test_an_ended_session_keeps_the_draft_and_the_answers_come_back(client, paired_run):
    batch = local_batch(paired_run)
    alice = join(client, paired_run, "alice")
    url = claim(client, batch)
    answers = {"q0": "none", "q1": "none", "q2": "none"}
    # The page saves after each change: the last one before Submit is on the server.
    assert post_draft(client, url, {k: [v] for k, v in answers.items()}).status_code == 200
    Session.objects.all().delete()  # the session expires: the browser's cookie names nothing
    refused = client.post(url, answers)
    assert refused.status_code == 404
    assert "Open the invitation link" in refused.content.decode()
    assert not Answer.objects.exists()
    assert post_draft(client, url, {"q0": ["none"]}).status_code == 403  # not overwritten
    # Signing in again by the link: the task is offered and the answers come back.
    invitation = alice.invitations.get()
    home = client.get(f"/join/{invitation.token}/").content.decode()
    assert f'href="{url}"' in home
    assert restored(client.get(url)) == {k: [v] for k, v in answers.items()}
    assert client.post(url, answers).status_code == 302
    done = Assignment.objects.filter(counted(), worker=alice)
    assert done.count() == 1 and Answer.objects.filter(assignment__in=done).count() == 3
    assert not AssignmentDraft.objects.exists()


def test_a_draft_never_counts(paired_run):
    batch = local_batch(paired_run, limit=3, assignments_per_hit=1)
    worker = worker_get_or_create(provider="local", external_id="w")
    assignment = assignment_claim_next(batch=batch, worker=worker)
    every = {f"q{q.position}": ["none"] for q in assignment.hit.questions.all()}
    draft_save(assignment_id=assignment.pk, worker_id=worker.pk, answers=every)
    assert not Answer.objects.exists()
    assert not Assignment.objects.filter(counted()).exists()
    assignment.hit.refresh_from_db()
    assert assignment.hit.status == HitStatus.OPEN
    assignment_submit(
        assignment_id=assignment.pk,
        worker=worker,
        answers={k: v[0] for k, v in every.items()},
    )
    assignment.hit.refresh_from_db()
    assert assignment.hit.status == HitStatus.COMPLETE
    assert Answer.objects.count() == len(every)  # once, from the submit
    assert not AssignmentDraft.objects.exists()


def test_a_draft_is_not_in_the_export(quality_run, run_on_commit):  # noqa: F811
    batch = batch_publish(
        batch=batch_create(
            run=quality_run, stage=QualityStage.RATING, provider="local", items_per_hit=2
        )
    )
    done, drafted = (
        worker_get_or_create(provider="local", external_id=name) for name in ("done", "drafted")
    )
    first = assignment_claim_next(batch=batch, worker=done)
    answers = {f"q{q.position}": "4" for q in first.hit.questions.all()}
    assignment_submit(assignment_id=first.pk, worker=done, answers=answers)
    second = assignment_claim_next(batch=batch, worker=drafted)
    draft_save(
        assignment_id=second.pk,
        worker_id=drafted.pk,
        answers={f"q{q.position}": ["1"] for q in second.hit.questions.all()},
    )
    job = run_on_commit(quality_export_start, run=quality_run)
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED, job.error
    folder = Path(Export.objects.get(pk=job.result["export"]).path)
    expert = json.loads((folder / EXPERT_FILE).read_text())
    ratings = [j["rating"] for entry in expert.values() for j in entry["human_judgement"]]
    assert len(ratings) == len(answers) and set(ratings) == {4}


@pytest.mark.parametrize("provider", ["panel", "prolific"])
def test_a_panel_or_prolific_participants_draft_is_saved_and_restored(
    client, paired_run, pro, provider
):
    batch = batch_create(
        run=paired_run, stage=BisonStage.SELECTION, provider=provider, items_per_hit=2, limit=2
    )
    if provider == "panel":
        assignment = PanelDriver(client).take(batch_publish(batch=batch), "PX7Q2")
        browser, url = client, f"/panel/task/{assignment.pk}/"
    else:
        assignment = pro.take(pro.publish(batch), "ann")
        browser = pro.browsers[pro.pid("ann")]
        url = f"/prolific/assignment/{assignment.pk}/"
    assert 'data-draft="draft/"' in browser.get(url).content.decode()
    assert post_draft(browser, url, {"q0": ["none"]}).status_code == 200
    assert restored(browser.get(url)) == {"q0": ["none"]}
    assert post_draft(browser, url, {"q9": ["none"]}).status_code == 400
    assert post_draft(Client(), url, {"q1": ["none"]}).status_code == 403
    assert AssignmentDraft.objects.get().answers == {"q0": ["none"]}
    ended = Client().get(url)
    assert ended.status_code == 404 and "Your session has ended" in ended.content.decode()


def test_every_task_types_form_fields_are_ones_a_draft_keeps():
    """The page's script saves the form's values whatever the task type: each template's
    field names (with the question's key, q0) are names a draft keeps."""
    from annotation.services.work.drafts import QUESTION_FIELD, STARTED_AT

    root = Path(__file__).resolve().parents[4]
    templates = [
        *root.glob("annotation/flows/*/templates/annotation/task_*.html"),
        *root.glob("annotation/flows/*/templates/annotation/*_scale.html"),
        root / "frontend/templates/annotation/task_base.html",
    ]
    names = set()
    for template in templates:
        for name in re.findall(r'name="([^"]+)"', template.read_text()):
            names.add(name.replace("{{ q.key }}", "q0"))
    names -= {"{{ name }}"}  # a provider's hidden fields (MTurk's), never saved
    assert {"q0", "q0_reason", "q0_error", STARTED_AT} <= names
    for name in names:
        assert name == STARTED_AT or QUESTION_FIELD.fullmatch(name), name
    assert len(templates) >= 9
