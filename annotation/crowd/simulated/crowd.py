"""The simulated crowd: a client that drives the services from above, as workers' browsers do.

Seeded programmatic workers claim HITs and submit answers through the same services as the
web form (`assignment_claim_next`, `assignment_submit`); how they answer each stage comes from
the stage's flow (`Flow.answerers`), against the run's latent world (`pipeline.world`). Workers
take their profiles from a `Population` (default: every one the given profile). Each worker
keeps a simulated clock, so timings follow the profile. Batches it works on use the `simulated` provider, which makes no remote call.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from datetime import timedelta

from django.utils import timezone

from annotation.flow_registry import answerer_for
from annotation.models import Assignment, Batch, HitStatus
from annotation.run_settings import run_settings
from annotation.selectors.release.simulated_quality import run_world
from annotation.services.work.claim import assignment_claim_next
from annotation.services.work.submit import assignment_submit
from annotation.services.work.worker_identity import worker_get_or_create
from annotation.tasktypes import task_type_for
from pipeline.simulate import Population, WorkerProfile, answer_seconds
from pipeline.world import World

PROVIDER = "simulated"  # this package's provider


@dataclass
class SimulationReport:
    workers: int = 0
    assignments: int = 0
    answers: int = 0
    worker_ids: list[str] = field(default_factory=list)
    # What each simulated worker was (its profile's label), by external id.
    profiles: dict[str, str] = field(default_factory=dict)
    team: dict[str, WorkerProfile] = field(default_factory=dict)


def simulate_crowd(
    *,
    batch: Batch,
    workers: int,
    profile: WorkerProfile,
    seed: int = 0,
    id_prefix: str | None = None,
    population: Population | None = None,
) -> SimulationReport:
    """Let `workers` simulated workers take turns claiming and answering HITs until none
    are left; with a `population`, worker i has its i-th profile (at `profile`'s speed)."""
    # Seeded by the run's seed and the batch's place among the run's batches, never by
    # database ids: the same run answers the same way whatever else the database holds.
    ordinal = Batch.objects.filter(run_id=batch.run_id, pk__lt=batch.pk).count()
    rng = random.Random(f"{seed}:{run_settings(batch.run).seed}:{ordinal}")
    world = run_world(batch.run)
    prefix = id_prefix or f"sim-r{batch.run_id}-{batch.stage}"
    report = SimulationReport()
    team = [
        worker_get_or_create(provider=PROVIDER, external_id=f"{prefix}-{i:03d}")
        for i in range(workers)
    ]
    profiles = (
        population.profiles(workers, seconds_per_answer=profile.seconds_per_answer)
        if population
        else [profile] * workers
    )
    profile_of = {w.pk: p for w, p in zip(team, profiles, strict=True)}
    report.profiles = {w.external_id: profile_of[w.pk].label() for w in team}
    report.team = {w.external_id: profile_of[w.pk] for w in team}
    clocks = {w.pk: timezone.now() for w in team}
    active = list(team)
    while active:
        for worker in list(active):
            assignment = assignment_claim_next(batch=batch, worker=worker, now=clocks[worker.pk])
            if assignment is None:
                active.remove(worker)
                if not batch.hits.filter(status=HitStatus.OPEN).exists():
                    active.clear()  # every later claim would find nothing too
                    break
                continue
            answers, seconds = _answers(assignment, profile_of[worker.pk], rng, world)
            clocks[worker.pk] = assignment.accepted_at + timedelta(seconds=seconds)
            assignment_submit(
                assignment_id=assignment.pk,
                worker=worker,
                answers=answers,
                submitted_at=clocks[worker.pk],
            )
            report.assignments += 1
            report.answers += len(answers)
    report.workers = sum(1 for w in team if w.assignments.filter(hit__batch=batch).exists())
    report.worker_ids = [w.external_id for w in team]
    return report


def _answers(
    assignment: Assignment, profile: WorkerProfile, rng: random.Random, world: World
) -> tuple[dict[str, str], float]:
    stage = assignment.hit.batch.stage
    task, answer = task_type_for(stage), answerer_for(stage)
    questions = assignment.hit.questions.select_related(
        "hit__batch",
        "item__caption",
        "item__caption2",
        "item__positive",
        "item__negative",
        "item__candidate",
        "item__candidate2",
    ).prefetch_related("item__positive__captions", "item__negative__captions", "item__proposals")
    answers: dict[str, str] = {}
    seconds = 0.0
    for question in questions:
        choices = task.worker_choices(question=question)
        answers[f"q{question.position}"] = answer(question, choices, profile, rng, world)
        seconds += answer_seconds(profile, rng)
    return answers, seconds
