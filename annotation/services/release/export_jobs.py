"""The one export job every flow plugs into. A flow declares an `ExportSpec` (its format,
folder prefix, datasheet title and a `build` that returns its files and manifest); the core
starts the job, runs the flow's build, and writes the version (`exports.export_finish`):
staging folder, files, manifest, datasheet, rename into `<prefix>-v<n>`, `Export` row, the
job's result, and cleanup when anything fails. One Celery task (`exports.write`) serves all."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.db import transaction
from django.utils import timezone

from annotation.json_order import keys_sorted
from annotation.models import Export, Job, Run
from annotation.selectors.money.pay import run_pay_summary
from annotation.selectors.work.invitations import consent_summary
from annotation.services.files import AtomicLines
from annotation.services.jobs.jobs import (
    job_create,
    job_enqueue,
    job_fail,
    job_finished_result,
    job_progress,
    job_start,
)
from annotation.services.release.beside import beside_pool, reads_beside
from annotation.services.release.datasheet import DatasheetRun, datasheet_run
from annotation.services.release.export_specs import export_spec_for
from annotation.services.release.exports import export_discard, export_finish, exports_folder
from annotation.services.release.memory import arrow_from_malloc, large_blocks_mapped
from annotation.services.release.release_judgments import (
    PROVENANCE_KEYS,
    PROVENANCE_SET,
    Proposers,
    label_provenance_table,
)
from annotation.services.release.release_terms import release_terms, release_terms_checked

if TYPE_CHECKING:
    import pyarrow as pa


@dataclass
class ExportParts:
    """What a flow's build returns: the rest is the skeleton's."""

    manifest: dict[str, Any]
    files: dict[str, bytes]
    result: dict[str, Any]  # the job's result (the skeleton adds the export's id)
    message: str  # the job's closing message, before "<format> v<n>"
    main_file: str | None = None  # the Export's path is this file in the folder, not the folder
    checksum: str | None = None  # the Export's checksum, if not the manifest's
    # Record set name -> its Parquet table (release_tables.py); written as `<name>.parquet`.
    tables: dict[str, pa.Table] = field(default_factory=dict)


class ExportWork:
    """What a flow's build gets: the job, its run, progress, and a staging folder (made on
    first use) for files too large to hold in memory."""

    def __init__(self, *, job_id: int, run: Run, spec: ExportSpec) -> None:
        self.job_id = job_id
        self.run = run
        self.spec = spec
        self.staged: Path | None = None
        self.streamed: dict[str, str] = {}  # name -> sha256, of the files written by `stream`

    def progress(self, percent: float, message: str) -> None:
        job_progress(job_id=self.job_id, progress=percent, message=message)

    def stream(self, name: str, write: Callable[[AtomicLines], None]) -> str:
        """Write the file `name` line by line into the staging folder through `write`;
        the manifest's `files` gets its sha256, which is returned."""
        with self.streaming(name) as lines:
            write(lines)
        return self.streamed[name]

    @contextmanager
    def streaming(self, name: str) -> Iterator[AtomicLines]:
        """`stream` as a block, for a file written alongside others (its sha256 enters the
        manifest's `files` when the block ends)."""
        if self.staged is None:
            # Hidden until renamed into the version's folder; removed if the export fails.
            self.staged = exports_folder(self.run) / f".{self.spec.prefix}-job{self.job_id}"
            self.staged.mkdir(parents=True, exist_ok=True)
        lines = AtomicLines(self.staged / name)
        yield lines
        self.streamed[name] = lines.close()


@dataclass(frozen=True)
class ExportSpec:
    """A flow's export, registered from its app's `ready()` by its name
    (`annotation.services.release.export_specs.export_spec_register`)."""

    job_name: str  # the Job's name, e.g. "bison.export"
    format: str  # Export.format, e.g. "coco-bison"
    prefix: str  # version folders are `<prefix>-v<n>`
    title: str  # the flow's name in DATASHEET.md
    first_message: str  # the job's message while the build starts
    build: Callable[[ExportWork], ExportParts] = field(repr=False)
    paper: str = ""  # the source paper's citation (Croissant's and the card's)
    task_categories: tuple[str, ...] = ()  # the Hub's task categories (the card's YAML)
    # Record set -> the columns that identify a record across versions (CHANGES.md).
    record_keys: dict[str, tuple[str, ...]] = field(default_factory=dict)
    # Per item, the machines that proposed it (ECCV's annotators): the provenance table's.
    proposers: Proposers | None = None
    # The provenance table read beside the build (it needs nothing the build makes): for
    # builds that hold little memory, since both are then held at once (not CxC's ratings).
    provenance_beside: bool = False


