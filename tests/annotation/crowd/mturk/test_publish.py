"""Publishing at MTurk (annotation/crowd/mturk/publish.py): the job that creates the HIT type
and HITs with tokens, retries after a crash, the refusals before anything is sent, the stages'
pools as qualifications, and the API that starts it; every call checked by botocore's Stubber."""

from decimal import Decimal

import pytest
from botocore.stub import ANY

from annotation.crowd.mturk import client as mturk
from annotation.crowd.mturk.provider import MTurkProvider
from annotation.crowd.mturk.publish import mturk_publish_start
from annotation.errors import ServiceError
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Batch, Event, Hit, Job
from annotation.services.runs.batches import batch_create, batch_publish
from pipeline.errors import InputError
from tests.annotation.api.test_schema import check, schema  # noqa: F401
from tests.annotation.drivers import SUBMIT_TO, fake_id
from tests.factories import selection_done_factory

pytestmark = pytest.mark.django_db


def test_publish_job_creates_the_hit_type_and_hits_with_tokens(mt, draft, run_on_commit):
    mt.expect("GetAccountBalance", {"AvailableBalance": "100.00"})  # checked before the job
    mt.expect_publish(draft)
    job = run_on_commit(mturk_publish_start, batch=draft)
    job.refresh_from_db()
    assert job.state == "succeeded", job.error
    assert job.progress == 100 and job.result["hits"] == 3
    assert "3 HITs x 1 assignments x $0.50" in job.params["estimate"]
    draft.refresh_from_db()
    assert draft.status == "published" and draft.provider_hit_type_id == fake_id("T", draft.pk)
    assert sorted(draft.hits.values_list("provider_hit_id", flat=True)) == sorted(
        fake_id("H", h.pk) for h in draft.hits.all()
    )
    assert Event.objects.filter(batch=draft, action="mturk.hits_created").exists()


def test_a_retry_after_a_crash_between_create_and_save_makes_no_second_hit(mt, draft, monkeypatch):
    hits = list(draft.hits.order_by("position"))
    real = MTurkProvider.create_hit

    def crash_on_second(self, *, hit, hit_type_id, look_first=False):
        made = real(self, hit=hit, hit_type_id=hit_type_id, look_first=look_first)
        if hit.pk == hits[1].pk:
            raise RuntimeError("worker killed before saving the HIT id")
        return made

    monkeypatch.setattr(MTurkProvider, "create_hit", crash_on_second)
    mt.expect("GetAccountBalance", {"AvailableBalance": "100.00"})
    for n in range(2):
        mt.expect(
            "CreateQualificationType",
            {"QualificationType": {"QualificationTypeId": fake_id("Q", n)}},
        )
    mt.expect("CreateHITType", {"HITTypeId": "TYPE1".ljust(30, "X")})
    for hit in hits[:2]:
        token = mturk.hit_token(hit)
        mt.expect(
            "CreateHITWithHITType",
            {"HIT": {"HITId": fake_id("H", hit.pk)}},
            {
                "HITTypeId": ANY,
                "MaxAssignments": 1,
                "LifetimeInSeconds": ANY,
                "Question": ANY,
                "RequesterAnnotation": token,
                "UniqueRequestToken": token,
            },
        )
    with pytest.raises(RuntimeError):
        batch_publish(batch=draft)
    assert Hit.objects.get(pk=hits[0].pk).provider_hit_id == fake_id("H", hits[0].pk)
    assert Hit.objects.get(pk=hits[1].pk).provider_hit_id == ""  # the id was lost in the crash

    monkeypatch.setattr(MTurkProvider, "create_hit", real)
    mt.expect("GetAccountBalance", {"AvailableBalance": "100.00"})
    lost = fake_id("H", hits[1].pk)
    token = mturk.hit_token(hits[1])
    mt.expect_error(
        "CreateHITWithHITType",
        "RequestError",
        f"AWS.MechanicalTurk.HitAlreadyExists: The HIT with ID {lost} already exists.",
        {
            "HITTypeId": ANY,
            "MaxAssignments": 1,
            "LifetimeInSeconds": ANY,
            "Question": ANY,
            "RequesterAnnotation": token,
            "UniqueRequestToken": token,
        },
    )
    # The HIT MTurk names is adopted only after checking it is this installation's HIT.
    mt.expect("GetHIT", {"HIT": {"HITId": lost, "RequesterAnnotation": token}}, {"HITId": lost})
    token = mturk.hit_token(hits[2])
    mt.expect(
        "CreateHITWithHITType",
        {"HIT": {"HITId": fake_id("H", hits[2].pk)}},
        {
            "HITTypeId": ANY,
            "MaxAssignments": 1,
            "LifetimeInSeconds": ANY,
            "Question": ANY,
            "RequesterAnnotation": token,
            "UniqueRequestToken": token,
        },
    )
    batch_publish(batch=draft)
    ids = list(draft.hits.order_by("position").values_list("provider_hit_id", flat=True))
    assert ids == [fake_id("H", h.pk) for h in hits]
    assert Hit.objects.filter(batch=draft).count() == 3


