"""Held reviews of every flow's task types, made the way work is held: a run's speed rule
(BISON has no gold) or a gold question answered wrongly (gold copied from a calibration batch
the raters agreed on; ECCV Caption's paper gold). Shared by the review page's tests."""

from __future__ import annotations

import json
from datetime import timedelta
from itertools import combinations
from typing import Any

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.flows.bison.vocabulary import BisonStage
from annotation.flows.cxc.vocabulary import CxcItemKind, CxcStage
from annotation.flows.eccv.vocabulary import EccvStage
from annotation.models import Assignment, Batch, Caption, Item, Review, Run
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.claim import assignment_claim_next
from annotation.services.work.reviews import reviews_hold_by_policy
from annotation.services.work.submit import assignment_submit
from annotation.services.work.worker_identity import worker_get_or_create
from annotation.tasktypes import task_type_for
from pipeline.simulate import WorkerProfile
from tests.factories import selection_done_factory

# A CxC stage's sampling method for the pairs made here (`cxc/services/sampling.py` STAGE_OF).
CXC_TAGS = {CxcStage.SIS: "i2i_csim", CxcStage.STS: "c2c_isim", CxcStage.SITS: "c2i_original"}


def answer_all(batch: Batch, name: str, pick: Any) -> list[int]:
    """Worker `name` claims and answers every HIT of `batch` it may (`pick(question)`)."""
    worker = worker_get_or_create(provider="local", external_id=name)
    done = []
    while (assignment := assignment_claim_next(batch=batch, worker=worker)) is not None:
        questions = assignment.hit.questions.select_related("item", "item__candidate")
        answers = {f"q{q.position}": pick(q) for q in questions}
        assignment_submit(assignment_id=assignment.pk, worker=worker, answers=answers)
        done.append(assignment.pk)
    return done


def held_fast(batch: Batch) -> Review:
    """Hold the batch's submitted work by the run's speed rule (1 s per item, the rule 5 s);
    returns the first review."""
    run = batch.run
    Run.objects.filter(pk=run.pk).update(config={**run.config, "hold_fast_seconds_per_item": 5})
    for assignment in Assignment.objects.filter(hit__batch=batch):
        n = assignment.hit.questions.count()
        Assignment.objects.filter(pk=assignment.pk).update(
            started_at=None, submitted_at=assignment.accepted_at + timedelta(seconds=n)
        )
    assert reviews_hold_by_policy(batch=Batch.objects.get(pk=batch.pk)) > 0
    return Review.objects.filter(assignment__hit__batch=batch).order_by("pk").first()


def bison_selection_held(paired_run: Run) -> Review:
    batch = selection_done_factory(paired_run, workers=1)
    return held_fast(batch)


def bison_verification_held(paired_run: Run) -> Review:
    selection_done_factory(paired_run)
    batch = batch_publish(
        batch=batch_create(
            run=paired_run, stage=BisonStage.VERIFICATION, provider="simulated", items_per_hit=3
        )
    )
    simulate_crowd(batch=batch, workers=4, profile=WorkerProfile(accuracy=0.5), id_prefix="v")
    return held_fast(batch)


def eccv_held(proposed: Run) -> Review:
    """ECCV Caption's paper gold (an original pair and a random one per HIT): a worker who
    says "Mostly NO" to everything, the caption described wrongly in colour, fails the
    positive."""
    batch = batch_publish(
        batch=batch_create(
            run=proposed, stage=EccvStage.JUDGMENT, provider="local", items_per_hit=6
        )
    )
    doubt = json.dumps(
        {"answer": "mostly_no", "reasons": ["wrong_description"], "errors": ["color"]}
    )
    taken = answer_all(batch, "doubter", lambda q: doubt)
    return Review.objects.filter(assignment_id__in=taken).order_by("pk").first()


def calibrated_then_missed(run: Run, stage: str, *, agreed: Any, missed: Any) -> Review:
    """The stage's first batch answered alike (`agreed`) by three raters, so its items are
    established; the next batch holds gold copies of them, which `missed` fails."""
    first = batch_publish(
        batch=batch_create(run=run, stage=stage, provider="local", assignments_per_hit=3, limit=4)
    )
    for name in ("rater-a", "rater-b", "rater-c"):
        answer_all(first, name, agreed)
    workers = task_type_for(stage).min_assignments  # Flickr8k-CF asks three
    second = batch_publish(
        batch=batch_create(run=run, stage=stage, provider="local", assignments_per_hit=workers)
    )
    taken = answer_all(second, "careless", missed)
    review = Review.objects.filter(assignment_id__in=taken).order_by("pk").first()
    assert review is not None, "the gold copy was not failed"
    return review


def cxc_run_with_pairs(dataset: Any, stage: str) -> Run:
    """A CxC run with eight pairs of `stage`'s modality."""
    from annotation.flows.cxc.services.sampling import cxc_run_create

    run = cxc_run_create(dataset=dataset, config={"sts_pairs": 0, "sis_pairs": 0})
    images = list(dataset.images.order_by("pk"))
    captions = list(Caption.objects.filter(dataset=dataset).order_by("pk"))
    tag = CXC_TAGS[stage]
    kind = CxcItemKind.RATING_PAIR
    if stage == CxcStage.SIS:
        items = [
            Item(run=run, kind=kind, positive=a, negative=b, tag=tag)
            for a, b in list(combinations(images, 2))[:8]
        ]
    elif stage == CxcStage.STS:
        items = [
            Item(
                run=run,
                kind=kind,
                positive=a.image,
                negative=b.image,
                caption=a,
                caption2=b,
                tag=tag,
            )
            for a, b in zip(captions[:8], captions[8:16], strict=True)
        ]
    else:
        items = [
            Item(run=run, kind=kind, positive=c.image, caption=c, tag=tag) for c in captions[:8]
        ]
    Item.objects.bulk_create(items)
    return run


def cxc_held(dataset: Any, stage: str) -> Review:
    run = cxc_run_with_pairs(dataset, stage)
    return calibrated_then_missed(run, stage, agreed=lambda q: "4", missed=lambda q: "0")


def quality_run_for(dataset: Any, tmp_path: Any) -> Run:
    """A caption-quality run: a short and a long candidate caption per image."""
    from annotation.flows.quality.services.candidates import (
        quality_candidates_import,
        quality_items_create,
        quality_run_create,
    )

    run = quality_run_create(dataset=dataset, config={"pairs_per_image": 2, "seed": 1})
    images = list(dataset.images.order_by("coco_id"))
    for name, words in (("short", 3), ("long", 6)):
        path = tmp_path / f"{name}.json"
        rows = [
            {"image_id": i.coco_id, "caption": " ".join(i.captions.first().text.split()[:words])}
            for i in images
        ]
        path.write_text(json.dumps(rows))
        quality_candidates_import(run=run, model=name, path=str(path))
    quality_items_create(run=run)
    return run


def first_caption(question: Any) -> str:
    """The side the item's first caption was shown on."""
    return "b" if question.swapped else "a"


def second_caption(question: Any) -> str:
    return "a" if question.swapped else "b"
