"""Sign-in throttle (issue 25): failed sign-ins counted per account and per client address in
the database (every server process sees the same counts; a per-process cache would not).

CROWDVL_LOGIN_ACCOUNT_FAILURES failures of one username, or CROWDVL_LOGIN_ADDRESS_FAILURES from
one address, within CROWDVL_LOGIN_WINDOW_SECONDS lock that username (or address) for
CROWDVL_LOGIN_LOCK_SECONDS: every attempt is refused meanwhile, the right password included.
A success clears the account's count; `login_unlock` (manage.py login_unlock) clears a lock.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from django.conf import settings
from django.db import transaction
from django.db.models import Max, Q
from django.utils import timezone

from annotation.models import LoginScope, LoginThrottle
from annotation.services.events import event_record


def _account(username: str) -> str:
    # One count however the name is spelt: case variants of a name are not new accounts to try.
    return username.strip().lower()[:150]


def _keys(username: str | None, address: str | None) -> Q:
    keys = Q(pk__in=[])
    if username:
        keys |= Q(scope=LoginScope.ACCOUNT, key=_account(username))
    if address:
        keys |= Q(scope=LoginScope.ADDRESS, key=address[:150])
    return keys


def login_locked_until(
    *, username: str, address: str, now: datetime | None = None
) -> datetime | None:
    """When the lock on this username or address ends, or None if neither is locked."""
    now = now or timezone.now()
    rows = LoginThrottle.objects.filter(_keys(username, address), locked_until__gt=now)
    return rows.aggregate(until=Max("locked_until"))["until"]


def login_failure_record(*, username: str, address: str, now: datetime | None = None) -> None:
    """Count a failed sign-in of `username` from `address`; lock either at its limit."""
    now = now or timezone.now()
    window = timedelta(seconds=settings.CROWDVL_LOGIN_WINDOW_SECONDS)
    lock = timedelta(seconds=settings.CROWDVL_LOGIN_LOCK_SECONDS)
    limits = (
        (LoginScope.ACCOUNT, _account(username), settings.CROWDVL_LOGIN_ACCOUNT_FAILURES),
        (LoginScope.ADDRESS, address[:150], settings.CROWDVL_LOGIN_ADDRESS_FAILURES),
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
            if row.window_start <= now - window or (row.locked_until and row.locked_until <= now):
                row.failures, row.window_start, row.locked_until = 0, now, None
            row.failures += 1
            if row.failures >= limit and row.locked_until is None:
                row.locked_until = now + lock
                event_record(
                    action="login.locked",
                    data={"scope": scope, "key": key, "until": row.locked_until.isoformat()},
                )
            row.save()


def login_success_record(*, username: str) -> None:
    """A successful sign-in clears the account's count (not the address's)."""
    LoginThrottle.objects.filter(scope=LoginScope.ACCOUNT, key=_account(username)).delete()


def login_unlock(*, username: str | None = None, address: str | None = None) -> int:
    """Clear the counts and locks of `username` and/or `address`; how many were cleared."""
    deleted, _ = LoginThrottle.objects.filter(_keys(username, address)).delete()
    event_record(
        action="login.unlocked",
        data={"username": username or "", "address": address or "", "cleared": deleted},
    )
    return deleted
