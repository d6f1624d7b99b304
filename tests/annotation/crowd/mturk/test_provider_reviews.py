"""Reviews before MTurk pays on its own, and work re-offered when a HIT cannot grow (issue 9,
items 7 and 13). Every MTurk call is checked by botocore's Stubber against MTurk's model."""

from datetime import timedelta
from decimal import Decimal

import pytest
from botocore.stub import ANY
from django.utils import timezone

from annotation.crowd.mturk import client as mturk
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import (
    Assignment,
    AssignmentState,
    Event,
    Hit,
    HitStatus,
    Review,
    ReviewStatus,
)
from annotation.selectors.counting import counted
from annotation.services.runs.batches import batch_create, batch_expire, batch_publish
from annotation.services.work.claim import assignment_claim_next
from annotation.services.work.decisions import assignment_reject
from annotation.services.work.reoffer import hits_reoffer
from annotation.services.work.reviews import review_decide
from annotation.services.work.submit import assignment_submit
from annotation.services.work.worker_identity import worker_get_or_create
from pipeline.errors import InputError
from tests.annotation.api.test_schema import check, schema  # noqa: F401
from tests.annotation.drivers import MTurkDriver, fake_id

pytestmark = pytest.mark.django_db


@pytest.fixture
def mt(client, settings):
    settings.CROWDVL_PUBLIC_URL = "https://crowd.example.org"
    driver = MTurkDriver(client)
    yield driver
    driver.done()


def published(mt, run, **options):
    batch = batch_create(
        run=run,
        stage=BisonStage.SELECTION,
        provider="mturk",
        items_per_hit=2,
        reward="0.50",
        **options,
    )
    return mt.publish(batch)


def worked(mt, batch, name):
    assignment = mt.take(batch, name)
    mt.submit(assignment, {f"q{q.position}": "none" for q in assignment.hit.questions.all()})
    return assignment


def held(assignment):
    return Review.objects.create(assignment=assignment, reasons=[{"position": 0}])


def cannot_grow(mt):
    mt.stubber.add_client_error(
        "create_additional_assignments_for_hit",
        service_error_code="RequestError",
        service_message="The maximum number of assignments cannot be increased",
        modeled_fields={"Message": "cannot increase", "TurkErrorCode": mturk.CANNOT_GROW},
    )


def test_the_deadline_is_stored_and_the_queue_sorts_and_warns(mt, paired_run, admin_client):
    batch = published(mt, paired_run)
    late = worked(mt, batch, "W1")
    soon = worked(mt, batch, "W2")
    now = timezone.now().replace(microsecond=0)
    mt.deadlines[late.provider_assignment_id] = now + timedelta(days=3)
    mt.deadlines[soon.provider_assignment_id] = now + timedelta(hours=2)
    for assignment in (late, soon):
        mt.sync_hit(assignment.hit)
    late.refresh_from_db()
    soon.refresh_from_db()
    assert late.auto_approve_at == now + timedelta(days=3)
    assert soon.auto_approve_at == now + timedelta(hours=2)
    first, second = held(late), held(soon)
    page = admin_client.get("/review/").content.decode()
    assert page.index(f"#{second.pk}<") < page.index(f"#{first.pk}<")  # nearest deadline first
    assert 'id="deadline-warning"' in page and "within 24 hours" in page
    detail = admin_client.get(f"/review/{second.pk}/").content.decode()
    assert "pays this work on its own at" in detail


def test_mturk_auto_approval_closes_the_review_and_excludes_by_default(mt, paired_run):
    batch = published(mt, paired_run)
    a = worked(mt, batch, "W1")
    review = held(a)
    mt.status[a.provider_assignment_id] = "Approved"  # MTurk's deadline passed first
    mt.sync_hit(a.hit)
    review.refresh_from_db()
    a.refresh_from_db()
    assert review.status == ReviewStatus.AUTO_APPROVED
    assert a.state == AssignmentState.APPROVED and a.excluded
    assert not Assignment.objects.filter(counted(), pk=a.pk).exists()
    assert Event.objects.filter(action="review.auto_approved", data__policy="exclude").exists()
    # Deciding it still works, without any MTurk call (it is paid): approving counts it.
    review_decide(review=review, approve=True)
    a.refresh_from_db()
    review.refresh_from_db()
    assert review.status == ReviewStatus.APPROVED and not a.excluded


