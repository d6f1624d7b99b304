"""The MTurk provider: MTurk's platform calls (through the gateway in `client.py`) and its
answers to the provider interface; the services of this package keep the database in step."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from django.conf import settings

from annotation.crowd.mturk.client import (
    CANNOT_GROW,
    CLOSED,
    ENV_TAGS,
    HIT_EXISTS,
    HIT_ID,
    LIFETIME_RANGE,
    MAX_TOKEN,
    MTurkError,
    MTurkGateway,
    _check_range,
    _duplicate,
    batch_environment,
    gateway_default,
    hit_token,
    mturk_amount,
    pool_name,
    qualification_requirements,
    request_token,
    task_url,
)
from annotation.crowd.mturk.fees import BONUS_FEE_RATE, estimate_cost, mturk_fee, slot_cost
from annotation.errors import AlreadyPaid, ServiceError
from annotation.flow_registry import stage_label
from annotation.models import Assignment, Batch, Hit, Worker
from annotation.providers.base import CostEstimate, CrowdProvider, IdShapes
from annotation.selectors.installation import installation_id
from pipeline.errors import InputError
from pipeline.mturk_xml import external_question_xml

if TYPE_CHECKING:
    from annotation.models import Job
    from annotation.providers.base import Progress


class MTurkProvider(CrowdProvider):
    """Amazon Mechanical Turk (legacy: closed for good on 2026-09-30; the sandbox and existing
    data keep working, production publishing is refused with the closure)."""

    name = "mturk"
    urls = "annotation.crowd.mturk.urls"
    api_urls = "annotation.crowd.mturk.api_urls"
    label = "Amazon Mechanical Turk (legacy: closed 2026-09-30)"
    notice = CLOSED
    staff_pages = (("mturk-reconcile", "MTurk money"),)
    remote = True
    confirms_remotely = True
    approves_itself = True
    case_sensitive_ids = True
    takes_qualifications = True
    charges_fees = True
    # ApproveAssignment with OverrideRejection: within 30 days of the submission.
    reversal_window = timedelta(days=30)
    # The MTurk API reference: HITId, HITTypeId, AssignmentId, WorkerId and
    # QualificationTypeId are 1 to 64 characters; the environment is ours.
    id_shapes = IdShapes(
        worker=64,
        assignment=64,
        hit=64,
        hit_type=64,
        qualification=64,
        environment=len("production"),
        alphabet="0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ",
        reference="docs.aws.amazon.com/AWSMechTurk/latest/AWSMturkAPI (Length Constraints)",
    )

    def __init__(self) -> None:
        self._gateway_factory: Callable[..., MTurkGateway] = gateway_default

    # --- the provider interface's capabilities (this package's services) -------------------

    def estimate(self, *, hits: int, assignments_per_hit: int, reward: Decimal) -> CostEstimate:
        return estimate_cost(hits=hits, assignments_per_hit=assignments_per_hit, reward=reward)

    def slot_cost(self, *, batch: Batch) -> Decimal:
        return slot_cost(reward=batch.reward, assignments_per_hit=batch.assignments_per_hit)

    def bonus_cost(self, *, amount: Decimal) -> Decimal:
        return amount + mturk_fee(amount, BONUS_FEE_RATE)

    def spend_refusal(self, *, amount: Decimal, what: str) -> str | None:
        from annotation.services.money.spend import daily_cap_reason

        return daily_cap_reason(amount=amount, what=what)

    def committed_since(self, *, since: datetime) -> Decimal:
        from annotation.services.money.spend import platform_committed_since

        return platform_committed_since(provider=self, since=since)

    def publish_check(self, *, batch: Batch) -> CostEstimate:
        from annotation.crowd.mturk.spend import mturk_cost_check

        return mturk_cost_check(batch=batch, provider=self, unpublished_only=True)

    def publish_start(self, *, batch: Batch) -> Job:
        from annotation.crowd.mturk.publish import mturk_publish_start

        return mturk_publish_start(batch=batch)

    def publish_remote(self, *, batch: Batch, progress: Progress | None = None) -> None:
        from annotation.crowd.mturk.publish import mturk_publish_hits

        mturk_publish_hits(batch=batch, provider=self, progress=progress)

    def pause(self, *, batch: Batch) -> None:
        raise ServiceError(
            "MTurk has no pause: its HITs stay listed to workers; expire the batch instead "
            "(extend offers them again)"
        )

    def sync(self, *, batch: Batch) -> int:
        from annotation.crowd.mturk.sync import mturk_sync_batch

        return mturk_sync_batch(batch=batch, provider=self).changed

    def sync_open(self) -> None:
        from annotation.crowd.mturk.sync import mturk_sync_open

        mturk_sync_open()

    def block_in_project(self, *, worker: Worker, reason: str) -> None:
        """A qualification every HIT type of this installation excludes."""
        from annotation.crowd.mturk.spend import mturk_block_qualification

        qualification_id = mturk_block_qualification(
            environment=settings.CROWDVL_MTURK_ENV, create=True
        )
        assert qualification_id is not None
        self.grant_pool(qualification_id=qualification_id, worker=worker)

    def unblock_in_project(self, *, worker: Worker, reason: str) -> None:
        from annotation.crowd.mturk.spend import mturk_block_qualification

        qualification_id = mturk_block_qualification(
            environment=settings.CROWDVL_MTURK_ENV, create=False
        )
        if qualification_id:
            self.unmark(qualification_id=qualification_id, worker=worker, reason=reason)

    # --- MTurk's own calls ---------------------------------------------------------------

    # Tests and tools swap the gateway (e.g. a Stubber-wrapped client); the factory takes
    # the environment.
    def use_gateway(self, factory: Callable[..., MTurkGateway]) -> None:
        self._gateway_factory = factory

    @property
    def gateway(self) -> MTurkGateway:
        return self._gateway_factory(settings.CROWDVL_MTURK_ENV)

    def gateway_for(self, batch: Batch) -> MTurkGateway:
        return self._gateway_factory(batch_environment(batch))

    def account_balance(self) -> Decimal:
        return Decimal(self.gateway.call("GetAccountBalance")["AvailableBalance"])

    def check_qualification(self, qualification_id: str) -> None:
        try:
            self.gateway.call("GetQualificationType", QualificationTypeId=qualification_id)
        except MTurkError as exc:
            raise InputError(
                f"unknown MTurk qualification {qualification_id!r}: {exc}", field="qualifications"
            ) from None

    def ensure_pool_qualification(
        self, *, run_id: int, stage: str, existing: str | None, environment: str = ""
    ) -> str:
        """The pool qualification's id; one a crash left unsaved is found by its name."""
        if existing:
            return existing
        environment = environment or settings.CROWDVL_MTURK_ENV
        name = pool_name(run_id=run_id, stage=stage, environment=environment)
        description = f"Workers who did {stage_label(stage)} work in crowdvl run {run_id}."
        return self._qualification_type(name=name, description=description, environment=environment)

    def create_block_qualification(self, *, environment: str) -> str:
        """The qualification marking workers blocked from this installation's HITs only."""
        name = f"crowdvl {installation_id()} {ENV_TAGS.get(environment, environment)} blocked"
        description = "Workers who may not take this research project's HITs."
        return self._qualification_type(name=name, description=description, environment=environment)

    def _qualification_type(self, *, name: str, description: str, environment: str) -> str:
        """Create a qualification type, or find ours by name after a crash lost its id."""
        gateway = self._gateway_factory(environment)
        try:
            response = gateway.call(
                "CreateQualificationType",
                Name=name,
                Description=description,
                QualificationTypeStatus="Active",
            )
            return str(response["QualificationType"]["QualificationTypeId"])
        except MTurkError as exc:
            if exc.code != "RequestError":
                raise
            for item in gateway.pages(
                "ListQualificationTypes",
                "QualificationTypes",
                Query=name,
                MustBeRequestable=False,
                MustBeOwnedByCaller=True,
                MaxResults=100,
            ):
                if item.get("Name") == name:
                    return str(item["QualificationTypeId"])
            raise

    def create_hit_type(self, *, batch: Batch, exclude_pools: list[str]) -> str:
        response = self.gateway_for(batch).call(
            "CreateHITType",
            Title=batch.title[:128],
            Description=(batch.description or batch.title)[:2000],
            Keywords=batch.keywords or "image, caption, vision, language",
            Reward=mturk_amount(batch.reward),
            AssignmentDurationInSeconds=batch.assignment_duration_seconds,
            AutoApprovalDelayInSeconds=batch.auto_approval_delay_seconds,
            QualificationRequirements=qualification_requirements(
                batch.qualifications, exclude_pools=exclude_pools
            ),
        )
        return str(response["HITTypeId"])

    def find_hit(self, *, hit: Hit) -> str | None:
        """The id of the HIT MTurk holds for `hit`, found by its annotation (ListHITs)."""
        wanted = hit_token(hit)
        for item in self.gateway_for(hit.batch).pages("ListHITs", "HITs", MaxResults=100):
            if item.get("RequesterAnnotation") == wanted:
                return str(item["HITId"])
        return None

    def _verified(self, *, hit: Hit, hit_id: str) -> str:
        """Adopt an existing HIT only if its annotation names this installation and HIT."""
        found = self.gateway_for(hit.batch).call("GetHIT", HITId=hit_id)["HIT"]
        if found.get("RequesterAnnotation") != hit_token(hit):
            raise MTurkError(
                f"HIT {hit_id} exists but is not this installation's HIT {hit.pk} "
                f"(annotation {found.get('RequesterAnnotation')!r})",
                operation="GetHIT",
            )
        return hit_id

    def create_hit(self, *, hit: Hit, hit_type_id: str, look_first: bool = False) -> str:
        """CreateHITWithHITType with a token derived from the HIT; a retry after a crash finds
        the HIT the first call made instead of making a second one. With `look_first` (the
        first attempt is older than MTurk's 24 h token memory) ListHITs is searched first."""
        if look_first:
            found = self.find_hit(hit=hit)
            if found:
                return found
        annotation = hit_token(hit)
        try:
            response = self.gateway_for(hit.batch).call(
                "CreateHITWithHITType",
                HITTypeId=hit_type_id,
                MaxAssignments=hit.capacity,
                LifetimeInSeconds=hit.batch.lifetime_seconds,
                Question=external_question_xml(task_url(hit)),
                RequesterAnnotation=annotation,
                UniqueRequestToken=annotation,
            )
            return str(response["HIT"]["HITId"])
        except MTurkError as exc:
            if not _duplicate(exc, HIT_EXISTS, "already exists"):
                raise
            named = HIT_ID.search(str(exc))
            if named:
                return self._verified(hit=hit, hit_id=named.group(0))
            found = self.find_hit(hit=hit)
            if found:
                return found
            raise

    def expire(self, *, batch: Batch) -> None:
        """Expire every HIT of the batch on MTurk, including one whose id a crash lost. Every
        HIT is tried, so one that fails leaves no later one live; the failures are raised
        together at the end."""
        epoch = datetime(1970, 1, 1, tzinfo=UTC)
        gateway = self.gateway_for(batch)
        failed: list[str] = []
        for hit in batch.hits.order_by("position"):
            hit_id = hit.provider_hit_id
            try:
                if not hit_id and hit.create_attempted_at is not None:
                    hit_id = self.find_hit(hit=hit) or ""
                if hit_id:
                    gateway.call("UpdateExpirationForHIT", HITId=hit_id, ExpireAt=epoch)
            except MTurkError as exc:
                failed.append(f"HIT {hit.pk} ({hit_id or 'id not known'}): {exc}")
        if failed:
            raise MTurkError(
                f"{len(failed)} HITs of batch {batch.pk} could not be expired (the others "
                f"were): {'; '.join(failed)}",
                operation="UpdateExpirationForHIT",
            )

    def extend(self, *, batch: Batch, seconds: int) -> None:
        _check_range(seconds, LIFETIME_RANGE, "seconds")
        until = datetime.now(UTC) + timedelta(seconds=seconds)
        gateway = self.gateway_for(batch)
        for hit in batch.hits.exclude(provider_hit_id=""):
            gateway.call("UpdateExpirationForHIT", HITId=hit.provider_hit_id, ExpireAt=until)

    def add_assignments(self, *, hit: Hit, count: int, token: str) -> None:
        try:
            self.gateway_for(hit.batch).call(
                "CreateAdditionalAssignmentsForHIT",
                HITId=hit.provider_hit_id,
                NumberOfAdditionalAssignments=count,
                UniqueRequestToken=token[:MAX_TOKEN],
            )
        except MTurkError as exc:
            # The same token again: MTurk already added them.
            if not _duplicate(exc, "AWS.MechanicalTurk.DuplicateRequest", "uniquerequesttoken"):
                raise

    def list_assignments(self, *, hit: Hit) -> Iterator[dict[str, Any]]:
        return self.gateway_for(hit.batch).pages(
            "ListAssignmentsForHIT",
            "Assignments",
            HITId=hit.provider_hit_id,
            MaxResults=100,
            AssignmentStatuses=["Submitted", "Approved", "Rejected"],
        )

    def hits_listed(self, *, environment: str) -> Iterator[dict[str, Any]]:
        """Every HIT of the account in `environment` that MTurk still lists (not disposed)."""
        return self._gateway_factory(environment).pages("ListHITs", "HITs", MaxResults=100)

    def bonus_payments(self, *, hit: Hit) -> Iterator[dict[str, Any]]:
        return self.gateway_for(hit.batch).pages(
            "ListBonusPayments", "BonusPayments", HITId=hit.provider_hit_id, MaxResults=100
        )

    def _assignment_status(self, assignment: Assignment) -> str:
        response = self.gateway_for(assignment.hit.batch).call(
            "GetAssignment", AssignmentId=assignment.provider_assignment_id
        )
        return str(response["Assignment"]["AssignmentStatus"])

    def approve_rejected(self, *, assignment: Assignment, feedback: str) -> None:
        """Reverse a rejection (ApproveAssignment with OverrideRejection; MTurk allows it for
        30 days from the submission, `reversal_window`); done already if MTurk shows it
        approved."""
        try:
            self.gateway_for(assignment.hit.batch).call(
                "ApproveAssignment",
                AssignmentId=assignment.provider_assignment_id,
                RequesterFeedback=feedback[:1024],
                OverrideRejection=True,
            )
        except MTurkError:
            if self._assignment_status(assignment) != "Approved":
                raise

    def approve(self, *, assignment: Assignment) -> None:
        try:
            self.gateway_for(assignment.hit.batch).call(
                "ApproveAssignment", AssignmentId=assignment.provider_assignment_id
            )
        except MTurkError:
            # Approving twice is an error at MTurk; if it is already approved, we are done.
            if self._assignment_status(assignment) != "Approved":
                raise

    def reject(self, *, assignment: Assignment, feedback: str, redo: bool = True) -> bool:
        """Reject, then (with `redo`) let one more worker take the HIT so its items are judged
        again; False when MTurk will not grow the HIT or `redo` is off (the rejection stands
        either way)."""
        try:
            self.gateway_for(assignment.hit.batch).call(
                "RejectAssignment",
                AssignmentId=assignment.provider_assignment_id,
                RequesterFeedback=feedback[:1024],
            )
        except MTurkError:
            status = self._assignment_status(assignment)
            if status == "Approved":  # MTurk's auto-approval came first: it is paid
                raise AlreadyPaid(
                    f"MTurk approved assignment {assignment.provider_assignment_id} on its own "
                    "before the rejection"
                ) from None
            if status != "Rejected":
                raise
        return self.redo(assignment=assignment) if redo else False

    def redo(self, *, assignment: Assignment) -> bool:
        """One more assignment on the HIT (token per assignment: a retry adds nothing); False
        when MTurk will not grow it (a HIT created with fewer than 10 cannot reach 10)."""
        try:
            self.add_assignments(
                hit=assignment.hit,
                count=1,
                token=request_token("redo", assignment.pk, batch_environment(assignment.hit.batch)),
            )
        except MTurkError as exc:
            if exc.turk_code == CANNOT_GROW or "maximum" in str(exc).lower():
                return False
            raise
        return True

    def bonus(
        self,
        *,
        assignment: Assignment,
        amount: Decimal,
        reason: str,
        token: str,
        look_first: bool = False,
    ) -> None:
        """SendBonus once: the Reason carries the bonus's reference, so a retry after MTurk
        forgot the token (24 h; `look_first`) or a refused repeat finds the payment in
        ListBonusPayments instead of paying again."""
        reference = f"[ref {token[-12:]}]"
        if look_first and self._bonus_paid(assignment, reference):
            return
        try:
            self.gateway_for(assignment.hit.batch).call(
                "SendBonus",
                WorkerId=assignment.worker.external_id,
                AssignmentId=assignment.provider_assignment_id,
                BonusAmount=mturk_amount(amount),
                Reason=f"{reason} {reference}",
                UniqueRequestToken=token[:MAX_TOKEN],
            )
        except MTurkError as exc:
            # Only a RequestError can mean "already paid"; and then only if MTurk lists it.
            if exc.code != "RequestError" or not self._bonus_paid(assignment, reference):
                raise

    def _bonus_paid(self, assignment: Assignment, reference: str) -> bool:
        payments = self.gateway_for(assignment.hit.batch).pages(
            "ListBonusPayments",
            "BonusPayments",
            AssignmentId=assignment.provider_assignment_id,
            MaxResults=100,
        )
        return any(reference in str(p.get("Reason", "")) for p in payments)

    def block(self, *, worker: Worker, reason: str) -> None:
        self.gateway.call("CreateWorkerBlock", WorkerId=worker.external_id, Reason=reason)

    def unblock(self, *, worker: Worker, reason: str) -> None:
        self.gateway.call("DeleteWorkerBlock", WorkerId=worker.external_id, Reason=reason)

    def unmark(self, *, qualification_id: str, worker: Worker, reason: str) -> None:
        """Take a qualification (a pool or a project block) away from a worker."""
        self.gateway.call(
            "DisassociateQualificationFromWorker",
            QualificationTypeId=qualification_id,
            WorkerId=worker.external_id,
            Reason=reason,
        )

    def notify(self, *, workers: list[Worker], subject: str, message: str) -> None:
        ids = [w.external_id for w in workers]
        for start in range(0, len(ids), 100):  # MTurk takes at most 100 workers per call
            response = self.gateway.call(
                "NotifyWorkers",
                Subject=subject[:200],
                MessageText=message[:4096],
                WorkerIds=ids[start : start + 100],
            )
            failures = response.get("NotifyWorkersFailureStatuses") or []
            if failures:
                detail = "; ".join(
                    f"{f.get('WorkerId')}: {f.get('NotifyWorkersFailureMessage')}" for f in failures
                )
                raise MTurkError(f"could not notify {detail}", operation="NotifyWorkers")

    def grant_pool(self, *, qualification_id: str, worker: Worker, environment: str = "") -> None:
        self._gateway_factory(environment or settings.CROWDVL_MTURK_ENV).call(
            "AssociateQualificationWithWorker",
            QualificationTypeId=qualification_id,
            WorkerId=worker.external_id,
            IntegerValue=1,
            SendNotification=False,
        )
