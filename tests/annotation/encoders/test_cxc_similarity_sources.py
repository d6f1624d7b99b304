"""CxC sampling with an image-text model: image pairs by the model's caption embeddings
averaged over co-captions (the CxC blog), caption pairs by its image embeddings, each checked
against numpy on the stored rows; the manifest and datasheet name the model for each, and
say when captions fell back to FastText."""

from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.encoders import services
from annotation.flows.cxc.services.encoder_sampling import cxc_sample_from_encoder
from annotation.flows.cxc.services.export import cxc_export_start
from annotation.flows.cxc.services.sampling import cxc_run_create, cxc_sample_start
from annotation.flows.cxc.vocabulary import CxcStage
from annotation.models import Caption, Export, Item, JobState
from annotation.services.batches import batch_create, batch_publish
from pipeline.simulate import WorkerProfile
from tests.annotation.encoders.conftest import SMALL_CXC

pytestmark = pytest.mark.django_db


def _clip_set(run_on_commit, dataset):
    es = run_on_commit(
        services.embedding_set_start, dataset=dataset, checkpoint="tiny-clip", model_name="clip"
    )
    es.refresh_from_db()
    assert es.state == "ready", es.job.error
    return es


def _cosine(a, b):
    a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
    return float(a @ b / (np.linalg.norm(a) * np.linalg.norm(b)))


def _sampled(run_on_commit, start, **kwargs):
    job = run_on_commit(start, **kwargs)
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED, job.error
    return job


def test_both_similarities_come_from_the_model(dataset, import_dir, run_on_commit, settings):
    clip = _clip_set(run_on_commit, dataset)
    run = cxc_run_create(dataset=dataset, config=SMALL_CXC)
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

    with np.load(Path(settings.MEDIA_ROOT) / clip.file) as f:
        images = dict(zip(f["image_ids"].tolist(), f["image_embeddings"], strict=True))
        captions = dict(zip(f["caption_ids"].tolist(), f["caption_embeddings"], strict=True))
    co_captions = defaultdict(list)
    for caption, image in Caption.objects.filter(dataset=dataset).values_list(
        "coco_id", "image__coco_id"
    ):
        co_captions[image].append(captions[caption])
    means = {image: np.mean(np.float64(rows), axis=0) for image, rows in co_captions.items()}
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

    # The export's manifest and datasheet carry which model gave each similarity.
    batch = batch_publish(
        batch=batch_create(run=run, stage=CxcStage.SIS, provider="simulated", items_per_hit=5)
    )
    simulate_crowd(batch=batch, workers=6, profile=WorkerProfile(accuracy=0.9), seed=0)
    export_job = _sampled(run_on_commit, cxc_export_start, run=run)
    export = Export.objects.get(pk=export_job.result["export"])
    assert export.manifest["sampling"]["similarity"] == similarity
    datasheet = (Path(export.path) / "DATASHEET.md").read_text()
    assert "similarity.caption" in datasheet and clip.checkpoint_sha256 in datasheet


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


def test_a_set_missing_a_caption_is_refused_naming_it(dataset, import_dir, run_on_commit, settings):
    clip = _clip_set(run_on_commit, dataset)
    target = Path(settings.MEDIA_ROOT) / clip.file
    with np.load(target) as f:
        arrays = {k: f[k] for k in f.files}
    missing = int(arrays["caption_ids"][0])
    arrays["caption_ids"] = arrays["caption_ids"][1:]
    arrays["caption_embeddings"] = arrays["caption_embeddings"][1:]
    np.savez(target, **arrays)
    run = cxc_run_create(dataset=dataset, config=SMALL_CXC)
    job = run_on_commit(cxc_sample_from_encoder, run=run, embedding_set=clip)
    job.refresh_from_db()
    assert job.state == JobState.FAILED
    assert target.name in job.error and str(missing) in job.error and "caption_ids" in job.error
