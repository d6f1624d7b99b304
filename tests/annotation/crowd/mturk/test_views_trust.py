"""Work from MTurk's frame counts only once MTurk says it exists (issue 8, part 1).

Every attack here starts from what a hostile worker controls: the page's URL (assignmentId,
workerId, hitId) and the form they post."""

import re
from datetime import timedelta

import pytest
from django.utils import timezone

from annotation.errors import ServiceError
from annotation.flows.bison.selectors import bison_stage_counts, bison_triples_with_votes
from annotation.flows.bison.services.triples import bison_triples_create
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import (
    Assignment,
    Batch,
    BatchStatus,
    Hit,
    HitStatus,
    PoolMembership,
    Review,
    Worker,
)
from annotation.selectors.counting import pool_bar_reason
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.confirm import assignment_confirm
from annotation.services.work.decisions import assignment_approve
from tests.annotation.drivers import SUBMIT_TO, MTurkDriver

pytestmark = pytest.mark.django_db


@pytest.fixture
def mt(client, settings):
    settings.CROWDVL_PUBLIC_URL = "https://crowd.example.org"
    driver = MTurkDriver(client)
    yield driver
    driver.done()


def stage2(mt, run, **options):
    return mt.publish(
        batch_create(run=run, stage=BisonStage.SELECTION, provider="mturk", **options)
    )


def stage3(mt, run, assignments_per_hit=2):
    batch = batch_create(
        run=run,
        stage=BisonStage.VERIFICATION,
        provider="mturk",
        items_per_hit=1000,
        assignments_per_hit=assignments_per_hit,
    )
    mt.expect_publish(batch, pools=False)
    return batch_publish(batch=batch)


def hit_votes(run, hit):
    """The counted votes of the triples in `hit` (stage-3 HITs are image-disjoint, so the
    toy run's triples fill more than one)."""
    shown = set(hit.questions.values_list("item_id", flat=True))
    return {t.votes for t in bison_triples_with_votes(run=run) if t.pk in shown}


def open_page(mt, hit, worker, assignment, hit_id=None):
    return mt.http.get(
        f"/mturk/hit/{hit.pk}/",
        {
            "assignmentId": assignment,
            "workerId": worker,
            "hitId": hit.provider_hit_id if hit_id is None else hit_id,
            "turkSubmitTo": SUBMIT_TO,
        },
    )


def rows():
    return Worker.objects.count(), Assignment.objects.count(), PoolMembership.objects.count()


def nones(hit):
    return {f"q{q.position}": "none" for q in hit.questions.all()}


def first_captions(hit):
    return {f"q{q.position}": "c0" for q in hit.questions.select_related("item__positive")}


def test_opening_the_page_writes_nothing_and_only_open_hits_of_this_installation_open(
    mt, paired_run
):
    batch = stage2(mt, paired_run, items_per_hit=2)
    hit = batch.hits.order_by("position").first()
    for n in range(200):
        assert open_page(mt, hit, f"MADEUP{n}", f"ASSIGN{n}").status_code == 200
    assert rows() == (0, 0, 0)
    # Another HIT's id, or none: this page is not that HIT.
    assert open_page(mt, hit, "W", "A1", hit_id="3" * 30).status_code == 403
    assert open_page(mt, hit, "W", "A1", hit_id="").status_code == 403
    # A full, an expired and a draft HIT open for nobody.
    Hit.objects.filter(pk=hit.pk).update(status=HitStatus.COMPLETE)
    assert open_page(mt, hit, "W", "A1").status_code == 403
    Hit.objects.filter(pk=hit.pk).update(status=HitStatus.OPEN)
    Batch.objects.filter(pk=batch.pk).update(
        published_at=timezone.now() - timedelta(seconds=batch.lifetime_seconds + 60)
    )
    response = open_page(mt, hit, "W", "A1")
    assert response.status_code == 403 and b"expired" in response.content
    Batch.objects.filter(pk=batch.pk).update(status=BatchStatus.DRAFT)
    assert open_page(mt, hit, "W", "A1").status_code == 403
    assert rows() == (0, 0, 0)


