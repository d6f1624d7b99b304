"""The encoder job in-process: a dataset's images and captions stored once per model,
unreadable images named, a resumed job recomputing only unfinished chunks."""

import numpy as np
import pytest

from annotation.encoders import services
from annotation.encoders.models import EmbeddingSet, EmbeddingState
from annotation.models import Caption, Job, JobState
from annotation.services.jobs.job_recovery import job_resume
from pipeline.encoders.encode import encode_images, encode_texts
from pipeline.encoders.loading import encoder_load
from pipeline.errors import InputError

pytestmark = pytest.mark.django_db


def _start(run_on_commit, dataset, **kwargs):
    return run_on_commit(
        services.embedding_set_start,
        dataset=dataset,
        checkpoint="tiny-clip",
        model_name="tiny-clip",
        **kwargs,
    )


def test_a_dataset_encoded_in_chunks_equals_the_encoder(
    dataset, image_dir, import_dir, run_on_commit, settings
):
    broken = sorted(image_dir.iterdir())[0]
    broken.write_bytes(b"not a jpeg")
    es = _start(run_on_commit, dataset, chunk_images=2, chunk_captions=3, dtype="float16")
    es.refresh_from_db()
    job = Job.objects.get(pk=es.job_id)
    assert job.state == JobState.SUCCEEDED, job.error
    images = list(dataset.images.order_by("coco_id"))
    captions = list(Caption.objects.filter(dataset=dataset).order_by("coco_id"))
    assert job.parts_total == -(-len(images) // 2) + -(-len(captions) // 3)
    assert es.state == EmbeddingState.READY and es.dtype == "float16" and es.dim == 16
    assert es.counts["images_failed"] == 1
    assert es.counts["failed_images"][0].startswith(broken.name + ": not a readable image")
    assert es.counts["estimate"]["seconds"] > 0
    path = settings.MEDIA_ROOT + "/" + es.file
    assert es.size_bytes > 0 and es.label in es.file
    encoder = encoder_load(import_dir / "tiny-clip")
    want_i = encode_images(
        encoder, [(i.file_name, (image_dir / i.file_name).read_bytes) for i in images]
    )
    want_t = encode_texts(encoder, [c.text for c in captions])
    with np.load(path) as f:
        assert f["image_embeddings"].dtype == np.float16
        assert f["image_ids"].tolist() == [i.coco_id for i in images if i.file_name != broken.name]
        np.testing.assert_allclose(f["image_embeddings"], want_i.rows, atol=2e-3)
        assert f["caption_ids"].tolist() == [c.coco_id for c in captions]
        np.testing.assert_allclose(f["caption_embeddings"], want_t.rows, atol=2e-3)

    # Stored once: the same model, weights and preprocessing give the same set, no new job.
    again = _start(run_on_commit, dataset)
    assert again.pk == es.pk and Job.objects.filter(name=services.JOB_NAME).count() == 1
    services.embedding_set_delete(embedding_set=again)
    assert not EmbeddingSet.objects.exists()
    assert not (settings.MEDIA_ROOT and __import__("os").path.exists(path))


def test_a_resumed_job_does_not_recompute_finished_chunks(
    dataset, import_dir, monkeypatch, run_on_commit, settings
):
    from annotation.encoders import tasks

    sent = []
    monkeypatch.setattr(tasks.encode_prepare_task, "delay", lambda job_id: sent.append(job_id))
    es = _start(run_on_commit, dataset, chunk_images=2, chunk_captions=4)
    job_id = sent[0]
    parts = services.encode_prepare(job_id=job_id)
    # A worker finished two chunks, then died (kill -9) before the others.
    for part in parts[:2]:
        services.encode_part(job_id=job_id, part=part)
    encoded = []
    from pipeline.encoders import encode

    real = encode.encode_images
    monkeypatch.setattr(encode, "encode_images", lambda *a, **k: encoded.append(1) or real(*a, **k))
    done = Job.objects.get(pk=job_id).parts_done
    assert done == [0, 1]
    # In-process: the missing parts run when the resume commits.
    run_on_commit(job_resume, job_id=job_id, reason="test")
    job = Job.objects.get(pk=job_id)
    es.refresh_from_db()
    assert job.state == JobState.SUCCEEDED and es.state == EmbeddingState.READY
    assert job.parts_done == list(range(len(parts)))
    image_parts = -(-dataset.images.count() // 2)
    assert len(encoded) == image_parts - 2  # only the image chunks never finished


def test_checkpoint_must_be_inside_the_import_folder(dataset, import_dir, tmp_path):
    with pytest.raises(InputError) as err:
        services.embedding_set_start(dataset=dataset, checkpoint="../elsewhere")
    assert err.value.field == "checkpoint"
    with pytest.raises(InputError, match="does not exist"):
        services.embedding_set_start(dataset=dataset, checkpoint="missing-model")


def _outside_media(root, media) -> list:
    """Files under `root` (the test's folder) but not under `media` whose name says escaped."""
    return [p for p in root.rglob("*escaped*") if media not in p.parents]


@pytest.mark.parametrize(
    "name",
    ["../../escaped", "../../../../escaped", "/tmp/escaped", "a/../escaped", "a\\..\\escaped",
     "escaped\x00", "esc\naped", "a//escaped", "x" * 201],
)  # fmt: skip
def test_a_model_name_that_reads_as_a_path_is_refused_before_anything_is_written(
    dataset, import_dir, run_on_commit, settings, tmp_path, name
):
    """Issue 47: the audit's model_name "../…/escaped" is refused naming its field."""
    with pytest.raises(InputError) as err:
        run_on_commit(
            services.embedding_set_start, dataset=dataset, checkpoint="tiny-clip", model_name=name
        )
    assert err.value.field == "model_name"
    assert not EmbeddingSet.objects.exists() and not Job.objects.exists()
    assert _outside_media(tmp_path, tmp_path / "media") == []


def test_a_hugging_face_id_stays_the_label_and_its_file_is_a_slug_under_media(
    dataset, import_dir, run_on_commit, settings, tmp_path
):
    es = run_on_commit(
        services.embedding_set_start,
        dataset=dataset,
        checkpoint="tiny-clip",
        model_name="openai/clip-vit-base-patch32",
    )
    es.refresh_from_db()
    assert es.state == EmbeddingState.READY and es.model_name == "openai/clip-vit-base-patch32"
    media = (tmp_path / "media").resolve()
    stored = (media / es.file).resolve()
    assert stored.is_file() and stored.parent == media / "embeddings" / str(dataset.pk)
    assert "/" not in es.file.removeprefix(f"embeddings/{dataset.pk}/")
