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
from annotation.errors import ServiceError
from annotation.models import Assignment, Batch, Hit, Stage, Worker
from pipeline.errors import InputError
from pipeline.mturk_xml import external_question_xml

SANDBOX, PRODUCTION = "sandbox", "production"
PREVIEW_ASSIGNMENT = "ASSIGNMENT_ID_NOT_AVAILABLE"
SUBMIT_HOSTS = ("https://www.mturk.com", "https://workersandbox.mturk.com")

# MTurk's system qualification types.
QUAL_HITS_APPROVED = "00000000000000000040"
QUAL_PERCENT_APPROVED = "000000000000000000L0"
QUAL_LOCALE = "00000000000000000071"

# Limits from the MTurk API reference (seconds).
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

    def __init__(self, message: str, *, operation: str, code: str = "") -> None:
        self.operation = operation
        self.code = code
        super().__init__(f"MTurk {operation}: {message}")


# --- money -----------------------------------------------------------------------------------


def mturk_fee_rate(assignments_per_hit: int) -> Decimal:
    """MTurk's commission: 20% of the reward, 40% for HITs with 10 or more assignments."""
    return Decimal("0.40") if assignments_per_hit >= 10 else Decimal("0.20")


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
    fee = max(cent, (reward * mturk_fee_rate(assignments_per_hit)).quantize(cent, ROUND_HALF_UP))
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
                raise MTurkError(message, operation=operation, code=code) from None
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


def gateway_default() -> MTurkGateway:
    return MTurkGateway(make_client())


# --- the provider ----------------------------------------------------------------------------


def hit_token(hit: Hit) -> str:
    """The UniqueRequestToken of a HIT's CreateHIT call: the same on every retry."""
    return f"crowdvl-hit-{hit.pk}"[:MAX_TOKEN]


def task_url(hit: Hit) -> str:
    return public_url() + reverse("mturk-task", args=[hit.pk])


