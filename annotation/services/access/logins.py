"""Sign-in throttle (issue 25; issue 47: it cannot be turned against a user). Failed sign-ins
are counted in the database (every server process sees the same counts) three ways:

* per (username, client address) pair: CROWDVL_LOGIN_ACCOUNT_FAILURES failures within
  CROWDVL_LOGIN_WINDOW_SECONDS lock that username *from that address* for
  CROWDVL_LOGIN_LOCK_SECONDS, the right password included;
* per client address: CROWDVL_LOGIN_ADDRESS_FAILURES failures across usernames lock the address;
* per username, from any address: past CROWDVL_LOGIN_ACCOUNT_FAILURES failures the username is
  slowed, not locked: an address that already failed on it must wait (2, 4, 8 … seconds, at
  most CROWDVL_LOGIN_SLOW_MAX_SECONDS) before its next try, while an address that has not
  failed on it is still let in with the right password. Whoever knows a username can no longer
  lock its owner out; guessing from many addresses is slowed per address and per username.

A success clears the pair's and the username's counts; `login_unlock` (manage.py login_unlock,
or the admin's sign-in throttle page) clears counts and locks.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from annotation.models import EventAction, LoginScope, LoginThrottle
from annotation.services.events import event_record


@dataclass(frozen=True)
class LoginRefusal:
    """Why an attempt is refused before the password is tried, and until when."""

    reason: str  # "pair" (this username from this address), "address", or "slowed"
    until: datetime


def _account(username: str) -> str:
    # One count however the name is spelt: case variants of a name are not new accounts to try.
    return username.strip().lower()[:100]


def _pair(username: str, address: str) -> str:
    return f"{_account(username)}|{address[:49]}"


def _keys(username: str | None, address: str | None) -> Q:
    """The rows of `username` (its own and its pairs) and/or of `address` (its own and its
    pairs)."""
    keys = Q(pk__in=[])
    if username:
        keys |= Q(scope=LoginScope.ACCOUNT, key=_account(username))
        keys |= Q(scope=LoginScope.PAIR, key__startswith=f"{_account(username)}|")
    if address:
        keys |= Q(scope=LoginScope.ADDRESS, key=address[:150])
        keys |= Q(scope=LoginScope.PAIR, key__endswith=f"|{address[:49]}")
    return keys


def login_refusal(
    *, username: str, address: str, now: datetime | None = None
) -> LoginRefusal | None:
    """Whether an attempt of `username` from `address` is refused now, and why."""
    now = now or timezone.now()
    rows = {
        row.scope: row
        for row in LoginThrottle.objects.filter(
            Q(scope=LoginScope.ACCOUNT, key=_account(username))
            | Q(scope=LoginScope.ADDRESS, key=address[:150])
            | Q(scope=LoginScope.PAIR, key=_pair(username, address))
        )
    }
    for scope, reason in ((LoginScope.ADDRESS, "address"), (LoginScope.PAIR, "pair")):
        row = rows.get(scope)
        if row is not None and row.locked_until and row.locked_until > now:
            return LoginRefusal(reason=reason, until=row.locked_until)
    slowed, pair = rows.get(LoginScope.ACCOUNT), rows.get(LoginScope.PAIR)
    window = timedelta(seconds=settings.CROWDVL_LOGIN_WINDOW_SECONDS)
    failed_here = pair is not None and pair.failures and pair.window_start > now - window
    if slowed and slowed.locked_until and slowed.locked_until > now and failed_here:
        return LoginRefusal(reason="slowed", until=slowed.locked_until)
    return None


def login_attempt_refused(*, username: str, address: str) -> LoginRefusal | None:
    """`login_refusal` for an attempt being made: a refused attempt through a pair's lock or a
    slowed username is counted against its address (the address's own lock is not)."""
    refusal = login_refusal(username=username, address=address)
    if refusal is not None and refusal.reason != "address":
        login_failure_record(username=username, address=address, refused=True)
    return refusal


def _slow_for(failures: int) -> timedelta:
    """The wait after the n-th failure of a username past its limit: doubling, capped."""
    extra = failures - settings.CROWDVL_LOGIN_ACCOUNT_FAILURES
    seconds = min(2 ** min(extra + 1, 20), settings.CROWDVL_LOGIN_SLOW_MAX_SECONDS)
    return timedelta(seconds=seconds)


def login_failure_record(
    *, username: str, address: str, now: datetime | None = None, refused: bool = False
) -> None:
    """Count a failed sign-in of `username` from `address`: lock the pair or the address at its
    limit, slow the username past its limit. An attempt `refused` before its password was
    tried (a locked pair, a slowed username) counts against the address only: an address that
    keeps trying through a lock is locked itself."""
    now = now or timezone.now()
    window = timedelta(seconds=settings.CROWDVL_LOGIN_WINDOW_SECONDS)
    lock = timedelta(seconds=settings.CROWDVL_LOGIN_LOCK_SECONDS)
    account_limit = settings.CROWDVL_LOGIN_ACCOUNT_FAILURES
    limits = (
        (
            LoginScope.PAIR,
            _pair(username, address) if address and not refused else "",
            account_limit,
        ),
        (LoginScope.ADDRESS, address[:150], settings.CROWDVL_LOGIN_ADDRESS_FAILURES),
        (LoginScope.ACCOUNT, "" if refused else _account(username), account_limit),
    )
    with transaction.atomic():
        # Counts nobody can reach any more (made-up usernames), so the table stays small.
        LoginThrottle.objects.filter(window_start__lt=now - window - lock).filter(
            Q(locked_until__isnull=True) | Q(locked_until__lte=now)
        ).delete()
        for scope, key, limit in limits:
            if not key or not limit:
                continue
            row, _ = LoginThrottle.objects.select_for_update().get_or_create(
                scope=scope, key=key, defaults={"window_start": now}
            )
            if row.window_start <= now - window or (
                scope != LoginScope.ACCOUNT and row.locked_until and row.locked_until <= now
            ):
                row.failures, row.window_start, row.locked_until = 0, now, None
            row.failures += 1
            if scope == LoginScope.ACCOUNT:
                if row.failures >= limit:  # slowed: the wait grows with each failure
                    if row.failures == limit:
                        event_record(action=EventAction.LOGIN_SLOWED, data={"key": key})
                    row.locked_until = now + _slow_for(row.failures)
            elif row.failures >= limit and row.locked_until is None:
                row.locked_until = now + lock
                event_record(
                    action=EventAction.LOGIN_LOCKED,
                    data={"scope": scope, "key": key, "until": row.locked_until.isoformat()},
                )
            row.save()


def login_success_record(*, username: str, address: str = "") -> None:
    """A successful sign-in clears the username's count and its pair's (not the address's)."""
    keys = Q(scope=LoginScope.ACCOUNT, key=_account(username))
    if address:
        keys |= Q(scope=LoginScope.PAIR, key=_pair(username, address))
    LoginThrottle.objects.filter(keys).delete()


def login_unlock(*, username: str | None = None, address: str | None = None) -> int:
    """Clear the counts and locks of `username` and/or `address` (with their pairs); how many
    were cleared."""
    deleted, _ = LoginThrottle.objects.filter(_keys(username, address)).delete()
    event_record(
        action=EventAction.LOGIN_UNLOCKED,
        data={"username": username or "", "address": address or "", "cleared": deleted},
    )
    return deleted


def login_throttle_clear(*, ids: list[int], by: str) -> int:
    """Clear the throttle rows `ids` (the admin's "clear" action); how many were cleared."""
    rows = list(LoginThrottle.objects.filter(pk__in=ids).values_list("scope", "key"))
    deleted, _ = LoginThrottle.objects.filter(pk__in=ids).delete()
    event_record(
        action=EventAction.LOGIN_UNLOCKED,
        data={"rows": [f"{scope} {key}" for scope, key in rows], "cleared": deleted, "by": by},
    )
    return deleted