def test_the_count_policy_keeps_auto_approved_answers(mt, paired_run):
    batch = published(mt, paired_run, options={"auto_approved_reviews": "count"})
    a = worked(mt, batch, "W1")
    review = held(a)
    mt.status[a.provider_assignment_id] = "Approved"
    mt.sync_hit(a.hit)
    a.refresh_from_db()
    review.refresh_from_db()
    assert review.status == ReviewStatus.AUTO_APPROVED and not a.excluded


def test_rejecting_work_mturk_already_paid_never_fails(mt, paired_run):
    batch = published(mt, paired_run)
    a = worked(mt, batch, "W1")
    review = held(a)
    # Not synchronised yet: the reviewer rejects, MTurk says it approved it already.
    mt.expect_error(
        "RejectAssignment",
        "RequestError",
        "This operation can be called with a status of: Submitted",
    )
    mt.expect(
        "GetAssignment",
        {"Assignment": {"AssignmentId": a.provider_assignment_id, "AssignmentStatus": "Approved"}},
    )
    mt.expect("CreateAdditionalAssignmentsForHIT", {})  # the items are judged again
    review = review_decide(review=review, approve=False, feedback="Random captions.")
    a.refresh_from_db()
    assert review.status == ReviewStatus.REJECTED
    assert a.state == AssignmentState.APPROVED and a.excluded  # paid, and not counted
    assert Event.objects.filter(action="review.auto_approved").exists()


def test_a_hit_that_cannot_grow_gets_its_items_in_a_new_hit(mt, paired_run):
    batch = published(mt, paired_run)
    a = worked(mt, batch, "W1")
    hit = a.hit
    review = held(a)
    mt.expect("RejectAssignment", {})
    cannot_grow(mt)
    new_pk = Hit.objects.order_by("-pk").first().pk + 1
    mt.expect("GetAccountBalance", {"AvailableBalance": "100.00"})
    mt.expect(
        "CreateHITWithHITType",
        {"HIT": {"HITId": fake_id("H", new_pk)}},
        {
            "HITTypeId": ANY,
            "MaxAssignments": 1,  # only the missing judgment
            "LifetimeInSeconds": ANY,
            "Question": ANY,
            "RequesterAnnotation": ANY,
            "UniqueRequestToken": ANY,
        },
    )
    review_decide(review=review, approve=False, feedback="Random captions.")
    hit.refresh_from_db()
    new = hit.reoffered_as
    assert new is not None and new.pk == new_pk and new.provider_hit_id == fake_id("H", new_pk)
    assert new.capacity == 1 and hit.status == HitStatus.COMPLETE
    assert [q.item_id for q in new.questions.order_by("position")] == [
        q.item_id for q in hit.questions.order_by("position")
    ]
    assert Event.objects.filter(action="hit.reoffered", data__new_hit=new.pk).exists()
    assert hits_reoffer(batch=batch) == []  # once


def test_an_ended_batch_reports_instead_of_reoffering(mt, paired_run, admin_client):
    batch = published(mt, paired_run)
    a = worked(mt, batch, "W1")
    mt.expect("RejectAssignment", {})
    cannot_grow(mt)
    assignment_reject(assignment=a, feedback="Random captions.")
    for _hit in batch.hits.all():
        mt.expect("UpdateExpirationForHIT", {})
    batch_expire(batch=batch)
    assert hits_reoffer(batch=batch) == []
    queue = admin_client.get("/review/").content.decode()
    assert 'id="stuck-hits"' in queue and "the batch has ended" in queue
    assert "waiting to be re-offered" in admin_client.get("/").content.decode()


def test_a_worker_never_judges_the_same_items_twice_in_a_reoffered_hit(paired_run):
    batch = batch_publish(
        batch=batch_create(
            run=paired_run, stage=BisonStage.SELECTION, provider="local", items_per_hit=6
        )
    )
    alice = worker_get_or_create(provider="local", external_id="alice")
    a = assignment_claim_next(batch=batch, worker=alice)
    assignment_submit(
        assignment_id=a.pk,
        worker=alice,
        answers={f"q{q.position}": "none" for q in a.hit.questions.all()},
    )
    a.refresh_from_db()
    assignment_reject(assignment=a, feedback="Random captions.")
    Hit.objects.filter(pk=a.hit_id).update(cannot_grow_at=timezone.now())  # as MTurk would
    (new,) = hits_reoffer(batch=batch)
    assert assignment_claim_next(batch=batch, worker=alice) is None
    bob = worker_get_or_create(provider="local", external_id="bob")
    assert assignment_claim_next(batch=batch, worker=bob).hit_id == new.pk


