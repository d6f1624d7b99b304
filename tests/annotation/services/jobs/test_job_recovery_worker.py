"""Jobs recover by themselves: stage 1 split into 200 block subtasks, its Celery worker killed
with SIGKILL in the middle (and, in the second case, the broker's queue lost as a Redis
restart without persistence loses it); a new worker with the periodic recovery finishes the
job, from the blocks already done, with its finishing step run once."""

import base64
import json
import time

import numpy as np
import pytest
import redis
from django.conf import settings

from annotation.flows.bison.services.pairing import pairing_start
from annotation.flows.bison.vocabulary import BisonItemKind
from annotation.models import Event, Item, Job, JobState, Run, RunStatus
from annotation.services.runs.runs import run_create
from tests.annotation.celery_process import CeleryProcess, private_queue
from tests.factories import dataset_factory

pytestmark = [pytest.mark.long, pytest.mark.celery_worker, pytest.mark.django_db(transaction=True)]

IMAGES = 600
RECOVERY_ENV = {
    "CROWDVL_JOB_HEARTBEAT_SECONDS": "1",
    "CROWDVL_JOB_STALL_SECONDS": "4",
    "CROWDVL_JOB_RECOVER_SECONDS": "1",
}


def _dataset_and_vectors(tmp_path):
    """600 images, each captioned by its own word; random word vectors, so every image has a
    nearest neighbour that numpy can tell us independently."""
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(IMAGES)]
    document = {
        "info": {},
        "licenses": [],
        "images": [
            {
                "id": 1 + i,
                "file_name": f"COCO_val2014_{1 + i:012d}.jpg",
                "coco_url": f"http://images.cocodataset.org/val2014/{1 + i}.jpg",
            }
            for i in range(IMAGES)
        ],
        "annotations": [
            {"id": 10_000 + i, "image_id": 1 + i, "caption": f"a {words[i]}"} for i in range(IMAGES)
        ],
    }
    dataset = dataset_factory(tmp_path, document=document, name="many")
    vectors = rng.standard_normal((IMAGES, 16)).astype(np.float32)
    path = tmp_path / "many.vec"
    lines = [f"{IMAGES} 16"] + [
        w + " " + " ".join(f"{v:.5f}" for v in row) for w, row in zip(words, vectors, strict=True)
    ]
    path.write_text("\n".join(lines) + "\n")
    return dataset, path


def _held(queue: str) -> int:
    """Messages of `queue` delivered to a worker and not acknowledged (kombu's Redis
    transport keeps them in the `unacked` hash until the visibility timeout, an hour)."""
    r = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    return sum(1 for value in r.hvals("unacked") if queue.encode() in value)


def _held_undone(queue, job):
    """Block parts the worker holds unacknowledged that the job has not recorded as done:
    only those make recovery necessary (a part done but not yet acknowledged does not)."""
    job.refresh_from_db()
    r = redis.Redis.from_url(settings.CELERY_BROKER_URL)
    parts = set()
    for value in r.hvals("unacked"):
        if queue.encode() not in value:
            continue
        message = json.loads(value)[0]
        if message["headers"].get("task") == "bison.pairing_block":
            args = json.loads(base64.b64decode(message["body"]))[0]
            parts.add(args[1])
    return parts - set(job.parts_done)


def _wait(job, until, seconds, process):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        job.refresh_from_db()
        if until(job):
            return job
        time.sleep(0.01)
    raise AssertionError(f"{job.state} {job.parts_done!r:.80} {job.message}\n{process.log()}")


@pytest.mark.parametrize("queue_lost", [False, True], ids=["killed", "killed+queue-lost"])
def test_a_job_whose_worker_was_killed_finishes_by_itself(tmp_path, queue_lost):
    dataset, vectors = _dataset_and_vectors(tmp_path)
    run = run_create(dataset=dataset)
    with private_queue() as queue:
        first = CeleryProcess(queue=queue, log=tmp_path / "first.log", concurrency=1)
        try:
            job = pairing_start(run=run, vectors_path=str(vectors), block_size=3)
            job = _wait(job, lambda j: len(j.parts_done) >= 5, 60, first)
            # Killed while it holds a block it has not finished, so that message is lost for
            # the visibility timeout: frozen first, so what it holds cannot change between
            # look and kill.
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:
                first.freeze()
                if _held_undone(queue, job):
                    break
                first.thaw()
                time.sleep(0.005)
        finally:
            first.kill()
        killed = time.monotonic()
        job.refresh_from_db()
        assert job.state == JobState.RUNNING and len(job.parts_done) < job.parts_total == 200
        # What the dead worker held: only recovery can send it again.
        assert _held(queue) >= 1 and _held_undone(queue, job)
        if queue_lost:
            redis.Redis.from_url(settings.CELERY_BROKER_URL).delete(queue)

        second = CeleryProcess(
            queue=queue, log=tmp_path / "second.log", concurrency=2, beat=True, env=RECOVERY_ENV
        )
        try:
            job = _wait(job, lambda j: j.state != JobState.RUNNING, 90, second)
        finally:
            second.stop()

    assert job.state == JobState.SUCCEEDED, f"{job.error}\n{second.log()}"
    print(f"finished {time.monotonic() - killed:.1f} s after the kill, resumed {job.resumed}x")
    assert job.resumed >= 1 and sorted(job.parts_done) == list(range(200))
    assert Run.objects.get(pk=run.pk).status == RunStatus.PREPARED
    # The finishing step ran once: one "paired" status change, one success.
    paired = Event.objects.filter(run=run, action="run.status", data__to=RunStatus.PREPARED)
    assert paired.count() == 1
    assert Event.objects.filter(run=run, action="job.resumed", data__job=job.pk).exists()
    # Every image has its pair, none twice.
    pairs = Item.objects.filter(run=run, kind=BisonItemKind.IMAGE_PAIR)
    assert pairs.values("positive").distinct().count() == IMAGES
    assert pairs.count() == Job.objects.get(pk=job.pk).result["pairs"]
