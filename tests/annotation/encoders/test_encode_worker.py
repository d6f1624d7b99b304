"""The encoder job on a real Celery worker: one subtask per chunk, progress with rates."""

import time

import pytest

from annotation.encoders import services
from annotation.encoders.models import EmbeddingSet
from annotation.models import Job, JobState
from tests.annotation.celery_process import CeleryProcess, private_queue
from tests.factories import dataset_factory

pytestmark = [pytest.mark.long, pytest.mark.celery_worker, pytest.mark.django_db(transaction=True)]


def test_the_encoder_job_runs_on_a_real_worker_in_chunk_subtasks(tmp_path, image_dir, import_dir):
    dataset = dataset_factory(tmp_path, image_dir=image_dir)
    with private_queue() as queue:
        worker = CeleryProcess(
            queue=queue,
            log=tmp_path / "worker.log",
            env={"CROWDVL_IMPORT_DIR": str(import_dir), "CROWDVL_IMAGE_DIRS": str(tmp_path)},
        )
        try:
            es = services.embedding_set_start(
                dataset=dataset, checkpoint="tiny-clip", chunk_images=2, chunk_captions=4
            )
            job = Job.objects.get(pk=es.job_id)
            messages = set()
            deadline = time.monotonic() + 240
            while time.monotonic() < deadline:
                job.refresh_from_db()
                messages.add(job.message)
                if job.state in (JobState.SUCCEEDED, JobState.FAILED):
                    break
                assert worker.alive(), worker.log()
                time.sleep(0.2)
            assert job.state == JobState.SUCCEEDED, f"{job.error}\n{worker.log()}"
            log = worker.log()
        finally:
            worker.stop()
    assert job.parts_done == list(range(job.parts_total)) and job.parts_total > 2
    assert log.count("encoders.encode_part[") >= job.parts_total
    assert any("images/s" in m or "captions/s" in m for m in messages) or "images" in job.message
    es = EmbeddingSet.objects.get(pk=es.pk)
    assert es.state == "ready" and es.counts["images_encoded"] == dataset.images.count()
