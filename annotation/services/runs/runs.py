"""Creating runs and moving them between states."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.db.models import Exists, OuterRef

from annotation.errors import ServiceError
from annotation.flow_registry import flow_for_kind, run_status_word
from annotation.models import (
    Batch,
    BatchStatus,
    Dataset,
    EventAction,
    Project,
    Run,
    RunKind,
    RunStatus,
)
from annotation.run_settings import settings_stored
from annotation.services.checks import check_name, check_stored_json
from annotation.services.events import event_record
from annotation.services.runs.projects import project_default
from pipeline.errors import InputError


def run_create(
    *,
    dataset: Dataset,
    kind: str = RunKind.BISON,
    name: str = "",
    config: dict[str, Any] | None = None,
    project: Project | None = None,
    owner: Any = None,
) -> Run:
    """A new run in `project` (the default project if none is given), owned by the user who
    asked for it from a page or the API (None from the command line)."""
    if kind not in RunKind.values:
        raise ServiceError(f"unknown run kind {kind!r}; known: {', '.join(RunKind.values)}")
    check_name(name)
    config = run_check_config(kind=kind, config=config or {})
    project = project or project_default()
    run = Run.objects.create(
        dataset=dataset, kind=kind, name=name, config=config, project=project, owner=owner
    )
    event_record(
        action=EventAction.RUN_CREATED,
        run=run,
        data={"config": run.config, "project": project.name},
    )
    return run


def run_create_any(
    *,
    kind: str,
    dataset: Dataset,
    name: str = "",
    config: dict[str, Any] | None = None,
    project: Project | None = None,
    owner: Any = None,
) -> Run:
    """A run of any flow through the flow's own creator where it has one (ECCV draws its
    query sample then), else `run_create`: what pages and the API call."""
    flow = flow_for_kind(kind)
    create = flow.create_run if flow is not None and flow.create_run is not None else None
    if create is None:
        return run_create(
            dataset=dataset, kind=kind, name=name, config=config, project=project, owner=owner
        )
    run: Run = create(dataset=dataset, name=name, config=config, project=project, owner=owner)
    return run


def run_check_config(*, kind: str, config: dict[str, Any]) -> dict[str, Any]:
    """A run's settings checked by its flow (with defaults filled in), as the CLI, the API and
    the admin all store them."""
    if not isinstance(config, dict):
        raise InputError("must be an object of settings", field="config")
    stored = settings_stored(kind=kind, config=config)  # each setting names its own field
    check_stored_json(stored, field="config")
    return stored


def run_set_status(*, run: Run, status: str, **data: Any) -> None:
    previous = run.status
    Run.objects.filter(pk=run.pk).update(status=status)
    run.status = status
    event_record(
        action=EventAction.RUN_STATUS, run=run, data={"from": previous, "to": status, **data}
    )


# A stage's working status and the one saying that its batches have all ended.
WORK_DONE: dict[str, str] = {
    RunStatus.COLLECTING: RunStatus.COLLECTED,
    RunStatus.COLLECTING_2: RunStatus.COLLECTED_2,
}
WORKING = {done: working for working, done in WORK_DONE.items()}
ON_OFFER = (BatchStatus.PUBLISHED, BatchStatus.PAUSED)


def run_status_follow(*, run: Run, batch: Batch) -> None:
    """The run's status after `batch` ended (completed, expired) or was reopened: "collected"
    (or "collected_2") once no batch of the run is on offer, "collecting" (or "collecting_2")
    again when one is. Other statuses (exported, failed) are the run's own and stay."""
    if _status_to_follow(run) is None:  # one statement on a worker's submit: mostly nothing
        return
    with transaction.atomic():
        # Again under the run's lock: two batches ending at once must not both move it.
        Run.objects.select_for_update().values_list("pk", flat=True).get(pk=run.pk)
        target = _status_to_follow(run)
        if target is not None:
            run_set_status(run=run, status=target, batch=batch.pk, batch_status=batch.status)


def _status_to_follow(run: Run) -> str | None:
    """The status `run` should move to now that its batches changed (None: stay); reads
    the run's current status into `run`."""
    on_offer = Exists(Batch.objects.filter(run_id=OuterRef("pk"), status__in=ON_OFFER))
    run.status, live = (
        Run.objects.filter(pk=run.pk).annotate(live=on_offer).values_list("status", "live").get()
    )
    return WORKING.get(run.status) if live else WORK_DONE.get(run.status)


def run_require_status(*, run: Run, allowed: set[str], action: str) -> None:
    if run.status not in allowed:
        word = run_status_word(kind=run.kind, status=run.status)
        raise ServiceError(
            f"cannot {action}: run {run.pk} is {word}"
            f"{'' if word == run.status else f' ({run.status!r})'} "
            f"(needs one of {', '.join(sorted(allowed))})"
        )


__all__ = [
    "RunStatus",
    "run_create",
    "run_require_status",
    "run_set_status",
    "run_status_follow",
]