def test_forged_answers_are_stored_unconfirmed_and_never_count(mt, paired_run, admin_client):
    batch = stage2(mt, paired_run, items_per_hit=100)
    hit = batch.hits.get()
    forged = mt.take(batch, "FORGEDW")
    response = mt.post(forged, first_captions(hit))
    assert b"/mturk/externalSubmit" in response.content  # the worker's answers still go on
    stored = Assignment.objects.get()
    assert not stored.confirmed and stored.answers.count() == hit.questions.count()
    # Nothing counts: agreement, triples, pools, reviews, HIT and batch completion.
    counts = bison_stage_counts(run=paired_run)
    assert counts["stage2"]["pairs_judged"] == 0 and counts["stage2"]["workers"] == 0
    assert bison_triples_create(run=paired_run).created == 0
    hit.refresh_from_db()
    batch.refresh_from_db()
    assert hit.status == HitStatus.OPEN and batch.status == BatchStatus.PUBLISHED
    assert not PoolMembership.objects.exists() and not Review.objects.exists()
    with pytest.raises(ServiceError, match="not confirmed"):
        assignment_approve(assignment=stored)
    # MTurk has never heard of it: synchronisation leaves it unconfirmed, shown to staff.
    mt.sync_hit(hit)
    stored.refresh_from_db()
    assert not stored.confirmed
    page = admin_client.get("/").content.decode()
    assert "Unconfirmed" in page and "<td>1</td>" in page


def test_a_worker_id_edited_in_the_form_or_url_after_opening_is_ignored(mt, paired_run):
    batch = stage2(mt, paired_run, items_per_hit=100)
    hit = batch.hits.get()
    real = mt.take(batch, "REALW")
    response = mt.http.post(
        f"/mturk/hit/{hit.pk}/",
        {
            **nones(hit),
            "assignmentId": real.provider_assignment_id,
            "turkSubmitTo": SUBMIT_TO,
            "workerId": "VICTIM",
            "token": mt.open[real.provider_assignment_id][2],
        },
    )
    assert response.status_code == 200
    assert Assignment.objects.get().worker.external_id == "REALW"
    # The token is bound to its assignment: another assignmentId is refused.
    response = mt.http.post(
        f"/mturk/hit/{hit.pk}/",
        {
            **nones(hit),
            "assignmentId": "OTHERASSIGNMENT",
            "turkSubmitTo": SUBMIT_TO,
            "token": mt.open[real.provider_assignment_id][2],
        },
    )
    assert response.status_code == 400 and Assignment.objects.count() == 1


def test_confirmation_needs_the_same_hit_and_worker_at_mturk(mt, paired_run):
    batch = stage2(mt, paired_run, items_per_hit=100)
    hit = batch.hits.get()
    forged = mt.take(batch, "VICTIM")  # the attacker types the victim's id into the URL
    mt.post(forged, nones(hit))
    # At MTurk, that assignment id belongs to the attacker: the forged row never counts, and
    # MTurk's own record of the attacker's work is what is brought in.
    mt.remote[hit.pk] = {forged.provider_assignment_id: ("ATTACKER", nones(hit))}
    mt.sync_hit(hit, grant="ATTACKER")
    victim_row = Assignment.objects.get(worker__external_id="VICTIM")
    attacker_row = Assignment.objects.get(worker__external_id="ATTACKER")
    assert not victim_row.confirmed and attacker_row.confirmed
    assert not PoolMembership.objects.filter(worker__external_id="VICTIM").exists()


def test_a_hit_never_counts_more_than_its_capacity(mt, paired_run):
    batch = stage2(mt, paired_run, items_per_hit=100)  # one assignment per HIT
    hit = batch.hits.get()
    a = mt.take(batch, "W1")
    mt.post(a, nones(hit))
    b_page = open_page(mt, hit, "W2", "ASSIGNW2".ljust(30, "X"))
    assert b_page.status_code == 200  # W2 may post: W1's work is not confirmed yet
    b = Assignment(hit=hit, provider_assignment_id="ASSIGNW2".ljust(30, "X"))
    token = re.search(rb'name="token" value="([^"]+)"', b_page.content).group(1).decode()
    mt.open[b.provider_assignment_id] = (hit.pk, "W2", token)
    mt.post(b, nones(hit))
    rows_ = list(Assignment.objects.order_by("pk"))
    assignment_confirm(assignment=rows_[0], source="test")
    with pytest.raises(ServiceError, match="already holds 1 counted"):
        assignment_confirm(assignment=rows_[1], source="test")
    assert hit.assignments.filter(confirmed=True).count() == 1
    hit.refresh_from_db()
    assert hit.status == HitStatus.COMPLETE


def test_anonymous_posts_are_throttled_per_address_but_pages_are_not(
    mt, paired_run, settings, one_rate_window
):
    settings.CROWDVL_RATE_LIMITS = {"mturk-post": 3}
    batch = stage2(mt, paired_run, items_per_hit=2, assignments_per_hit=9)
    hit = batch.hits.order_by("position").first()
    taken = [mt.take(batch, f"SPAM{n}") for n in range(5)]
    for n in range(50):
        assert open_page(mt, hit, f"READER{n}", f"R{n}").status_code == 200
    answers = nones(hit)
    for assignment in taken:
        response = mt.post(assignment, answers)
        # Over the limit nothing is stored, but the worker still reaches MTurk's submit form.
        assert response.status_code == 200 and b"/mturk/externalSubmit" in response.content
    assert Assignment.objects.count() == 3
    # Another address is not affected.
    extra = mt.take(batch, "OTHERADDRESS")
    response = mt.http.post(
        f"/mturk/hit/{hit.pk}/",
        {
            **answers,
            "assignmentId": extra.provider_assignment_id,
            "turkSubmitTo": SUBMIT_TO,
            "token": mt.open[extra.provider_assignment_id][2],
        },
        REMOTE_ADDR="10.0.0.2",
    )
    assert response.status_code == 200 and Assignment.objects.count() == 4


