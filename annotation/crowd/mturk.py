"""Amazon Mechanical Turk. The only module that imports boto3; MTurk's fees and limits live here.

Every remote call goes through `MTurkGateway.call`, which retries throttling and service
faults with exponential backoff and turns request errors into `MTurkError` carrying MTurk's
own message. Tests replace the client with one wrapped in botocore's Stubber.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import boto3
from botocore import xform_name
from botocore.config import Config
from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError
from django.conf import settings
from django.urls import reverse

from annotation.crowd.base import CrowdProvider
from annotation.errors import AlreadyPaid, ServiceError
from annotation.models import Assignment, Batch, Hit, Stage, Worker
from annotation.selectors.installation import installation_id
from pipeline.errors import InputError
from pipeline.mturk_xml import external_question_xml

SANDBOX, PRODUCTION = "sandbox", "production"
CENT = Decimal("0.01")
PREVIEW_ASSIGNMENT = "ASSIGNMENT_ID_NOT_AVAILABLE"
SUBMIT_HOSTS = ("https://www.mturk.com", "https://workersandbox.mturk.com")

# MTurk's system qualification types.
QUAL_HITS_APPROVED = "00000000000000000040"
QUAL_PERCENT_APPROVED = "000000000000000000L0"
QUAL_LOCALE = "00000000000000000071"

# Limits from the MTurk API reference (seconds).
# MTurk's documented limits (the batch settings check applies them to every provider).
LIFETIME_RANGE = (30, 31_536_000)
ASSIGNMENT_DURATION_RANGE = (30, 31_536_000)
AUTO_APPROVAL_RANGE = (0, 2_592_000)
MAX_TOKEN = 64

THROTTLE_CODES = {
    "ThrottlingException",
    "Throttling",
    "TooManyRequestsException",
    "RequestLimitExceeded",
    "ServiceFault",
    "ServiceUnavailable",
    "InternalFailure",
}
HIT_ID = re.compile(r"\b[0-9A-Z]{30}\b")


class MTurkError(ServiceError):
    """MTurk refused a request; the message is MTurk's own."""

    def __init__(
        self, message: str, *, operation: str, code: str = "", turk_code: str = ""
    ) -> None:
        self.operation = operation
        self.code = code
        self.turk_code = turk_code  # MTurk's own TurkErrorCode, e.g. ...HitAlreadyExists
        super().__init__(f"MTurk {operation}: {message}")


# --- money -----------------------------------------------------------------------------------


def mturk_fee_rate(assignments_per_hit: int) -> Decimal:
    """MTurk's commission: 20% of the reward, 40% for HITs with 10 or more assignments."""
    return Decimal("0.40") if assignments_per_hit >= 10 else Decimal("0.20")


BONUS_FEE_RATE = Decimal("0.20")


def mturk_fee(amount: Decimal, rate: Decimal) -> Decimal:
    """MTurk's fee on one payment: `rate` of it, rounded to the cent, at least $0.01."""
    cent = Decimal("0.01")
    return max(cent, (amount * rate).quantize(cent, ROUND_HALF_UP))


@dataclass(frozen=True)
class CostEstimate:
    hits: int
    assignments_per_hit: int
    reward: Decimal
    fee_per_assignment: Decimal
    rewards: Decimal
    fees: Decimal

    @property
    def total(self) -> Decimal:
        return self.rewards + self.fees

    def describe(self) -> str:
        n = self.hits * self.assignments_per_hit
        return (
            f"{self.hits} HITs x {self.assignments_per_hit} assignments x ${self.reward} "
            f"= ${self.rewards} rewards + ${self.fees} MTurk fees "
            f"({mturk_fee_rate(self.assignments_per_hit) * 100:.0f}%, min $0.01 each, "
            f"{n} assignments) = ${self.total}"
        )


def estimate_cost(*, hits: int, assignments_per_hit: int, reward: Decimal) -> CostEstimate:
    cent = Decimal("0.01")
    fee = mturk_fee(reward, mturk_fee_rate(assignments_per_hit))
    n = hits * assignments_per_hit
    return CostEstimate(
        hits=hits,
        assignments_per_hit=assignments_per_hit,
        reward=reward,
        fee_per_assignment=fee,
        rewards=(reward * n).quantize(cent),
        fees=(fee * n).quantize(cent),
    )


# --- validation ------------------------------------------------------------------------------


def _check_range(value: int, bounds: tuple[int, int], field: str) -> None:
    low, high = bounds
    if not low <= value <= high:
        raise InputError(f"{value} s is outside MTurk's limits ({low} to {high} s)", field=field)


