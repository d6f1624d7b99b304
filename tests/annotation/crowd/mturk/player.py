"""MTurk's stand-in for tests: botocore's Stubber checks every remote call, and workers arrive
through the frame page with MTurk's query parameters. `driver(http_client)` is what the
contract tests every provider passes (tests/annotation/providers/test_base_contract.py) ask for."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

import boto3
from botocore import xform_name
from botocore.stub import ANY, Stubber

from annotation.crowd.mturk.client import MTurkGateway, gateway_default, hit_token
from annotation.crowd.mturk.reconcile import mturk_reconcile
from annotation.crowd.mturk.spend import mturk_provider
from annotation.crowd.mturk.sync import SyncReport, mturk_pool_grant_pending, mturk_sync_hit
from annotation.models import (
    Assignment,
    AssignmentState,
    Batch,
    Bonus,
    EventAction,
    Hit,
    HitStatus,
    PoolMembership,
    PoolQualification,
    Worker,
)
from annotation.selectors.counting import counted
from annotation.services.runs.batches import batch_publish, batch_sync
from pipeline.mturk_xml import answer_xml

SUBMIT_TO = "https://workersandbox.mturk.com"


def stubbed_mturk() -> tuple[Any, Stubber, MTurkGateway, list[float]]:
    client = boto3.client(
        "mturk", region_name="sandbox", aws_access_key_id="test", aws_secret_access_key="test"
    )
    stubber = Stubber(client)
    stubber.activate()
    sleeps: list[float] = []
    return client, stubber, MTurkGateway(client, sleep=sleeps.append), sleeps


def fake_id(prefix: str, n: int) -> str:
    return (prefix + str(n)).upper().ljust(30, "X")[:30]


class MTurkDriver:
    """MTurk: every remote call checked by botocore's Stubber; workers arrive through the
    worker page with MTurk's query parameters, as MTurk's frame would send them."""

    name = "mturk"
    # The summary each synchronisation of a batch records.
    synced_event = EventAction.MTURK_SYNCED
    # MTurk's own rule (ApproveAssignment with OverrideRejection): 30 days from submission.
    reversal_window = timedelta(days=30)

    def __init__(self, client: Any) -> None:
        self.http = client
        _, self.stubber, self.gateway, self.sleeps = stubbed_mturk()
        self.provider = mturk_provider()
        self.provider.use_gateway(lambda environment=None: self.gateway)
        self.open: dict[str, tuple[int, str, str]] = {}  # remote id: HIT pk, worker, token
        self.remote: dict[int, dict[str, tuple[str, dict[str, str]]]] = {}  # what MTurk holds
        self.status: dict[str, str] = {}  # MTurk's own decisions (e.g. its auto-approval)
        self.deadlines: dict[str, Any] = {}  # AutoApprovalTime by remote assignment id
        self.counter = 0

    def expect(self, operation: str, response: dict | None = None, params: Any = None) -> None:
        method = xform_name(operation)
        self.stubber.add_response(method, response or {}, params)

    def expect_error(self, operation: str, code: str, message: str, params: Any = None) -> None:
        method = xform_name(operation)
        self.stubber.add_client_error(
            method, service_error_code=code, service_message=message, expected_params=params
        )

    def expect_publish(self, batch: Batch, *, balance: str = "1000.00", pools: bool = True) -> None:
        self.expect("GetAccountBalance", {"AvailableBalance": balance})
        if pools:
            for n in range(2):
                self.expect(
                    "CreateQualificationType",
                    {
                        "QualificationType": {
                            "QualificationTypeId": fake_id("Q", batch.run_id * 10 + n)
                        }
                    },
                )
        self.expect("CreateHITType", {"HITTypeId": fake_id("T", batch.pk)})
        for hit in batch.hits.order_by("position"):
            self.expect(
                "CreateHITWithHITType",
                {"HIT": {"HITId": fake_id("H", hit.pk)}},
                {
                    "HITTypeId": fake_id("T", batch.pk),
                    "MaxAssignments": batch.assignments_per_hit,
                    "LifetimeInSeconds": batch.lifetime_seconds,
                    "Question": ANY,
                    "RequesterAnnotation": hit_token(hit),
                    "UniqueRequestToken": hit_token(hit),
                },
            )

    def publish(self, batch: Batch) -> Batch:
        # A run's pool qualifications are created with its first batch.
        pools = not PoolQualification.objects.filter(run=batch.run, provider="mturk").exists()
        self.expect_publish(batch, pools=pools)
        return batch_publish(batch=batch)

    def take(self, batch: Batch, worker_name: str) -> Assignment | None:
        """MTurk offers the worker a HIT with a free slot they have not done; we pick the same.
        Opening the page writes nothing: the assignment returned is not saved yet."""
        for hit in batch.hits.filter(status=HitStatus.OPEN).order_by("position"):
            held = hit.assignments.filter(counted()).count() + sum(
                1 for h, _, _ in self.open.values() if h == hit.pk
            )
            mine = hit.assignments.filter(worker__external_id=worker_name).exists() or any(
                h == hit.pk and w == worker_name for h, w, _ in self.open.values()
            )
            if held >= hit.capacity or mine:
                continue
            self.counter += 1
            remote = fake_id(f"A{worker_name}", self.counter)
            response = self.http.get(
                f"/mturk/hit/{hit.pk}/",
                {
                    "assignmentId": remote,
                    "hitId": hit.provider_hit_id,
                    "workerId": worker_name,
                    "turkSubmitTo": SUBMIT_TO,
                },
            )
            assert response.status_code == 200, response.content
            token = re.search(rb'name="token" value="([^"]+)"', response.content)
            assert token is not None, response.content
            self.open[remote] = (hit.pk, worker_name, token.group(1).decode())
            return Assignment(
                hit=hit,
                worker=Worker(provider="mturk", external_id=worker_name),
                provider_assignment_id=remote,
            )
        return None

    def post(self, assignment: Assignment, answers: dict[str, str]) -> Any:
        """The worker's browser posts the task form (MTurk's frame)."""
        remote = assignment.provider_assignment_id
        return self.http.post(
            f"/mturk/hit/{assignment.hit_id}/",
            {
                **answers,
                "assignmentId": remote,
                "turkSubmitTo": SUBMIT_TO,
                "token": self.open[remote][2],
            },
        )

    def submit(self, assignment: Assignment, answers: dict[str, str]) -> None:
        """Post the form, submit to MTurk, then let synchronisation confirm it."""
        response = self.post(assignment, answers)
        assert response.status_code == 200, response.content
        assert b"/mturk/externalSubmit" in response.content
        self.submit_confirm(assignment, answers)

    def submit_confirm(self, assignment: Assignment, answers: dict[str, str]) -> None:
        """The worker submits to MTurk; synchronisation then finds and confirms the work."""
        remote = assignment.provider_assignment_id
        hit_pk, worker_name, _ = self.open.pop(remote)
        self.remote.setdefault(hit_pk, {})[remote] = (worker_name, answers)
        self.sync_hit(Hit.objects.select_related("batch__run").get(pk=hit_pk), grant=worker_name)
        assignment.pk = Assignment.objects.get(provider_assignment_id=remote, confirmed=True).pk
        assignment.refresh_from_db()

    def submit_unsynced(
        self, assignment: Assignment, answers: dict[str, str], *, reached_us: bool
    ) -> None:
        """The worker submits to MTurk and nothing is synchronised yet; `reached_us`: the
        frame's post stored the answers here (unconfirmed) before MTurk's own form took them."""
        if reached_us:
            response = self.post(assignment, answers)
            assert response.status_code == 200, response.content
        hit_pk, worker_name, _ = self.open.pop(assignment.provider_assignment_id)
        self.remote.setdefault(hit_pk, {})[assignment.provider_assignment_id] = (
            worker_name,
            answers,
        )

    def decide_remotely(self, assignment: Assignment, state: str) -> None:
        """MTurk decides the work on its own (its auto-approval, the requester's console)."""
        names: dict[str, str] = {
            AssignmentState.APPROVED: "Approved",
            AssignmentState.REJECTED: "Rejected",
        }
        self.status[assignment.provider_assignment_id] = names[state]

    def sync(self, batch: Batch, *, granted: tuple[str, ...] = ()) -> int:
        """Synchronise the whole batch as the periodic job does (MTurk lists every HIT, then
        marks `granted` as pool members); how many assignments changed."""
        for hit in (
            batch.hits.exclude(provider_hit_id="")
            .exclude(status=HitStatus.UNKNOWN)
            .order_by("position")
        ):
            self.expect_listing(hit)
        for worker_name in granted:
            self.expect(
                "AssociateQualificationWithWorker",
                {},
                {
                    "QualificationTypeId": ANY,
                    "WorkerId": worker_name,
                    "IntegerValue": 1,
                    "SendNotification": False,
                },
            )
        return batch_sync(batch=batch)

    def expect_listing(self, hit: Hit) -> None:
        """MTurk lists what it holds for `hit`, with the states our own calls left it in."""
        states: dict[str, str] = {
            AssignmentState.APPROVED: "Approved",
            AssignmentState.REJECTED: "Rejected",
        }
        listed = []
        for remote, (worker_name, answers) in self.remote.get(hit.pk, {}).items():
            local = Assignment.objects.filter(provider_assignment_id=remote, confirmed=True).first()
            status = states.get(local.state, "Submitted") if local else "Submitted"
            listed.append(
                {
                    "AssignmentId": remote,
                    "WorkerId": worker_name,
                    "HITId": hit.provider_hit_id,
                    "AssignmentStatus": self.status.get(remote, status),
                    "Answer": answer_xml(answers),
                    **(
                        {"AutoApprovalTime": self.deadlines[remote]}
                        if remote in self.deadlines
                        else {}
                    ),
                }
            )
        self.expect(
            "ListAssignmentsForHIT",
            {"Assignments": listed, "NumResults": len(listed)},
            {"HITId": hit.provider_hit_id, "MaxResults": 100, "AssignmentStatuses": ANY},
        )

    def expect_reject(self, assignment: Assignment, feedback: str) -> None:
        """MTurk rejects the work and takes one more worker on its HIT."""
        self.expect(
            "RejectAssignment",
            {},
            {
                "AssignmentId": assignment.provider_assignment_id,
                "RequesterFeedback": feedback,
            },
        )
        self.expect("CreateAdditionalAssignmentsForHIT", {})

    def expect_reversal(self, assignment: Assignment, feedback: str) -> None:
        """MTurk approves (and pays) rejected work."""
        self.expect(
            "ApproveAssignment",
            {},
            {
                "AssignmentId": assignment.provider_assignment_id,
                "RequesterFeedback": feedback,
                "OverrideRejection": True,
            },
        )

    def expect_hit_gone(self, hit: Hit, operation: str = "ListAssignmentsForHIT") -> None:
        """MTurk no longer knows `hit` (deleted, or disposed of long after it expired)."""
        message = f"Hit {hit.provider_hit_id} does not exist. (1700000000000)"
        params = {"HITId": hit.provider_hit_id, "MaxResults": 100}
        if operation == "ListAssignmentsForHIT":
            params["AssignmentStatuses"] = ANY
        self.expect_error(operation, "RequestError", message, params)

    def expect_reconcile(self, batches: list[Batch], *, gone: dict[int, str] | None = None) -> None:
        """MTurk's side of a reconciliation of `batches` (in the order it asks): each HIT's
        assignments and bonuses (`gone`: HIT pk -> "assignments" or "bonuses", the first list
        MTurk refuses because it no longer knows the HIT), then the account's HITs."""
        gone = gone or {}
        for batch in batches:
            for hit in batch.hits.exclude(provider_hit_id="").order_by("position"):
                if gone.get(hit.pk) == "assignments":
                    self.expect_hit_gone(hit, "ListAssignmentsForHIT")
                    continue
                self.expect_listing(hit)
                if gone.get(hit.pk) == "bonuses":
                    self.expect_hit_gone(hit, "ListBonusPayments")
                    continue
                paid = [
                    {
                        "WorkerId": b.assignment.worker.external_id,
                        "BonusAmount": str(b.amount),
                        "AssignmentId": b.assignment.provider_assignment_id,
                    }
                    for b in Bonus.objects.filter(assignment__hit=hit, sent_at__isnull=False)
                ]
                self.expect(
                    "ListBonusPayments",
                    {"BonusPayments": paid, "NumResults": len(paid)},
                    {"HITId": hit.provider_hit_id, "MaxResults": 100},
                )
        listed = [
            {"HITId": hit.provider_hit_id, "RequesterAnnotation": hit_token(hit)}
            for batch in batches
            for hit in batch.hits.exclude(provider_hit_id="")
            if hit.pk not in gone
        ]
        self.expect("ListHITs", {"HITs": listed, "NumResults": len(listed)}, {"MaxResults": 100})

    def reconcile(self, **options: Any) -> Any:
        return mturk_reconcile(provider=self.provider, **options)

    def sync_hit(self, hit: Hit, grant: str | None = None) -> None:
        """Synchronise one HIT as MTurk lists it (`expect_listing`); `grant`: the worker whose
        pool qualification MTurk is asked for, if still pending."""
        self.expect_listing(hit)
        report = SyncReport()
        mturk_sync_hit(hit=hit, provider=self.provider, report=report)
        assert not report.errors, report.errors
        waiting = PoolMembership.objects.filter(
            run=hit.batch.run, worker__external_id=grant, granted_at__isnull=True
        )
        if grant is not None and waiting.exists():
            self.expect(
                "AssociateQualificationWithWorker",
                {},
                {
                    "QualificationTypeId": ANY,
                    "WorkerId": grant,
                    "IntegerValue": 1,
                    "SendNotification": False,
                },
            )
        mturk_pool_grant_pending(batch=hit.batch, provider=self.provider)

    def done(self) -> None:
        self.provider.use_gateway(gateway_default)  # later tests get the real client factory
        self.stubber.assert_no_pending_responses()


def driver(http: Any) -> MTurkDriver:
    return MTurkDriver(http)
