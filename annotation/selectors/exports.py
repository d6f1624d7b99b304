"""An export's files: the plain files of its folder, the only names a download may ask for
(no path from a URL ever reaches the file system)."""

from __future__ import annotations

from pathlib import Path

from annotation.models import Export


def export_folder(export: Export) -> Path:
    path = Path(export.path)
    return path if path.is_dir() else path.parent


def export_files(export: Export) -> list[Path]:
    folder = export_folder(export)
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith("."))


def export_file_named(export: Export, name: str) -> Path | None:
    """The export's file called `name`, or None: compared with the listed names only."""
    return next((p for p in export_files(export) if p.name == name), None)


DATASHEET = "DATASHEET.md"


def export_datasheet(export: Export) -> str | None:
    """The export's datasheet as written (None when its files are gone)."""
    path = export_file_named(export, DATASHEET)
    return path.read_text(encoding="utf-8", errors="replace") if path else None
