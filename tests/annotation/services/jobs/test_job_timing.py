"""A split job records when its prepare, each part and its finish ran (`Job.timings`), and
the scale-out model reads that record back."""

import pytest
from rest_framework.test import APIClient

from annotation.flows.bison.services.pairing import pairing_block, pairing_start
from annotation.models import Job, JobState
from annotation.services.jobs.job_timing import phase_open, worker_name
from annotation.services.jobs.jobs import job_create, job_start, job_succeed
from annotation.services.runs.runs import run_create
from pipeline.scaleout import predict, profile_from_timings
from tests.annotation.api.test_schema import check, schema  # noqa: F401
from tests.factories import topic_vectors_file

pytestmark = pytest.mark.django_db


def check_timings(job: Job, parts: int, *, serial: bool = True) -> None:
    """Prepare, then every part, then the finish, each ending after it starts; when the parts
    ran one after another (`serial`), the model's one-worker replay lands on the run's time."""
    timings = job.timings
    assert sorted(timings) == ["finish", "parts", "prepare"]
    assert sorted(timings["parts"], key=int) == [str(p) for p in range(parts)]
    prepare, finish = timings["prepare"], timings["finish"]
    assert job.created_at.timestamp() <= prepare["start"] <= prepare["end"]
    for record in timings["parts"].values():
        assert prepare["end"] <= record["start"] <= record["end"] <= finish["start"]
        assert record["setup"] >= 0
    assert finish["start"] <= finish["end"] <= job.finished_at.timestamp()
    created, finished = job.created_at.timestamp(), job.finished_at.timestamp()
    profile = profile_from_timings(timings, created=created, finished=finished)
    assert len(profile.parts) == parts
    if not serial:
        return
    # One worker took the parts one after another: the replay differs from the run only by
    # each dispatch gap's distance from their median.
    assert predict(profile, 1) == pytest.approx(finished - created, abs=0.05)


def test_stage1_in_blocks_records_each_step(
    dataset,
    run_on_commit,
    tmp_path,
    django_user_model,
    schema,  # noqa: F811
):
    vec = topic_vectors_file(tmp_path / "topics.vec")
    job = run_on_commit(
        pairing_start, run=run_create(dataset=dataset), vectors_path=str(vec), block_size=2
    )
    job.refresh_from_db()
    assert job.state == JobState.SUCCEEDED, job.error
    check_timings(job, parts=3)
    assert {r["worker"] for r in job.timings["parts"].values()} == {worker_name()}
    # The API's job (the schema's shape) carries them, for a model run from outside.
    api = APIClient()
    api.force_authenticate(django_user_model.objects.create_user("r", is_staff=True))
    response = api.get(f"/api/jobs/{job.pk}/")
    check(schema, "/api/jobs/{job_id}/", "get", response)
    assert response.json()["timings"] == job.timings
    before = job.timings

    # A redelivered block, or a step called outside a task, records nothing.
    assert pairing_block(job_id=job.pk, part=1, start=2, stop=4) is False
    job.refresh_from_db()
    assert job.timings == before


def test_a_job_that_is_not_split_records_no_timings(db):
    job = job_create(name="plain")
    with phase_open():  # as in a task: only a split job's last step is its finish
        job_start(job_id=job.pk)
        job_succeed(job_id=job.pk, result={})
    assert Job.objects.get(pk=job.pk).timings == {}