def test_the_auto_approved_policy_is_checked(paired_run):
    with pytest.raises(InputError) as caught:
        batch_create(
            run=paired_run,
            stage=BisonStage.SELECTION,
            provider="local",
            options={"auto_approved_reviews": "maybe"},
        )
    assert caught.value.field == "options.auto_approved_reviews"


# --- reconciliation (item 14) ----------------------------------------------------------------


def listed_hit(hit_id, annotation):
    return {"HITId": hit_id, "RequesterAnnotation": annotation, "HITStatus": "Assignable"}


def test_reconciliation_compares_money_and_hits_with_mturk(
    mt,
    paired_run,
    admin_client,
    schema,  # noqa: F811
):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    from annotation.crowd.mturk.reconcile import mturk_reconcile
    from annotation.services.work.worker_actions import worker_bonus

    batch = published(mt, paired_run)  # 3 HITs of 2 pairs, 1 assignment each, $0.50
    a = worked(mt, batch, "W1")
    mt.expect("ApproveAssignment", {})
    review_decide(review=held(a), approve=True)
    mt.expect("SendBonus", {})
    worker_bonus(assignment=a, amount="0.25", reason="Careful work")
    hits = list(batch.hits.order_by("position"))

    def expect_remote(approved_at_mturk):
        for hit in hits:
            items = []
            if hit.pk == a.hit_id:
                items = [
                    {
                        "AssignmentId": a.provider_assignment_id,
                        "WorkerId": "W1",
                        "HITId": hit.provider_hit_id,
                        "AssignmentStatus": "Approved",
                    }
                ][:approved_at_mturk]
            mt.expect("ListAssignmentsForHIT", {"Assignments": items, "NumResults": len(items)})
            bonuses = (
                [
                    {
                        "WorkerId": "W1",
                        "BonusAmount": "0.25",
                        "AssignmentId": a.provider_assignment_id,
                    }
                ]
                if hit.pk == a.hit_id
                else []
            )
            mt.expect("ListBonusPayments", {"BonusPayments": bonuses, "NumResults": len(bonuses)})

    ours = mturk.request_token("hit", 999999, "sandbox")
    expect_remote(1)
    mt.expect(
        "ListHITs",
        {
            "HITs": [listed_hit(h.provider_hit_id, mturk.hit_token(h)) for h in hits]
            + [listed_hit(fake_id("H", 999999), ours), listed_hit(fake_id("X", 1), "other app")],
            "NumResults": 5,
        },
    )
    report = mturk_reconcile(provider=mt.provider)
    (row,) = report.batches
    # $0.50 + $0.10 fee per slot, 3 slots; spent: one approved ($0.60) + bonus $0.25 + $0.05 fee.
    assert row.committed == Decimal("1.80")
    assert row.local.total == row.remote.total == Decimal("0.90") and row.matches
    assert [u["hit_id"] for u in report.unknown_remote] == [fake_id("H", 999999)]
    assert report.other_remote == 1 and report.missing_remote == []

    # MTurk shows no approval and does not list the last HIT: both are reported.
    expect_remote(0)
    mt.expect(
        "ListHITs",
        {
            "HITs": [listed_hit(h.provider_hit_id, mturk.hit_token(h)) for h in hits[:-1]],
            "NumResults": 2,
        },
    )
    with pytest.raises(CommandError, match="differ"):
        call_command("mturk_reconcile")
    # The page asks MTurk only on POST.
    assert admin_client.get("/mturk/reconcile/").status_code == 200
    expect_remote(1)
    mt.expect("ListHITs", {"HITs": [], "NumResults": 0})
    page = admin_client.post("/mturk/reconcile/").content.decode()
    assert 'id="missing-remote"' in page and "ok" in page

    # The API: the same report as JSON (staff only).
    expect_remote(1)
    mt.expect(
        "ListHITs",
        {
            "HITs": [listed_hit(h.provider_hit_id, mturk.hit_token(h)) for h in hits],
            "NumResults": 3,
        },
    )
    response = admin_client.post("/api/mturk/reconcile/", {}, content_type="application/json")
    assert response.status_code == 200, response.json()
    check(schema, "/api/mturk/reconcile/", "post", response)
    body = response.json()
    assert body["mismatches"] == [] and body["missing_remote"] == []
    assert [(r["batch"], r["committed"], r["matches"]) for r in body["batches"]] == [
        (batch.pk, "1.80", True)
    ]


