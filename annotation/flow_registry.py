"""The registry of dataset flows, part of the core. Each flow is a folder under
`annotation/flows/` and a Django app whose `AppConfig.ready()` calls `flow_register`.

The core (runs, batches, HITs, assignments, providers, the demo, the API) asks this registry
which task type serves a stage, how a simulated worker answers it, which stages' worker pools
must stay disjoint at the provider, and which demo steps and API routes a flow adds. The core
never imports a flow.
"""

from __future__ import annotations

import argparse
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from annotation.models import Dataset, Question, Run
    from annotation.tasktypes.base import TaskType
    from pipeline.simulate import Population, WorkerProfile
    from pipeline.world import World

# How a simulated worker answers one question: (question, allowed values, profile, rng, the
# run's latent world) -> value.
Answerer = Callable[["Question", list[str], "WorkerProfile", random.Random, "World"], str]


@dataclass(frozen=True)
class DemoContext:
    """What a flow's demo step gets from the `demo` command: its output helpers, the imported
    sample dataset and the command's options."""

    command: Any
    dataset: Dataset
    options: dict[str, Any]
    # Rows of the quality table (annotation.selectors.release.simulated_quality.QualityRow) the
    # flows measured against the latent world; the command prints them.
    quality: list[Any] = field(default_factory=list)
    # What each flow did with the image-text model (`demo --encoder-checkpoint`), one line a
    # use; the command prints them at the end.
    encoder_uses: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class InputOption:
    """One setting of a run input, shown as a form field: `kind` is text, number, bool or
    choice (with `choices`); an option that is not `required` may be left empty (None)."""

    label: str
    kind: str = "text"
    choices: tuple[str, ...] = ()
    required: bool = False
    help: str = ""
    # Choices this installation cannot run now, with why (a model whose optional extra is not
    # installed): offered disabled, the reason beside them. Asked when a form is built.
    unavailable: Callable[[], Mapping[str, str]] | None = None


@dataclass(frozen=True)
class RunInput:
    """A file a flow's run takes after it is created (a model's embeddings, a file of
    ratings), from the run's page or `POST /api/runs/<id>/inputs/<name>/`: uploaded or named
    inside CROWDVL_IMPORT_DIR. `apply(run, path or None, options)` calls the flow's service
    and returns the message for the user and the job it started, if any."""

    label: str
    apply: Callable[[Any, Any, dict[str, Any]], tuple[str, Any]]
    file: str = "required"  # or "optional", or "none" (options only)
    file_help: str = ""
    options: Mapping[str, InputOption] = field(default_factory=dict)
    # A service's parameter named in its refusals -> this input's form field, where the names
    # differ (CxC's `image_embeddings` is the uploaded file): the refusal shows beside it.
    fields: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Flow:
    name: str
    run_kind: str
    task_types: tuple[TaskType, ...]
    # The flow's own vocabulary, (value, label) pairs from its `vocabulary.py`: the stages its
    # task types serve (the core's `stage` columns) and the item kinds it makes (the core's
    # `Item.kind`, beside the core's flow-neutral `GoldItemKind`s).
    stages: tuple[tuple[str, str], ...] = ()
    item_kinds: tuple[tuple[str, str], ...] = ()
    # Simulated workers' answer per stage (the simulated crowd client asks here).
    answerers: Mapping[str, Answerer] = field(default_factory=dict)
    # Stages whose workers must be different people; providers with pool marks (MTurk
    # qualifications) keep each stage's workers out of the others' HITs.
    disjoint_stages: tuple[str, ...] = ()
    # The `demo` command: extra options, then this flow's part, in registration order.
    demo_arguments: Callable[[argparse.ArgumentParser], None] | None = None
    demo: Callable[[DemoContext], None] | None = None
    # `quality_sweep`: run the flow on the sample for one worker population and score the
    # export against the latent world (returns QualityRow rows).
    quality_sweep: Callable[[DemoContext, Population], list[Any]] | None = None
    # A simulated run's measured quality against the latent world, for its datasheet.
    datasheet_quality: Callable[[Run], list[Any]] | None = None
    # A module with `urlpatterns`, included under /api/.
    api_urls: str | None = None
    # What each run setting means (annotation.run_settings.Setting): label, unit, range, help;
    # the new-run form and GET /api/run-kinds/ show them, a new run's config is checked by them.
    settings: tuple[Any, ...] = ()
    # The frozen, typed object a run's stored config reads as (a subclass of
    # annotation.run_settings.RunSettings, with the flow's own rules across settings in its
    # `check`); None: the shared settings only.
    settings_type: type[Any] | None = None
    # Files a run takes after it is created (run page and API): name -> RunInput.
    run_inputs: Mapping[str, RunInput] = field(default_factory=dict)
    # The run page's job buttons: name -> (label, start(run) -> Job), with their defaults.
    run_jobs: Mapping[str, tuple[str, Callable[[Any], Any]]] = field(default_factory=dict)
    # For the run's page: answer shares per model and rank (ECCV's Table B.2), if the flow has them.
    answer_shares: Callable[[Any], dict[str, Any]] | None = None
    # The run's funnel for its page: (step, count) in pipeline order; None: not started.
    funnel: Callable[[Any], list[tuple[str, int | None]]] | None = None
    # Starts the flow's export job for a run (the exports page's "New export").
    start_export: Callable[..., Any] | None = None
    # Creates a run of this flow (dataset, name, config, project, owner); None: run_create.
    create_run: Callable[..., Any] | None = None
    # Per worker (Worker pk): right and total counted answers on the run's gold items.
    worker_gold: Callable[[Any], dict[int, tuple[int, int]]] | None = None
    # The core's run statuses in the flow's words for its pages (RunStatus value -> word,
    # e.g. BISON's "prepared" -> "paired"); a status it does not name shows as stored.
    status_words: Mapping[str, str] = field(default_factory=dict)
    # What a run of the flow builds, in one sentence, and the paper it follows (the new-run
    # chooser; the exports' metadata cite the same paper).
    summary: str = ""
    paper: str = ""


