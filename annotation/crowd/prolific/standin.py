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
`return_submission` and `time_out`.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import time
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


def error(status: int, title: str, detail: Any) -> Reply:
    return (
        status,
        {"error": {"status": status, "error_code": status * 100, "title": title, "detail": detail}},
        {},
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
        self._throttled = 0

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
            "started_at": "2026-11-25T10:00:00Z",
            "completed_at": None,
            "study_code": None,
            "bonus_payments": [],
            "return_requested": None,
        }
        return sid

    def complete(self, submission_id: str, code: str) -> str:
        """The participant reaches the completion URL with `code`; the code's actions run."""
        sub = self.submissions[submission_id]
        study = self.studies[sub["study_id"]]
        found = next((c for c in study["completion_codes"] if c["code"] == code), None)
        sub["study_code"] = code
        sub["completed_at"] = "2026-11-25T10:10:00Z"
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
                )
            }
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
        self.messages.append(dict(body))
        return 204, None, {}

    def _messages_bulk(self, params: Any, body: Any) -> Reply:
        if not all((body or {}).get(k) for k in ("ids", "study_id", "body")):
            return error(400, "Bad request", "ids, study_id and body are required")
        for pid in body["ids"]:
            self.messages.append(
                {"recipient_id": pid, "study_id": body["study_id"], "body": body["body"]}
            )
        return 204, None, {}


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
