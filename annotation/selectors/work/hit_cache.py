"""What never changes once a HIT exists (its questions, the view a worker gets), cached in two
levels: this process's memory, then the shared cache (Redis, when CROWDVL_CACHE_URL is set),
so each HIT is built once for all server processes rather than once per process."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings
from django.core.cache import caches

T = TypeVar("T")
SECONDS = 6 * 3600


def hit_cached(key: str, build: Callable[[], T]) -> T:
    value: Any = caches["local"].get(key)
    if value is not None:
        return value
    shared = caches["default"] if settings.CROWDVL_CACHE_SHARED else None
    if shared is not None:
        value = shared.get(key)
    if value is None:
        value = build()
        if shared is not None:
            shared.set(key, value, SECONDS)
    caches["local"].set(key, value, SECONDS)
    return value
