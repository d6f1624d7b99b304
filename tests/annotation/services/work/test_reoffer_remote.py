"""Invariants every remote provider keeps, whatever path the work takes: a worker never judges
the same items twice across a re-offered HIT; the daily spending cap counts and checks every
paid slot, redos included; the kill switch stops every live HIT, even when one call fails or
publishing crashed part-way. Each provider plays its remote side through an adapter
(`REMOTES`); MTurk's checks every call with botocore's Stubber."""

from decimal import Decimal
from typing import Any

import pytest
from botocore.stub import ANY
from django.core import signing

from annotation.crowd.mturk import client as mturk
from annotation.crowd.mturk import views as mturk_views
from annotation.crowd.mturk.fees import estimate_cost
from annotation.crowd.mturk.sync import SyncReport, mturk_sync_hit
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import (
    Assignment,
    AssignmentState,
    BatchStatus,
    Event,
    Hit,
    PoolMembership,
    Review,
    ReviewStatus,
    Worker,
)
from annotation.selectors.counting import counted
from annotation.services.money.spend import committed_last_day as mturk_committed_last_day
from annotation.services.runs.batches import batch_create, batch_publish, batches_stop
from annotation.services.work.decisions import assignment_reject
from annotation.services.work.reoffer import hits_reoffer, hits_reoffer_all
from annotation.services.work.reviews import review_decide
from pipeline.mturk_xml import answer_xml
from tests.annotation.drivers import SUBMIT_TO, MTurkDriver, fake_id

pytestmark = pytest.mark.django_db


class MTurkRemote(MTurkDriver):
    """MTurk's side of the invariants: what it is asked (`calls`), what it answers."""

    def __init__(self, client: Any) -> None:
        super().__init__(client)
        self.calls: list[tuple[str, dict[str, Any]]] = []
        send = self.gateway.call

        def logged(operation: str, **params: Any) -> dict[str, Any]:
            self.calls.append((operation, params))
            return send(operation, **params)

        self.gateway.call = logged  # type: ignore[method-assign]

    def sent(self, operation: str) -> list[dict[str, Any]]:
        return [params for name, params in self.calls if name == operation]

    def work(self, batch, name: str) -> Assignment:
        assignment = self.take(batch, name)
        self.submit(assignment, answers(assignment.hit))
        return assignment

    def expect_reject_without_growth(self) -> None:
        self.expect("RejectAssignment", {})
        self.stubber.add_client_error(
            "create_additional_assignments_for_hit",
            service_error_code="RequestError",
            service_message="The maximum number of assignments cannot be increased",
            modeled_fields={"Message": "cannot increase", "TurkErrorCode": mturk.CANNOT_GROW},
        )

    def expect_reject(self, *, redo: bool) -> None:
        self.expect("RejectAssignment", {})
        if redo:
            self.expect("CreateAdditionalAssignmentsForHIT", {})

    def set_cap(self, settings: Any, amount: Decimal | None) -> None:
        settings.CROWDVL_DAILY_CAP = None if amount is None else str(amount)

    def committed(self) -> Decimal:
        """What the cap counts: money committed at the provider in the last 24 hours."""
        return mturk_committed_last_day()

    def slot_cost(self, batch) -> Decimal:
        """One more paid assignment of `batch`, with the provider's fee."""
        return estimate_cost(
            hits=1, assignments_per_hit=batch.assignments_per_hit, reward=batch.reward
        ).total

    def expect_reoffer(self) -> None:
        new_pk = Hit.objects.order_by("-pk").first().pk + 1
        self.expect("GetAccountBalance", {"AvailableBalance": "100.00"})
        self.expect("CreateHITWithHITType", {"HIT": {"HITId": fake_id("H", new_pk)}})

    def publish_crashing(self, batch, *, created: int) -> None:
        """Publishing dies once `created` HITs exist at the provider (creating the next one
        fails): the batch is left a draft with live HITs."""
        self.expect("GetAccountBalance", {"AvailableBalance": "100.00"})
        for n in range(2):
            self.expect(
                "CreateQualificationType",
                {"QualificationType": {"QualificationTypeId": fake_id("Q", n)}},
            )
        self.expect("CreateHITType", {"HITTypeId": fake_id("T", batch.pk)})
        for hit in batch.hits.order_by("position")[:created]:
            self.expect("CreateHITWithHITType", {"HIT": {"HITId": fake_id("H", hit.pk)}})
        self.expect_error("CreateHITWithHITType", "ServiceUnavailable", "connection reset")
        self.gateway.max_attempts = 1
        with pytest.raises(mturk.MTurkError):
            batch_publish(batch=batch)

    def expect_expire(self, hit: Hit, *, fail: bool = False) -> None:
        """The provider is asked to stop `hit` (`fail`: it says the HIT does not exist)."""
        hit.refresh_from_db()
        if not hit.provider_hit_id:
            if hit.create_attempted_at is not None:  # looked up; the provider never made it
                self.expect("ListHITs", {"HITs": [], "NumResults": 0})
            return
        params = {"HITId": hit.provider_hit_id, "ExpireAt": ANY}
        if not fail:
            self.expect("UpdateExpirationForHIT", {}, params)
            return
        message = f"Hit {hit.provider_hit_id} does not exist."
        self.stubber.add_client_error(
            "update_expiration_for_hit",
            service_error_code="RequestError",
            service_message=message,
            modeled_fields={
                "Message": message,
                "TurkErrorCode": "AWS.MechanicalTurk.HITDoesNotExist",
            },
            expected_params=params,
        )

    def expired(self) -> list[str]:
        """The HITs the provider was asked to stop, in order."""
        return [params["HITId"] for params in self.sent("UpdateExpirationForHIT")]

    def open_page(self, hit: Hit, worker: str) -> Any:
        """The worker accepted `hit` at the provider; its frame opens our page."""
        self.counter += 1
        return self.http.get(
            f"/mturk/hit/{hit.pk}/",
            {
                "assignmentId": fake_id(f"A{worker}", self.counter),
                "hitId": hit.provider_hit_id,
                "workerId": worker,
                "turkSubmitTo": SUBMIT_TO,
            },
        )

    def post_answers(self, hit: Hit, worker: str, values: dict[str, str]) -> Any:
        """The worker's browser posts answers with a valid form token (one the page handed
        out, or one kept from before): the post is checked on its own."""
        self.counter += 1
        remote = fake_id(f"A{worker}", self.counter)
        token = signing.dumps({"h": hit.pk, "a": remote, "w": worker}, salt=mturk_views.SALT)
        return self.http.post(
            f"/mturk/hit/{hit.pk}/",
            {**values, "assignmentId": remote, "turkSubmitTo": SUBMIT_TO, "token": token},
        )

    def submit_at_provider(self, hit: Hit, worker: str, values: dict[str, str]) -> SyncReport:
        """The worker submits straight to the provider (never through our page); then
        synchronisation brings in what the provider lists for `hit`."""
        self.counter += 1
        self.remote.setdefault(hit.pk, {})[fake_id(f"A{worker}", self.counter)] = (worker, values)
        listed = [
            {
                "AssignmentId": remote,
                "WorkerId": name,
                "HITId": hit.provider_hit_id,
                "AssignmentStatus": "Submitted",
                "Answer": answer_xml(given),
            }
            for remote, (name, given) in self.remote[hit.pk].items()
        ]
        self.expect("ListAssignmentsForHIT", {"Assignments": listed, "NumResults": len(listed)})
        report = SyncReport()
        mturk_sync_hit(hit=Hit.objects.get(pk=hit.pk), provider=self.provider, report=report)
        return report


