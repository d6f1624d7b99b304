"""The registry of the flows' exports: a job name and where its `ExportSpec` lives. A flow's
`ready()` registers it by name ("module:ATTRIBUTE"); the spec's module (the flow's build:
numpy, pyarrow) is imported when an export runs, never at start-up (issue 46)."""

from __future__ import annotations

from importlib import import_module
from typing import TYPE_CHECKING

from annotation.services.jobs.job_steps import JobSteps, job_steps_register

if TYPE_CHECKING:
    from annotation.services.release.export_jobs import ExportSpec

# The Celery task that runs every export's build step (annotation/tasks.py).
WRITE_TASK = "exports.write"

_SPECS: dict[str, str] = {}


def export_spec_register(*, job_name: str, spec: str) -> None:
    """Make `job_name`'s jobs runnable (and recoverable: a stalled one is re-sent) by the
    `ExportSpec` at `spec`, e.g. "annotation.flows.bison.services.export:BISON_EXPORT"."""
    _SPECS[job_name] = spec
    job_steps_register(JobSteps(name=job_name, start=WRITE_TASK))


def export_job_names() -> set[str]:
    """The Job names of every registered export (one per flow)."""
    return set(_SPECS)


def export_spec_for(job_name: str) -> ExportSpec:
    """The registered spec of `job_name`, imported; one registered under another job's name is
    a mistake."""
    module_name, _, attribute = _SPECS[job_name].partition(":")
    spec: ExportSpec = getattr(import_module(module_name), attribute)
    if spec.job_name != job_name:
        raise RuntimeError(
            f"{_SPECS[job_name]} is the export of {spec.job_name!r}, not {job_name!r}"
        )
    return spec