def test_unconfirmed_submissions_per_hit_are_capped(mt, paired_run):
    batch = stage2(mt, paired_run, items_per_hit=2)  # capacity 1: at most 2 waiting
    hit = batch.hits.order_by("position").first()
    for n in range(4):
        page = open_page(mt, hit, f"FLOOD{n}", f"FLOODASSIGN{n}")
        token = re.search(rb'name="token" value="([^"]+)"', page.content).group(1).decode()
        response = mt.http.post(
            f"/mturk/hit/{hit.pk}/",
            {
                **nones(hit),
                "assignmentId": f"FLOODASSIGN{n}",
                "turkSubmitTo": SUBMIT_TO,
                "token": token,
            },
            REMOTE_ADDR=f"10.0.1.{n}",
        )
        assert response.status_code == 200 and b"/mturk/externalSubmit" in response.content
    assert hit.assignments.filter(confirmed=False).count() == 2


def test_forged_stage3_work_never_bars_the_real_worker_from_stage2(mt, paired_run):
    selection = stage2(mt, paired_run, items_per_hit=1000)
    s_hit = selection.hits.get()
    mt.submit(mt.take(selection, "SELECTOR"), first_captions(s_hit))
    verification = stage3(mt, paired_run)
    v_hit = verification.hits.order_by("position").first()  # the one a worker takes first
    # The attacker posts stage-3 answers under the id of a real worker.
    forged = mt.take(verification, "REALW")
    mt.post(forged, {f"q{q.position}": "left" for q in v_hit.questions.all()})
    real = Worker.objects.get(external_id="REALW")
    assert pool_bar_reason(run=paired_run, worker=real, stage=BisonStage.SELECTION) is None
    assert not PoolMembership.objects.filter(worker=real).exists()


def test_an_unconfirmed_stage2_post_bars_no_one_from_stage3_until_confirmed(mt, paired_run):
    """Issue 25, decided again: a stage-2 post MTurk has not confirmed is a browser's word
    under a typed id. It must not lock the id's owner out of stage 3; once MTurk confirms the
    stage-2 work, its worker is barred and their stage-3 work stops counting."""
    selection = stage2(mt, paired_run, items_per_hit=1000, assignments_per_hit=3)
    s_hit = selection.hits.get()
    mt.submit(mt.take(selection, "SELECTOR"), first_captions(s_hit))
    forged = mt.take(selection, "VICTIM")  # an attacker opens the HIT under VICTIM's id
    assert mt.post(forged, nones(s_hit)).status_code == 200  # stored, unconfirmed
    verification = stage3(mt, paired_run)
    v_hit = verification.hits.order_by("position").first()  # the one a worker takes first
    victim = Worker.objects.get(external_id="VICTIM")
    assert not PoolMembership.objects.filter(worker=victim).exists()
    assert pool_bar_reason(run=paired_run, worker=victim, stage=BisonStage.VERIFICATION) is None
    # The real VICTIM takes stage 3: the page opens, the work is stored and counts.
    real = mt.take(verification, "VICTIM")
    positive = {f"q{q.position}": ("right" if q.swapped else "left") for q in v_hit.questions.all()}
    mt.submit(real, positive)
    assert real.confirmed and not real.excluded
    assert hit_votes(paired_run, v_hit) == {1}
    # MTurk then lists the stage-2 assignment: VICTIM did do both stages. Confirmed now, it
    # bars them from stage 3 and their stage-3 work no longer counts.
    mt.remote.setdefault(s_hit.pk, {})[forged.provider_assignment_id] = ("VICTIM", nones(s_hit))
    mt.sync_hit(s_hit, grant="VICTIM")
    assert Assignment.objects.get(hit=s_hit, worker=victim).confirmed
    real.refresh_from_db()
    assert real.excluded
    assert hit_votes(paired_run, v_hit) == {0}
    response = open_page(mt, v_hit, "VICTIM", "VICTIMAGAIN".ljust(30, "X"))
    assert response.status_code == 403 and b"different people" in response.content