REMOTES = {"mturk": MTurkRemote}


@pytest.fixture(params=sorted(REMOTES))
def remote(request, client, settings):
    settings.CROWDVL_PUBLIC_URL = "https://crowd.example.org"
    driver = REMOTES[request.param](client)
    yield driver
    driver.done()


def answers(hit: Hit) -> dict[str, str]:
    return {f"q{q.position}": "none" for q in hit.questions.all()}


def published(remote, run, **options):
    options = {"items_per_hit": 2, "reward": "0.50", **options}
    return remote.publish(
        batch_create(run=run, stage=BisonStage.SELECTION, provider=remote.name, **options)
    )


def reoffered(remote, run) -> tuple[Hit, Hit]:
    """W1's work on a HIT is rejected and the provider will not grow it: its items go to a
    new HIT. The original HIT and the new one."""
    batch = published(remote, run, limit=2)
    first = remote.work(batch, "W1")
    remote.expect_reject_without_growth()
    assignment_reject(assignment=first, feedback="Random captions.")
    remote.expect_reoffer()
    (new,) = hits_reoffer(batch=batch)
    original = Hit.objects.get(pk=first.hit_id)
    new = Hit.objects.select_related("batch__run").get(pk=new.pk)
    assert original.reoffered_as_id == new.pk and new.provider_hit_id
    return original, new


def rows() -> tuple[int, int, int]:
    return Worker.objects.count(), Assignment.objects.count(), PoolMembership.objects.count()


# --- a worker never judges the same items twice across a re-offered HIT ----------------------


def test_the_task_page_refuses_a_worker_who_had_the_items_before(remote, paired_run):
    _, new = reoffered(remote, paired_run)
    before = rows()
    page = remote.open_page(new, "W1")
    assert page.status_code == 403 and b"same items" in page.content
    assert rows() == before  # opening the page writes nothing
    assert remote.open_page(new, "W2").status_code == 200  # anyone else may work on it


def test_answers_posted_by_a_worker_who_had_the_items_before_are_refused(remote, paired_run):
    _, new = reoffered(remote, paired_run)
    response = remote.post_answers(new, "W1", answers(new))
    assert response.status_code == 400 and b"same items" in response.content
    assert not Assignment.objects.filter(hit=new).exists()
    response = remote.post_answers(new, "W2", answers(new))
    assert response.status_code == 200
    assert Assignment.objects.filter(hit=new, worker__external_id="W2").exists()


