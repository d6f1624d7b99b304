"""Files written by background jobs: atomically, with their checksum."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path


def file_write_atomic(*, path: Path, data: bytes) -> str:
    """Write `data` to `path` through a temporary file and a rename, so a reader never sees a
    half-written file; returns the sha256 of `data`."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_bytes(data)
    os.replace(tmp, path)
    return hashlib.sha256(data).hexdigest()
