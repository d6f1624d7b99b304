"""CxC sampling with an image-text model: by default (as CxC's blog) the image and the caption
similarity come from different encoders (the model's image embeddings; FastText or another
model's caption embeddings), and the manifest and datasheet name both; one joint model only
when the run asks for it, recorded as a deviation. Similarities are checked against numpy on
the stored rows."""

from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.encoders import services
from annotation.flows.cxc.sampling_encoders import FASTTEXT_FOR_USE_GLOVE, JOINT_DEVIATION
from annotation.flows.cxc.services.encoder_sampling import cxc_sample_from_encoder
from annotation.flows.cxc.services.export import cxc_export_start
from annotation.flows.cxc.services.sampling import cxc_run_create, cxc_sample_start
from annotation.flows.cxc.vocabulary import CxcStage
from annotation.models import Caption, Export, Item, JobState
from annotation.services.runs.batches import batch_create, batch_publish
from pipeline.errors import InputError
from pipeline.simulate import WorkerProfile
from tests.annotation.encoders.conftest import SMALL_CXC

pytestmark = pytest.mark.django_db


def _clip_set(run_on_commit, dataset, model="clip"):
    es = run_on_commit(
        services.embedding_set_start, dataset=dataset, checkpoint=f"tiny-{model}", model_name=model
    )
    es.refresh_from_db()
    assert es.state == "ready", es.job.error
    return es


def _exported(run_on_commit, run):
    """Rate the image pairs with a simulated crowd and export: the export's manifest and
    its datasheet's text."""
    batch = batch_publish(
        batch=batch_create(run=run, stage=CxcStage.SIS, provider="simulated", items_per_hit=5)
    )
    simulate_crowd(batch=batch, workers=6, profile=WorkerProfile(accuracy=0.9), seed=0)
    export_job = _sampled(run_on_commit, cxc_export_start, run=run)
    export = Export.objects.get(pk=export_job.result["export"])
    return export.manifest, (Path(export.path) / "DATASHEET.md").read_text()


def _caption_means(settings, embedding_set, dataset):
    """Each image's mean co-caption embedding in the set, by COCO id."""
    with np.load(Path(settings.MEDIA_ROOT) / embedding_set.file) as f:
        captions = dict(zip(f["caption_ids"].tolist(), f["caption_embeddings"], strict=True))
    co_captions = defaultdict(list)
    for caption, image in Caption.objects.filter(dataset=dataset).values_list(
        "coco_id", "image__coco_id"
    ):
        co_captions[image].append(captions[caption])
    return {image: np.mean(np.float64(rows), axis=0) for image, rows in co_captions.items()}


