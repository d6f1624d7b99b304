"""Resuming and cancelling jobs (tasks in-process; the real killed worker is in
test_job_recovery_worker.py): which steps a stalled job gets again, that finishing happens
once, and the CLI, API and dashboard actions."""

import pytest
from django.core.management import CommandError, call_command

from annotation.errors import ServiceError
from annotation.flows.bison import tasks as bison_tasks
from annotation.flows.bison.services.pairing import (
    pairing_block,
    pairing_finish,
    pairing_prepare,
    pairing_start,
)
from annotation.flows.bison.vocabulary import BisonItemKind
from annotation.models import Event, Item, Job, JobState, Run, RunStatus
from annotation.services.jobs.job_recovery import job_cancel, job_resume, jobs_recover
from annotation.services.runs.runs import run_create
from tests.factories import dataset_factory, topic_vectors_file

pytestmark = pytest.mark.django_db


@pytest.fixture
def lost_job(tmp_path, django_capture_on_commit_callbacks):
    """Stage 1 asked for, its first message lost (never sent): a pending job nobody runs."""
    run = run_create(dataset=dataset_factory(tmp_path))
    vectors = topic_vectors_file(tmp_path / "topics.vec")
    with django_capture_on_commit_callbacks(execute=False):
        job = pairing_start(run=run, vectors_path=str(vectors), block_size=2)
    return job


def _paired_events(run):
    return Event.objects.filter(run=run, action="run.status", data__to=RunStatus.PREPARED).count()


def test_a_job_whose_first_message_was_lost_is_resumed_and_finishes(
    lost_job, django_capture_on_commit_callbacks
):
    assert jobs_recover(stall_seconds=3600) == []  # not silent long enough
    with django_capture_on_commit_callbacks(execute=True):
        assert jobs_recover(stall_seconds=0) == [lost_job.pk]
    job = Job.objects.get(pk=lost_job.pk)
    assert job.state == JobState.SUCCEEDED and job.resumed == 1
    assert Run.objects.get(pk=job.run_id).status == RunStatus.PREPARED
    assert Event.objects.filter(action="job.resumed", data__job=job.pk).count() == 1


def test_only_the_missing_blocks_are_sent_again_and_the_job_finishes_once(
    lost_job, django_capture_on_commit_callbacks
):
    blocks = pairing_prepare(job_id=lost_job.pk)
    assert len(blocks) == 3
    assert pairing_prepare(job_id=lost_job.pk) == []  # a second delivery sends nothing
    pairing_block(job_id=lost_job.pk, part=0, start=blocks[0][1], stop=blocks[0][2])
    with django_capture_on_commit_callbacks(execute=True):
        plan = job_resume(job_id=lost_job.pk, reason="test")
    assert plan == [
        ("bison.pairing_block", [lost_job.pk, 1, 2, 4]),
        ("bison.pairing_block", [lost_job.pk, 2, 4, 6]),
    ]
    job = Job.objects.get(pk=lost_job.pk)
    assert job.state == JobState.SUCCEEDED and job.parts_done == [0, 1, 2]
    assert Item.objects.filter(run=job.run, kind=BisonItemKind.IMAGE_PAIR).count() == 6
    # A late copy of the finishing step or of a block changes nothing.
    pairing_finish(job_id=job.pk)
    bison_tasks.pairing_block_task(job.pk, 1, 2, 4)
    assert _paired_events(job.run) == 1
    with pytest.raises(ServiceError, match="succeeded"):
        job_resume(job_id=job.pk, reason="test")


def test_a_job_with_every_part_done_gets_its_finishing_step(lost_job):
    pairing_prepare(job_id=lost_job.pk)
    Job.objects.filter(pk=lost_job.pk).update(parts_done=[0, 1, 2])
    plan = job_resume(job_id=lost_job.pk, reason="test")
    assert plan == [("bison.pairing_finish", [lost_job.pk])]


def test_cancel_stops_the_job_and_frees_the_run(lost_job, tmp_path, run_on_commit):
    job = job_cancel(job_id=lost_job.pk, by="alice")
    assert job.state == JobState.CANCELLED and "alice" in job.message
    run = Run.objects.get(pk=job.run_id)
    assert run.status == RunStatus.FAILED
    # Its steps, delivered late, do nothing; the run can start stage 1 again.
    bison_tasks.pairing_prepare_task(job.pk)
    assert Job.objects.get(pk=job.pk).parts_total == 0
    with pytest.raises(ServiceError, match="cancelled"):
        job_cancel(job_id=job.pk, by="alice")
    vectors = topic_vectors_file(tmp_path / "again.vec")
    again = run_on_commit(pairing_start, run=run, vectors_path=str(vectors))
    assert Job.objects.get(pk=again.pk).state == JobState.SUCCEEDED


