"""What every flow's export shares: the next version's folder, then the manifest, the
datasheet, the `Export` row and the run's status, in one transaction."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max

from annotation.models import Export, Run, RunStatus
from annotation.services.datasheet import datasheet_write
from annotation.services.files import file_write_atomic
from annotation.services.runs import run_set_status


def export_staging(*, run: Run, prefix: str, job_id: int) -> Path:
    """A folder to write large files into before the export's version is known."""
    folder = Path(settings.MEDIA_ROOT) / "exports" / f"run-{run.pk}" / f".{prefix}-job{job_id}"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


@transaction.atomic
def export_record(
    *,
    run: Run,
    format: str,
    prefix: str,
    title: str,
    manifest: dict[str, Any],
    files: dict[str, bytes] | None = None,
    staged: Path | None = None,
    main_file: str | None = None,
    checksum: str | None = None,
) -> Export:
    """Lock the run (two exports never take one version), take the next version's folder
    (`<prefix>-v<n>`, moving a `staged` folder there), write `files`, `manifest.json` (its
    `files` entry gets their sha256) and DATASHEET.md, record the export (its path the folder,
    or `main_file` in it; its checksum the manifest's unless given) and mark the run exported."""
    Run.objects.select_for_update().get(pk=run.pk)
    last = Export.objects.filter(run=run, format=format).aggregate(v=Max("version"))
    version = (last["v"] or 0) + 1
    folder = Path(settings.MEDIA_ROOT) / "exports" / f"run-{run.pk}" / f"{prefix}-v{version}"
    if staged is not None:
        os.replace(staged, folder)
    folder.mkdir(parents=True, exist_ok=True)
    if files:
        written = {name: file_write_atomic(path=folder / name, data=d) for name, d in files.items()}
        manifest["files"] = {**manifest.get("files", {}), **written}
    data = json.dumps(manifest, indent=2).encode()
    manifest_sha = file_write_atomic(path=folder / "manifest.json", data=data)
    datasheet_write(folder=folder, run=run, manifest=manifest, flow=title)
    export = Export.objects.create(
        run=run,
        format=format,
        version=version,
        path=str(folder / main_file if main_file else folder),
        checksum=checksum or manifest_sha,
        manifest=manifest,
    )
    run_set_status(run=run, status=RunStatus.EXPORTED, export=export.pk)
    return export