def _cosine(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _sampled(run_on_commit, start, **kwargs):
    job = run_on_commit(start, **kwargs)
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED, job.error
    return job


def test_by_default_the_two_similarities_come_from_different_encoders_named_in_the_manifest(
    dataset, import_dir, run_on_commit, settings
):
    clip = _clip_set(run_on_commit, dataset)
    run = cxc_run_create(dataset=dataset, config=SMALL_CXC)  # no sampling_encoders: default
    assert run.config["sampling_encoders"] == "different"
    job = _sampled(run_on_commit, cxc_sample_from_encoder, run=run, embedding_set=clip)
    similarity = job.result["similarity"]
    assert similarity["image"]["source"] == "image_text_model"
    assert similarity["image"]["checkpoint_sha256"] == clip.checkpoint_sha256
    # The caption similarity is not the image model's text tower but FastText, said as such.
    assert similarity["caption"]["source"] == "fasttext"
    assert similarity["caption"]["why"] == FASTTEXT_FOR_USE_GLOVE
    encoders = job.result["encoders"]
    assert encoders["rule"] == "different" and encoders["different"] is True
    assert clip.checkpoint_sha256 in encoders["image"]
    assert encoders["caption"].startswith("FastText") and clip.label not in encoders["caption"]
    assert job.result["deviations"] == {"fasttext_for_use_glove": FASTTEXT_FOR_USE_GLOVE}
    # The image pairs were not chosen by the model's caption embeddings.
    means = _caption_means(settings, clip, dataset)
    image_pairs = Item.objects.filter(run=run, tag="i2i_csim").select_related(
        "positive", "negative"
    )
    assert image_pairs
    assert any(
        abs(p.similarity - _cosine(means[p.positive.coco_id], means[p.negative.coco_id])) > 1e-3
        for p in image_pairs
    )

    manifest, datasheet = _exported(run_on_commit, run)
    assert manifest["sampling"]["encoders"] == encoders
    assert manifest["sampling"]["deviations"] == {"fasttext_for_use_glove": FASTTEXT_FOR_USE_GLOVE}
    assert "encoders.image" in datasheet and "encoders.caption" in datasheet
    assert clip.checkpoint_sha256 in datasheet and "FastText" in datasheet
    assert "deviations.fasttext_for_use_glove" in datasheet and "Universal Sentence" in datasheet


def test_captions_from_another_models_set(dataset, import_dir, run_on_commit, settings):
    clip = _clip_set(run_on_commit, dataset)
    siglip = _clip_set(run_on_commit, dataset, model="siglip")
    run = cxc_run_create(dataset=dataset, config=SMALL_CXC)
    job = _sampled(
        run_on_commit, cxc_sample_from_encoder, run=run, embedding_set=clip, caption_set=siglip
    )
    similarity = job.result["similarity"]
    assert similarity["image"]["embedding_set"] == clip.pk
    assert similarity["caption"]["embedding_set"] == siglip.pk
    assert job.result["encoders"]["different"] is True
    assert siglip.checkpoint_sha256 in job.result["encoders"]["caption"]
    assert job.result["deviations"] == {}
    means = _caption_means(settings, siglip, dataset)
    for p in Item.objects.filter(run=run, tag="i2i_csim").select_related("positive", "negative"):
        expected = _cosine(means[p.positive.coco_id], means[p.negative.coco_id])
        assert p.similarity == pytest.approx(expected, abs=1e-5)


def test_the_same_model_for_captions_is_refused_unless_the_run_asks_for_joint(
    dataset, import_dir, run_on_commit
):
    clip = _clip_set(run_on_commit, dataset)
    run = cxc_run_create(dataset=dataset, config=SMALL_CXC)
    with pytest.raises(InputError) as refused:
        cxc_sample_from_encoder(run=run, embedding_set=clip, caption_set=clip)
    assert refused.value.field == "caption_set" and "different encoder" in refused.value.message
    assert not run.jobs.exists()
    run.refresh_from_db()
    assert run.status == "created"  # nothing half-written


def test_joint_needs_an_embedding_set(dataset, import_dir, run_on_commit, settings):
    clip = _clip_set(run_on_commit, dataset)
    path = str(Path(settings.MEDIA_ROOT) / clip.file)
    run = cxc_run_create(dataset=dataset, config={**SMALL_CXC, "sampling_encoders": "joint"})
    with pytest.raises(InputError) as refused:
        cxc_sample_start(run=run, image_embeddings_path=path)
    assert refused.value.field == "sampling_encoders"
    with pytest.raises(InputError) as bad:
        cxc_run_create(dataset=dataset, config={**SMALL_CXC, "sampling_encoders": "one"})
    assert bad.value.field == "sampling_encoders"


def test_a_run_asking_for_one_joint_model_gets_both_from_it_recorded_as_a_deviation(
    dataset, import_dir, run_on_commit, settings
):
    clip = _clip_set(run_on_commit, dataset)
    run = cxc_run_create(dataset=dataset, config={**SMALL_CXC, "sampling_encoders": "joint"})
    job = _sampled(run_on_commit, cxc_sample_from_encoder, run=run, embedding_set=clip)
    named = {
        "source": "image_text_model",
        "model": clip.label,
        "checkpoint_sha256": clip.checkpoint_sha256,
        "embedding_set": clip.pk,
    }
    similarity = job.result["similarity"]
    assert {k: similarity["image"][k] for k in named} == named
    assert {k: similarity["caption"][k] for k in named} == named
    assert similarity["caption"]["fallback"] is False
    assert job.result["text_encoder"] == clip.label
    assert job.result["encoders"]["rule"] == "joint"
    assert job.result["encoders"]["different"] is False
    assert job.result["deviations"] == {"joint_encoder": JOINT_DEVIATION}

    with np.load(Path(settings.MEDIA_ROOT) / clip.file) as f:
        images = dict(zip(f["image_ids"].tolist(), f["image_embeddings"], strict=True))
    means = _caption_means(settings, clip, dataset)
    pairs = Item.objects.filter(run=run).select_related("positive", "negative")
    image_pairs = [p for p in pairs if p.tag == "i2i_csim"]
    caption_pairs = [p for p in pairs if p.tag == "c2c_isim"]
    assert len(image_pairs) == SMALL_CXC["sis_pairs"]
    assert len(caption_pairs) == SMALL_CXC["sts_pairs"]
    for p in image_pairs:
        expected = _cosine(means[p.positive.coco_id], means[p.negative.coco_id])
        assert p.similarity == pytest.approx(expected, abs=1e-5)
    for p in caption_pairs:
        expected = _cosine(images[p.positive.coco_id], images[p.negative.coco_id])
        assert p.similarity == pytest.approx(expected, abs=1e-5)

    # The export's manifest and datasheet carry which model gave each similarity, and the
    # deviation.
    manifest, datasheet = _exported(run_on_commit, run)
    assert manifest["sampling"]["similarity"] == similarity
    assert manifest["sampling"]["deviations"] == {"joint_encoder": JOINT_DEVIATION}
    assert "similarity.caption" in datasheet and clip.checkpoint_sha256 in datasheet
    assert "deviations.joint_encoder" in datasheet and "sampling_encoders = joint" in datasheet


def test_without_a_model_captions_fall_back_to_fasttext_and_say_so(
    dataset, import_dir, run_on_commit, settings
):
    clip = _clip_set(run_on_commit, dataset)
    path = str(Path(settings.MEDIA_ROOT) / clip.file)  # the same rows, given as a plain file
    run = cxc_run_create(dataset=dataset, config=SMALL_CXC)
    job = _sampled(run_on_commit, cxc_sample_start, run=run, image_embeddings_path=path)
    similarity = job.result["similarity"]
    assert similarity["image"]["source"] == "embeddings_file"
    assert similarity["image"]["file"] == Path(path).name
    assert similarity["caption"]["source"] == "fasttext"
    assert similarity["caption"]["fallback"] is True
    assert similarity["caption"]["model"].startswith("FastText")
    assert job.result["encoders"]["different"] is True
    assert job.result["deviations"] == {"fasttext_for_use_glove": FASTTEXT_FOR_USE_GLOVE}


def test_a_set_missing_a_caption_is_refused_naming_it(dataset, import_dir, run_on_commit, settings):
    clip = _clip_set(run_on_commit, dataset)
    target = Path(settings.MEDIA_ROOT) / clip.file
    with np.load(target) as f:
        arrays = {k: f[k] for k in f.files}
    missing = int(arrays["caption_ids"][0])
    arrays["caption_ids"] = arrays["caption_ids"][1:]
    arrays["caption_embeddings"] = arrays["caption_embeddings"][1:]
    np.savez(target, **arrays)
    run = cxc_run_create(dataset=dataset, config={**SMALL_CXC, "sampling_encoders": "joint"})
    job = run_on_commit(cxc_sample_from_encoder, run=run, embedding_set=clip)
    job.refresh_from_db()
    assert job.state == JobState.FAILED
    assert target.name in job.error and str(missing) in job.error and "caption_ids" in job.error
