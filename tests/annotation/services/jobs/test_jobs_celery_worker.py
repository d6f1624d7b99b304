"""Stage 1 through Redis and a real Celery worker process, split into block subtasks."""

import socket
import time

import pytest
from django.conf import settings

from annotation.flows.bison.services.pairing import pairing_start
from annotation.models import Item, Job, JobState, Run, RunStatus
from annotation.services.jobs.job_timing import worker_name
from annotation.services.runs.runs import run_create
from tests.annotation.celery_process import CeleryProcess, private_queue
from tests.annotation.services.jobs.test_job_timing import check_timings
from tests.factories import database_name, dataset_factory, topic_vectors_file

pytestmark = [pytest.mark.celery_worker, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker(tmp_path):
    with private_queue() as queue:
        process = CeleryProcess(queue=queue, log=tmp_path / "worker.log")
        try:
            yield process.proc, process.log_path
        finally:
            process.stop()


def test_stage1_runs_on_a_real_worker_in_block_subtasks(worker, tmp_path, image_dir):
    proc, log_path = worker
    dataset = dataset_factory(tmp_path, image_dir=image_dir)
    vec = topic_vectors_file(tmp_path / "topics.vec")
    run = run_create(dataset=dataset)
    job = pairing_start(run=run, vectors_path=str(vec), block_size=2)  # autocommit: sent now

    deadline = time.monotonic() + 120
    seen_progress = set()
    while time.monotonic() < deadline:
        job.refresh_from_db()
        seen_progress.add(job.progress)
        if job.state in (JobState.SUCCEEDED, JobState.FAILED):
            break
        assert proc.poll() is None, log_path.read_text()
        time.sleep(0.2)
    assert job.state == JobState.SUCCEEDED, f"{job.state} {job.error}\n{log_path.read_text()}"
    assert job.parts_total == 3 and job.parts_done == [0, 1, 2]
    assert Run.objects.get(pk=run.pk).status == RunStatus.PREPARED
    pairs = dict(Item.objects.filter(run=run).values_list("positive__coco_id", "negative__coco_id"))
    assert pairs == {100: 101, 101: 100, 102: 103, 103: 102, 104: 105, 105: 104}
    log = log_path.read_text()
    assert log.count("bison.pairing_block[") >= 3 and "bison.pairing_prepare[" in log
    assert Job.objects.get(pk=job.pk).finished_at is not None
    # The worker's processes, not this one, timed the prepare, each block and the finish
    # (its pool may run blocks side by side).
    check_timings(Job.objects.get(pk=job.pk), parts=3, serial=False)
    ran = {r["worker"] for r in Job.objects.get(pk=job.pk).timings["parts"].values()}
    assert ran and all(w.startswith(f"{socket.gethostname()}:") for w in ran)
    assert worker_name() not in ran
    assert settings.DATABASES["default"]["NAME"] == database_name()
