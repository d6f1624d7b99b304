"""A simulated ECCV Caption run's human positives scored against the latent world."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from annotation.flows.eccv.selectors import eccv_judged_pairs
from annotation.flows.eccv.services.export import PAIRS_FILE
from annotation.flows.eccv.simulate import latent_level
from annotation.models import Run, Stage
from annotation.selectors.simulated_quality import QualityRow, answer_mixture
from pipeline.expectation import eccv_expectation
from pipeline.simulate import WorkerProfile
from pipeline.world import World


def eccv_quality(
    *,
    run: Run,
    export_folder: Path,
    team: Mapping[str, WorkerProfile],
    population: str,
    judgments: int,
) -> list[QualityRow]:
    """Precision and recall of the exported human positives (YES or Partially YES by the
    run's aggregation) among the judged candidates; latent positive = YES or Partially YES."""
    world = World.from_config(run.config)
    called = set()
    with open(export_folder / PAIRS_FILE) as lines:
        for line in lines:
            record = json.loads(line)
            if "human" in record["sources"]:
                called.add((record["image_id"], record["caption_id"]))
    truth: dict[tuple[int, int], bool] = {}
    ranks: list[int | None] = []
    pairs = eccv_judged_pairs(run=run).select_related("positive", "caption")
    for item in pairs.prefetch_related("proposals"):
        assert item.caption is not None
        truth[(item.positive.coco_id, item.caption.coco_id)] = latent_level(item, world) <= 1
        own = item.caption.image_id == item.positive_id
        ranks.append(0 if own else min((p.rank for p in item.proposals.all()), default=None))
    aggregation = run.config.get("aggregation", "majority")
    expected = (
        eccv_expectation(
            ranks,
            world=world,
            mixture=answer_mixture(run=run, stage=Stage.ECCV_JUDGMENT, team=team),
            judgments=judgments,
        )
        if aggregation == "majority"
        else None
    )
    true_called = sum(1 for key in called if truth.get(key))
    row = dict(flow="eccv", population=population)
    note = f"{len(truth)} judged pairs, {judgments} judgment(s) each, {aggregation}"
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