class MTurkProvider(CrowdProvider):
    name = "mturk"
    remote = True

    def __init__(self) -> None:
        self._gateway_factory: Callable[[], MTurkGateway] = gateway_default

    # Tests and tools swap the gateway (e.g. a Stubber-wrapped client).
    def use_gateway(self, factory: Callable[[], MTurkGateway]) -> None:
        self._gateway_factory = factory

    @property
    def gateway(self) -> MTurkGateway:
        return self._gateway_factory()

    def account_balance(self) -> Decimal:
        return Decimal(self.gateway.call("GetAccountBalance")["AvailableBalance"])

    def check_qualification(self, qualification_id: str) -> None:
        try:
            self.gateway.call("GetQualificationType", QualificationTypeId=qualification_id)
        except MTurkError as exc:
            raise InputError(
                f"unknown MTurk qualification {qualification_id!r}: {exc}", field="qualifications"
            ) from None

    def ensure_pool_qualification(self, *, run_id: int, stage: str, existing: str | None) -> str:
        if existing:
            return existing
        response = self.gateway.call(
            "CreateQualificationType",
            Name=f"crowdvl run {run_id} {stage} pool",
            Description=f"Workers who did {Stage(stage).label} work in crowdvl run {run_id}.",
            QualificationTypeStatus="Active",
        )
        return str(response["QualificationType"]["QualificationTypeId"])

    def create_hit_type(self, *, batch: Batch, exclude_pools: list[str]) -> str:
        response = self.gateway.call(
            "CreateHITType",
            Title=batch.title[:128],
            Description=(batch.description or batch.title)[:2000],
            Keywords=batch.keywords or "image, caption, vision, language",
            Reward=str(batch.reward),
            AssignmentDurationInSeconds=batch.assignment_duration_seconds,
            AutoApprovalDelayInSeconds=batch.auto_approval_delay_seconds,
            QualificationRequirements=qualification_requirements(
                batch.qualifications, exclude_pools=exclude_pools
            ),
        )
        return str(response["HITTypeId"])

    def create_hit(self, *, hit: Hit, hit_type_id: str) -> str:
        """CreateHITWithHITType with a token derived from the HIT; a retry after a crash finds
        the HIT the first call made instead of making a second one."""
        token = hit_token(hit)
        try:
            response = self.gateway.call(
                "CreateHITWithHITType",
                HITTypeId=hit_type_id,
                MaxAssignments=hit.capacity,
                LifetimeInSeconds=hit.batch.lifetime_seconds,
                Question=external_question_xml(task_url(hit)),
                RequesterAnnotation=token,
                UniqueRequestToken=token,
            )
            return str(response["HIT"]["HITId"])
        except MTurkError as exc:
            if "already exists" not in str(exc).lower() and "HitAlreadyExists" not in exc.code:
                raise
            found = HIT_ID.search(str(exc))
            if found:
                return found.group(0)
            for item in self.gateway.pages("ListHITs", "HITs", MaxResults=100):
                if item.get("RequesterAnnotation") == token:
                    return str(item["HITId"])
            raise

    def expire(self, *, batch: Batch) -> None:
        epoch = datetime(1970, 1, 1, tzinfo=UTC)
        for hit in batch.hits.exclude(provider_hit_id=""):
            self.gateway.call("UpdateExpirationForHIT", HITId=hit.provider_hit_id, ExpireAt=epoch)

    def extend(self, *, batch: Batch, seconds: int) -> None:
        _check_range(seconds, LIFETIME_RANGE, "seconds")
        until = datetime.now(UTC) + timedelta(seconds=seconds)
        for hit in batch.hits.exclude(provider_hit_id=""):
            self.gateway.call("UpdateExpirationForHIT", HITId=hit.provider_hit_id, ExpireAt=until)

    def add_assignments(self, *, hit: Hit, count: int, token: str) -> None:
        self.gateway.call(
            "CreateAdditionalAssignmentsForHIT",
            HITId=hit.provider_hit_id,
            NumberOfAdditionalAssignments=count,
            UniqueRequestToken=token[:MAX_TOKEN],
        )

    def list_assignments(self, *, hit: Hit) -> Iterator[dict[str, Any]]:
        return self.gateway.pages(
            "ListAssignmentsForHIT",
            "Assignments",
            HITId=hit.provider_hit_id,
            MaxResults=100,
            AssignmentStatuses=["Submitted", "Approved", "Rejected"],
        )

    def _assignment_status(self, assignment: Assignment) -> str:
        response = self.gateway.call(
            "GetAssignment", AssignmentId=assignment.provider_assignment_id
        )
        return str(response["Assignment"]["AssignmentStatus"])

    def approve(self, *, assignment: Assignment) -> None:
        try:
            self.gateway.call("ApproveAssignment", AssignmentId=assignment.provider_assignment_id)
        except MTurkError:
            # Approving twice is an error at MTurk; if it is already approved, we are done.
            if self._assignment_status(assignment) != "Approved":
                raise

    def reject(self, *, assignment: Assignment, feedback: str) -> None:
        """Reject, and let one more worker take the HIT so its items are judged again."""
        try:
            self.gateway.call(
                "RejectAssignment",
                AssignmentId=assignment.provider_assignment_id,
                RequesterFeedback=feedback[:1024],
            )
        except MTurkError:
            if self._assignment_status(assignment) != "Rejected":
                raise
        self.add_assignments(hit=assignment.hit, count=1, token=f"crowdvl-redo-{assignment.pk}")

    def bonus(self, *, assignment: Assignment, amount: Decimal, reason: str, token: str) -> None:
        try:
            self.gateway.call(
                "SendBonus",
                WorkerId=assignment.worker.external_id,
                AssignmentId=assignment.provider_assignment_id,
                BonusAmount=str(amount),
                Reason=reason,
                UniqueRequestToken=token[:MAX_TOKEN],
            )
        except MTurkError as exc:
            # The same token again means MTurk already paid this bonus.
            if "token" not in str(exc).lower():
                raise

    def block(self, *, worker: Worker, reason: str) -> None:
        self.gateway.call("CreateWorkerBlock", WorkerId=worker.external_id, Reason=reason)

    def unblock(self, *, worker: Worker, reason: str) -> None:
        self.gateway.call("DeleteWorkerBlock", WorkerId=worker.external_id, Reason=reason)

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

    def grant_pool(self, *, qualification_id: str, worker: Worker) -> None:
        self.gateway.call(
            "AssociateQualificationWithWorker",
            QualificationTypeId=qualification_id,
            WorkerId=worker.external_id,
            IntegerValue=1,
            SendNotification=False,
        )
