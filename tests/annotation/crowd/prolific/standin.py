"""A stateful stand-in of Prolific's API v1, written from its reference (docs.prolific.com; notes
in docs/reference/prolific-api-notes.md), for tests: mounted on the client's `requests.Session`
(`StandInAdapter`), so the client, its retries and its error handling run as against Prolific
and nothing reaches the network.

Ids have Prolific's shape: 24 random hexadecimal characters, workspace and project included.
It keeps studies (statuses and their documented transitions, places, completion codes),
submissions (RESERVED → ACTIVE → AWAITING REVIEW / RETURNED / TIMED-OUT, then APPROVED /
REJECTED), the two-step bonuses (the pay step is not idempotent, as documented), participant
groups, messages, the workspace balance, paged lists in the documented envelope (`results`,
`_links`, `meta.count`; `page` / `page_size`) and errors in the documented shape. Failures:
`throttle(n)` answers the next n calls with 429 and `Retry-After`; `fail(...)` refuses a call
before it acts; `lose(...)` lets a call act and then loses its answer (the connection drops,
or a 5xx comes back), as a real network can. Participants act through `start`, `complete`,
`return_submission` and `time_out`. Hooks: the workspace's one secret, the event types, and
subscriptions confirmed with the X-Hook-Secret of their creation; `hook_deliveries` is what
Prolific would send to the confirmed ones.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import time
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any
from urllib.parse import parse_qs, urlencode, urlparse

import requests
from requests.adapters import BaseAdapter
from requests.structures import CaseInsensitiveDict

from annotation.crowd.prolific import client as api

Reply = tuple[int, Any, dict[str, str]]

TRANSITIONS = {
    ("UNPUBLISHED", "PUBLISH"): "ACTIVE",
    ("ACTIVE", "PAUSE"): "PAUSED",
    ("ACTIVE", "STOP"): "COMPLETED",
    ("PAUSED", "START"): "ACTIVE",
    ("PAUSED", "STOP"): "COMPLETED",
}
# After publishing only these may change (places: upwards only).
PUBLISHED_EDITABLE = {"internal_name", "total_available_places"}
FREED = (api.RETURNED, api.TIMED_OUT, api.REJECTED)
REQUIRED = (
    "name",
    "description",
    "external_study_url",
    "prolific_id_option",
    "total_available_places",
    "estimated_completion_time",
    "reward",
)


def _stamp(epoch: float) -> str:
    """A time as the reference writes them: ISO 8601 in UTC with microseconds and a Z."""
    moment = datetime.fromtimestamp(epoch, tz=UTC)
    return moment.isoformat(timespec="microseconds").replace("+00:00", "Z")


def _unstamp(text: str) -> float:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def error(status: int, title: str, detail: Any) -> Reply:
    return (
        status,
        {"error": {"status": status, "error_code": status * 100, "title": title, "detail": detail}},
        {},
    )


# The filter list (`GET filters/`) from the reference's examples (notes §5): select filters
# with `choices` as an id -> label dict (string ids "0", "1", ...; [3p] gives "1" as United
# States), range filters with `min` and `max`. The ids are the notes'; the titles, questions,
# bounds and the other countries' order are the stand-in's own, as is leaving out a range
# filter's `data_type` (not in the notes). Group and previous-study filters list the
# workspace's groups and studies as choices (`ProlificStandIn._filter_vocabulary`).
COUNTRY_CHOICES = (
    "United Kingdom",
    "United States",
    "Ireland",
    "Germany",
    "Canada",
    "Australia",
    "New Zealand",
    "France",
    "Spain",
    "Netherlands",
    "South Africa",
)


def filter_list_default() -> list[dict[str, Any]]:
    def select(filter_id: str, title: str, data_type: str, **extra: Any) -> dict[str, Any]:
        return {
            "filter_id": filter_id,
            "title": title,
            "description": "",
            "type": "select",
            "data_type": data_type,
            "choices": {},
            **extra,
        }

    def ranged(filter_id: str, title: str, low: int, high: int) -> dict[str, Any]:
        return {
            "filter_id": filter_id,
            "title": title,
            "description": "",
            "type": "range",
            "min": low,
            "max": high,
        }

    return [
        select(
            "handedness",
            "Handedness",
            "ChoiceID",
            question="Are you left or right handed?",
            choices={"0": "Right-handed", "1": "Left-handed", "2": "Ambidextrous"},
        ),
        ranged("age", "Age", 18, 100),
        select(
            "current-country-of-residence",
            "Current Country of Residence",
            "ChoiceID",
            question="In which country do you currently reside?",
            choices={str(n): name for n, name in enumerate(COUNTRY_CHOICES)},
        ),
        ranged("approval_rate", "Approval Rate", 0, 100),
        ranged("approval_numbers", "Approval Numbers", 0, 100_000),
        select("previous_studies", "Previous Studies", "StudyID"),
        select("previous_studies_blocklist", "Previous Studies Blocklist", "StudyID"),
        select("participant_group_allowlist", "Participant Group Allowlist", "ParticipantGroupID"),
        select("participant_group_blocklist", "Participant Group Blocklist", "ParticipantGroupID"),
    ]


# `GET hooks/event-types/` (notes §7: the reference's example and the events its guides name).
HOOK_EVENT_TYPES = (
    {"event_type": "study.status.change", "description": "A study's status changed"},
    {"event_type": "study.progress.change", "description": "A study's progress changed"},
    {"event_type": "study.has_high_return_rate", "description": "Many participants return"},
    {"event_type": "submission.status.change", "description": "A submission's status changed"},
    {"event_type": "participant.submission.created", "description": "A submission was made"},
)


class ProlificStandIn:
    """Prolific's side of every call, with its state; `calls` lists (method, path) in order."""

    def __init__(
        self,
        *,
        workspace: str = "",
        project: str = "",
        currency: str = "GBP",
        balance: int = 1_000_000,
        fee_rate: Decimal = Decimal("0.333"),
        base_url: str = "https://api.prolific.com/api/v1/",
    ) -> None:
        self.workspace = workspace or self.new_id()
        self.project = project or self.new_id()
        self.currency = currency
        self.balance = balance
        self.fee_rate = fee_rate
        self.base_url = base_url
        self.researcher = self.new_id()
        self.studies: dict[str, dict[str, Any]] = {}
        self.submissions: dict[str, dict[str, Any]] = {}
        self.groups: dict[str, set[str]] = {}
        self.group_info: dict[str, dict[str, Any]] = {}
        self.messages: list[dict[str, Any]] = []
        self.bulk_bonuses: dict[str, dict[str, Any]] = {}
        self.payments: list[dict[str, Any]] = []  # each pay call: the bulk bonus paid
        self.calls: list[tuple[str, str]] = []
        self.refuse: list[tuple[str, str, int, str]] = []  # (method, path regex, status, why)
        self.lost: list[tuple[str, str, int]] = []  # (method, path regex, status; 0: dropped)
        self.test_participants: dict[str, str] = {}  # participant id: email
        self._throttled = 0
        self.filter_list = filter_list_default()  # `GET filters/`; tests may change it
        # Hooks (notes §7): the workspace's one secret, subscriptions, confirmation secrets.
        self.hook_event_types = [dict(t) for t in HOOK_EVENT_TYPES]
        self.hook_secrets: dict[str, dict[str, Any]] = {}  # workspace: {id, value, workspace_id}
        self.hook_subscriptions: dict[str, dict[str, Any]] = {}
        self.hook_pending: dict[str, str] = {}  # subscription: its X-Hook-Secret
        self.hook_confirmed: set[str] = set()

    # --- test controls ---------------------------------------------------------------------

    @staticmethod
    def new_id(prefix: str = "") -> str:
        """A new id of Prolific's shape: 24 random hexadecimal characters (`prefix` is ignored:
        Prolific's ids say nothing of what they name)."""
        return secrets.token_hex(12)

    def participant(self) -> str:
        """A new participant's Prolific id."""
        return self.new_id()

    def throttle(self, calls: int) -> None:
        """Answer the next `calls` requests with 429 (Retry-After: 0)."""
        self._throttled = calls

    def fail(self, method: str, path: str, status: int = 500, why: str = "boom") -> None:
        """Refuse the next request matching (method, path regex) with `status`, doing nothing."""
        self.refuse.append((method, path, status, why))

    def lose(self, method: str, path: str, status: int = 0) -> None:
        """The next request matching (method, path regex) takes effect, then its answer is lost:
        the connection drops (`status` 0) or a gateway error comes back instead (e.g. 502)."""
        self.lost.append((method, path, status))

    def study_of(self, internal_name: str) -> dict[str, Any] | None:
        return next(
            (s for s in self.studies.values() if s.get("internal_name") == internal_name), None
        )

    def places_taken(self, study_id: str) -> int:
        return sum(
            1
            for s in self.submissions.values()
            if s["study_id"] == study_id and s["status"] not in FREED
        )

    def start(self, study_id: str, participant_id: str) -> str:
        """A participant takes a place: the submission id (SESSION_ID) Prolific gives them."""
        study = self.studies[study_id]
        assert study["status"] == "ACTIVE", f"study {study_id} is {study['status']}"
        assert self.places_taken(study_id) < study["total_available_places"], "no place left"
        mine = [
            s
            for s in self.submissions.values()
            if s["study_id"] == study_id and s["participant_id"] == participant_id
        ]
        assert not mine, "one submission per participant"
        sid = self.new_id()
        self.submissions[sid] = {
            "id": sid,
            "study_id": study_id,
            "participant_id": participant_id,
            "status": api.ACTIVE,
            "started_at": _stamp(time.time()),
            "completed_at": None,
            "study_code": None,
            "bonus_payments": [],
            "return_requested": None,
        }
        return sid

    def complete(self, submission_id: str, code: str, *, seconds: float | None = None) -> str:
        """The participant reaches the completion URL with `code`; the code's actions run.
        `seconds`: how long they took (default: from their start until now)."""
        sub = self.submissions[submission_id]
        study = self.studies[sub["study_id"]]
        found = next((c for c in study["completion_codes"] if c["code"] == code), None)
        sub["study_code"] = code
        started = _unstamp(sub["started_at"])
        sub["completed_at"] = _stamp(started + seconds if seconds is not None else time.time())
        actions = [a["action"] for a in (found or {}).get("actions", [])]
        if "AUTOMATICALLY_APPROVE" in actions:
            sub["status"] = api.APPROVED
        elif "REQUEST_RETURN" in actions:
            sub["return_requested"] = "2026-11-25T10:10:00Z"
        else:  # MANUALLY_REVIEW, or a wrong code: the researcher decides
            sub["status"] = api.AWAITING_REVIEW
        return str(sub["status"])

    def return_submission(self, submission_id: str) -> None:
        self.submissions[submission_id]["status"] = api.RETURNED

    def time_out(self, submission_id: str) -> None:
        self.submissions[submission_id]["status"] = api.TIMED_OUT

    def signed_hook(
        self, secret: str, payload: dict[str, Any], *, timestamp: int | None = None
    ) -> tuple[bytes, dict[str, str]]:
        """A webhook delivery as Prolific sends it: the body and its signing headers."""
        body = json.dumps(payload).encode()
        stamp = str(int(time.time()) if timestamp is None else timestamp)
        digest = hmac.new(secret.encode(), stamp.encode() + body, hashlib.sha256).digest()
        return body, {
            "X-Prolific-Request-Signature": base64.b64encode(digest).decode(),
            "X-Prolific-Request-Timestamp": stamp,
            "X-Timestamp": stamp,
            "X-Event-ID": self.new_id("evt"),
        }

    # --- the API ------------------------------------------------------------------------------

    def handle(self, method: str, path: str, params: dict[str, str], body: Any) -> Reply:
        self.calls.append((method, path))
        if self._throttled:
            self._throttled -= 1
            return (
                429,
                {"error": {"status": 429, "title": "Too Many Requests", "detail": "slow down"}},
                {"Retry-After": "0"},
            )
        for n, (m, pattern, status, why) in enumerate(self.refuse):
            if m == method and re.fullmatch(pattern, path):
                del self.refuse[n]
                return error(status, "Refused", why)
        lost = next(
            (n for n, (m, p, _s) in enumerate(self.lost) if m == method and re.fullmatch(p, path)),
            None,
        )
        for route_method, pattern, handler in self.routes():
            match = re.fullmatch(pattern, path)
            if route_method == method and match:
                reply: Reply = handler(params, body, *match.groups())
                if lost is not None:
                    status = self.lost.pop(lost)[2]
                    if not status:
                        raise requests.ConnectionError("Connection aborted: RemoteDisconnected")
                    return error(status, "Bad Gateway", "upstream connect error")
                return reply
        return error(404, "Not found", f"no route {method} {path}")

    def page(self, items: list[dict[str, Any]], params: dict[str, str], path: str) -> Reply:
        """A list in the reference's envelope: `results`, `_links` (self, next, previous, last:
        each an `href` or null) and `meta.count`; `page` from 1, `page_size` (default 20)."""
        page, size = int(params.get("page", 1)), int(params.get("page_size", 20))
        last = max(1, -(-len(items) // size))

        def link(n: int | None) -> dict[str, Any]:
            if n is None:
                return {"href": None, "title": None}
            query = urlencode({**params, "page": n, "page_size": size})
            return {"href": f"{self.base_url}{path}?{query}", "title": f"Page {n}"}

        links = {
            "self": link(page),
            "next": link(page + 1 if page < last else None),
            "previous": link(page - 1 if page > 1 else None),
            "last": link(last),
        }
        chunk = items[(page - 1) * size : page * size]
        return 200, {"results": chunk, "_links": links, "meta": {"count": len(items)}}, {}

    def routes(self) -> list[tuple[str, str, Any]]:
        return [
            (
                "GET",
                r"users/me/",
                lambda p, b: (200, {"id": self.researcher, "email": "lab@example.org"}, {}),
            ),
            ("GET", r"workspaces/([^/]+)/balance/", self._balance),
            ("GET", r"studies/", self._studies),
            ("GET", r"reward-recommendations/", self._reward_recommendations),
            ("POST", r"studies/", self._study_create),
            ("GET", r"studies/([^/]+)/", self._study_get),
            ("PATCH", r"studies/([^/]+)/", self._study_update),
            ("POST", r"studies/([^/]+)/transition/", self._study_transition),
            ("GET", r"studies/([^/]+)/cost/", self._study_cost),
            ("GET", r"submissions/", self._submissions),
            ("GET", r"submissions/([^/]+)/", self._submission_get),
            ("POST", r"submissions/bulk-approve/", self._bulk_approve),
            ("POST", r"submissions/bonus-payments/", self._bonus_create),
            ("POST", r"submissions/([^/]+)/transition/", self._submission_transition),
            ("POST", r"bulk-bonus-payments/([^/]+)/pay/", self._bonus_pay),
            ("GET", r"participant-groups/", self._groups),
            ("POST", r"participant-groups/", self._group_create),
            ("POST", r"participant-groups/([^/]+)/participants/", self._group_add),
            ("DELETE", r"participant-groups/([^/]+)/participants/", self._group_remove),
            ("POST", r"messages/", self._message),
            ("POST", r"messages/bulk/", self._messages_bulk),
            ("GET", r"messages/", self._messages_list),
            ("GET", r"filters/", self._filters),
            ("POST", r"researchers/participants/", self._test_participant_create),
            ("POST", r"studies/([^/]+)/test-study", self._test_study_create),
            ("GET", r"hooks/event-types/", self._hook_event_types),
            ("GET", r"hooks/secrets/", self._hook_secrets),
            ("POST", r"hooks/secrets/", self._hook_secret_create),
            ("GET", r"hooks/subscriptions/", self._hook_subscriptions),
            ("POST", r"hooks/subscriptions/", self._hook_subscribe),
            ("GET", r"hooks/subscriptions/([^/]+)/", self._hook_subscription_get),
            ("POST", r"hooks/subscriptions/([^/]+)/", self._hook_confirm),
            ("DELETE", r"hooks/subscriptions/([^/]+)/", self._hook_unsubscribe),
        ]

    def _balance(self, params: Any, body: Any, workspace: str) -> Reply:
        if workspace != self.workspace:
            return error(404, "Not found", "no such workspace")
        return (
            200,
            {
                "currency_code": self.currency,
                "total_balance": self.balance,
                "available_balance": self.balance,
            },
            {},
        )

    # Minor units per hour; None: the reference's published rates for the currency.
    reward_rates: dict[str, int] | None = None

    def _reward_recommendations(self, params: Any, body: Any) -> Reply:
        if params.get("workspace_id") != self.workspace:
            return error(404, "Not found", "no such workspace")
        if params.get("currency") not in ("GBP", "USD"):
            return error(400, "Bad request", {"currency": ["not a valid choice"]})
        rates = self.reward_rates or (
            {"min": 600, "recommended": 900}
            if params["currency"] == "GBP"
            else {"min": 800, "recommended": 1200}
        )
        row = {
            "currency": params["currency"],
            "min_reward_per_hour": rates["min"],
            "recommended_reward_per_hour": rates["recommended"],
        }
        return 200, [row], {}

    def _studies(self, params: Any, body: Any) -> Reply:
        return self.page([self._short(s) for s in self.studies.values()], params, "studies/")

    def _short(self, study: dict[str, Any]) -> dict[str, Any]:
        keys = ("id", "name", "internal_name", "status", "total_available_places", "reward")
        return {**{k: study.get(k) for k in keys}, "places_taken": self.places_taken(study["id"])}

    def _study_create(self, params: Any, body: Any) -> Reply:
        missing = [f for f in REQUIRED if f not in (body or {})]
        if missing:
            return error(400, "Bad request", {f: ["This field is required."] for f in missing})
        for field in ("total_available_places", "estimated_completion_time", "reward"):
            if not isinstance(body[field], int) or body[field] <= 0:
                return error(400, "Bad request", {field: ["A valid positive integer is required."]})
        if not body.get("completion_codes"):
            return error(
                400, "Bad request", {"completion_codes": ["Specify at least one completion code."]}
            )
        codes = [c.get("code") for c in body["completion_codes"]]
        if len(set(codes)) != len(codes):
            return error(400, "Bad request", {"completion_codes": ["Codes must be unique."]})
        for placeholder in ("{{%PROLIFIC_PID%}}", "{{%STUDY_ID%}}", "{{%SESSION_ID%}}"):
            if placeholder not in body["external_study_url"]:
                return error(
                    400, "Bad request", {"external_study_url": [f"{placeholder} is missing"]}
                )
        minimum = (
            2 + 2 * body["estimated_completion_time"] + 2 * body["estimated_completion_time"] ** 0.5
        )
        if body.get("maximum_allowed_time", minimum) < minimum:
            return error(
                400, "Bad request", {"maximum_allowed_time": [f"must be at least {minimum:.0f}"]}
            )
        refused = self._filters_refusals(body.get("filters", []))
        if refused:
            return error(400, "Bad request", {"filters": refused})
        sid = self.new_id()
        self.studies[sid] = {
            **body,
            "id": sid,
            "status": "UNPUBLISHED",
            "internal_name": body.get("internal_name") or "",
            "date_created": "2026-11-25T09:00:00.000000Z",
            "published_at": None,
            "publish_at": None,
            "is_pilot": False,
            "has_had_adjustment": False,
            "has_high_return_rate": False,
            "project": body.get("project") or self.project,
            "workspace": self.workspace,
            "share_id": None,
        }
        return 201, self.studies[sid], {}

    def _study_get(self, params: Any, body: Any, sid: str) -> Reply:
        if sid not in self.studies:
            return error(404, "Not found", "Study not found")
        return 200, {**self.studies[sid], "places_taken": self.places_taken(sid)}, {}

    def _study_update(self, params: Any, body: Any, sid: str) -> Reply:
        study = self.studies.get(sid)
        if study is None:
            return error(404, "Not found", "Study not found")
        if study["status"] != "UNPUBLISHED":
            extra = set(body) - PUBLISHED_EDITABLE
            if extra:
                return error(
                    400, "Bad request", {k: ["cannot be changed after publishing"] for k in extra}
                )
            places = body.get("total_available_places", study["total_available_places"])
            if places < study["total_available_places"]:
                return error(
                    400, "Bad request", {"total_available_places": ["can only be increased"]}
                )
            if places > study["total_available_places"] and study["status"] == "COMPLETED":
                study["status"] = "ACTIVE"  # more places reopen a stopped study
        study.update(body)
        return 200, study, {}

    def _cost(self, study: dict[str, Any]) -> int:
        rewards = study["reward"] * study["total_available_places"]
        return int(rewards + (Decimal(rewards) * self.fee_rate).to_integral_value())

    def _study_transition(self, params: Any, body: Any, sid: str) -> Reply:
        study = self.studies.get(sid)
        if study is None:
            return error(404, "Not found", "Study not found")
        action = (body or {}).get("action")
        target = TRANSITIONS.get((study["status"], action)) if isinstance(action, str) else None
        if target is None:
            return error(400, "Bad request", f"cannot {action} a study that is {study['status']}")
        if action == "PUBLISH":
            cost = self._cost(study)
            if cost > self.balance:
                return error(
                    400,
                    "Insufficient balance",
                    f"publishing needs {cost}, the workspace holds {self.balance}",
                )
            self.balance -= cost
        study["status"] = target
        return 200, study, {}

    def _study_cost(self, params: Any, body: Any, sid: str) -> Reply:
        study = self.studies.get(sid)
        if study is None:
            return error(404, "Not found", "Study not found")
        approved = sum(
            1
            for s in self.submissions.values()
            if s["study_id"] == sid and s["status"] == api.APPROVED
        )
        rewards = approved * study["reward"]
        bonuses = sum(b["amount"] for b in self.payments if b["study"] == sid)

        def leaf(amount: int) -> dict[str, Any]:
            return {"amount": amount, "currency": self.currency}

        fee = lambda amount: int((Decimal(amount) * self.fee_rate).to_integral_value())  # noqa: E731
        return (
            200,
            {
                "rewards": {"rewards": leaf(rewards), "fees": leaf(fee(rewards)), "tax": leaf(0)},
                "bonuses": {"rewards": leaf(bonuses), "fees": leaf(fee(bonuses)), "tax": leaf(0)},
            },
            {},
        )

    def _submissions(self, params: Any, body: Any) -> Reply:
        study = params.get("study")
        if not study:
            return error(400, "Bad request", {"study": ["This field is required."]})
        rows = [
            {
                k: s[k]
                for k in (
                    "id",
                    "participant_id",
                    "status",
                    "started_at",
                    "completed_at",
                    "study_code",
                    "return_requested",
                )
            }
            | {"has_siblings": False}
            for s in self.submissions.values()
            if s["study_id"] == study
        ]
        return self.page(rows, params, "submissions/")

    def _detail(self, sub: dict[str, Any]) -> dict[str, Any]:
        keys = (
            "id",
            "status",
            "study_id",
            "started_at",
            "completed_at",
            "bonus_payments",
            "return_requested",
        )
        return {
            **{k: sub[k] for k in keys},
            "participant": sub["participant_id"],
            "entered_code": sub["study_code"],
            "parent_study_id": None,
        }

    def _submission_get(self, params: Any, body: Any, sid: str) -> Reply:
        if sid not in self.submissions:
            return error(404, "Not found", "Submission not found")
        return 200, self._detail(self.submissions[sid]), {}

    def _submission_transition(self, params: Any, body: Any, sid: str) -> Reply:
        sub = self.submissions.get(sid)
        if sub is None:
            return error(404, "Not found", "Submission not found")
        action = (body or {}).get("action")
        done = {"APPROVE": api.APPROVED, "REJECT": api.REJECTED}.get(str(action))
        if done is None or not isinstance(action, str):
            return error(400, "Bad request", f"unknown action {action!r}")
        if sub["status"] == done:
            return 200, self._detail(sub), {}  # the same request again is ignored
        if sub["status"] != api.AWAITING_REVIEW:
            return error(
                400,
                "Bad request",
                f"a submission that is {sub['status']} cannot be {action.lower()}d",
            )
        if action == "REJECT":
            if body.get("rejection_category") not in api.REJECTION_CATEGORIES:
                return error(400, "Bad request", {"rejection_category": ["not a valid choice"]})
            if len(str(body.get("message", ""))) < api.REJECTION_MESSAGE_MIN:
                return error(400, "Bad request", {"message": ["at least 100 characters"]})
        sub["status"] = done
        return 200, self._detail(sub), {}

    def _bulk_approve(self, params: Any, body: Any) -> Reply:
        for sid in (body or {}).get("submission_ids", []):
            sub = self.submissions.get(sid)
            if sub is not None and sub["status"] == api.AWAITING_REVIEW:
                sub["status"] = api.APPROVED
        return 200, "Bulk approve in progress", {}

    def _bonus_create(self, params: Any, body: Any) -> Reply:
        study = (body or {}).get("study_id")
        lines = [line for line in str((body or {}).get("csv_bonuses", "")).splitlines() if line]
        taken = {s["participant_id"] for s in self.submissions.values() if s["study_id"] == study}
        rows = [line.split(",") for line in lines]
        bad = [pid for pid, _amount in rows if pid not in taken]
        if not rows or bad:
            return error(400, "Bad request", f"not participants of the study: {bad}")
        amount = sum(int(Decimal(a) * 100) for _pid, a in rows)
        fees = int((Decimal(amount) * self.fee_rate).to_integral_value())
        bid = self.new_id()
        self.bulk_bonuses[bid] = {
            "id": bid,
            "study": study,
            "rows": rows,
            "amount": amount,
            "fees": fees,
            "vat": 0,
            "total_amount": amount + fees,
        }
        return 201, {k: v for k, v in self.bulk_bonuses[bid].items() if k != "rows"}, {}

    def _bonus_pay(self, params: Any, body: Any, bid: str) -> Reply:
        bonus = self.bulk_bonuses.get(bid)
        if bonus is None:
            return error(404, "Not found", "no such bonus payment")
        self.payments.append(bonus)  # as documented: paying again pays again
        for pid, amount in bonus["rows"]:
            for sub in self.submissions.values():
                if sub["study_id"] == bonus["study"] and sub["participant_id"] == pid:
                    sub["bonus_payments"].append(int(Decimal(amount) * 100))
        return 202, None, {}

    def _group(self, gid: str) -> dict[str, Any]:
        return {**self.group_info[gid], "participant_count": len(self.groups[gid])}

    def _groups(self, params: Any, body: Any) -> Reply:
        workspace = params.get("workspace_id")
        if not workspace and not params.get("organisation_id"):
            return error(
                400, "Bad request", {"workspace_id": ["a workspace or organisation is required"]}
            )
        found = [
            self._group(g) for g, i in self.group_info.items() if i["workspace_id"] == workspace
        ]
        return self.page(found, params, "participant-groups/")

    def _group_create(self, params: Any, body: Any) -> Reply:
        if not (body or {}).get("name") or (body or {}).get("workspace_id") != self.workspace:
            return error(
                400, "Bad request", {"workspace_id": ["a workspace of this account is required"]}
            )
        gid = self.new_id()
        self.groups[gid] = set(body.get("participant_ids", []))
        self.group_info[gid] = {
            "id": gid,
            "name": body["name"],
            "description": body.get("description"),
            "workspace_id": self.workspace,
            "organisation_id": None,
            "is_deleted": False,
            "feeder_studies": [],
        }
        return 201, self._group(gid), {}

    def _group_add(self, params: Any, body: Any, gid: str) -> Reply:
        if gid not in self.groups:
            return error(404, "Not found", "no such group")
        self.groups[gid] |= set((body or {}).get("participant_ids", []))
        return 200, {"results": [{"participant_id": p} for p in sorted(self.groups[gid])]}, {}

    def _group_remove(self, params: Any, body: Any, gid: str) -> Reply:
        if gid not in self.groups:
            return error(404, "Not found", "no such group")
        self.groups[gid] -= set((body or {}).get("participant_ids", []))
        return 200, {"results": [{"participant_id": p} for p in sorted(self.groups[gid])]}, {}

    def _message(self, params: Any, body: Any) -> Reply:
        if not all((body or {}).get(k) for k in ("recipient_id", "study_id", "body")):
            return error(400, "Bad request", "recipient_id, study_id and body are required")
        self._message_keep(body["recipient_id"], body["study_id"], body["body"])
        return 204, None, {}

    def _message_keep(self, recipient: str, study: str, text: str) -> None:
        self.messages.append(
            {
                "id": self.new_id(),
                "recipient_id": recipient,
                "study_id": study,
                "body": text,
                "sent_at": _stamp(time.time()),
                "channel_id": secrets.token_hex(32),
            }
        )

    # --- test participants and test studies -------------------------------------------------

    test_studies_enabled = True  # a workspace without the feature answers 403

    def _test_participant_create(self, params: Any, body: Any) -> Reply:
        if not self.test_studies_enabled:
            return error(403, "Forbidden", "test participants are not enabled for this account")
        email = str((body or {}).get("email", ""))
        if "@" not in email:
            return error(400, "Bad request", {"email": ["Enter a valid email address."]})
        if email in self.test_participants.values():
            return error(400, "Bad request", {"email": ["This email is already registered."]})
        pid = self.new_id()
        self.test_participants[pid] = email
        return 201, {"participant_id": pid}, {}

    def _test_study_create(self, params: Any, body: Any, sid: str) -> Reply:
        study = self.studies.get(sid)
        if study is None:
            return error(404, "Not found", "Study not found")
        if not self.test_studies_enabled:
            return error(403, "Forbidden", "test studies are not enabled for this workspace")
        if study["status"] != "UNPUBLISHED":
            return error(400, "Bad request", "only a draft study can be tested")
        if not self.test_participants:
            return error(400, "Bad request", "the workspace has no active test participant")
        test_id = self.new_id()
        self.studies[test_id] = {
            **study,
            "id": test_id,
            "status": "ACTIVE",
            "is_test": True,
            "internal_name": f"{study.get('internal_name') or ''} (test)",
        }
        return (
            201,
            {"study_id": test_id, "study_url": f"https://app.prolific.com/studies/{test_id}"},
            {},
        )

    def _messages_list(self, params: Any, body: Any) -> Reply:
        """The researcher's messages with one participant (`user_id`), or since a time."""
        user, since = params.get("user_id"), params.get("created_after")
        if not user and not since:
            return error(400, "Bad request", "user_id or created_after is required")
        found = [
            {
                "id": m["id"],
                "sender_id": self.researcher,
                "body": m["body"],
                "sent_at": m["sent_at"],
                "channel_id": m["channel_id"],
                "type": "message",
                "data": {"study_id": m["study_id"], "category": None},
            }
            for m in self.messages
            if (not user or m["recipient_id"] == user)
            and (not since or _unstamp(m["sent_at"]) >= _unstamp(since))
        ]
        return 200, {"results": found}, {}

    def _messages_bulk(self, params: Any, body: Any) -> Reply:
        if not all((body or {}).get(k) for k in ("ids", "study_id", "body")):
            return error(400, "Bad request", "ids, study_id and body are required")
        for pid in body["ids"]:
            self._message_keep(pid, body["study_id"], body["body"])
        return 204, None, {}

    # --- filters: the list, and a study's filters checked against it -----------------------

    def _filter_vocabulary(self, workspace: str | None) -> list[dict[str, Any]]:
        """The filter list with the workspace's groups and studies as the choices of the
        filters that take their ids (none without a workspace)."""
        mine = workspace == self.workspace
        groups = {
            gid: str(info["name"])
            for gid, info in self.group_info.items()
            if mine and not info.get("is_deleted")
        }
        studies = {sid: str(s.get("name", "")) for sid, s in self.studies.items() if mine}
        dynamic = {"ParticipantGroupID": groups, "StudyID": studies}
        return [
            {**f, "choices": dynamic[f["data_type"]]} if f.get("data_type") in dynamic else f
            for f in self.filter_list
        ]

    def _filters(self, params: Any, body: Any) -> Reply:
        return self.page(self._filter_vocabulary(params.get("workspace_id")), params, "filters/")

    def _filters_refusals(self, filters: Any) -> list[str]:
        """What Prolific would refuse in a study's filters: an unknown filter_id, values that
        are not a select filter's choice ids, a range on a select filter (or values on a range
        filter), bounds that are not numbers or lie outside the filter's."""
        if not isinstance(filters, list):
            return ["Expected a list of filters."]
        listed = {f["filter_id"]: f for f in self._filter_vocabulary(self.workspace)}
        refused: list[str] = []
        for rule in filters:
            filter_id = rule.get("filter_id") if isinstance(rule, dict) else None
            known = listed.get(filter_id) if isinstance(filter_id, str) else None
            if known is None:
                refused.append(f"{filter_id!r} is not a valid filter_id.")
                continue
            if known["type"] == "select":
                values = rule.get("selected_values")
                if "selected_range" in rule or not isinstance(values, list):
                    refused.append(f"{filter_id} is a select filter: give selected_values.")
                    continue
                wrong = [v for v in values if not isinstance(v, str) or v not in known["choices"]]
                if wrong:
                    refused.append(f"{filter_id}: {wrong} are not valid choices.")
                continue
            bounds = rule.get("selected_range")
            if "selected_values" in rule or not isinstance(bounds, dict):
                refused.append(f"{filter_id} is a range filter: give selected_range.")
                continue
            try:
                low, high = (
                    None if bounds.get(k) is None else float(bounds[k]) for k in ("lower", "upper")
                )
            except (TypeError, ValueError):
                refused.append(f"{filter_id}: the bounds must be numbers.")
                continue
            given = [b for b in (low, high) if b is not None]
            if (low is not None and high is not None and low > high) or any(
                not known["min"] <= b <= known["max"] for b in given
            ):
                refused.append(
                    f"{filter_id}: the range must lie within {known['min']}-{known['max']}."
                )
        return refused

    # --- hooks: the workspace's secret, event types, subscriptions and their confirmation ---

    def _hook_event_types(self, params: Any, body: Any) -> Reply:
        return 200, {"results": [dict(t) for t in self.hook_event_types]}, {}

    def _hook_workspace_refusal(self, workspace: Any) -> Reply | None:
        if not workspace:
            return error(400, "Bad request", {"workspace_id": ["This field is required."]})
        if workspace != self.workspace:
            return error(404, "Not found", "no such workspace")
        return None

    def _hook_secrets(self, params: Any, body: Any) -> Reply:
        refused = self._hook_workspace_refusal(params.get("workspace_id"))
        if refused:
            return refused
        return 200, {"results": list(self.hook_secrets.values())}, {}

    def _hook_secret_create(self, params: Any, body: Any) -> Reply:
        workspace = str((body or {}).get("workspace_id") or "")
        refused = self._hook_workspace_refusal(workspace)
        if refused:
            return refused
        made = {"id": self.new_id(), "value": secrets.token_urlsafe(48), "workspace_id": workspace}
        self.hook_secrets = {workspace: made}  # one active secret: a new one replaces the old
        return 201, made, {}

    def _hook_subscriptions(self, params: Any, body: Any) -> Reply:
        refused = self._hook_workspace_refusal(params.get("workspace_id"))
        if refused:
            return refused
        found = list(self.hook_subscriptions.values())
        enabled = str(params.get("is_enabled", "")).lower()
        if enabled in ("true", "false"):
            found = [s for s in found if s["is_enabled"] == (enabled == "true")]
        return 200, {"results": found, "meta": {"count": len(found)}}, {}

    def _hook_subscribe(self, params: Any, body: Any) -> Reply:
        body = body or {}
        missing = [f for f in ("event_type", "target_url", "workspace_id") if not body.get(f)]
        if missing:
            return error(400, "Bad request", {f: ["This field is required."] for f in missing})
        refused = self._hook_workspace_refusal(body["workspace_id"])
        if refused:
            return refused
        if body["event_type"] not in {t["event_type"] for t in self.hook_event_types}:
            return error(400, "Bad request", {"event_type": ["not a valid event type"]})
        if not str(body["target_url"]).startswith("https://"):
            return error(400, "Bad request", {"target_url": ["must be a public https URL"]})
        if body["workspace_id"] not in self.hook_secrets:
            return error(400, "Bad request", "create a secret for the workspace first")
        sid = self.new_id()
        self.hook_subscriptions[sid] = {
            "id": sid,
            "event_type": body["event_type"],
            "target_url": body["target_url"],
            "is_enabled": bool(body.get("is_enabled", True)),
            "workspace_id": body["workspace_id"],
        }
        self.hook_pending[sid] = secrets.token_hex(32)  # confirmed with this, once
        return 201, self.hook_subscriptions[sid], {"X-Hook-Secret": self.hook_pending[sid]}

    def _hook_subscription_get(self, params: Any, body: Any, sid: str) -> Reply:
        if sid not in self.hook_subscriptions:
            return error(404, "Not found", "no such subscription")
        return 200, self.hook_subscriptions[sid], {}

    def _hook_confirm(self, params: Any, body: Any, sid: str) -> Reply:
        if sid not in self.hook_subscriptions:
            return error(404, "Not found", "no such subscription")
        if sid not in self.hook_confirmed:
            if (body or {}).get("secret") != self.hook_pending.get(sid):
                return error(400, "Bad request", {"secret": ["does not match X-Hook-Secret"]})
            self.hook_confirmed.add(sid)
        return 200, self.hook_subscriptions[sid], {}

    def _hook_unsubscribe(self, params: Any, body: Any, sid: str) -> Reply:
        if self.hook_subscriptions.pop(sid, None) is None:
            return error(404, "Not found", "no such subscription")
        self.hook_confirmed.discard(sid)
        return 204, None, {}

    def hook_deliveries(
        self, payload: dict[str, Any], *, timestamp: int | None = None
    ) -> list[tuple[str, bytes, dict[str, str]]]:
        """What Prolific sends for one event: (target URL, body, headers) for each confirmed,
        enabled subscription of its type, signed with the workspace's secret; one X-Event-ID."""
        targets = [
            s["target_url"]
            for sid, s in self.hook_subscriptions.items()
            if sid in self.hook_confirmed
            and s["is_enabled"]
            and s["event_type"] == payload.get("event_type")
        ]
        secret = self.hook_secrets.get(self.workspace, {}).get("value", "")
        event_id = self.new_id()
        sent = []
        for target in targets:
            body, headers = self.signed_hook(secret, payload, timestamp=timestamp)
            sent.append((target, body, {**headers, "X-Event-ID": event_id}))
        return sent


class StandInAdapter(BaseAdapter):
    """Routes a `requests.Session`'s calls under the API's base URL to the stand-in."""

    def __init__(self, standin: ProlificStandIn, base_url: str) -> None:
        super().__init__()
        self.standin = standin
        self.base_path = urlparse(base_url).path

    def send(
        self,
        request: requests.PreparedRequest,
        stream: bool = False,
        timeout: Any = None,
        verify: Any = True,
        cert: Any = None,
        proxies: Any = None,
    ) -> requests.Response:
        url = urlparse(str(request.url))
        assert str(request.headers.get("Authorization", "")).startswith("Token "), "no token sent"
        path = url.path[len(self.base_path) :] if url.path.startswith(self.base_path) else url.path
        params = {k: v[-1] for k, v in parse_qs(url.query).items()}
        raw = request.body
        assert raw is None or isinstance(raw, str | bytes), "the client sends JSON bodies"
        body = json.loads(raw) if raw else None
        status, payload, headers = self.standin.handle(str(request.method), path, params, body)
        response = requests.Response()
        response.status_code = status
        response.headers = CaseInsensitiveDict(headers)
        response._content = b"" if payload is None else json.dumps(payload).encode()
        response.url = str(request.url)
        response.request = request
        return response

    def close(self) -> None:
        return None


def standin_session(standin: ProlificStandIn, base_url: str) -> requests.Session:
    standin.base_url = base_url
    session = requests.Session()
    session.mount(base_url, StandInAdapter(standin, base_url))
    return session
