"""Files written by background jobs: atomically, with their checksum, and only under
MEDIA_ROOT, named from users' words only through `path_component` (issue 47)."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable
from pathlib import Path

from django.conf import settings

from pipeline.errors import InputError

_UNSAFE = re.compile(r"[^A-Za-z0-9._@+-]+")


def path_component(text: str, *, limit: int = 80) -> str:
    """`text` (a user's word: a model name, an upload's name) as one safe file or folder
    name: letters, digits and ._@+- only, never hidden, never "." or "..", at most `limit`
    characters. A name that had to change gets a short hash of the original, so two names
    that differ only in what was replaced ("a/b", "a_b") never share a file."""
    slug = _UNSAFE.sub("_", text).strip("._-")[:limit].rstrip("._-")
    if slug == text and slug:
        return slug
    digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{slug or 'unnamed'}-{digest}"


def media_path(*parts: str | int | Path, field: str | None = None) -> Path:
    """MEDIA_ROOT joined with `parts`; refused (InputError naming `field`) if that, links
    resolved, lies outside MEDIA_ROOT: a ".." in a part, or a link inside the media folder
    that points elsewhere, never makes a writer write outside it."""
    given = Path(settings.MEDIA_ROOT)
    path = given.joinpath(*(str(p) for p in parts))
    # Checked resolved, returned as joined: paths stored before keep their form.
    root, resolved = given.resolve(), path.resolve()
    if resolved != root and not resolved.is_relative_to(root):
        raise InputError(
            f"{path.name!r} would be written outside the media folder (MEDIA_ROOT, a link or "
            "a '..' leads elsewhere); nothing was written",
            field=field,
        )
    return path


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

    def write_bytes(self, data: bytes | memoryview) -> None:
        """Lines already encoded, each ending in its newline (an Arrow buffer)."""
        if len(data):
            self.digest.update(data)
            self.handle.write(data)

    def close(self) -> str:
        self.handle.close()
        os.replace(self.tmp, self.path)
        return self.digest.hexdigest()