# --- around payment (item 15) ----------------------------------------------------------------


def test_a_rejection_is_reversed_from_the_review_page_within_30_days(mt, paired_run, admin_client):
    batch = published(mt, paired_run)
    a = worked(mt, batch, "W1")
    review = held(a)
    mt.expect("RejectAssignment", {})
    mt.expect("CreateAdditionalAssignmentsForHIT", {})
    review_decide(review=review, approve=False, feedback="Looked random.")
    page = admin_client.get(f"/review/{review.pk}/").content.decode()
    assert 'id="reverse"' in page and 'id="reject"' not in page
    mt.expect(
        "ApproveAssignment",
        {},
        {
            "AssignmentId": a.provider_assignment_id,
            "RequesterFeedback": "Your appeal was right.",
            "OverrideRejection": True,
        },
    )
    response = admin_client.post(
        f"/review/{review.pk}/", {"decision": "reverse", "feedback": "Your appeal was right."}
    )
    assert response.status_code == 302
    a.refresh_from_db()
    review.refresh_from_db()
    assert a.state == AssignmentState.APPROVED and not a.excluded
    assert review.status == ReviewStatus.APPROVED
    assert Assignment.objects.filter(counted(), pk=a.pk).exists()


def test_a_server_side_rejection_can_be_reversed_at_any_time(paired_run):
    """No provider stands in the way: the window is MTurk's (tests/annotation/
    services/work/test_reviews_remote.py), not ours."""
    from annotation.services.work.decisions import assignment_reverse_rejection

    batch = batch_publish(
        batch=batch_create(run=paired_run, stage=BisonStage.SELECTION, provider="local")
    )
    alice = worker_get_or_create(provider="local", external_id="alice")
    a = assignment_claim_next(batch=batch, worker=alice)
    assignment_submit(
        assignment_id=a.pk,
        worker=alice,
        answers={f"q{q.position}": "none" for q in a.hit.questions.all()},
    )
    a.refresh_from_db()
    assignment_reject(assignment=a, feedback="Random.")
    later = timezone.now() + timedelta(days=365)
    assignment_reverse_rejection(assignment=a, feedback="Sorry.", now=later)
    a.refresh_from_db()
    assert a.state == AssignmentState.APPROVED


def test_the_kill_switch_expires_every_hit_and_survives_a_failing_batch(
    mt, paired_run, admin_client
):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    first = published(mt, paired_run, limit=2)
    mt.expect_publish(
        batch_create(
            run=paired_run,
            stage=BisonStage.SELECTION,
            provider="mturk",
            items_per_hit=2,
            limit=2,
        ),
        pools=False,
    )
    second = batch_publish(batch=first.run.batches.order_by("-pk").first())
    local = batch_publish(
        batch=batch_create(run=paired_run, stage=BisonStage.SELECTION, provider="local", limit=2)
    )
    with pytest.raises(CommandError, match="--yes"):
        call_command("stop_hits", "--reason", "bad instructions")
    # MTurk fails for the first batch's HIT; the others are stopped all the same.
    mt.expect_error("UpdateExpirationForHIT", "ServiceFault", "internal error")
    for _ in range(second.hits.count()):
        mt.expect("UpdateExpirationForHIT", {})
    mt.gateway.max_attempts = 1
    with pytest.raises(CommandError, match="again"):
        call_command("stop_hits", "--reason", "bad instructions", "--yes")
    first.refresh_from_db()
    second.refresh_from_db()
    local.refresh_from_db()
    assert (first.status, second.status, local.status) == ("published", "expired", "expired")
    assert Event.objects.filter(action="batches.stopped").exists()
    # The page needs the confirmation word, then stops what is left.
    admin_client.post("/stop/", {"reason": "again", "confirm": "no"})
    first.refresh_from_db()
    assert first.status == "published"
    mt.expect("UpdateExpirationForHIT", {})
    admin_client.post("/stop/", {"run": paired_run.pk, "reason": "again", "confirm": "STOP"})
    first.refresh_from_db()
    assert first.status == "expired"


