"""An export's version on disk (the job around it: `export_jobs.py`): the next version's
files, manifest and datasheet written into a hidden staging folder beside the versions, renamed
into place as a whole, then the `Export` row and the run's status, in one transaction. A
failure (a full disk, say) removes the staging folder, so no half-written version is ever
visible or left behind."""

from __future__ import annotations

import json
import os
import secrets
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa
from django.db import transaction
from django.db.models import Max

from annotation.models import Export, Run, RunStatus
from annotation.paths import paths_hidden
from annotation.selectors.work.run_texts import instructions_record
from annotation.services.files import file_write_atomic, media_path
from annotation.services.jobs.jobs import job_finishing, job_succeed
from annotation.services.release.croissant import croissant_write
from annotation.services.release.dataset_card import card_write
from annotation.services.release.datasheet import DatasheetRun, datasheet_run, datasheet_write
from annotation.services.release.release_changes import changes_write, release_changes
from annotation.services.release.release_tables import release_tables_write
from annotation.services.release.release_terms import release_people, release_terms
from annotation.services.runs.runs import run_set_status


def exports_folder(run: Run) -> Path:
    """Where a run's export versions (and their hidden staging folders) live."""
    return media_path("exports", f"run-{run.pk}")  # links resolved: never outside MEDIA_ROOT


def export_scratch_folder(run: Run) -> Path:
    """A folder beside the run's versions for files made from an export after it was
    written (the demo's predictions, models, metrics): a version's folder holds its release
    and nothing else, since the exports page lists and the bundle packs all of it."""
    folder = exports_folder(run) / "scratch"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def export_discard(folder: Path | None) -> None:
    """Remove a staging folder (nothing happens if it is gone)."""
    if folder is not None:
        shutil.rmtree(folder, ignore_errors=True)


@transaction.atomic
def export_record(
    *,
    run: Run,
    format: str,
    prefix: str,
    title: str,
    manifest: dict[str, Any],
    files: dict[str, bytes] | None = None,
    tables: dict[str, pa.Table] | None = None,
    paper: str = "",
    task_categories: tuple[str, ...] = (),
    record_keys: dict[str, tuple[str, ...]] | None = None,
    terms: dict[str, Any] | None = None,
    staged: Path | None = None,
    main_file: str | None = None,
    checksum: str | None = None,
    datasheet: DatasheetRun | None = None,
) -> Export:
    """Lock the run (two exports never take one version), write `files`, `manifest.json` (its
    `files` entry gets their sha256) and DATASHEET.md into the staging folder (`staged`, or a
    new one), rename it to the next version's folder (`<prefix>-v<n>`), record the export (its
    path the folder, or `main_file` in it; its checksum the manifest's unless given) and mark
    the run exported. On any failure the staging folder (and a version folder this call made)
    is removed and the error raised. `datasheet`: the datasheet's part about the run, when the
    caller read it already (an export job reads it beside its build)."""
    Run.objects.select_for_update().get(pk=run.pk)
    # Researchers download these files: sources are named, never a server's absolute path.
    manifest = paths_hidden(manifest)
    # Every flow's manifest names the instructions' versions workers saw (consent: its own).
    manifest.setdefault("instructions", instructions_record(run))
    terms = terms or release_terms(run=run)
    manifest["release"] = {k: terms[k] for k in ("license", "creators", "citation")}
    manifest["release"]["source_licenses"] = terms["source_licenses"]
    last = Export.objects.filter(run=run, format=format).aggregate(v=Max("version"))
    version = (last["v"] or 0) + 1
    folder = exports_folder(run) / f"{prefix}-v{version}"
    work = staged or exports_folder(run) / f".{prefix}-v{version}-{secrets.token_hex(4)}"
    moved = False
    try:
        work.mkdir(parents=True, exist_ok=True)
        if files:
            written = {
                name: file_write_atomic(path=work / name, data=d) for name, d in files.items()
            }
            manifest["files"] = {**manifest.get("files", {}), **written}
        if tables:  # beside the papers' files, which `files` lists alone as before
            # The files, then the comparison, in order: beside each other, the writer's and
            # the comparison's buffers came on top of each other (CxC's peak, ~30 MB more).
            manifest["record_sets"] = release_tables_write(
                folder=work, tables=tables, license=terms["license"]
            )
            previous = Export.objects.filter(run=run, format=format, version=version - 1).first()
            changes = release_changes(previous=previous, tables=tables, keys=record_keys or {})
            manifest["changes"] = changes
            changes_write(folder=work, changes=manifest["changes"], format=format, version=version)
        data = json.dumps(manifest, indent=2).encode()
        manifest_sha = file_write_atomic(path=work / "manifest.json", data=data)
        # Read once: the datasheet, the card and Croissant state the same facts.
        of_run = datasheet or datasheet_run(run_id=run.pk)
        people = release_people(run=run)
        datasheet_write(
            folder=work, run=run, manifest=manifest, flow=title, of_run=of_run, tables=tables
        )
        card_write(
            folder=work,
            run=run,
            manifest=manifest,
            tables=tables or {},
            title=title,
            paper=paper,
            version=version,
            terms=terms,
            task_categories=task_categories,
            of_run=of_run,
            people=people,
        )
        croissant_write(
            folder=work,
            run=run,
            manifest=manifest,
            tables=tables or {},
            title=title,
            paper=paper,
            version=version,
            terms=terms,
            people=people,
            of_run=of_run,
        )
        if folder.exists():  # debris of a crash after a rename whose transaction never committed
            shutil.rmtree(folder)
        os.rename(work, folder)
        moved = True
        export = Export.objects.create(
            run=run,
            format=format,
            version=version,
            path=str(folder / main_file if main_file else folder),
            checksum=checksum or manifest_sha,
            manifest=manifest,
        )
        run_set_status(run=run, status=RunStatus.EXPORTED, export=export.pk)
    except BaseException:
        export_discard(work)
        if moved:
            export_discard(folder)
        raise
    return export


def export_finish(
    *, job_id: int, result: dict[str, Any], message: str, **record: Any
) -> Export | None:
    """An export job's finishing step: `export_record(**record)` and the job's success (its
    result gets the export's id; its message ends with the format and version, not
    the server path: pages show it, downloads are on the exports page) in one transaction
    under the job's row lock (its result names the export, never the server's folder: the
    `Export` row holds it). A job that has ended (cancelled, or finished by another delivery
    of this step) writes no version: its staging folder is removed and None returned."""
    with job_finishing(job_id=job_id) as running:
        if not running:
            export_discard(record.get("staged"))
            return None
        export = export_record(**record)
        job_succeed(
            job_id=job_id,
            result={"export": export.pk, **result},
            message=f"{message}{export.format} v{export.version}",
        )
    return export
