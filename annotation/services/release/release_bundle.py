"""A release bundle: one export version packed into `<prefix>-v<n>.tar.gz` beside the
version folders, with a `SHA256SUMS` of every file inside (the format `sha256sum -c` reads)
and the bundle's own sha256 in `<bundle>.sha256` beside it, ready to attach to a submission
or upload. The same packing serves `manage.py export_release` and the exports page's and
API's bundle job (`exports.bundle`). Publishing (`export_release --to`) is
annotation/publish/'s; nothing here reaches the network."""

from __future__ import annotations

import gzip
import hashlib
import io
import secrets
import tarfile
from collections.abc import Callable
from pathlib import Path

from django.db import transaction

from annotation.errors import ServiceError
from annotation.models import Export, Job, Run
from annotation.selectors.release.exports import (
    BUNDLE_JOB,
    export_bundle_path,
    export_file_entries,
    export_folder,
)
from annotation.services.checks import check_int
from annotation.services.files import file_write_atomic
from annotation.services.jobs.jobs import (
    job_create,
    job_enqueue,
    job_fail,
    job_progress,
    job_start,
    job_succeed,
)
from pipeline.errors import InputError

CHUNK = 1 << 20


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(CHUNK):
            digest.update(block)
    return digest.hexdigest()


def _anonymous(info: tarfile.TarInfo) -> tarfile.TarInfo:
    # The server's account names and ids stay on the server.
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def export_bundle_write(
    *, export: Export, progress: Callable[[float, str], None] | None = None
) -> tuple[Path, str]:
    """Pack `export`'s version (every file the exports page lists) into its .tar.gz; returns
    the bundle's path and sha256. The same version gives the same bytes (no packing time in
    the gzip header), so packing again changes no checksum."""
    folder = export_folder(export)
    files = export_file_entries(export)
    if not files:
        raise ServiceError(f"export {export.pk}'s files are gone from the server")
    sums = []
    for n, entry in enumerate(files, start=1):
        sums.append(f"{_sha256(entry.path)}  {entry.name}\n")
        if progress:
            progress(50.0 * n / len(files), f"checksums {n}/{len(files)}")
    sums_data = "".join(sums).encode()
    target = export_bundle_path(export)
    # Its own name per packing: two jobs on one version never write one file.
    partial = target.with_name(f".{target.name}.{secrets.token_hex(4)}.partial")
    try:
        with (
            partial.open("wb") as raw,
            gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0) as packed,
            tarfile.open(fileobj=packed, mode="w", format=tarfile.PAX_FORMAT) as tar,
        ):
            for n, entry in enumerate(files, start=1):
                tar.add(entry.path, arcname=f"{folder.name}/{entry.name}", filter=_anonymous)
                if progress:
                    progress(50.0 + 50.0 * n / len(files), f"packed {n}/{len(files)}")
            info = _anonymous(tarfile.TarInfo(f"{folder.name}/SHA256SUMS"))
            info.size = len(sums_data)
            info.mtime = int(max(f.path.stat().st_mtime for f in files))
            tar.addfile(info, io.BytesIO(sums_data))
        sha = _sha256(partial)
        sums_path = target.with_name(f"{target.name}.sha256")
        file_write_atomic(path=sums_path, data=f"{sha}  {target.name}\n".encode())
        partial.replace(target)  # a half-written bundle is never seen under its name
    except BaseException:
        partial.unlink(missing_ok=True)
        raise
    return target, sha


def export_version(*, run: Run, version: int | None = None) -> Export:
    """The run's export `version` (default: the newest), its files still on the server."""
    exports = Export.objects.filter(run=run).order_by("-created_at", "-pk")
    if version is None:
        export = exports.first()
        if export is None:
            raise ServiceError(f"run {run.pk} has no export")
    else:
        # 0 once meant "the newest" (it is falsy): a version is asked for or it is not.
        check_int({"version": version}, "version", low=1, high=2**31 - 1)
        export = exports.filter(version=version).first()
        if export is None:
            have = sorted(set(exports.values_list("version", flat=True)))
            raise InputError(
                f"run {run.pk} has no export version {version}; its versions: "
                + (", ".join(map(str, have)) or "none"),
                field="version",
            )
    if not export_folder(export).is_dir():
        raise ServiceError(f"export {export.pk}'s files are gone from the server")
    return export


def export_bundle_create(*, run: Run, version: int | None = None) -> tuple[Path, str]:
    """Pack the run's export `version` (default: the newest) into a .tar.gz; returns the
    bundle's path and sha256."""
    return export_bundle_write(export=export_version(run=run, version=version))


def export_bundle_start(*, export: Export) -> Job:
    """Start packing `export`'s release bundle in the background (a large export takes a
    while); the job is sent once the transaction commits."""
    from annotation import tasks

    if not export_file_entries(export):
        raise ServiceError(f"export {export.pk}'s files are gone from the server")
    with transaction.atomic():
        job = job_create(name=BUNDLE_JOB, run=export.run, params={"export": export.pk})
        job_enqueue(job=job, task=tasks.export_bundle_task)
    return job


def export_bundle_job(*, job_id: int) -> None:
    """The bundle job's one step (safe to run again: the same bytes are written)."""
    job = job_start(job_id=job_id, message="packing the release bundle")
    try:
        export = Export.objects.get(pk=job.params["export"])
        path, sha = export_bundle_write(
            export=export,
            progress=lambda percent, message: job_progress(
                job_id=job_id, progress=percent, message=message
            ),
        )
    except Exception as exc:
        job_fail(job_id=job_id, error=f"{type(exc).__name__}: {exc}")
        raise
    job_succeed(
        job_id=job_id,
        result={"export": export.pk, "bundle": path.name, "sha256": sha},
        message=f"release bundle {path.name} ready ({path.stat().st_size} bytes)",
    )
