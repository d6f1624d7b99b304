"""Subscribing this installation to Prolific's webhooks, in the reference's order: the
workspace's hook secret (made only when asked or when none is configured: a new one replaces
the old at Prolific), the event types Prolific lists, then for each event handled here
(`hooks.HANDLED`) a subscription to `<CROWDVL_PUBLIC_URL>/prolific/hooks/` unless one is
listed already, confirmed with the X-Hook-Secret header of its creation's answer.

No POST is sent twice (the client never resends one): after a lost answer the secret or the
subscriptions are listed to learn what Prolific made. The secret is returned to be shown once
and put in the environment (CROWDVL_PROLIFIC_HOOK_SECRET); it is never stored here."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.urls import reverse

from annotation.crowd.prolific.client import ProlificClient, ProlificError, ProlificUnclear
from annotation.crowd.prolific.hooks import HANDLED
from annotation.errors import Reason, ServiceError, page_message
from pipeline.errors import InputError

SUBSCRIPTIONS = "hooks/subscriptions/"


@dataclass
class HookSetup:
    target_url: str
    secret: str = ""  # a new workspace secret: show it once, never store it
    subscribed: list[str] = field(default_factory=list)  # made and confirmed now
    present: list[str] = field(default_factory=list)  # subscribed before
    removed: list[str] = field(default_factory=list)  # subscription ids deleted (resubscribe)
    unlisted: list[str] = field(default_factory=list)  # handled here, not offered by Prolific
    problems: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.problems and not self.unlisted

    def lines(self) -> list[str]:
        """What was done, in words (the command prints these)."""
        lines = [f"target: {self.target_url}"]
        if self.secret:
            lines += [
                "a new workspace hook secret (shown once, stored nowhere here; Prolific signs "
                "every delivery with it from now on): put this line in the server's "
                "environment and restart the server",
                f"CROWDVL_PROLIFIC_HOOK_SECRET={self.secret}",
            ]
        return lines + self.steps()

    def steps(self, *, page: bool = False) -> list[str]:
        """The subscriptions' part of `lines` (the console shows the secret on its own, and
        its problems in its own words: `page`)."""
        lines = [f"removed subscription {sid}" for sid in self.removed]
        lines += [f"subscribed and confirmed: {e}" for e in self.subscribed]
        lines += [f"already subscribed: {e}" for e in self.present]
        lines += [f"not offered by Prolific's event types: {e}" for e in self.unlisted]
        return lines + [f"problem: {page_message(p) if page else p}" for p in self.problems]

    @property
    def page_steps(self) -> list[str]:
        return self.steps(page=True)


def _again(problem: str) -> Reason:
    """A problem that setting up again, the old subscriptions removed first, solves: the
    command names its option, the console page its checkbox."""
    return Reason(
        f"{problem} with --resubscribe",
        page=f'{problem} with "remove this server\'s subscriptions first" ticked',
    )


def hook_target_url() -> str:
    """Where Prolific delivers: this server's public address; Prolific wants public https."""
    url = settings.CROWDVL_PUBLIC_URL.rstrip("/") + reverse("prolific-hook")
    if not url.startswith("https://"):
        raise InputError(
            f"Prolific delivers only to a public https address, and the hook URL would be {url}: "
            "set CROWDVL_PUBLIC_URL to this server's public https address",
            field="CROWDVL_PUBLIC_URL",
        )
    return url


def _workspace() -> str:
    workspace = settings.CROWDVL_PROLIFIC_WORKSPACE
    if not workspace:
        raise InputError(
            "CROWDVL_PROLIFIC_WORKSPACE is not set: hooks belong to a workspace",
            field="CROWDVL_PROLIFIC_WORKSPACE",
        )
    return str(workspace)


def _results(body: Any) -> list[dict[str, Any]]:
    """A list's items; one object where the reference and Prolific's CLI disagree (creating a
    subscription: `{results: [...]}` in the reference, the object itself in the CLI)."""
    if isinstance(body, list):
        return [i for i in body if isinstance(i, dict)]
    if isinstance(body, dict):
        if isinstance(body.get("results"), list):
            return [i for i in body["results"] if isinstance(i, dict)]
        if body.get("id"):
            return [body]
    return []


