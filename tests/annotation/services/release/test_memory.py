"""An export job has glibc map its large blocks on their own (services/release/memory.py): a block
freed goes back to the system at once, instead of staying resident in the heap, where glibc
otherwise puts every block up to the largest one freed so far (CxC's export peak). After the
export, such blocks come from the heap again."""

import ctypes
import ctypes.util
import subprocess
import sys

import pytest

SCRIPT = """
import ctypes, sys
libc = ctypes.CDLL(ctypes.util.find_library("c"))
libc.malloc.restype, libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
class Info(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in (
        "arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks",
        "fordblks", "keepcost")]
libc.mallinfo2.restype = Info
from annotation.services.release.memory import large_blocks_mapped

def mapped_bytes_of_a_4_mb_block():
    libc.free(libc.malloc(20 << 20))  # glibc's own rule: blocks up to 20 MB from the heap now
    before = libc.mallinfo2().hblkhd
    block = libc.malloc(4 << 20)
    grown = libc.mallinfo2().hblkhd - before
    libc.free(block)
    return grown

if sys.argv[1] == "mapped":
    with large_blocks_mapped() as on:
        assert on
        print(mapped_bytes_of_a_4_mb_block())
    print(mapped_bytes_of_a_4_mb_block())  # afterwards: from the heap again
else:
    print(mapped_bytes_of_a_4_mb_block())
"""


def _mapped_bytes(mode: str) -> list[int]:
    done = subprocess.run(
        [sys.executable, "-c", "import ctypes.util\n" + SCRIPT, mode],
        capture_output=True,
        text=True,
        check=True,
    )
    return [int(line) for line in done.stdout.split()]


@pytest.mark.skipif(
    not hasattr(ctypes.CDLL(ctypes.util.find_library("c")), "mallinfo2"), reason="not glibc"
)
def test_a_large_block_is_mapped_on_its_own_in_the_block_only():
    assert _mapped_bytes("default") == [0]  # from the heap: stays resident once freed
    inside, after = _mapped_bytes("mapped")
    assert inside >= 4 << 20
    assert after == 0  # other jobs' temporaries of that size: from the heap, as before
