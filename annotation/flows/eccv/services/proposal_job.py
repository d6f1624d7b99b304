"""The ECCV proposal job: one subtask per annotator (each computes its top-25 rankings for
the run's queries and saves them), and the subtask that finishes last merges the top-k
proposals into candidate items with their provenance."""

from __future__ import annotations

from typing import Any

import numpy as np
from django.db import transaction

from annotation.flows.eccv.models import Annotator, Proposal
from annotation.flows.eccv.services.rankings import annotator_ranking, ranking_load, ranking_save
from annotation.flows.eccv.services.runs import eccv_workdir
from annotation.flows.eccv.settings import eccv_settings
from annotation.flows.eccv.vocabulary import GOLD_DEPTH, EccvItemKind
from annotation.models import Caption, Item, Job, Run, RunKind, RunStatus
from annotation.services.jobs.jobs import (
    LIVE,
    job_create,
    job_fail,
    job_finishing,
    job_part_done,
    job_parts_set,
    job_start,
    job_succeed,
)
from annotation.services.runs.runs import run_require_status, run_set_status
from pipeline.eccv_candidates import ModelRanking, proposal_counts, propose, top_pairs
from pipeline.errors import InputError

JOB_NAME = "eccv.propose"


def eccv_propose_start(*, run: Run) -> Job:
    """Start the proposal job for a created (or failed) run with its annotators registered."""
    from annotation.flows.eccv import tasks

    if run.kind != RunKind.ECCV:
        raise InputError(f"run {run.pk} is a {run.kind} run, not eccv", field="run")
    run_require_status(
        run=run, allowed={RunStatus.CREATED, RunStatus.FAILED}, action="propose candidates"
    )
    annotators = list(run.annotators.order_by("pk"))
    wanted = eccv_settings(run).models
    if len(annotators) < wanted:
        raise InputError(
            f"the run asks for {wanted} models but {len(annotators)} are registered",
            field="models",
        )
    with transaction.atomic():
        job = job_create(name=JOB_NAME, run=run, params={"annotators": [a.pk for a in annotators]})
        run_set_status(run=run, status=RunStatus.PREPARING, job=job.pk)
        transaction.on_commit(lambda: tasks.eccv_propose_prepare_task.delay(job.pk))
    return job


def eccv_propose_prepare(*, job_id: int) -> list[int]:
    """The parts to send, one per annotator; none when an earlier delivery sent them."""
    job_start(job_id=job_id, message="ranking with each annotator")
    annotators = Job.objects.get(pk=job_id).params["annotators"]
    if not job_parts_set(job_id=job_id, total=len(annotators)):
        return []
    return list(range(len(annotators)))


def eccv_propose_part(*, job_id: int, part: int) -> None:
    """One annotator's rankings, saved to the run's folder. Safe to retry."""
    job = Job.objects.select_related("run").get(pk=job_id)
    if part in job.parts_done:  # a redelivered or re-sent part
        return
    annotator = Annotator.objects.select_related("run__dataset").get(
        pk=job.params["annotators"][part]
    )
    try:
        ranking = annotator_ranking(annotator=annotator)
    except InputError as exc:
        eccv_propose_fail(job_id=job_id, error=f"annotator {annotator.name}: {exc}")
        return
    assert job.run is not None
    ranking_save(eccv_workdir(job.run) / f"ranking-{annotator.pk}.json", ranking)
    if job_part_done(job_id=job_id, part=part, message=f"annotator {annotator.name} ranked"):
        eccv_propose_finish(job_id=job_id)


def eccv_propose_finish(*, job_id: int) -> None:
    """Merge every annotator's top-k into candidate items with their provenance."""
    job = Job.objects.select_related("run__dataset").get(pk=job_id)
    run = job.run
    assert run is not None
    # In pk order: the merged candidates (and their items' pks) follow the models' order.
    annotators = {
        a.name: a for a in run.annotators.filter(pk__in=job.params["annotators"]).order_by("pk")
    }
    rankings = {
        name: ranking_load(eccv_workdir(run) / f"ranking-{a.pk}.json")
        for name, a in annotators.items()
    }
    k = eccv_settings(run).k
    candidates = propose(rankings, k)
    counts = proposal_counts(candidates)
    excluded = top_pairs(rankings, min(GOLD_DEPTH, *(_depth(r) for r in rankings.values())))
    np.save(eccv_workdir(run) / "top_pairs.npy", excluded.keys)
    # Primary keys of the proposed images and captions only, not of the whole dataset.
    images = _pks_by_coco_id(run.dataset.images.all(), {c.image_id for c in candidates})
    captions = _pks_by_coco_id(
        Caption.objects.filter(dataset=run.dataset), {c.caption_id for c in candidates}
    )
    with job_finishing(job_id=job_id) as running:
        if not running:  # finished by another delivery of this step, or cancelled
            return
        Item.objects.bulk_create(
            [
                Item(
                    run=run,
                    kind=EccvItemKind.CANDIDATE,
                    positive_id=images[c.image_id],
                    caption_id=captions[c.caption_id],
                )
                for c in candidates
            ],
            batch_size=5000,
            ignore_conflicts=True,
        )
        item_of = {
            (image, caption): pk
            for pk, image, caption in Item.objects.filter(
                run=run, kind=EccvItemKind.CANDIDATE
            ).values_list("pk", "positive__coco_id", "caption__coco_id")
        }
        Proposal.objects.bulk_create(
            [
                Proposal(
                    item_id=item_of[c.pair],
                    annotator=annotators[p.model],
                    direction=p.direction,
                    rank=p.rank,
                )
                for c in candidates
                for p in c.proposals
            ],
            batch_size=5000,
            ignore_conflicts=True,
        )
        result = {
            "proposed": counts.proposed,
            "candidates": counts.unique,
            "per_model": counts.per_model,
            "per_direction": counts.per_direction,
            "excluded_for_gold_negatives": len(excluded),
        }
        run_set_status(run=run, status=RunStatus.PREPARED, **result)
        job_succeed(
            job_id=job_id,
            result=result,
            message=f"{counts.proposed} proposals -> {counts.unique} pairs",
        )


def _pks_by_coco_id(queryset: Any, coco_ids: set[int]) -> dict[int, int]:
    """{coco_id: pk} for the given ids, a few hundred per query (SQLite's variable limit)."""
    ids = sorted(coco_ids)
    found: dict[int, int] = {}
    for first in range(0, len(ids), 900):
        found.update(
            queryset.filter(coco_id__in=ids[first : first + 900]).values_list("coco_id", "pk")
        )
    return found


def _depth(ranking: ModelRanking) -> int:
    lengths = [len(v) for v in ranking.i2t.values()] + [len(v) for v in ranking.t2i.values()]
    return min(lengths) if lengths else GOLD_DEPTH


def eccv_propose_fail(*, job_id: int, error: str) -> None:
    """Fail a live proposal job and its run with `error`."""
    job = Job.objects.select_related("run").get(pk=job_id)
    if job.state not in LIVE:  # a late part of a cancelled or finished job changes nothing
        return
    job_fail(job_id=job_id, error=error)
    if job.run is not None:
        run_set_status(run=job.run, status=RunStatus.FAILED, error=error)