def validate_batch(batch: Batch) -> None:
    """Everything MTurk would refuse, checked before anything is sent."""
    _check_range(batch.lifetime_seconds, LIFETIME_RANGE, "lifetime_seconds")
    _check_range(
        batch.assignment_duration_seconds, ASSIGNMENT_DURATION_RANGE, "assignment_duration_seconds"
    )
    _check_range(
        batch.auto_approval_delay_seconds, AUTO_APPROVAL_RANGE, "auto_approval_delay_seconds"
    )
    if batch.reward <= 0 or batch.reward != batch.reward.quantize(Decimal("0.01")):
        raise InputError(
            f"{batch.reward} is not a positive amount in dollars and cents", field="reward"
        )
    public_url()


def public_url() -> str:
    url = settings.CROWDVL_PUBLIC_URL.rstrip("/")
    if not url.startswith("https://"):
        raise InputError(
            f"CROWDVL_PUBLIC_URL must be an HTTPS address MTurk can frame, got {url!r}",
            field="CROWDVL_PUBLIC_URL",
        )
    return url


def qualification_requirements(
    rules: dict[str, Any], *, exclude_pools: list[str]
) -> list[dict[str, Any]]:
    """A batch's qualification rules in MTurk's terms, plus "must not be in the other pool"."""
    reqs: list[dict[str, Any]] = [
        {
            "QualificationTypeId": QUAL_HITS_APPROVED,
            "Comparator": "GreaterThanOrEqualTo",
            "IntegerValues": [int(rules["min_approved_hits"])],
            "ActionsGuarded": "DiscoverPreviewAndAccept",
        },
        {
            "QualificationTypeId": QUAL_PERCENT_APPROVED,
            "Comparator": "GreaterThanOrEqualTo",
            "IntegerValues": [int(rules["min_approval_percent"])],
            "ActionsGuarded": "DiscoverPreviewAndAccept",
        },
    ]
    if rules.get("locales"):
        reqs.append(
            {
                "QualificationTypeId": QUAL_LOCALE,
                "Comparator": "In",
                "LocaleValues": [{"Country": c} for c in rules["locales"]],
                "ActionsGuarded": "DiscoverPreviewAndAccept",
            }
        )
    for custom in rules.get("custom", []):
        req = {
            "QualificationTypeId": custom["id"],
            "Comparator": custom["comparator"],
            "ActionsGuarded": "DiscoverPreviewAndAccept",
        }
        if "value" in custom:
            req["IntegerValues"] = [int(custom["value"])]
        reqs.append(req)
    for qualification_id in exclude_pools:
        reqs.append(
            {
                "QualificationTypeId": qualification_id,
                "Comparator": "DoesNotExist",
                "ActionsGuarded": "DiscoverPreviewAndAccept",
            }
        )
    return reqs


# --- the client ------------------------------------------------------------------------------


def make_client(environment: str | None = None) -> Any:
    """A boto3 MTurk client for the sandbox or production; credentials from the AWS chain."""
    environment = environment or settings.CROWDVL_MTURK_ENV
    if environment not in (SANDBOX, PRODUCTION):
        raise InputError(
            f"CROWDVL_MTURK_ENV must be 'sandbox' or 'production', got {environment!r}",
            field="CROWDVL_MTURK_ENV",
        )
    session = boto3.Session()
    if session.get_credentials() is None:
        raise InputError(
            "no AWS credentials found: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or "
            "AWS_PROFILE, or configure ~/.aws/credentials",
            field="credentials",
        )
    # Our gateway retries with backoff itself; botocore's own retries would multiply them.
    config = Config(retries={"total_max_attempts": 1})
    region = "sandbox" if environment == SANDBOX else "us-east-1"
    return session.client("mturk", region_name=region, config=config)