def test_synchronisation_does_not_count_the_same_items_judged_twice(remote, paired_run):
    _, new = reoffered(remote, paired_run)
    remote.calls.clear()
    report = remote.submit_at_provider(new, "W1", answers(new))
    again = Assignment.objects.get(hit=new, worker__external_id="W1")
    assert not again.confirmed
    assert not Assignment.objects.filter(counted(), hit=new).exists()
    assert any("same items" in error for error in report.errors)
    assert Event.objects.filter(action="mturk.assignment_refused", assignment=again).exists()
    assert remote.sent("RejectAssignment") == []  # not counted; the worker is not rejected
    # Another worker's work on the new HIT counts as usual.
    report = remote.submit_at_provider(new, "W2", answers(new))
    assert Assignment.objects.filter(counted(), hit=new, worker__external_id="W2").exists()


# --- the daily cap counts and checks every paid slot, redos included -------------------------


def held(assignment: Assignment) -> Review:
    return Review.objects.create(assignment=assignment, reasons=[{"position": 0}])


def test_a_redo_after_a_rejection_counts_in_the_days_commitments(remote, paired_run, settings):
    batch = published(remote, paired_run, limit=2)
    a = remote.work(batch, "W1")
    slot = remote.slot_cost(batch)
    remote.set_cap(settings, remote.committed() + 10 * slot)
    before = remote.committed()
    remote.expect_reject(redo=True)
    review_decide(review=held(a), approve=False, feedback="Random captions.")
    assert len(remote.sent("CreateAdditionalAssignmentsForHIT")) == 1
    assert remote.committed() == before + slot


def test_a_redo_over_the_daily_cap_is_not_requested_and_the_items_wait(
    remote, paired_run, settings
):
    batch = published(remote, paired_run, limit=2)
    a = remote.work(batch, "W1")
    slot = remote.slot_cost(batch)
    before = remote.committed()
    remote.set_cap(settings, before + slot - Decimal("0.01"))  # no room for one more slot
    remote.calls.clear()
    remote.expect_reject(redo=False)
    review = review_decide(review=held(a), approve=False, feedback="Random captions.")
    # The rejection stands; no slot was asked for, and no new HIT made.
    a.refresh_from_db()
    assert review.status == ReviewStatus.REJECTED and a.state == AssignmentState.REJECTED
    assert [operation for operation, _ in remote.calls] == ["RejectAssignment"]
    assert remote.committed() == before
    hit = Hit.objects.get(pk=a.hit_id)
    assert hit.cannot_grow_at is not None and hit.reoffered_as_id is None
    assert Event.objects.filter(action="hit.cannot_grow", data__has_key="refused").exists()
    # Once the cap allows it, the periodic run re-offers the items, and that HIT counts.
    remote.set_cap(settings, before + 10 * slot)
    remote.expect_reoffer()
    assert hits_reoffer_all() == 1
    new = Hit.objects.get(pk=a.hit_id).reoffered_as
    assert new is not None and new.provider_hit_id
    assert remote.committed() == before + new.capacity * slot


# --- the kill switch stops every live HIT ---------------------------------------------------


def test_one_hit_failing_to_expire_does_not_leave_the_later_ones_live(remote, paired_run):
    batch = published(remote, paired_run, limit=6)
    hits = list(batch.hits.order_by("position"))
    assert len(hits) == 3
    remote.calls.clear()
    for n, hit in enumerate(hits):
        remote.expect_expire(hit, fail=n == 1)
    result = batches_stop(reason="bad instructions")
    assert remote.expired() == [hit.provider_hit_id for hit in hits]  # the third one too
    # The batch counts as failed (the switch can be pressed again), naming the HIT that failed.
    assert result["stopped"] == [] and list(result["failed"]) == [batch.pk]
    assert hits[1].provider_hit_id in result["failed"][batch.pk]
    batch.refresh_from_db()
    assert batch.status == BatchStatus.PUBLISHED


def test_the_kill_switch_stops_the_hits_of_a_batch_whose_publishing_crashed(remote, paired_run):
    crashed = batch_create(
        run=paired_run,
        stage=BisonStage.SELECTION,
        provider=remote.name,
        items_per_hit=1,
        reward="0.50",
        limit=3,
    )
    remote.publish_crashing(crashed, created=2)
    crashed.refresh_from_db()
    live = list(crashed.hits.exclude(provider_hit_id="").order_by("position"))
    assert crashed.status == BatchStatus.DRAFT and len(live) == 2
    # A draft with nothing at the provider is left alone (it can still be discarded).
    untouched = batch_create(
        run=paired_run, stage=BisonStage.SELECTION, provider=remote.name, limit=2
    )
    remote.calls.clear()
    for hit in crashed.hits.order_by("position"):
        remote.expect_expire(hit)
    result = batches_stop(reason="bad instructions")
    assert remote.expired() == [hit.provider_hit_id for hit in live]
    assert result == {"stopped": [crashed.pk], "failed": {}}
    crashed.refresh_from_db()
    untouched.refresh_from_db()
    assert crashed.status == BatchStatus.EXPIRED and untouched.status == BatchStatus.DRAFT