def _secret_create(client: ProlificClient, workspace: str) -> str:
    try:
        made = _results(client.call("POST", "hooks/secrets/", json={"workspace_id": workspace}))
    except ProlificUnclear:
        # Prolific's CLI lists the secrets (one active per workspace): whether or not the lost
        # call made a new one, the listed one is what deliveries are signed with now.
        listed = client.call("GET", "hooks/secrets/", params={"workspace_id": workspace})
        made = [s for s in _results(listed) if s.get("workspace_id", workspace) == workspace]
    if not made or not made[-1].get("value"):
        raise ServiceError("Prolific made no hook secret (no value came back): run this again")
    return str(made[-1]["value"])


def _subscriptions(client: ProlificClient, workspace: str, target: str) -> list[dict[str, Any]]:
    # A workspace has a handful: one page (the reference documents no paging here).
    listed = client.call("GET", SUBSCRIPTIONS, params={"workspace_id": workspace})
    return [s for s in _results(listed) if s.get("target_url") == target]


def _subscribe(client: ProlificClient, report: HookSetup, workspace: str, event_type: str) -> None:
    target = report.target_url
    try:
        exchanged = client.exchange(
            "POST",
            SUBSCRIPTIONS,
            json={"event_type": event_type, "target_url": target, "workspace_id": workspace},
        )
    except ProlificUnclear as exc:
        listed = _subscriptions(client, workspace, target)
        made = [s for s in listed if s.get("event_type") == event_type]
        for sub in made:  # unconfirmable: its X-Hook-Secret was lost with the answer
            client.call("DELETE", f"{SUBSCRIPTIONS}{sub['id']}/")
            report.removed.append(str(sub["id"]))
        what = "removed what it made (no confirmation secret came back)" if made else "none made"
        report.problems.append(f"{event_type}: {exc}; {what}: run this again")
        return
    except ProlificError as exc:  # refused: nothing was made (e.g. no secret at Prolific)
        report.problems.append(f"{event_type}: {exc}")
        return
    made = _results(exchanged.body)
    secret = {k.lower(): v for k, v in exchanged.headers.items()}.get("x-hook-secret", "")
    if not made or not secret:
        report.problems.append(
            _again(
                f"{event_type}: Prolific's answer carried no subscription id or X-Hook-Secret: "
                "run this again"
            )
        )
        return
    sub_id = str(made[0]["id"])
    try:
        client.call("POST", f"{SUBSCRIPTIONS}{sub_id}/", json={"secret": secret})
    except ProlificUnclear as exc:
        report.problems.append(
            _again(
                f"{event_type}: subscription {sub_id} made, its confirmation unclear ({exc}): if "
                "no deliveries arrive, run this again"
            )
        )
        return
    report.subscribed.append(event_type)


def prolific_hooks_setup(
    *, client: ProlificClient, new_secret: bool = False, resubscribe: bool = False
) -> HookSetup:
    """Secret (when `new_secret` or none is configured) and subscriptions of the events handled
    here; `resubscribe` deletes this server's subscriptions of them first."""
    workspace = _workspace()
    report = HookSetup(target_url=hook_target_url())
    if new_secret or not settings.CROWDVL_PROLIFIC_HOOK_SECRET:
        report.secret = _secret_create(client, workspace)
    try:
        _subscribe_all(client, report, workspace, resubscribe=resubscribe)
    except ProlificError as exc:  # reported with the new secret, which must not be lost
        report.problems.append(str(exc))
    return report


def _subscribe_all(
    client: ProlificClient, report: HookSetup, workspace: str, *, resubscribe: bool
) -> None:
    offered = {str(t.get("event_type")) for t in _results(client.call("GET", "hooks/event-types/"))}
    existing = _subscriptions(client, workspace, report.target_url)
    for event_type in HANDLED:
        if event_type not in offered:
            report.unlisted.append(event_type)
            continue
        mine = [s for s in existing if s.get("event_type") == event_type]
        if mine and resubscribe:
            for sub in mine:
                client.call("DELETE", f"{SUBSCRIPTIONS}{sub['id']}/")
                report.removed.append(str(sub["id"]))
        elif mine:
            report.present.append(event_type)
            if all(s.get("is_enabled") is False for s in mine):  # e.g. after 5 days of failures
                report.problems.append(
                    _again(
                        f"{event_type}: subscribed, but disabled at Prolific: enable it there or "
                        "run this again"
                    )
                )
            continue
        _subscribe(client, report, workspace, event_type)
