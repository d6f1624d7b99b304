"""An export's files: the regular files under its version folder (`data/*.parquet` too), the
only names a download may ask for, and its release bundle beside the folder.

A download names a file by its path relative to the version folder, compared with the walk's
names as plain strings: no path from a URL ever reaches the file system, so `..`, absolute
paths and encoded slashes match nothing. The walk skips hidden entries and symbolic links
(files and folders), so nothing outside the version is ever listed or served."""

from __future__ import annotations

import os
from dataclasses import dataclass
from datetime import timedelta
from pathlib import Path

from django.db.models import Q
from django.utils import timezone

from annotation.models import Export, Job, Run
from annotation.services.jobs.jobs import LIVE

BUNDLE_JOB = "exports.bundle"  # the bundle job's Job name and Celery task


@dataclass(frozen=True)
class ExportFile:
    name: str  # the path inside the version folder, with "/" (e.g. "data/triples.parquet")
    path: Path
    size: int  # bytes


def export_folder(export: Export) -> Path:
    path = Path(export.path)
    return path if path.is_dir() else path.parent


def export_file_entries(export: Export) -> list[ExportFile]:
    """Every regular file of the version, top-level ones first, each with its size."""
    folder = export_folder(export)
    if not folder.is_dir() or folder.is_symlink():
        return []
    found = []
    # followlinks=False: a linked folder is never entered; linked files are skipped below.
    for top, dirs, names in os.walk(folder, followlinks=False):
        dirs[:] = [d for d in dirs if not d.startswith(".") and not Path(top, d).is_symlink()]
        for name in names:
            path = Path(top, name)
            if name.startswith(".") or path.is_symlink() or not path.is_file():
                continue
            relative = path.relative_to(folder).as_posix()
            found.append(ExportFile(name=relative, path=path, size=path.stat().st_size))
    return sorted(found, key=lambda f: ("/" in f.name, f.name))


def export_files(export: Export) -> list[Path]:
    return [f.path for f in export_file_entries(export)]


def export_file_named(export: Export, name: str) -> Path | None:
    """The export's file at `name` (relative, "/"-separated), or None: compared with the
    listed names only."""
    return next((f.path for f in export_file_entries(export) if f.name == name), None)


DATASHEET = "DATASHEET.md"


def export_datasheet(export: Export) -> str | None:
    """The export's datasheet as written (None when its files are gone)."""
    path = export_file_named(export, DATASHEET)
    return path.read_text(encoding="utf-8", errors="replace") if path else None


@dataclass(frozen=True)
class ExportBundle:
    name: str  # "<prefix>-v<n>.tar.gz"
    path: Path
    size: int
    sha256: str  # from its `.sha256` file, written with it


def export_bundle_path(export: Export) -> Path:
    """Where the version's release bundle lives: beside its folder, named after it."""
    folder = export_folder(export)
    return folder.parent / f"{folder.name}.tar.gz"


def export_bundle(export: Export) -> ExportBundle | None:
    """The version's release bundle once packed (None before, or when its files are gone)."""
    path = export_bundle_path(export)
    sums = path.with_name(f"{path.name}.sha256")
    if path.is_symlink() or not path.is_file() or not sums.is_file():
        return None
    sha = sums.read_text(encoding="ascii", errors="replace").split(" ", 1)[0]
    return ExportBundle(name=path.name, path=path, size=path.stat().st_size, sha256=sha)


RECENT = timedelta(hours=1)


def export_jobs_recent(*, run: Run) -> list[Job]:
    """The run's export and bundle jobs still running and those that ended within the last
    hour, newest first: what the exports page shows of them (no "reload to see")."""
    from annotation.services.release.export_specs import export_job_names

    jobs = Job.objects.filter(run=run, name__in={*export_job_names(), BUNDLE_JOB})
    since = timezone.now() - RECENT
    return list(jobs.filter(Q(state__in=LIVE) | Q(finished_at__gte=since)).order_by("-pk")[:10])


def export_bundle_jobs(*, run: Run) -> dict[int, Job]:
    """The run's bundle jobs still packing, by export id (the page says so, not a button)."""
    jobs = Job.objects.filter(run=run, name=BUNDLE_JOB, state__in=LIVE).order_by("pk")
    return {job.params.get("export"): job for job in jobs}
