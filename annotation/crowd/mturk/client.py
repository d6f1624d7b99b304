"""MTurk's client: the only module that imports boto3, and only when a client is made or
called (boto3 took a second off every command's start-up, issue 46). MTurk's limits, error codes, the
gateway every call goes through, and the names and tokens that make a retry harmless.

Every remote call goes through `MTurkGateway.call`, which retries throttling and service
faults with exponential backoff and turns request errors into `MTurkError` carrying MTurk's
own message. Tests replace the client with one wrapped in botocore's Stubber (`tests/annotation/crowd/mturk/player.py`).
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from decimal import Decimal
from typing import Any

from django.conf import settings
from django.urls import reverse

from annotation.errors import ServiceError
from annotation.models import Batch, Hit
from annotation.providers.base import ASSIGNMENT_DURATION_RANGE, AUTO_APPROVAL_RANGE, LIFETIME_RANGE
from annotation.selectors.installation import installation_id
from pipeline.errors import InputError

SANDBOX, PRODUCTION = "sandbox", "production"
CENT = Decimal("0.01")
PREVIEW_ASSIGNMENT = "ASSIGNMENT_ID_NOT_AVAILABLE"
SUBMIT_HOSTS = ("https://www.mturk.com", "https://workersandbox.mturk.com")

# MTurk's system qualification types.
QUAL_HITS_APPROVED = "00000000000000000040"
QUAL_PERCENT_APPROVED = "000000000000000000L0"
QUAL_LOCALE = "00000000000000000071"

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


# --- validation ------------------------------------------------------------------------------


def _check_range(value: int, bounds: tuple[int, int], field: str) -> None:
    low, high = bounds
    if not low <= value <= high:
        raise InputError(f"{value} s is outside MTurk's limits ({low} to {high} s)", field=field)


CLOSED = (
    "Amazon Mechanical Turk closed for good on 2026-09-30: no new HITs can be published in "
    "production. Recruit paid workers on Prolific instead, or invite local workers; MTurk "
    "sandbox batches and existing MTurk data (synchronisation, reviews, reconciliation) keep "
    "working."
)


def validate_batch(batch: Batch) -> None:
    """Everything MTurk would refuse, checked before anything is sent: first that production
    is gone."""
    if batch_environment(batch) == PRODUCTION:
        raise ServiceError(CLOSED)
    if str(settings.CROWDVL_CURRENCY).upper() != "USD":
        raise ServiceError(
            f"MTurk pays in US dollars but this installation's amounts are in "
            f"{settings.CROWDVL_CURRENCY} (CROWDVL_CURRENCY): nothing is converted"
        )
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
    import boto3
    from botocore.config import Config

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
        from botocore import xform_name
        from botocore.exceptions import BotoCoreError, ClientError, NoCredentialsError

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


def hit_gone(exc: MTurkError) -> bool:
    """Whether MTurk refused a call about a HIT because it no longer knows the HIT (deleted, or
    disposed of long after it expired): "Hit 3X... does not exist. (1700000000000)"."""
    message = str(exc).lower()
    return "does not exist" in message or "not found" in message


def _duplicate(exc: MTurkError, turk_code: str, *words: str) -> bool:
    """Whether MTurk refused a request as a repeat: by its TurkErrorCode, wording as fallback.
    Only a RequestError can be one (an expired-credentials error mentioning a "token" is not)."""
    if exc.turk_code:
        return exc.turk_code == turk_code
    return exc.code == "RequestError" and any(w in str(exc).lower() for w in words)
