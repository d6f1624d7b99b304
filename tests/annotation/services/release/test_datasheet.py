"""The datasheet's words for people's work (`services/release/datasheet.py`): the gold accuracy it
measured instead of pointing "above" at nothing, and a stage's image-disjointness, kept or
relaxed for a trusted pool (issue 46)."""

from pathlib import Path

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.flow_registry import flow_for_kind
from annotation.flows.bison.vocabulary import BisonStage
from annotation.flows.eccv.vocabulary import EccvStage
from annotation.services.release.datasheet import _real_quality, datasheet_write
from annotation.services.release.release_facts import gold_tally
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.tasktypes.base import RELAX_IMAGES
from pipeline.expectation import wilson
from pipeline.simulate import WorkerProfile
from tests.annotation.selectors.runs.test_batch_reach import work_all
from tests.factories import invited, selection_done_factory


def test_real_workers_gold_accuracy_is_measured_not_pointed_at(proposed):
    batch = batch_publish(
        batch=batch_create(
            run=proposed, stage=EccvStage.JUDGMENT, provider="simulated", items_per_hit=6
        )
    )
    simulate_crowd(batch=batch, workers=3, profile=WorkerProfile(accuracy=1.0, gold_accuracy=0.6))
    tally = flow_for_kind(proposed.kind).worker_gold(proposed)
    right, total = sum(r for r, _ in tally.values()), sum(t for _, t in tally.values())
    assert total > 0
    low, high = wilson(right, total)
    words = "\n".join(_real_quality(gold_tally(proposed), []))
    assert f"{right} of {total} counted answers to gold questions were right" in words
    assert f"{low:.1%}–{high:.1%}" in words
    assert "see gold accuracy and agreement above" not in words


def test_the_datasheet_says_a_stage_relaxed_image_disjointness(paired_run, tmp_path):
    selection_done_factory(paired_run)
    people = [invited(paired_run, f"verifier-{n}").worker for n in range(3)]
    relaxed = batch_publish(
        batch=batch_create(
            run=paired_run,
            stage=BisonStage.VERIFICATION,
            provider="local",
            items_per_hit=2,
            options={RELAX_IMAGES.name: True},
        )
    )
    work_all(relaxed, people)
    datasheet_write(folder=tmp_path, run=paired_run, manifest={}, flow="BISON")
    sheet = (Path(tmp_path) / "DATASHEET.md").read_text()
    assert f"**relaxed in batch(es) {relaxed.pk}**" in sheet
    assert "trusted pool" in sheet
