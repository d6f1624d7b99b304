"""Files written by background jobs: atomically, with their checksum."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from pathlib import Path


def file_write_atomic(*, path: Path, data: bytes) -> str:
    """Write `data` to `path` through a temporary file and a rename, so a reader never sees a
    half-written file; returns the sha256 of `data`."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # e.g. a full disk: leave nothing behind
        raise
    return hashlib.sha256(data).hexdigest()


def file_made_atomic(*, path: Path, make: Callable[[Path], None]) -> str:
    """`make(tmp)` writes the file at a temporary path, renamed to `path` once whole (as
    `file_write_atomic`, for a writer that takes a path, so that the file's bytes are never
    held in memory); returns its sha256, read back a block at a time."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    try:
        make(tmp)
        digest = hashlib.sha256()
        with tmp.open("rb") as handle:
            while block := handle.read(_HASH_BLOCK):
                digest.update(block)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return digest.hexdigest()


_HASH_BLOCK = 4 * 1024 * 1024


class AtomicLines:
    """A large text file written line by line through a temporary file; `close()` renames it
    into place and returns its sha256 (nothing is left half-written if it is never closed)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.tmp = path.with_suffix(path.suffix + ".tmp")
        self.handle = self.tmp.open("wb")
        self.digest = hashlib.sha256()

    def write(self, line: str) -> None:
        data = line.encode() + b"\n"
        self.digest.update(data)
        self.handle.write(data)

    def write_many(self, lines: Iterable[str]) -> None:
        """Many lines in one write (a slice of a large export)."""
        data = ("\n".join(lines) + "\n").encode()
        if data != b"\n":
            self.digest.update(data)
            self.handle.write(data)

    def write_bytes(self, data: bytes | memoryview) -> None:
        """Lines already encoded, each ending in its newline (an Arrow buffer)."""
        if len(data):
            self.digest.update(data)
            self.handle.write(data)

    def close(self) -> str:
        self.handle.close()
        os.replace(self.tmp, self.path)
        return self.digest.hexdigest()
