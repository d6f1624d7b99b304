"""What every destination shares: the files of a release with their checksums, the interface
a destination implements, and the net that keeps tokens out of every message."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from annotation.models import Export, Publication

CHUNK = 1 << 20


@dataclass(frozen=True)
class ReleaseFile:
    """One file as a destination receives it: `name` is its path there ("/"-separated)."""

    name: str
    path: Path
    size: int
    sha256: str
    md5: str  # Zenodo's checksum
    git_sha1: str  # the Hub's id of a file kept in git (not LFS): sha1 of "blob <size>\0" + bytes


def release_file(*, name: str, path: Path) -> ReleaseFile:
    """`path`'s checksums, read once."""
    size = path.stat().st_size
    sha256, md5 = hashlib.sha256(), hashlib.md5(usedforsecurity=False)
    git = hashlib.sha1(f"blob {size}\0".encode(), usedforsecurity=False)
    with path.open("rb") as handle:
        while block := handle.read(CHUNK):
            for digest in (sha256, md5, git):
                digest.update(block)
    return ReleaseFile(
        name=name,
        path=path,
        size=size,
        sha256=sha256.hexdigest(),
        md5=md5.hexdigest(),
        git_sha1=git.hexdigest(),
    )


def redacted(text: str, secret: str) -> str:
    """`text` with `secret` (a token) blanked out: errors of clients may quote a request."""
    return text.replace(secret, "[token]") if secret else text


Say = Callable[[str], None]


class Destination(Protocol):
    """A public archive an export version is published to."""

    name: str  # "huggingface" | "zenodo": `Publication.destination`
    endpoint: str

    def target(self, requested: str) -> str:
        """The `Publication.target` for what the user asked (a repo id; Zenodo: its URL)."""
        ...

    def location(self, publication_target: str) -> str:
        """Where the files go, in words for the dry run."""
        ...

    def files(self, export: Export) -> list[ReleaseFile]:
        """Exactly the files this destination receives for `export`."""
        ...

    def publish(self, *, publication: Publication, files: list[ReleaseFile], say: Say) -> None:
        """Send what is missing, then make it public once every file's checksum matches;
        sets the row's remote id, url and files done. Raises ServiceError (clear refusal) or
        RemoteUnclear (no answer to a call with an effect)."""
        ...
