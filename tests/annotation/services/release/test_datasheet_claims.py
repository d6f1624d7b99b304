"""The datasheet's sentences are true for every crowd provider and every flow (issue 50): each
flow's export is made once (simulated crowd), then its batches are put under each provider the
registry lists and the datasheet is written again from the run's rows; each claim it makes
(who answered, gold accuracy, agreement, what was left out) is checked against the rows,
counted here independently of the code that wrote it."""

import json
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.flows.bison.lookup import TRAP_KIND
from annotation.flows.bison.services.export import bison_export_start
from annotation.flows.bison.vocabulary import BisonStage
from annotation.flows.cxc.services.export import cxc_export_start
from annotation.flows.cxc.vocabulary import CxcStage
from annotation.flows.quality.services.export import quality_export_start
from annotation.flows.quality.vocabulary import QualityStage
from annotation.models import GOLD_KINDS, Answer, Assignment, AssignmentState, Batch, Run
from annotation.providers import provider_for, providers
from annotation.selectors.counting import counted_reviewed
from annotation.services.release.datasheet import datasheet_run, datasheet_write
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.tasktypes import task_type_for
from pipeline.simulate import WorkerProfile
from tests.annotation.flows.cxc.test_cxc_flow import cxc_run, rate_all, sampled  # noqa: F401
from tests.annotation.flows.eccv.test_eccv_results import export_of, judged  # noqa: F401
from tests.annotation.flows.quality.test_quality_flow import quality_run  # noqa: F401
from tests.annotation.services.release.test_release_tables import exported_folder
from tests.factories import selection_done_factory

pytestmark = pytest.mark.django_db


def _gold_counts(run: Run) -> tuple[int, int]:
    """Right and total counted answers to gold questions, by each stage's rule."""
    right = total = 0
    for answer in Answer.objects.filter(
        counted_reviewed(""), question__item__run=run, question__item__kind__in=GOLD_KINDS
    ).select_related("question__item", "question__hit__batch"):
        passed = task_type_for(answer.question.hit.batch.stage).gold_passed(
            item=answer.question.item, label=answer.label
        )
        if passed is not None:
            right, total = right + bool(passed), total + 1
    return right, total


def _check_claims(run: Run, folder: Path, tmp_path: Path, provider: str) -> None:
    Batch.objects.filter(run=run).update(provider=provider)
    tables = {p.stem: pq.read_table(p) for p in (folder / "data").glob("*.parquet")}
    manifest = json.loads((folder / "manifest.json").read_text())
    out = tmp_path / provider
    out.mkdir()
    datasheet_write(
        folder=out, run=run, manifest=manifest, flow="F", of_run=datasheet_run(run_id=run.pk),
        tables=tables,
    )  # fmt: skip
    sheet = (out / "DATASHEET.md").read_text()
    # Who answered: the crowd whose counted work the rows hold, and nothing else.
    if provider_for(provider).simulated:
        assert "**Some or all answers come from SIMULATED workers**" in sheet
        assert "All answers come from people" not in sheet
    else:
        label = provider_for(provider).label
        assert f"All answers come from people, recruited through: {label}." in sheet
        assert "SIMULATED" not in sheet
    assert "local invited workers or MTurk" not in sheet
    assert "see gold accuracy and agreement above" not in sheet
    # Gold accuracy, counted from the answers here.
    right, total = _gold_counts(run)
    if total:
        assert f"{right} of {total} counted answers to gold questions were right" in sheet
    else:
        assert "no counted answer to a gold question in this run" in sheet
    # Agreement: the records' own mean, computed here with pandas.
    for name in tables:
        frame = pd.read_parquet(folder / "data" / f"{name}.parquet")
        for column in ("agreement", "spread"):
            if column in frame.columns:
                assert f"{name}: mean" in sheet and f"{frame[column].mean():.3f}" in sheet
                break
    # What was left out, from the assignments' states.
    rejected = Assignment.objects.filter(
        hit__batch__run=run, state=AssignmentState.REJECTED
    ).count()
    abandoned = Assignment.objects.filter(
        hit__batch__run=run, state=AssignmentState.ABANDONED
    ).count()
    assert f"left out of the export: {rejected} rejected assignment(s)" in sheet
    assert f"{abandoned} taken and given up before submitting" in sheet


PROVIDERS = sorted(p.name for p in providers())


def test_the_registry_lists_the_five_providers():
    assert PROVIDERS == ["local", "mturk", "panel", "prolific", "simulated"]


def test_bison_datasheet_claims_hold_for_every_provider(paired_run, run_on_commit, tmp_path):
    selection_done_factory(paired_run, workers=2, accuracy=1.0)
    batch = batch_publish(
        batch=batch_create(
            run=paired_run, stage=BisonStage.VERIFICATION, provider="simulated", items_per_hit=2
        )
    )
    simulate_crowd(batch=batch, workers=6, profile=WorkerProfile(accuracy=1.0))
    folder = exported_folder(bison_export_start, paired_run, run_on_commit)
    for provider in PROVIDERS:
        _check_claims(paired_run, folder, tmp_path, provider)
    # Stage 3's traps, counted here from the answers: the manifest, the datasheet's stage-3
    # table and Croissant's analysis say what they saw.
    traps = list(
        Answer.objects.filter(
            counted_reviewed(""), question__item__run=paired_run, question__item__kind=TRAP_KIND
        ).values_list("label", flat=True)
    )
    assert traps  # every stage-3 HIT carries traps
    stage3 = json.loads((folder / "manifest.json").read_text())["stage3"]
    assert (stage3["trap_answers"], stage3["trap_answers_lookup"]) == (
        len(traps),
        traps.count("positive"),
    )
    analysis = json.loads((folder / "croissant.json").read_text())["rai:dataAnnotationAnalysis"]
    assert any(f"{len(traps)} counted answers" in line for line in analysis)


def test_eccv_datasheet_claims_hold_for_every_provider(judged, run_on_commit, tmp_path):  # noqa: F811
    folder = Path(export_of(judged, run_on_commit).path)
    for provider in PROVIDERS:
        _check_claims(judged, folder, tmp_path, provider)


def test_cxc_datasheet_claims_hold_for_every_provider(cxc_run, run_on_commit, tmp_path):  # noqa: F811
    sampled(cxc_run, run_on_commit)
    for stage in (CxcStage.SIS, CxcStage.STS, CxcStage.SITS):
        rate_all(cxc_run, stage)
    folder = exported_folder(cxc_export_start, cxc_run, run_on_commit)
    for provider in PROVIDERS:
        _check_claims(cxc_run, folder, tmp_path, provider)


def test_quality_datasheet_claims_hold_for_every_provider(quality_run, run_on_commit, tmp_path):  # noqa: F811
    for stage, per_hit in ((QualityStage.RATING, 3), (QualityStage.BINARY, 3)):
        batch = batch_publish(
            batch=batch_create(
                run=quality_run, stage=stage, provider="simulated", assignments_per_hit=per_hit
            )
        )
        simulate_crowd(batch=batch, workers=per_hit + 2, profile=WorkerProfile(accuracy=0.9))
    folder = exported_folder(quality_export_start, quality_run, run_on_commit)
    for provider in PROVIDERS:
        _check_claims(quality_run, folder, tmp_path, provider)
