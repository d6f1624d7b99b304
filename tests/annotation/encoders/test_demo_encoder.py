"""`manage.py demo --encoder-checkpoint`: the encoder's demo step encodes the dataset through
the job and leaves the stored set for the flows; without a model it says how to give one."""

import io

import pytest
from django.core.management.base import OutputWrapper

from annotation.encoders.demo import encoder_demo
from annotation.encoders.models import EmbeddingSet
from annotation.flow_registry import DemoContext
from annotation.management.commands.demo import Command

pytestmark = pytest.mark.django_db


def _command():
    out = io.StringIO()
    command = Command(stdout=out)
    command.stdout = OutputWrapper(out)
    return command, out


def test_without_a_model_one_line_says_how_to_give_one(dataset):
    command, out = _command()
    options = {}
    encoder_demo(DemoContext(command=command, dataset=dataset, options=options))
    assert out.getvalue().count("\n") == 1 and "--encoder-checkpoint" in out.getvalue()
    assert "encoder_set" not in options and not EmbeddingSet.objects.exists()


@pytest.mark.django_db(transaction=True)  # as the demo runs: the job starts at once, waited for
def test_with_a_model_the_sample_is_encoded_for_the_flows(dataset, import_dir):
    command, out = _command()
    options = {"encoder_checkpoint": "tiny-clip"}
    encoder_demo(DemoContext(command=command, dataset=dataset, options=options))
    es = EmbeddingSet.objects.get()
    assert options["encoder_set"] == es.pk and es.state == "ready"
    assert f"{es.label}: {dataset.images.count()} images" in out.getvalue()
    assert "estimate:" in out.getvalue()


def test_a_model_outside_the_import_folder_is_refused(dataset, import_dir):
    command, out = _command()
    options = {"encoder_checkpoint": "/"}
    encoder_demo(DemoContext(command=command, dataset=dataset, options=options))
    assert "refused:" in out.getvalue() and "CROWDVL_IMPORT_DIR" in out.getvalue()
    assert "encoder_set" not in options


def test_the_quality_demo_correlates_the_sets_scores_with_the_judgments(
    dataset, import_dir, run_on_commit, tmp_path
):
    import json
    from pathlib import Path

    from annotation.crowd.simulated.crowd import simulate_crowd
    from annotation.encoders.services import embedding_set_start
    from annotation.flows.quality.demo import _encoder_scores
    from annotation.flows.quality.services.candidates import (
        quality_candidates_import,
        quality_run_create,
    )
    from annotation.flows.quality.services.export import quality_export_start
    from annotation.flows.quality.vocabulary import QualityStage
    from annotation.models import Export
    from annotation.services.batches import batch_create, batch_publish
    from pipeline.simulate import WorkerProfile

    run = quality_run_create(dataset=dataset, config={"pairs_per_image": 4})
    images = list(dataset.images.order_by("coco_id"))
    path = tmp_path / "model.json"
    path.write_text(
        json.dumps([{"image_id": i.coco_id, "caption": i.captions.first().text} for i in images])
    )
    quality_candidates_import(run=run, model="own", path=str(path))
    for stage in (QualityStage.RATING, QualityStage.BINARY):  # the demo's expert and CF layouts
        batch = batch_publish(
            batch=batch_create(run=run, stage=stage, provider="simulated", assignments_per_hit=3)
        )
        simulate_crowd(batch=batch, workers=5, profile=WorkerProfile(accuracy=0.95), seed=1)
    job = run_on_commit(quality_export_start, run=run)
    job.refresh_from_db()
    base = Path(Export.objects.get(pk=job.result["export"]).path)
    es = run_on_commit(embedding_set_start, dataset=dataset, checkpoint="tiny-clip")
    command, out = _command()
    _encoder_scores(command, run, base, es.pk)
    lines = out.getvalue().splitlines()
    assert any(es.label in line for line in lines)
    for score in ("CLIP-S", "RefCLIP-S", "PAC-S-style", "RefPAC-S-style"):
        for layout in ("flickr8k_expert_layout", "flickr8k_cf_layout"):
            assert any(f"{layout:<24} {score}: tau-b" in line for line in lines), (layout, score)
