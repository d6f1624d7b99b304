"""A simulated ECCV Caption run's human positives scored against the latent world."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from django.db.models import Min

from annotation.flows.eccv.models import Proposal
from annotation.flows.eccv.selectors import eccv_human_positives, eccv_judged_pairs
from annotation.flows.eccv.services.export import PAIRS_FILE
from annotation.flows.eccv.settings import eccv_settings
from annotation.flows.eccv.simulate import latent_level
from annotation.flows.eccv.vocabulary import EccvStage
from annotation.models import Run
from annotation.selectors.release.simulated_quality import QualityRow, answer_mixture, run_world
from pipeline.expectation import eccv_expectation
from pipeline.simulate import WorkerProfile


def exported_positives(export_folder: Path) -> set[tuple[int, int]]:
    """(image, caption) COCO ids an export's judged-pairs file calls human positives."""
    called = set()
    with open(export_folder / PAIRS_FILE) as lines:
        for line in lines:
            record = json.loads(line)
            if "human" in record["sources"]:
                called.add((record["image_id"], record["caption_id"]))
    return called


def eccv_quality(
    *,
    run: Run,
    called: set[tuple[int, int]],
    team: Mapping[str, WorkerProfile],
    population: str,
) -> list[QualityRow]:
    """Precision and recall of the human positives `called` (YES or Partially YES by the
    run's aggregation) among the judged candidates; latent positive = YES or Partially YES.
    Without a `team` (who the simulated workers were) no expectation is given. Each pair's
    expectation takes its own number of counted judgments (a calibration batch's pairs have
    several, the others often one)."""
    world = run_world(run)
    truth: dict[tuple[int, int], bool] = {}
    ranks: list[int | None] = []
    judgments: list[int] = []
    # Each pair's best rank by one grouped read of the run's proposals (a prefetch would send
    # every pair's id back to the database).
    best = dict(
        Proposal.objects.filter(item__run=run)
        .values("item_id")
        .annotate(best=Min("rank"))
        .values_list("item_id", "best")
    )
    for item in eccv_judged_pairs(run=run).select_related("positive", "caption"):
        assert item.caption is not None
        own = item.caption.image_id == item.positive_id
        pair = (item.positive.coco_id, item.caption.coco_id)
        level = (  # `latent_level`, with the rank read above (it reads the item's proposals)
            world.eccv_label(*pair, rank=best.get(item.pk), own=own)
            if item.source_id is None
            else latent_level(item, world)
        )
        truth[pair] = level <= 1
        ranks.append(0 if own else best.get(item.pk))
        judgments.append(item.n)
    aggregation = eccv_settings(run).aggregation_rule
    expected = (
        eccv_expectation(
            ranks,
            world=world,
            mixture=answer_mixture(run=run, stage=EccvStage.JUDGMENT, team=team),
            judgments=judgments,
        )
        if aggregation == "majority" and team and all(p.closed_form for p in team.values())
        else None
    )
    true_called = sum(1 for key in called if truth.get(key))
    row = dict(flow="eccv", population=population)
    low, high = (min(judgments), max(judgments)) if judgments else (0, 0)
    each = f"{low}" if low == high else f"{low}-{high}"
    note = f"{len(truth)} judged pairs, {each} judgment(s) each, {aggregation}"
    return [
        QualityRow(
            **row,
            measure="positives precision",
            hits=true_called,
            total=sum(1 for key in called if key in truth),
            expected=expected.precision if expected else None,
            note=note,
        ),
        QualityRow(
            **row,
            measure="positives recall",
            hits=true_called,
            total=sum(truth.values()),
            expected=expected.recall if expected else None,
        ),
    ]


def eccv_datasheet_quality(run: Run) -> list[QualityRow]:
    called = set(eccv_human_positives(run=run))
    return eccv_quality(run=run, called=called, team={}, population="simulated")