def test_the_daily_cap_refuses_what_would_go_over_it(mt, paired_run, settings):
    from annotation.errors import ServiceError
    from annotation.services.money.batch_extension import hit_add_assignments
    from annotation.services.money.spend import committed_last_day as mturk_committed_last_day
    from annotation.services.work.worker_actions import worker_bonus

    batch = published(mt, paired_run, limit=4)  # 2 HITs x $0.60 = $1.20 committed now
    assert mturk_committed_last_day() == Decimal("1.20")
    settings.CROWDVL_DAILY_CAP = "1.50"
    a = worked(mt, batch, "W1")
    with pytest.raises(ServiceError, match="CROWDVL_DAILY_CAP"):
        worker_bonus(assignment=a, amount="0.50", reason="Great work")  # $0.60 with its fee
    with pytest.raises(ServiceError, match="daily cap"):
        hit_add_assignments(hit=a.hit, count=1)
    nxt = batch_create(
        run=paired_run,
        stage=BisonStage.SELECTION,
        provider="mturk",
        items_per_hit=2,
        reward="0.50",
    )
    with pytest.raises(ServiceError, match="daily cap"):
        batch_publish(batch=nxt)
    mt.expect("SendBonus", {})
    worker_bonus(assignment=a, amount="0.10", reason="Thanks")  # $0.12 with its fee: under
    assert mturk_committed_last_day() == Decimal("1.32")
    # A day later the window has moved on.
    later = timezone.now() + timedelta(hours=25)
    assert mturk_committed_last_day(now=later) == Decimal("0.00")


def test_a_project_block_is_a_qualification_every_later_hit_type_excludes(mt, paired_run):
    from annotation.models import BlockQualification, Worker
    from annotation.services.work.worker_actions import worker_block, worker_unblock

    first = published(mt, paired_run, limit=2)
    a = worked(mt, first, "W9")
    worker = Worker.objects.get(provider="mturk", external_id="W9")
    mt.expect(
        "CreateQualificationType",
        {"QualificationType": {"QualificationTypeId": "QBLOCK".ljust(30, "X")}},
        {"Name": ANY, "Description": ANY, "QualificationTypeStatus": "Active"},
    )
    mt.expect(
        "AssociateQualificationWithWorker",
        {},
        {
            "QualificationTypeId": "QBLOCK".ljust(30, "X"),
            "WorkerId": "W9",
            "IntegerValue": 1,
            "SendNotification": False,
        },
    )
    worker_block(worker=worker, reason="Copied answers", scope="project")  # no CreateWorkerBlock
    assert worker.blocked and worker.block_scope == "project"
    assert "blocked" in str(mt.stubber) or BlockQualification.objects.count() == 1
    # Every HIT type published from now on excludes the project's blocked workers.
    batch = batch_create(
        run=paired_run, stage=BisonStage.SELECTION, provider="mturk", items_per_hit=2, limit=2
    )
    mt.expect("GetAccountBalance", {"AvailableBalance": "100.00"})
    seen = {}
    mt.expect("CreateHITType", {"HITTypeId": fake_id("T", batch.pk)})
    for hit in batch.hits.all():
        mt.expect("CreateHITWithHITType", {"HIT": {"HITId": fake_id("H", hit.pk)}})
    original = mt.provider.create_hit_type

    def spy(*, batch, exclude_pools):
        seen["exclude"] = list(exclude_pools)
        return original(batch=batch, exclude_pools=exclude_pools)

    mt.provider.create_hit_type = spy
    try:
        batch_publish(batch=batch)
    finally:
        del mt.provider.create_hit_type
    assert "QBLOCK".ljust(30, "X") in seen["exclude"]
    req = mturk.qualification_requirements(batch.qualifications, exclude_pools=seen["exclude"])
    assert {
        "QualificationTypeId": "QBLOCK".ljust(30, "X"),
        "Comparator": "DoesNotExist",
        "ActionsGuarded": "DiscoverPreviewAndAccept",
    } in req
    mt.expect(
        "DisassociateQualificationFromWorker",
        {},
        {"QualificationTypeId": "QBLOCK".ljust(30, "X"), "WorkerId": "W9", "Reason": "appeal"},
    )
    worker_unblock(worker=worker, reason="appeal")
    worker.refresh_from_db()
    assert not worker.blocked and worker.block_scope == ""
    assert a.pk
