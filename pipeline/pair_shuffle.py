"""`random.Random(text).shuffle(pair)` of a two-item list, for many seed texts at once.

The BISON export orders each record's two candidates by a generator seeded with the run's
seed and the triple's id; every version of a run's export must order them alike, so the order
is CPython's, bit for bit: `Random.seed(str)` (version 2) turns the text and its SHA-512 into
one integer whose 32-bit words key the Mersenne Twister's `init_by_array`, and `shuffle` of two
items swaps them when `_randbelow(2)`, the first 2-bit draw below 2, is 0. One generator per
text cost ~10 us at 30,000 records (most of it `init_by_array`'s 1,247 steps); here those steps
run once across all texts of one key length, as numpy rows. `tests/pipeline/test_pair_shuffle.py`
compares it with `random.Random` itself.
"""

from __future__ import annotations

from collections.abc import Sequence
from hashlib import sha512

import numpy as np

_N, _M = 624, 397  # the Mersenne Twister's state size and shift
_UPPER, _LOWER = np.uint32(0x80000000), np.uint32(0x7FFFFFFF)


def _init_genrand(seed: int) -> np.ndarray:
    state = np.zeros(_N, dtype=np.uint32)
    state[0] = seed
    for i in range(1, _N):
        prev = int(state[i - 1])
        state[i] = (1812433253 * (prev ^ (prev >> 30)) + i) & 0xFFFFFFFF
    return state


_START = _init_genrand(19650218)  # init_by_array's first step, the same for every key


def _key(text: str) -> bytes:
    """The text's key words (little-endian uint32, least significant first) as
    `Random.seed(text)` makes them: the integer of the text's bytes and their SHA-512, read
    big-endian. Its first byte is never 0 (the text is not empty), so the words are the
    reversed bytes padded to a multiple of 4."""
    data = text.encode()
    data = (data + sha512(data).digest())[::-1]
    return data + bytes(-len(data) % 4)


def _states(keys: np.ndarray) -> np.ndarray:
    """`init_by_array` of each key (rows of `keys`, one key length), as a (624, n) array."""
    n, length = keys.shape
    # (length, n); the C code adds each word and its index j: added once here.
    words = keys.T + np.arange(length, dtype=np.uint32)[:, None]
    state = np.repeat(_START[:, None], n, axis=1)
    mixed = np.empty(n, dtype=np.uint32)
    i, j = 1, 0
    for _ in range(max(_N, length)):
        np.right_shift(state[i - 1], 30, out=mixed)
        mixed ^= state[i - 1]
        mixed *= np.uint32(1664525)  # wraps modulo 2**32, as the C code's uint32
        row = state[i]
        row ^= mixed
        row += words[j]
        i, j = i + 1, j + 1
        if i >= _N:
            state[0] = state[_N - 1]
            i = 1
        if j >= length:
            j = 0
    for _ in range(_N - 1):
        np.right_shift(state[i - 1], 30, out=mixed)
        mixed ^= state[i - 1]
        mixed *= np.uint32(1566083941)
        row = state[i]
        row ^= mixed
        row -= np.uint32(i)
        i += 1
        if i >= _N:
            state[0] = state[_N - 1]
            i = 1
    state[0] = _UPPER
    return state


def _output(state: np.ndarray, m: int, rows: np.ndarray) -> np.ndarray:
    """The generators' m-th 32-bit outputs (m < 227: the twist reads only the seeded state)
    for the columns `rows`."""
    y = (state[m, rows] & _UPPER) | (state[m + 1, rows] & _LOWER)
    y = state[m + _M, rows] ^ (y >> np.uint32(1)) ^ np.where(y & 1, np.uint32(0x9908B0DF), 0)
    y = y.astype(np.uint32)
    y ^= y >> np.uint32(11)
    y ^= (y << np.uint32(7)) & np.uint32(0x9D2C5680)
    y ^= (y << np.uint32(15)) & np.uint32(0xEFC60000)
    y ^= y >> np.uint32(18)
    return y


def pairs_swapped(texts: Sequence[str]) -> np.ndarray:
    """Per seed text, whether `random.Random(text).shuffle(pair)` swaps a two-item list."""
    keys = [_key(t) for t in texts]
    swapped = np.zeros(len(keys), dtype=bool)
    sizes = np.array([len(k) for k in keys], dtype=np.int64)
    for size in np.unique(sizes).tolist():
        members = np.flatnonzero(sizes == size)
        joined = b"".join(keys[n] for n in members.tolist())
        state = _states(np.frombuffer(joined, dtype="<u4").reshape(members.size, size // 4))
        draw = np.zeros(members.size, dtype=np.uint32)
        pending = np.arange(members.size)
        m = 0
        while pending.size:  # _randbelow(2): 2-bit draws until one is below 2
            if m >= _N - _M:
                raise RuntimeError("pairs_swapped: no 2-bit draw below 2 in 227 tries")
            bits = _output(state, m, pending) >> np.uint32(30)
            done = bits < 2
            draw[pending[done]] = bits[done]
            pending = pending[~done]
            m += 1
        swapped[members] = draw == 0
    return swapped