class MTurkGateway:
    """Calls MTurk with retries for throttling and service faults."""

    def __init__(
        self,
        client: Any,
        *,
        max_attempts: int = 5,
        base_delay: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.client = client
        self.max_attempts = max_attempts
        self.base_delay = base_delay
        self.sleep = sleep

    @property
    def endpoint(self) -> str:
        return str(self.client.meta.endpoint_url)

    def call(self, operation: str, **params: Any) -> dict[str, Any]:
        method = getattr(self.client, xform_name(operation))
        for attempt in range(1, self.max_attempts + 1):
            try:
                return dict(method(**params))
            except NoCredentialsError:
                raise InputError("no AWS credentials found", field="credentials") from None
            except ClientError as exc:
                error = exc.response.get("Error", {})
                code, message = error.get("Code", ""), error.get("Message", str(exc))
                retryable = code in THROTTLE_CODES or "rate exceeded" in message.lower()
                if retryable and attempt < self.max_attempts:
                    self.sleep(self.base_delay * 2 ** (attempt - 1))
                    continue
                if retryable:
                    message = f"{message} (gave up after {attempt} attempts)"
                turk_code = str(exc.response.get("TurkErrorCode", ""))
                raise MTurkError(
                    message, operation=operation, code=code, turk_code=turk_code
                ) from None
            except BotoCoreError as exc:
                if attempt < self.max_attempts:
                    self.sleep(self.base_delay * 2 ** (attempt - 1))
                    continue
                raise MTurkError(str(exc), operation=operation) from None
        raise AssertionError("unreachable")

    def pages(self, operation: str, key: str, **params: Any) -> Iterator[dict[str, Any]]:
        """Every item of a paginated list operation."""
        token: str | None = None
        while True:
            response = self.call(operation, **params, **({"NextToken": token} if token else {}))
            yield from response.get(key, [])
            token = response.get("NextToken")
            if not token:
                return


def gateway_default(environment: str | None = None) -> MTurkGateway:
    return MTurkGateway(make_client(environment))


# --- identity: tokens and names carry the installation, the environment and the object -------

ENV_TAGS = {SANDBOX: "sb", PRODUCTION: "live"}
HIT_EXISTS = "AWS.MechanicalTurk.HitAlreadyExists"
CANNOT_GROW = "AWS.MechanicalTurk.InvalidMaximumAssignmentsIncrease"


def batch_environment(batch: Batch) -> str:
    """The environment a batch lives in: fixed when it was published, else the default."""
    return batch.environment or settings.CROWDVL_MTURK_ENV


def request_token(kind: str, pk: int | str, environment: str) -> str:
    """A UniqueRequestToken / RequesterAnnotation: installation, environment, object."""
    return f"crowdvl-{installation_id()}-{ENV_TAGS.get(environment, environment)}-{kind}-{pk}"[
        :MAX_TOKEN
    ]


def hit_token(hit: Hit) -> str:
    """The UniqueRequestToken of a HIT's CreateHIT call: the same on every retry."""
    return request_token("hit", hit.pk, batch_environment(hit.batch))


def pool_name(*, run_id: int, stage: str, environment: str) -> str:
    return f"crowdvl {installation_id()} {ENV_TAGS.get(environment, environment)} run {run_id} {stage} pool"


def task_url(hit: Hit) -> str:
    return public_url() + reverse("mturk-task", args=[hit.pk])


def mturk_amount(value: Decimal) -> str:
    """An amount as it is sent to MTurk: dollars with exactly two decimals ("0.50")."""
    amount = Decimal(value)
    if amount != amount.quantize(CENT):
        raise InputError(f"{value} is not a whole number of cents", field="amount")
    return f"{amount.quantize(CENT):.2f}"


def _duplicate(exc: MTurkError, turk_code: str, *words: str) -> bool:
    """Whether MTurk refused a request as a repeat: by its TurkErrorCode, wording as fallback.
    Only a RequestError can be one (an expired-credentials error mentioning a "token" is not)."""
    if exc.turk_code:
        return exc.turk_code == turk_code
    return exc.code == "RequestError" and any(w in str(exc).lower() for w in words)


class MTurkProvider(CrowdProvider):
    name = "mturk"
    remote = True

    def __init__(self) -> None:
        self._gateway_factory: Callable[..., MTurkGateway] = gateway_default

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
        description = f"Workers who did {Stage(stage).label} work in crowdvl run {run_id}."
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
        """Expire every HIT of the batch on MTurk, including one whose id a crash lost."""
        epoch = datetime(1970, 1, 1, tzinfo=UTC)
        gateway = self.gateway_for(batch)
        for hit in batch.hits.all():
            hit_id = hit.provider_hit_id
            if not hit_id and hit.create_attempted_at is not None:
                hit_id = self.find_hit(hit=hit) or ""
            if hit_id:
                gateway.call("UpdateExpirationForHIT", HITId=hit_id, ExpireAt=epoch)

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
        30 days); done already if MTurk shows it approved."""
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

    def reject(self, *, assignment: Assignment, feedback: str) -> bool:
        """Reject, then let one more worker take the HIT so its items are judged again; False
        when MTurk will not grow the HIT (the rejection stands either way)."""
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
        return self.redo(assignment=assignment)

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
