"""A release bundle: one export version packed into `<prefix>-v<n>.tar.gz` beside the
version folders, with a `SHA256SUMS` of every file inside (the format `sha256sum -c` reads),
ready to attach to a submission or upload. The Hub upload itself is one documented line
with the researcher's own token (`README.md`); nothing here reaches the network."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

from annotation.errors import ServiceError
from annotation.models import Export, Run
from annotation.services.exports import exports_folder


def export_folder_of(export: Export) -> Path:
    """The version's folder (an Export's path may be its main file)."""
    path = Path(export.path)
    return path if path.is_dir() else path.parent


def export_bundle_create(*, run: Run, version: int | None = None) -> tuple[Path, str]:
    """Pack the run's export `version` (default: the newest) into a .tar.gz; returns the
    bundle's path and sha256."""
    exports = Export.objects.filter(run=run).order_by("-created_at", "-pk")
    export = (exports.filter(version=version) if version else exports).first()
    if export is None:
        raise ServiceError(f"run {run.pk} has no export" + (f" v{version}" if version else ""))
    folder = export_folder_of(export)
    if not folder.is_dir():
        raise ServiceError(f"export {export.pk}'s files are gone from the server")
    files = sorted(p for p in folder.rglob("*") if p.is_file())
    sums = "".join(
        f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(folder).as_posix()}\n"
        for p in files
    ).encode()
    target = exports_folder(run) / f"{folder.name}.tar.gz"
    partial = target.with_name(f".{target.name}.partial")
    with tarfile.open(partial, "w:gz") as tar:
        for path in files:
            tar.add(path, arcname=f"{folder.name}/{path.relative_to(folder).as_posix()}")
        info = tarfile.TarInfo(f"{folder.name}/SHA256SUMS")
        info.size = len(sums)
        tar.addfile(info, io.BytesIO(sums))
    partial.replace(target)  # a half-written bundle is never seen under its name
    return target, hashlib.sha256(target.read_bytes()).hexdigest()