def test_budget_and_balance_refusals_send_and_write_nothing(mt, draft, settings):
    settings.CROWDVL_BUDGET = "1.00"
    with pytest.raises(ServiceError, match=r"over the budget of \$1.00"):
        mturk_publish_start(batch=draft)
    settings.CROWDVL_BUDGET = None
    mt.expect("GetAccountBalance", {"AvailableBalance": "0.50"})
    with pytest.raises(ServiceError, match=r"account holds \$0.50"):
        mturk_publish_start(batch=draft)
    assert not Job.objects.filter(name="mturk.publish").exists()
    assert Batch.objects.get(pk=draft.pk).status == "draft"


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"lifetime_seconds": 10}, "lifetime_seconds"),
        ({"assignment_duration_seconds": 40_000_000}, "assignment_duration_seconds"),
        ({"auto_approval_delay_seconds": 3_000_000}, "auto_approval_delay_seconds"),
        ({"reward": Decimal("0.00")}, "reward"),
    ],
)
def test_values_outside_mturk_limits_are_refused(mt, draft, change, field):
    Batch.objects.filter(pk=draft.pk).update(**change)
    draft.refresh_from_db()
    with pytest.raises(InputError) as err:
        mturk_publish_start(batch=draft)
    assert err.value.field == field
    assert not Job.objects.filter(name="mturk.publish").exists()


def test_http_public_url_and_unknown_qualification_are_refused(mt, draft, settings):
    settings.CROWDVL_PUBLIC_URL = "http://crowd.example.org"
    with pytest.raises(InputError, match="HTTPS"):
        mturk_publish_start(batch=draft)
    settings.CROWDVL_PUBLIC_URL = "https://crowd.example.org"
    Batch.objects.filter(pk=draft.pk).update(
        qualifications={**draft.qualifications, "custom": [{"id": "NOPE", "comparator": "Exists"}]}
    )
    draft.refresh_from_db()
    mt.expect_error(
        "GetQualificationType",
        "RequestError",
        "Qualification type NOPE does not exist.",
        {"QualificationTypeId": "NOPE"},
    )
    with pytest.raises(InputError, match="unknown MTurk qualification 'NOPE'"):
        mturk_publish_start(batch=draft)
    assert (
        not Job.objects.filter(name="mturk.publish").exists()
        and not Hit.objects.exclude(provider_hit_id="").exists()
    )


def published_batch(mt, draft):
    return mt.publish(draft)


