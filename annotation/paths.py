"""What users are told about files on this server: names, never the server's absolute paths
(issue 25). Sources and uploads are named by their original file name (and sha256) where they
are recorded; `paths_hidden` is the net under every text a non-staff user can read that may
quote an exception or a stored path (job messages, errors and results, export manifests and
datasheets, refusals of the API and the console's forms). The full text still goes to the
server's log, for the people who run it."""

from __future__ import annotations

import re
import tempfile
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import TypeVar

from django.conf import settings

T = TypeVar("T")

# Absolute paths under a server's usual top-level folders that none of the named folders
# below holds (a library's file, a folder typed on the command line). Not /work/<id>/ or
# /work/assignment/: those are the local workers' URLs.
_ELSEWHERE = re.compile(
    r"(?<![\w.:/~-])/(?:tmp|home|root|var|srv|opt|mnt|usr|etc|private|Users|Volumes"
    r"|work(?!/(?:\d+|assignment)/))(?:/[^\s\"'<>`)\]},;]+)+"
)


def _folders() -> list[tuple[str, str]]:
    """(absolute folder, what users see instead), the longest first, each as configured and
    as resolved (links followed)."""
    named: list[tuple[Path | str, str]] = [
        (settings.CROWDVL_IMPORT_DIR, "CROWDVL_IMPORT_DIR"),
        (settings.MEDIA_ROOT, "MEDIA_ROOT"),
        *((folder, "CROWDVL_IMAGE_DIRS") for folder in settings.CROWDVL_IMAGE_DIRS),
        (settings.BASE_DIR, "BASE_DIR"),
        (tempfile.gettempdir(), "TMPDIR"),
        (Path.home(), "~"),
    ]
    return _variants(tuple((str(folder), label) for folder, label in named))


@lru_cache(maxsize=8)
def _variants(named: tuple[tuple[str, str], ...]) -> list[tuple[str, str]]:
    pairs: dict[str, str] = {}
    for folder, label in named:
        for form in (Path(folder), Path(folder).resolve()):
            text = str(form).rstrip("/")
            if len(text) > 1:  # never "/" itself
                pairs.setdefault(text, label)
    return sorted(pairs.items(), key=lambda pair: len(pair[0]), reverse=True)


def _hide(text: str) -> str:
    if "/" not in text:  # no path to hide (most job messages): a list of 50 jobs reads 150 texts
        return text
    for folder, label in _folders():
        if folder in text:
            text = re.sub(re.escape(folder) + r"(?=/|\b|$)", label, text)
    return _ELSEWHERE.sub(lambda m: "…/" + m.group(0).rstrip("/").rsplit("/", 1)[-1], text)


def paths_hidden(value: T) -> T:
    """`value` (a text, or JSON-like lists and dicts of texts) with each absolute server path
    replaced: a folder of the installation by its setting's name (`CROWDVL_IMPORT_DIR/coco/
    captions.json`, `MEDIA_ROOT/...`), the temporary folder by `TMPDIR`, the home folder by
    `~`, any other by `…/<its name>`."""
    if isinstance(value, str):
        return _hide(value)  # type: ignore[return-value]
    if isinstance(value, dict):
        return {k: paths_hidden(v) for k, v in value.items()}  # type: ignore[return-value]
    if isinstance(value, list | tuple):
        return type(value)(paths_hidden(v) for v in value)
    return value


def paths_hidden_but(text: str, *, typed: Iterable[str | None]) -> str:
    """`text` with the server's paths hidden, except where it quotes what the user `typed`
    (a folder named in a form): telling them their own words back discloses nothing."""
    shown = sorted({t for t in typed if t and t.strip()}, key=len, reverse=True)
    if not shown:
        return _hide(text)
    parts = re.split("(" + "|".join(re.escape(t) for t in shown) + ")", text)
    return "".join(part if part in shown else _hide(part) for part in parts)


def path_shown(path: str | Path | None, *, original: str | None = None) -> str:
    """How users see one file of the server: `original` (an upload's own file name) if given,
    else the path with the server's folders hidden (`paths_hidden`)."""
    if original:
        return Path(original).name or original
    return "" if path is None else paths_hidden(str(path))


__all__ = ["path_shown", "paths_hidden", "paths_hidden_but"]
