"""A run's inputs after creation (`Flow.run_inputs`: a model's embeddings, a ratings file):
the file stored or found, the options checked, the flow's service called. Pages and the API
both come here, so both check the same way."""

from __future__ import annotations

import shutil
from typing import Any

from django.core.files.uploadedfile import UploadedFile

from annotation.flow_registry import RunInput, flow_for_kind
from annotation.models import Job, Run
from annotation.services.datasets.dataset_jobs import server_file, upload_store
from annotation.services.files import media_path
from pipeline.errors import InputError


def run_inputs_of(run: Run) -> dict[str, RunInput]:
    flow = flow_for_kind(run.kind)
    return dict(flow.run_inputs) if flow else {}


def run_input_apply(
    *,
    run: Run,
    name: str,
    options: dict[str, Any],
    upload: UploadedFile | None = None,
    path: str | None = None,
) -> tuple[str, Job | None]:
    """Check and apply one of the run's inputs: the message for the user and the job it
    started, if any. An uploaded file is kept under MEDIA_ROOT/runs/<run>/inputs/ (jobs read
    it later); if the flow refuses it, it is deleted again."""
    spec = run_inputs_of(run).get(name)
    if spec is None:
        raise InputError(f"a {run.kind} run takes no input {name!r}", field="input")
    checked = _options(spec, options)
    if upload is not None and path:
        raise InputError("give a file or a path on the server, not both", field="file")
    if spec.file == "none" and (upload is not None or path):
        raise InputError(f"{name} takes no file", field="file")
    if spec.file == "required" and upload is None and not path:
        raise InputError("choose a file to upload (or a path in the import folder)", field="file")
    # Kept with the original's suffix: services read .npz, .json, .csv by their content.
    folder = media_path("runs", run.pk, "inputs", field="file")
    stored = upload_store(upload=upload, folder=folder) if upload is not None else None
    found = stored or (server_file(path, field="path") if path else None)
    try:
        return spec.apply(run, found, checked)
    except Exception as exc:
        # Named as the user knows the file (the upload's own name, the path they gave),
        # never by where this server keeps it.
        if isinstance(exc, InputError) and found is not None and exc.file == str(found):
            exc.file = upload.name if upload is not None and upload.name else path
        if stored is not None:
            shutil.rmtree(stored.parent, ignore_errors=True)
        raise


def _options(spec: RunInput, given: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(given) - set(spec.options))
    if unknown:
        raise InputError(
            f"unknown option; known: {', '.join(spec.options) or 'none'}", field=unknown[0]
        )
    checked: dict[str, Any] = {}
    for key, option in spec.options.items():
        value = given.get(key)
        if isinstance(value, str):
            value = value.strip()
        if value in (None, ""):
            if option.required:
                raise InputError("required", field=key)
            checked[key] = False if option.kind == "bool" else None
            continue
        if option.kind == "number":
            try:
                checked[key] = float(value)
            except (TypeError, ValueError):
                raise InputError(f"must be a number, got {value!r}", field=key) from None
            if checked[key] != checked[key] or abs(checked[key]) == float("inf"):
                raise InputError(f"must be a finite number, got {value!r}", field=key)
        elif option.kind == "bool":
            checked[key] = value is True or str(value).lower() in ("1", "true", "on", "yes")
        elif option.kind == "choice":
            if value not in option.choices:
                raise InputError(f"must be one of {', '.join(option.choices)}", field=key)
            checked[key] = value
        else:
            checked[key] = str(value)[:500]
    return checked