_FLOWS: dict[str, Flow] = {}
_STAGES: dict[str, tuple[Flow, TaskType]] = {}


def flow_register(flow: Flow) -> Flow:
    """Add a flow; registering the same name again replaces it (Django may call ready() twice
    in tests), but two flows may not claim one stage or item kind, and every task type's
    stage must be one the flow declares."""
    declared = {value for value, _ in flow.stages}
    for task in flow.task_types:
        owner = _STAGES.get(task.stage)
        if owner is not None and owner[0].name != flow.name:
            raise ValueError(f"stage {task.stage!r} already belongs to flow {owner[0].name!r}")
        if task.stage not in declared:
            raise ValueError(f"flow {flow.name!r} does not declare its stage {task.stage!r}")
    for kind, _ in flow.item_kinds:
        other = next(
            (f for f in _FLOWS.values() if f.name != flow.name and kind in dict(f.item_kinds)), None
        )
        if other is not None:
            raise ValueError(f"item kind {kind!r} already belongs to flow {other.name!r}")
    _FLOWS[flow.name] = flow
    for task in flow.task_types:
        _STAGES[task.stage] = (flow, task)
    return flow


def flows() -> list[Flow]:
    return list(_FLOWS.values())


def flow_for_kind(run_kind: str) -> Flow | None:
    return next((f for f in _FLOWS.values() if f.run_kind == run_kind), None)


def stage_names() -> list[str]:
    """Every registered stage: what a batch's `stage` may be."""
    return [value for flow in _FLOWS.values() for value, _ in flow.stages]


def stage_label(stage: str) -> str:
    """A stage's readable name as its flow declares it (the value itself if none does)."""
    for flow in _FLOWS.values():
        label = dict(flow.stages).get(stage)
        if label is not None:
            return str(label)
    return stage


def item_kind_label(kind: str) -> str:
    """An item kind's readable name: a flow's own kind or the core's gold kinds."""
    from annotation.models import GoldItemKind

    if kind in GoldItemKind.values:
        return str(GoldItemKind(kind).label)
    for flow in _FLOWS.values():
        label = dict(flow.item_kinds).get(kind)
        if label is not None:
            return str(label)
    return kind


def run_status_word(*, kind: str, status: str) -> str:
    """A run status as the run's flow says it (the stored value where it has no word)."""
    flow = flow_for_kind(kind)
    return flow.status_words.get(status, status) if flow is not None else status


def task_type_for(stage: str) -> TaskType:
    try:
        return _STAGES[stage][1]
    except KeyError:
        raise KeyError(f"no task type for stage {stage!r}") from None


def flow_for_stage(stage: str) -> Flow:
    try:
        return _STAGES[stage][0]
    except KeyError:
        raise KeyError(f"no flow has stage {stage!r}") from None


def answerer_for(stage: str) -> Answerer:
    try:
        return flow_for_stage(stage).answerers[stage]
    except KeyError:
        raise KeyError(f"no simulated answers for stage {stage!r}") from None


def disjoint_stages(stage: str) -> tuple[str, ...]:
    """The stages whose pools must not overlap `stage`'s, `stage` included."""
    group = flow_for_stage(stage).disjoint_stages
    return group if stage in group else (stage,)
