"""Hand memory that large exports freed back to the system. Between an export's phases the
allocators keep what they freed for reuse: glibc's heap (numpy's arrays of a few MB are
taken from it once larger ones were freed) and Arrow's pool. A worker that exported CxC's
1.3 million ratings would otherwise hold hundreds of MB it no longer uses, and the next
phase's peak would come on top of them."""

from __future__ import annotations

import ctypes
import ctypes.util
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache

import pyarrow as pa


@cache
def _glibc(function: str) -> Callable[..., int] | None:
    """The C library's `function` (malloc_trim, mallopt); None where it is not glibc (musl,
    macOS): nothing to trim or set."""
    name = ctypes.util.find_library("c")
    try:
        return getattr(ctypes.CDLL(name), function) if name else None
    except (OSError, AttributeError):
        return None


def memory_release() -> None:
    """Return the freed pages of glibc's heap and Arrow's pool to the system."""
    pa.default_memory_pool().release_unused()
    trim = _glibc("malloc_trim")
    if trim is not None:
        trim(0)


# glibc's mallopt parameter: requests from this size up are mapped on their own and unmapped
# when freed. Left to itself glibc raises it to the largest block freed so far (up to 32 MB),
# and an export's whole-column arrays of a few MB then come from the heap, whose freed pages
# stay resident between releases. CxC's export, six alternated runs: 101-112 MB at its peak
# without, 89-94 with 2 MiB, median time 2 % longer. 1 MiB: 88-90 MB but 10-15 % slower (each
# task's 1.8 MB arrays mapped afresh, and a thread's unmapping holds up the other's faults).
_M_MMAP_THRESHOLD = -3
MMAP_THRESHOLD = 2 * 1024 * 1024
# Afterwards: glibc's own ceiling, where its rule has brought a worker that freed large blocks
# (once set, the threshold no longer moves: the other jobs' block-sized temporaries keep
# coming from the heap, as before, not from fresh pages each time).
AFTER_THRESHOLD = 32 * 1024 * 1024


@contextmanager
def large_blocks_mapped() -> Iterator[bool]:
    """In the block (an export job), glibc maps every request of MMAP_THRESHOLD bytes or
    more on its own; yields whether it could (False where the C library is not glibc)."""
    mallopt = _glibc("mallopt")
    on = bool(mallopt and mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))
    try:
        yield on
    finally:
        if on and mallopt is not None:
            mallopt(_M_MMAP_THRESHOLD, AFTER_THRESHOLD)


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