def test_stage3_answers_are_excluded_once_the_worker_is_confirmed_in_stage2(mt, paired_run):
    selection = stage2(mt, paired_run, items_per_hit=1000, assignments_per_hit=2)
    s_hit = selection.hits.get()
    mt.submit(mt.take(selection, "SELECTOR"), first_captions(s_hit))
    verification = stage3(mt, paired_run)
    v_hit = verification.hits.order_by("position").first()  # the one a worker takes first
    questions = list(v_hit.questions.all())
    positive = {f"q{q.position}": ("right" if q.swapped else "left") for q in questions}
    sneaky = mt.take(verification, "SNEAKY")
    mt.submit(sneaky, positive)
    assert hit_votes(paired_run, v_hit) == {1}
    # MTurk then reports stage-2 work SNEAKY did before the pools were granted.
    mt.remote.setdefault(s_hit.pk, {})["SNEAKYSELECTION".ljust(30, "X")] = (
        "SNEAKY",
        nones(s_hit),
    )
    mt.sync_hit(s_hit, grant="SNEAKY")
    sneaky_v = Assignment.objects.get(hit=v_hit, worker__external_id="SNEAKY")
    sneaky_s = Assignment.objects.get(hit=s_hit, worker__external_id="SNEAKY")
    assert sneaky_s.confirmed and not sneaky_s.excluded
    assert sneaky_v.confirmed and sneaky_v.excluded
    assert hit_votes(paired_run, v_hit) == {0}  # the stage-3 answers no longer count
    assert PoolMembership.objects.get(worker=sneaky_s.worker).stage == BisonStage.SELECTION
    v_hit.refresh_from_db()
    assert v_hit.status == HitStatus.OPEN  # its slot is free for a verifier who counts


def test_refused_posts_write_no_worker_row(mt, paired_run):
    """Issue 25: a refused post (invalid answers, a full or expired HIT) leaves no Worker row
    behind, however many forged worker ids it names; an accepted post still makes its worker."""
    batch = stage2(mt, paired_run, items_per_hit=2)  # capacity 1: at most 2 waiting
    hit = batch.hits.order_by("position").first()

    def opened(n):
        page = open_page(mt, hit, f"FORGED{n}", f"FORGEDASSIGN{n}")
        return re.search(rb'name="token" value="([^"]+)"', page.content).group(1).decode()

    def post(n, answers, token=None):
        return mt.http.post(
            f"/mturk/hit/{hit.pk}/",
            {
                **answers,
                "assignmentId": f"FORGEDASSIGN{n}",
                "turkSubmitTo": SUBMIT_TO,
                "token": token or opened(n),
            },
            REMOTE_ADDR=f"10.0.2.{n}",
        )

    for n in range(5):  # invalid answers
        assert post(n, {}).status_code == 400
    assert rows() == (0, 0, 0)
    for n in (10, 11):  # accepted: each makes its worker
        assert post(n, nones(hit)).status_code == 200
    assert rows() == (2, 2, 0)
    for n in range(20, 25):  # the HIT holds as many unconfirmed submissions as it takes
        response = post(n, nones(hit))
        assert response.status_code == 200 and b"/mturk/externalSubmit" in response.content
    assert rows() == (2, 2, 0)
    tokens = {n: opened(n) for n in range(30, 35)}
    Batch.objects.filter(pk=batch.pk).update(
        published_at=timezone.now() - timedelta(seconds=batch.lifetime_seconds + 60)
    )
    for n, token in tokens.items():  # expired after the page was opened
        assert post(n, nones(hit), token).status_code == 400
    assert rows() == (2, 2, 0)


def test_frame_images_are_the_assignments_own_and_end_with_its_answers(mt, paired_run):
    """Issue 25: MTurk's frame gets image URLs keyed by the HIT and MTurk's assignment id
    (nothing is stored here before the answers), so two workers' URLs differ and a page's
    images stop loading once its answers arrived."""
    batch = stage2(mt, paired_run, items_per_hit=2, assignments_per_hit=2)
    hit = batch.hits.order_by("position").first()
    taken = mt.take(batch, "W1")
    page = open_page(mt, hit, "W1", taken.provider_assignment_id).content.decode()
    other = open_page(mt, hit, "W2", "OTHER".ljust(30, "X")).content.decode()
    urls = re.findall(r'<img src="(/img/[^"]+)"', page)
    assert len(urls) == 4 and not set(urls) & set(re.findall(r'<img src="(/img/[^"]+)"', other))
    assert {mt.http.get(url).status_code for url in urls} == {200}
    assert mt.post(taken, first_captions(hit)).status_code == 200  # stored, unconfirmed
    assert {mt.http.get(url).status_code for url in urls} == {404}
    assert mt.http.get(re.findall(r'<img src="(/img/[^"]+)"', other)[0]).status_code == 200
