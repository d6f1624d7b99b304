"""The run's owner (who created it from a page or the API) is mailed once when a batch
completes and when a job fails; runs from the command line have no owner and mail no one."""

import pytest
from django.core import mail

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Event, Run, RunKind
from annotation.services.jobs.jobs import job_create, job_fail, job_start
from annotation.services.runs.batches import batch_create, batch_publish
from pipeline.simulate import WorkerProfile

pytestmark = pytest.mark.django_db


@pytest.fixture
def owner(django_user_model):
    return django_user_model.objects.create_user(
        "rita", email="rita@example.org", password="x", is_staff=True
    )


def test_a_run_made_from_the_page_belongs_to_its_maker(dataset, owner, client):
    client.force_login(owner)
    client.post(
        "/runs/new/eccv/",
        {
            "dataset": dataset.pk,
            "name": "mine",
            "config_image_queries": 5,
            "config_caption_queries": 5,
            "config_k": 2,
            "config_models": 1,
            "config_seed": 0,
            "config_cxc_threshold": 3.0,
            "config_judgments_per_pair": 1,
            "config_gold_source": "established",
            "config_gold_min_answers": 3,
            "config_gold_agreement": 1.0,
        },
    )
    run = Run.objects.get(name="mine")
    assert run.owner == owner and run.kind == RunKind.ECCV
    # Made through the flow's own creator: the query sample is drawn.
    assert len(run.config["query_images"]) == 5


def test_owner_is_mailed_when_a_batch_completes_and_when_a_job_fails(
    paired_run, owner, django_capture_on_commit_callbacks
):
    Run.objects.filter(pk=paired_run.pk).update(owner=owner)
    batch = batch_publish(
        batch=batch_create(
            run=paired_run, stage=BisonStage.SELECTION, provider="simulated", limit=2
        )
    )
    with django_capture_on_commit_callbacks(execute=True):
        simulate_crowd(batch=batch, workers=2, profile=WorkerProfile(accuracy=1.0))
    batch.refresh_from_db()
    assert batch.status == "completed"
    assert len(mail.outbox) == 1
    assert mail.outbox[0].to == ["rita@example.org"]
    assert f"batch {batch.pk} completed" in mail.outbox[0].subject
    job = job_create(name="bison.export", run=paired_run, params={})
    job_start(job_id=job.pk, message="x")
    with django_capture_on_commit_callbacks(execute=True):
        job_fail(job_id=job.pk, error="disk full")
        job_fail(job_id=job.pk, error="again")  # an ended job fails once: one mail
    assert len(mail.outbox) == 2 and "disk full" in mail.outbox[1].body
    assert Event.objects.filter(action="owner.notified", run=paired_run).count() == 2


def test_a_run_without_owner_mails_no_one(paired_run, django_capture_on_commit_callbacks):
    job = job_create(name="bison.export", run=paired_run, params={})
    with django_capture_on_commit_callbacks(execute=True):
        job_fail(job_id=job.pk, error="disk full")
    assert mail.outbox == []
