"""Prolific's client: the only module that speaks HTTP to Prolific (API v1, `Authorization:
Token …`). Every call goes through `ProlificClient.call`. A 429 is retried for any method
(Prolific did not act on it; `Retry-After` honoured). A connection failure or a 5xx is retried
only for methods that are safe to repeat (GET, PUT, DELETE, and POSTs the reference documents as
idempotent): for other POSTs and PATCH the call may have taken effect, so it is never sent again
here; it raises `ProlificUnclear` and the caller
looks the object up (`remote_calls.py`). Refusals become `ProlificError` carrying Prolific's
own message. Tests mount the stand-in of `tests/annotation/crowd/prolific/standin.py` on the client's `requests.Session`:
nothing reaches the network.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import urljoin

import requests
from django.conf import settings

from annotation.errors import RemoteUnclear, ServiceError
from pipeline.errors import InputError

# Submission statuses Prolific documents (responses use spaces; queries, underscores).
RESERVED, ACTIVE, TIMED_OUT = "RESERVED", "ACTIVE", "TIMED-OUT"
AWAITING_REVIEW, APPROVED, RETURNED = "AWAITING REVIEW", "APPROVED", "RETURNED"
REJECTED, SCREENED_OUT = "REJECTED", "SCREENED OUT"
PARTIALLY_APPROVED, UNKNOWN = "PARTIALLY APPROVED", "UNKNOWN"
STATUSES = (
    RESERVED,
    ACTIVE,
    TIMED_OUT,
    AWAITING_REVIEW,
    APPROVED,
    RETURNED,
    REJECTED,
    SCREENED_OUT,
    PARTIALLY_APPROVED,
    UNKNOWN,
)
# The rejection categories Prolific accepts, and its minimum message length.
REJECTION_CATEGORIES = (
    "TOO_QUICKLY",
    "TOO_SLOWLY",
    "FAILED_INSTRUCTIONS",
    "INCOMP_LONGITUDINAL",
    "FAILED_CHECK",
    "LOW_EFFORT",
    "MALINGERING",
    "NO_CODE",
    "BAD_CODE",
    "NO_DATA",
    "UNSUPP_DEVICE",
    "OTHER",
)
REJECTION_MESSAGE_MIN = 100
COMPLETE_URL = "https://app.prolific.com/submissions/complete?cc="
# Every Prolific id in the reference's examples: 24 hexadecimal characters (a MongoDB ObjectId).
ID_LENGTH = 24
ID_PATTERN = re.compile(r"[0-9a-f]{24}\Z")
TIMEOUT = 30.0  # seconds per request


def status_normalise(value: str) -> str:
    """One spelling per status: Prolific writes "AWAITING REVIEW" in bodies and
    "AWAITING_REVIEW" in queries (hooks are not documented); "TIMED-OUT" keeps its hyphen."""
    text = " ".join(str(value).replace("_", " ").upper().split())
    return TIMED_OUT if text in ("TIMED OUT", "TIMED-OUT") else text


class ProlificError(ServiceError):
    """Prolific refused a request; the message is Prolific's own."""

    def __init__(self, message: str, *, operation: str, status: int = 0) -> None:
        self.operation = operation
        self.status = status
        super().__init__(f"Prolific {operation}: {message}")


class ProlificUnclear(ProlificError, RemoteUnclear):
    """The call may or may not have taken effect at Prolific (the answer was lost, or a 5xx
    after a POST or PATCH): look the object up before anything is sent again."""


# Methods whose repetition changes nothing more than the first call did.
SAFE_TO_REPEAT = frozenset({"GET", "HEAD", "OPTIONS", "PUT", "DELETE"})


def _message(response: requests.Response) -> str:
    """Prolific's error body in either documented shape ({"error": {...}} or bare), else
    the text."""
    try:
        body = response.json()
    except ValueError:
        return response.text[:500] or response.reason
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            title = error.get("title") or error.get("message") or ""
            detail = error.get("detail", "")
            return f"{title}: {detail}" if title and detail else str(title or detail or body)
    return str(body)[:500]


@dataclass(frozen=True)
class Answer:
    body: Any
    headers: dict[str, str]


