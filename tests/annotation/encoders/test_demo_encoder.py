"""`manage.py demo --encoder-checkpoint`: the encoder's demo step encodes the dataset through
the job and leaves the stored set for the flows; without a model it says how to give one."""

import io
import json

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
    from annotation.services.runs.batches import batch_create, batch_publish
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


@pytest.mark.django_db(transaction=True)  # as the demo runs: jobs start at once, waited for
def test_local_images_feed_the_demos_eccv_run_through_the_image_text_annotator(
    import_dir, sample_path, tmp_path
):
    """`demo --images <folder> --encoder-checkpoint <model>`: the sample imported with its
    images from a folder holding a few of them under COCO's file names; those are encoded,
    the rest skipped and counted, and the demo's ECCV run proposes with the stored set."""
    from annotation.encoders.demo import demo_image_source, encoder_demo_summary
    from annotation.flows.eccv.demo import eccv_simulated_run
    from annotation.flows.eccv.models import Proposal
    from annotation.services.datasets.datasets import dataset_import
    from pipeline.simulate import population_named
    from tests.tiny_models import write_images

    with open(sample_path) as handle:
        names = [i["file_name"] for i in json.load(handle)["images"][:6]]
    write_images(import_dir / "val2014", names)
    imported = dataset_import(
        path=sample_path, **demo_image_source(captions=sample_path, images="val2014")
    )
    assert imported.dataset.image_source == "local_dir" and imported.image_files == 6
    command, out = _command()
    options = {"encoder_checkpoint": "tiny-clip", "eccv_queries": 3, "seed": 0}
    ctx = DemoContext(command=command, dataset=imported.dataset, options=options)
    encoder_demo(ctx)
    es = EmbeddingSet.objects.get()
    skipped = imported.images - 6
    assert es.counts["images_encoded"] == 6 and es.counts["images_failed"] == skipped
    assert f"6 images encoded, {skipped} skipped (unreadable)" in out.getvalue()
    assert options["encoder_set"] == es.pk

    made = eccv_simulated_run(ctx, population=population_named("uniform-0.9"), seed=0)
    encoded = set(
        imported.dataset.images.filter(file_name__in=names).values_list("coco_id", flat=True)
    )
    assert made.run.config["image_query_pool"] == 6
    assert set(made.run.config["query_images"]) <= encoded
    assert len(made.run.config["query_images"]) == 3
    annotator = made.run.annotators.get(kind="image_text")
    assert annotator.params["checkpoint_sha256"] == es.checkpoint_sha256
    proposed = Proposal.objects.filter(annotator=annotator).count()
    assert proposed > 0
    assert f"{annotator.name} (image-text model): {proposed} proposals" in out.getvalue()
    encoder_demo_summary(ctx)
    summary = out.getvalue().split("what the image-text model was used for")[1]
    assert f"ECCV run {made.run.pk}: annotator {annotator.name}" in summary
    assert f"{proposed} of the run's proposals" in summary


@pytest.mark.django_db(transaction=True)
def test_the_quality_demo_captions_only_images_the_model_could_read(
    import_dir, sample_path, tmp_path
):
    """With some images unreadable, the caption-quality demo draws its images from the ones
    the model encoded, so the model scores every candidate (it said "not scored" before)."""
    from annotation.encoders.demo import demo_image_source
    from annotation.flows.quality.demo import run_demo
    from annotation.flows.quality.models import Candidate
    from annotation.services.datasets.datasets import dataset_import
    from tests.tiny_models import write_images

    with open(sample_path) as handle:
        names = [i["file_name"] for i in json.load(handle)["images"][:6]]
    write_images(import_dir / "val2014", names)
    imported = dataset_import(
        path=sample_path, **demo_image_source(captions=sample_path, images="val2014")
    )
    command, out = _command()
    options = {
        "encoder_checkpoint": "tiny-clip",
        "seed": 0,
        "skip_quality": False,
        "population": "uniform-0.9",
    }
    ctx = DemoContext(command=command, dataset=imported.dataset, options=options)
    encoder_demo(ctx)
    run_demo(ctx)
    encoded = set(
        imported.dataset.images.filter(file_name__in=names).values_list("coco_id", flat=True)
    )
    captioned = set(Candidate.objects.values_list("image__coco_id", flat=True))
    assert captioned == encoded
    assert "images drawn from the 6 the image-text model could read" in out.getvalue()
    assert "not scored" not in out.getvalue()
    assert "caption quality run" in ctx.encoder_uses[-1]


def test_an_images_folder_outside_the_allowed_folders_is_refused(import_dir, sample_path):
    from annotation.encoders.demo import demo_image_source
    from annotation.services.datasets.datasets import dataset_import
    from pipeline.errors import InputError

    with pytest.raises(InputError, match="outside the folders images may be served from"):
        dataset_import(path=sample_path, **demo_image_source(captions=sample_path, images="/"))


@pytest.mark.django_db(transaction=True)
def test_an_image_query_the_model_could_not_read_is_refused_before_proposals(
    import_dir, sample_path
):
    from annotation.encoders.demo import demo_image_source
    from annotation.flows.eccv.services.encoder_annotators import eccv_encoder_annotator_add
    from annotation.flows.eccv.services.runs import eccv_run_create
    from annotation.services.datasets.datasets import dataset_import
    from pipeline.errors import InputError
    from tests.tiny_models import write_images

    with open(sample_path) as handle:
        names = [i["file_name"] for i in json.load(handle)["images"][:2]]
    write_images(import_dir / "val2014", names)
    dataset = dataset_import(
        path=sample_path, **demo_image_source(captions=sample_path, images="val2014")
    ).dataset
    command, _ = _command()
    options = {"encoder_checkpoint": "tiny-clip"}
    encoder_demo(DemoContext(command=command, dataset=dataset, options=options))
    es = EmbeddingSet.objects.get(pk=options["encoder_set"])
    run = eccv_run_create(dataset=dataset, config={"image_queries": 5, "caption_queries": 5})
    unread = next(
        i
        for i in run.config["query_images"]
        if dataset.images.get(coco_id=i).file_name not in names
    )
    with pytest.raises(InputError, match="no image embedding") as refused:
        eccv_encoder_annotator_add(run=run, embedding_set=es)
    assert refused.value.field == "set" and refused.value.record == unread
