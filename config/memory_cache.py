"""An in-process cache that keeps the objects themselves (Django's LocMemCache pickles each
value on every set and get). For values that are never changed once stored and cannot be
pickled: a worker's task page shell holds compiled template nodes (pages/work/shell.py)."""

from __future__ import annotations

import time
from collections import OrderedDict
from threading import Lock
from typing import Any

from django.core.cache.backends.base import DEFAULT_TIMEOUT, BaseCache

# One store per LOCATION for the whole process: Django makes a cache object per thread.
_stores: dict[str, OrderedDict[str, tuple[Any, float | None]]] = {}
_locks: dict[str, Lock] = {}


class ObjectMemoryCache(BaseCache):
    """Least recently used entries go first once MAX_ENTRIES are held."""

    def __init__(self, name: str, params: dict[str, Any]) -> None:
        super().__init__(params)
        self._entries = _stores.setdefault(name, OrderedDict())
        self._lock = _locks.setdefault(name, Lock())

    def validate_key(self, key: str) -> None:
        """None of memcached's key rules (BaseCache checks every character of every key on each
        call): these keys never leave this process."""

    def _live(self, key: str) -> tuple[Any, float | None] | None:
        entry = self._entries.get(key)
        if entry is not None and entry[1] is not None and entry[1] <= time.time():
            del self._entries[key]
            return None
        return entry

    def add(
        self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None
    ) -> bool:
        key = self.make_and_validate_key(key, version=version)
        with self._lock:
            if self._live(key) is not None:
                return False
            self._store(key, value, timeout)
            return True

    def get(self, key: Any, default: Any = None, version: int | None = None) -> Any:
        key = self.make_and_validate_key(key, version=version)
        with self._lock:
            entry = self._live(key)
            if entry is None:
                return default
            self._entries.move_to_end(key)
            return entry[0]

    def set(
        self, key: Any, value: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None
    ) -> None:
        key = self.make_and_validate_key(key, version=version)
        with self._lock:
            self._store(key, value, timeout)

    def _store(self, key: str, value: Any, timeout: Any) -> None:
        self._entries[key] = (value, self.get_backend_timeout(timeout))
        self._entries.move_to_end(key)
        while len(self._entries) > self._max_entries:
            self._entries.popitem(last=False)

    def touch(self, key: Any, timeout: Any = DEFAULT_TIMEOUT, version: int | None = None) -> bool:
        key = self.make_and_validate_key(key, version=version)
        with self._lock:
            entry = self._live(key)
            if entry is None:
                return False
            self._entries[key] = (entry[0], self.get_backend_timeout(timeout))
            return True

    def delete(self, key: Any, version: int | None = None) -> bool:
        key = self.make_and_validate_key(key, version=version)
        with self._lock:
            return self._entries.pop(key, None) is not None

    def has_key(self, key: Any, version: int | None = None) -> bool:
        key = self.make_and_validate_key(key, version=version)
        with self._lock:
            return self._live(key) is not None

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
