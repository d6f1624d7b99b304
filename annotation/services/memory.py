"""Hand memory that large exports freed back to the system. Between an export's phases the
allocators keep what they freed for reuse: glibc's heap (numpy's arrays of a few MB are
taken from it once larger ones were freed) and Arrow's pool. A worker that exported CxC's
1.3 million ratings would otherwise hold hundreds of MB it no longer uses, and the next
phase's peak would come on top of them."""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache

import pyarrow as pa


@cache
def _trim() -> ctypes._CFuncPtr | None:  # type: ignore[name-defined]
    name = ctypes.util.find_library("c")
    try:
        return ctypes.CDLL(name).malloc_trim if name else None
    except (OSError, AttributeError):  # not glibc (musl, macOS): nothing to trim
        return None


def memory_release() -> None:
    """Return the freed pages of glibc's heap and Arrow's pool to the system."""
    pa.default_memory_pool().release_unused()
    trim = _trim()
    if trim is not None:
        trim(0)


@contextmanager
def arrow_from_malloc() -> Iterator[None]:
    """Arrow allocates from the C library's malloc meanwhile, not from its own pool
    (mimalloc), which keeps the pages of an export's freed temporaries among the buffers it
    still holds (CxC's export peaked 37 MB higher with it in one measured run, and was no
    faster). A buffer is freed by the pool it came from, so switching back is safe."""
    previous = pa.default_memory_pool()
    pa.set_memory_pool(pa.system_memory_pool())
    try:
        yield
    finally:
        pa.set_memory_pool(previous)