def test_a_restart_after_a_failed_attempt_keeps_none_of_its_pairs(
    lost_job, tmp_path, run_on_commit
):
    blocks = pairing_prepare(job_id=lost_job.pk)
    pairing_block(job_id=lost_job.pk, part=0, start=blocks[0][1], stop=blocks[0][2])
    run = lost_job.run
    images = list(run.dataset.images.order_by("pk").values_list("pk", flat=True))
    # A pair as from other vectors (kept as it was, it would survive the restart unchanged).
    Item.objects.update_or_create(
        run=run,
        kind=BisonItemKind.IMAGE_PAIR,
        positive_id=images[-1],
        negative_id=images[-2],
        defaults={"similarity": -1.0},
    )
    job_cancel(job_id=lost_job.pk, by="alice")
    vectors = topic_vectors_file(tmp_path / "again.vec")
    again = run_on_commit(pairing_start, run=Run.objects.get(pk=run.pk), vectors_path=str(vectors))
    assert Job.objects.get(pk=again.pk).state == JobState.SUCCEEDED
    pairs = Item.objects.filter(run=run, kind=BisonItemKind.IMAGE_PAIR)
    assert not pairs.filter(similarity=-1.0).exists()
    assert pairs.count() == 6


def test_jobs_command_lists_resumes_and_cancels(lost_job, capsys):
    call_command("jobs")
    assert f"job {lost_job.pk} bison.pairing" in capsys.readouterr().out
    call_command("jobs", "resume", str(lost_job.pk))
    assert "1 step(s) sent again" in capsys.readouterr().out
    call_command("jobs", "cancel", str(lost_job.pk))
    assert "cancelled" in capsys.readouterr().out
    with pytest.raises(CommandError, match="only a pending or running job"):
        call_command("jobs", "resume", str(lost_job.pk))
    call_command("jobs")
    assert "no pending or running jobs" in capsys.readouterr().out


def test_api_resume_and_cancel_are_staff_only(lost_job, admin_client, client, django_user_model):
    url = f"/api/jobs/{lost_job.pk}/"
    django_user_model.objects.create_user("bob", password="pw")
    client.login(username="bob", password="pw")
    assert client.post(url + "cancel/").status_code == 403
    response = admin_client.post(url + "resume/")
    assert response.status_code == 202, response.content
    assert response.json()["sent"] == ["bison.pairing_prepare"]
    assert response.json()["job"]["resumed"] == 1
    response = admin_client.post(url + "cancel/")
    assert response.status_code == 200 and response.json()["state"] == "cancelled"
    assert admin_client.post(url + "cancel/").status_code == 409


def test_dashboard_buttons_resume_and_cancel(lost_job, admin_client):
    html = admin_client.get("/").content.decode()
    assert f'action="/jobs/{lost_job.pk}/resume/"' in html
    response = admin_client.post(f"/jobs/{lost_job.pk}/cancel/", follow=True)
    assert f"Job {lost_job.pk} cancelled." in response.content.decode()
    assert Job.objects.get(pk=lost_job.pk).state == JobState.CANCELLED
    html = admin_client.get("/").content.decode()
    assert f'action="/jobs/{lost_job.pk}/resume/"' not in html


@pytest.mark.django_db(transaction=True)
def test_a_fresh_process_resumes_a_job_whose_tasks_it_never_imported(tmp_path, settings):
    """`manage.py jobs resume` imports no tasks module itself: the step's task was not
    registered in its process ("NotRegistered: 'bison.pairing_prepare'") until resuming looked
    for every app's tasks (issue 46, where the Celery app stopped loading at start-up)."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    from config import celery_app
    from tests.annotation.celery_process import private_queue
    from tests.factories import database_name

    run = run_create(dataset=dataset_factory(tmp_path))
    vectors = topic_vectors_file(tmp_path / "topics.vec")
    with private_queue() as queue:  # its first message goes where no worker takes it
        job = pairing_start(run=run, vectors_path=str(vectors), block_size=2)
    with celery_app.connection_for_write() as conn:
        conn.default_channel.queue_purge(queue)
    env = {
        **os.environ,
        "TEST_DATABASE_NAME": database_name(),
        "CELERY_BROKER_URL": "",  # its steps in-process
        "CROWDVL_MEDIA_ROOT": str(settings.MEDIA_ROOT),
        "DJANGO_SECRET_KEY": settings.SECRET_KEY,
    }
    done = subprocess.run(
        [sys.executable, "manage.py", "jobs", "resume", str(job.pk)],
        cwd=Path(__file__).resolve().parents[4],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert Job.objects.get(pk=job.pk).state == JobState.SUCCEEDED
    assert Run.objects.get(pk=run.pk).status == RunStatus.PREPARED