class ProlificClient:
    """Calls Prolific with retries; `session` is where tests mount the stand-in."""

    def __init__(
        self,
        *,
        token: str,
        base_url: str,
        session: requests.Session | None = None,
        max_attempts: int = 5,
        base_delay: float = 1.0,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        if not token:
            raise InputError(
                "CROWDVL_PROLIFIC_TOKEN is not set: create an API token in Prolific's "
                "workspace settings and set it in the server's environment",
                field="CROWDVL_PROLIFIC_TOKEN",
            )
        self.token = token
        self.base_url = base_url.rstrip("/") + "/"
        self.session = session or requests.Session()
        self.max_attempts = max_attempts
        self.base_delay = base_delay
        self.sleep = sleep

    def url(self, path: str) -> str:
        return urljoin(self.base_url, path.lstrip("/"))

    def call(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        idempotent: bool = False,
    ) -> Any:
        """The decoded body of `exchange`'s answer."""
        answer = self.exchange(method, path, json=json, params=params, idempotent=idempotent)
        return answer.body

    def exchange(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        params: dict[str, Any] | None = None,
        idempotent: bool = False,
    ) -> Answer:
        """The decoded body (None for an empty one) and the headers. Raises `ProlificUnclear` when a call that
        is not safe to repeat may have taken effect, `ProlificError` when Prolific refused.
        `idempotent`: a POST the reference documents as changing nothing the second time (a
        submission's transition, adding group members), so it may be sent again."""
        operation = f"{method} {path}"
        repeatable = idempotent or method.upper() in SAFE_TO_REPEAT
        for attempt in range(1, self.max_attempts + 1):
            wait = self.base_delay * 2 ** (attempt - 1)
            last = attempt == self.max_attempts
            try:
                response = self.session.request(
                    method,
                    self.url(path),
                    json=json,
                    params=params,
                    headers={"Authorization": f"Token {self.token}"},
                    timeout=TIMEOUT,
                )
            except requests.ConnectTimeout as exc:  # never reached Prolific: nothing happened
                if not last:
                    self.sleep(wait)
                    continue
                raise ProlificError(str(exc), operation=operation) from None
            except requests.RequestException as exc:
                if repeatable and not last:
                    self.sleep(wait)
                    continue
                kind = ProlificError if repeatable else ProlificUnclear
                raise kind(f"no answer ({exc})", operation=operation) from None
            if response.status_code == 429 and not last:
                after = response.headers.get("Retry-After", "")
                self.sleep(float(after) if after.replace(".", "", 1).isdigit() else wait)
                continue
            if response.status_code >= 500:
                if repeatable and not last:
                    self.sleep(wait)
                    continue
                kind = ProlificError if repeatable else ProlificUnclear
                message = f"{_message(response)} (after {attempt} attempt(s))"
                raise kind(message, operation=operation, status=response.status_code)
            if response.status_code >= 400:
                raise ProlificError(
                    _message(response), operation=operation, status=response.status_code
                )
            headers = dict(response.headers)
            if not response.content:
                return Answer(body=None, headers=headers)
            try:
                return Answer(body=response.json(), headers=headers)
            except ValueError:
                return Answer(body=response.text, headers=headers)
        raise AssertionError("unreachable")

    def pages(
        self, path: str, *, params: dict[str, Any] | None = None, page_size: int = 100
    ) -> Iterator[dict[str, Any]]:
        """Every item of a paged list: `page`/`page_size` as documented, following
        `_links.next` where given, stopping at a short or empty page."""
        page = 1
        while page <= 10_000:  # a bound, not a limit anyone reaches
            body = self.call(
                "GET", path, params={**(params or {}), "page": page, "page_size": page_size}
            )
            results = list((body or {}).get("results", []))
            yield from results
            next_link = ((body or {}).get("_links") or {}).get("next") or {}
            if not results or (len(results) < page_size and not next_link.get("href")):
                return
            page += 1


def client_default() -> ProlificClient:
    return ProlificClient(
        token=settings.CROWDVL_PROLIFIC_TOKEN, base_url=settings.CROWDVL_PROLIFIC_API_URL
    )