def export_job_start(
    *,
    run: Run,
    spec: ExportSpec,
    params: dict[str, Any] | None = None,
    release: dict[str, Any] | None = None,
) -> Job:
    """Create the export's job and send it once the transaction commits (the flow has checked
    that there is something to export). `release` (license, creators, citation) overrides
    the run's terms for this export."""
    from annotation import tasks

    if release:
        params = {**(params or {}), "release": release_terms_checked(release=release)}

    with transaction.atomic():
        job = job_create(name=spec.job_name, run=run, params=params)
        job_enqueue(job=job, task=tasks.export_write_task)
    return job


def export_job_write(*, job_id: int) -> Export | None:
    """The export job's step: the flow's build, then the version written and recorded. A
    redelivered step of a job that succeeded writes no second version (it returns the first);
    a failure removes whatever was staged, fails the job and is raised."""
    done = job_finished_result(job_id=job_id)
    if done is not None:
        export_id = done.get("export")
        return None if export_id is None else Export.objects.filter(pk=export_id).first()
    spec = export_spec_for(Job.objects.values_list("name", flat=True).get(pk=job_id))
    job = job_start(job_id=job_id, message=spec.first_message)
    run = job.run
    assert run is not None, "an export job belongs to a run"
    work = ExportWork(job_id=job_id, run=run, spec=spec)
    terms = release_terms(run=run, params=job.params)
    try:
        # Freed memory goes back between phases; an export's large arrays, when freed.
        with large_blocks_mapped(), arrow_from_malloc(), beside_pool() as pool:
            # The datasheet's part about the run needs nothing the build makes: read beside it.
            datasheet = reads_beside(pool, datasheet_run, run_id=run.pk)
            provenance = (
                reads_beside(pool, label_provenance_table, run=run, proposers=spec.proposers)
                if spec.provenance_beside
                else None
            )
            return _built_and_recorded(
                job_id=job_id,
                spec=spec,
                work=work,
                terms=terms,
                datasheet=datasheet,
                provenance=provenance,
            )
    except Exception as exc:
        export_discard(work.staged)
        job_fail(job_id=job_id, error=f"{type(exc).__name__}: {exc}")
        raise


def _built_and_recorded(
    *,
    job_id: int,
    spec: ExportSpec,
    work: ExportWork,
    terms: dict[str, Any],
    datasheet: Future[DatasheetRun],
    provenance: Future[pa.Table] | None,
) -> Export | None:
    """The flow's build, then the version written and recorded (`export_finish`)."""
    run = work.run
    parts = spec.build(work)
    manifest = parts.manifest
    tables = parts.tables
    if tables:  # every judgment behind the records, with its provenance (issue 50)
        work.progress(80, "collecting each label's provenance")
        tables = {
            **tables,
            PROVENANCE_SET: provenance.result()
            if provenance is not None
            else label_provenance_table(run=run, proposers=spec.proposers),
        }
    if work.streamed:
        manifest["files"] = {**work.streamed, **manifest.get("files", {})}
    return export_finish(
        job_id=job_id,
        result=parts.result,
        # Said where the researcher looks: the job's closing message, and every file.
        message=("UNLICENSED (give a license before publishing): " if terms["unlicensed"] else "")
        + parts.message,
        run=run,
        format=spec.format,
        prefix=spec.prefix,
        title=spec.title,
        manifest=manifest,
        files=parts.files,
        tables=tables,
        paper=spec.paper,
        task_categories=spec.task_categories,
        record_keys={**spec.record_keys, PROVENANCE_SET: PROVENANCE_KEYS},
        terms=terms,
        staged=work.staged,
        main_file=parts.main_file,
        checksum=parts.checksum,
        datasheet=datasheet.result(),
    )


def export_manifest_head(*, run: Run, format: str) -> dict[str, Any]:
    """The manifest's opening entries most flows share: format, time, run and dataset."""
    return {
        "format": format,
        "created_at": timezone.now().isoformat(),
        "run": {"id": run.pk, "name": run.name, "config": keys_sorted(run.config)},
        "dataset": {"name": run.dataset.name, "sha256": run.dataset.checksum},
    }


def export_manifest_crowd(*, run: Run) -> dict[str, Any]:
    """The manifest's entries about the people who did the work: consent text and pay."""
    return {"consent": consent_summary(run), "pay": run_pay_summary(run=run)}