def test_stage_pools_are_kept_apart_by_qualifications(mt, paired_run):
    selection_done_factory(paired_run)
    stage3 = batch_create(
        run=paired_run,
        stage=BisonStage.VERIFICATION,
        provider="mturk",
        items_per_hit=100,
        limit=1,  # one HIT (image-disjoint HITs: the toy run's triples would need two)
    )
    mt.expect("GetAccountBalance", {"AvailableBalance": "100.00"})
    mt.expect(
        "CreateQualificationType",
        {"QualificationType": {"QualificationTypeId": "POOLSELECTION".ljust(30, "X")}},
        {
            "Name": mturk.pool_name(
                run_id=paired_run.pk, stage="bison_selection", environment="sandbox"
            ),
            "Description": ANY,
            "QualificationTypeStatus": "Active",
        },
    )
    mt.expect(
        "CreateQualificationType",
        {"QualificationType": {"QualificationTypeId": "POOLVERIFY".ljust(30, "X")}},
        {
            "Name": mturk.pool_name(
                run_id=paired_run.pk, stage="bison_verification", environment="sandbox"
            ),
            "Description": ANY,
            "QualificationTypeStatus": "Active",
        },
    )
    requirements = mturk.qualification_requirements(
        stage3.qualifications, exclude_pools=["POOLSELECTION".ljust(30, "X")]
    )
    assert requirements[-1] == {
        "QualificationTypeId": "POOLSELECTION".ljust(30, "X"),
        "Comparator": "DoesNotExist",
        "ActionsGuarded": "DiscoverPreviewAndAccept",
    }
    assert {"Country": "NZ"} in requirements[2]["LocaleValues"] and requirements[0][
        "IntegerValues"
    ] == [500]
    mt.expect(
        "CreateHITType",
        {"HITTypeId": "T3".ljust(30, "X")},
        {
            "Title": ANY,
            "Description": ANY,
            "Keywords": ANY,
            "Reward": ANY,  # the default: the minimum hourly pay at the expected time
            "AssignmentDurationInSeconds": 3600,
            "AutoApprovalDelayInSeconds": 259200,
            "QualificationRequirements": requirements,
        },
    )
    mt.expect("CreateHITWithHITType", {"HIT": {"HITId": "H3".ljust(30, "X")}})
    batch_publish(batch=stage3)
    # A stage-2 worker arriving at a stage-3 HIT anyway is refused by the server too.
    hit = stage3.hits.get()
    from annotation.services.work.pools import pool_join
    from annotation.services.work.worker_identity import worker_get_or_create

    w = worker_get_or_create(provider="mturk", external_id="STAGE2W")
    pool_join(run=paired_run, worker=w, stage=BisonStage.SELECTION)
    response = mt.http.get(
        f"/mturk/hit/{hit.pk}/",
        {
            "assignmentId": "A".ljust(30, "X"),
            "workerId": "STAGE2W",
            "hitId": hit.provider_hit_id,
            "turkSubmitTo": SUBMIT_TO,
        },
    )
    assert response.status_code == 403 and b"different people" in response.content


def test_publish_api_refuses_over_budget_with_a_clear_message(mt, draft, settings, admin_client):
    settings.CROWDVL_BUDGET = "1.00"
    response = admin_client.post(f"/api/batches/{draft.pk}/mturk/publish/")
    assert response.status_code == 409
    assert "over the budget of $1.00" in response.json()["error"]
    assert "3 HITs x 1 assignments x $0.50" in response.json()["error"]


@pytest.mark.parametrize("url", ["/api/batches/{}/mturk/publish/", "/api/batches/{}/publish/"])
def test_publish_api_enqueues_the_job_that_creates_the_hits(
    mt,
    draft,
    admin_client,
    run_on_commit,
    schema,  # noqa: F811
    url,
):
    mt.expect("GetAccountBalance", {"AvailableBalance": "100.00"})  # checked before the job
    mt.expect_publish(draft)
    response = run_on_commit(admin_client.post, url.format(draft.pk))
    assert response.status_code == 202, response.json()
    if "mturk" in url:
        check(schema, "/api/batches/{batch_id}/mturk/publish/", "post", response)
        job_id = response.json()["id"]
    else:
        check(schema, "/api/batches/{batch_id}/publish/", "post", response)
        job_id = response.json()["job"]["id"]
    job = Job.objects.get(pk=job_id)
    assert job.state == "succeeded", job.error
    draft.refresh_from_db()
    assert draft.status == "published" and draft.hits.exclude(provider_hit_id="").count() == 3
