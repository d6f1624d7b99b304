"""A fixed-window rate limit in Django's cache, for requests that would write rows: anonymous
ones keyed by client address, a worker's draft saves by worker (`pages/work/drafts.py`).

Only such requests are limited: a lab behind one NAT, or a load benchmark from one address,
reading pages is never throttled. Use a shared cache (Redis) when several server processes run.
"""

from __future__ import annotations

import time

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest


def client_address(request: HttpRequest) -> str:
    """The client's address: REMOTE_ADDR, or the header a trusted proxy sets
    (CROWDVL_CLIENT_IP_HEADER, e.g. HTTP_X_REAL_IP)."""
    header = settings.CROWDVL_CLIENT_IP_HEADER
    value = request.META.get(header, "") if header else ""
    return (value.split(",")[0].strip() if value else "") or request.META.get("REMOTE_ADDR", "")


def rate_allow(scope: str, key: str, *, now: float | None = None) -> bool:
    """Count one request of `scope` from `key`; False once the scope's limit per minute is spent."""
    limit = settings.CROWDVL_RATE_LIMITS.get(scope)
    if not limit:
        return True
    window = int((now if now is not None else time.time()) // 60)
    name = f"crowdvl:rate:{scope}:{key}:{window}"
    cache.add(name, 0, timeout=120)
    try:
        used = cache.incr(name)
    except ValueError:  # evicted between add and incr
        cache.set(name, 1, timeout=120)
        used = 1
    return used <= int(limit)
