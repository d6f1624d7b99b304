"""MTurk behaviour beyond the provider contract; every call checked by botocore's Stubber."""

from datetime import UTC, datetime
from decimal import Decimal

import pytest
from botocore.stub import ANY
from django.core.management import call_command

from annotation.crowd.mturk import client as mturk
from annotation.crowd.mturk.adapter import MTurkProvider
from annotation.crowd.mturk.client import MTurkError, MTurkGateway, make_client
from annotation.crowd.mturk.fees import estimate_cost
from annotation.crowd.mturk.publish import mturk_publish_start
from annotation.crowd.mturk.sync import mturk_sync_batch
from annotation.errors import ServiceError
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import (
    Answer,
    Assignment,
    AssignmentState,
    Batch,
    Event,
    Hit,
    HitStatus,
    Job,
    PoolMembership,
    Worker,
)
from annotation.services.runs.batches import batch_create, batch_publish
from pipeline.errors import InputError
from pipeline.mturk_xml import answer_xml
from tests.annotation.drivers import SUBMIT_TO, MTurkDriver, fake_id, stubbed_mturk
from tests.annotation.test_api_schema import check, schema  # noqa: F401
from tests.factories import selection_done_factory

pytestmark = pytest.mark.django_db


@pytest.fixture
def mt(client, settings):
    settings.CROWDVL_PUBLIC_URL = "https://crowd.example.org"
    driver = MTurkDriver(client)
    yield driver
    driver.done()


@pytest.fixture
def draft(paired_run):
    return batch_create(
        run=paired_run,
        stage=BisonStage.SELECTION,
        provider="mturk",
        items_per_hit=2,
        reward="0.50",
    )


def test_fees_and_estimate():
    assert estimate_cost(hits=10, assignments_per_hit=2, reward=Decimal("0.50")).total == Decimal(
        "12.00"
    )
    assert estimate_cost(hits=1, assignments_per_hit=10, reward=Decimal("0.50")).total == Decimal(
        "7.00"
    )
    cheap = estimate_cost(hits=3, assignments_per_hit=1, reward=Decimal("0.01"))
    assert cheap.fee_per_assignment == Decimal("0.01") and cheap.total == Decimal("0.06")


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


def test_missing_credentials_are_a_clear_error(monkeypatch, tmp_path):
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "none"))
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    with pytest.raises(InputError, match="no AWS credentials") as err:
        make_client("sandbox")
    assert err.value.field == "credentials"
    with pytest.raises(InputError, match="'sandbox' or 'production'"):
        make_client("eu-west-1")


def test_sandbox_and_production_endpoints(monkeypatch):
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "x")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "y")
    assert "sandbox" in make_client("sandbox").meta.endpoint_url
    assert (
        make_client("production").meta.endpoint_url
        == "https://mturk-requester.us-east-1.amazonaws.com"
    )


def test_throttling_is_retried_with_backoff_and_request_errors_are_not(mt):
    gateway = mt.gateway
    mt.expect_error("GetAccountBalance", "ThrottlingException", "Rate exceeded")
    mt.expect_error("GetAccountBalance", "ServiceFault", "Internal failure")
    mt.expect("GetAccountBalance", {"AvailableBalance": "7.00"})
    assert gateway.call("GetAccountBalance")["AvailableBalance"] == "7.00"
    assert mt.sleeps == [1.0, 2.0]
    mt.expect_error("ApproveAssignment", "RequestError", "Assignment X does not exist.")
    with pytest.raises(MTurkError, match="Assignment X does not exist"):
        gateway.call("ApproveAssignment", AssignmentId="X")
    assert mt.sleeps == [1.0, 2.0]
    short = MTurkGateway(gateway.client, max_attempts=2, sleep=mt.sleeps.append)
    for _ in range(2):
        mt.expect_error("GetAccountBalance", "ThrottlingException", "Rate exceeded")
    with pytest.raises(MTurkError, match="gave up after 2 attempts"):
        short.call("GetAccountBalance")


def published_batch(mt, draft):
    return mt.publish(draft)


def test_preview_shows_instructions_and_an_example_without_taking_answers(mt, draft, client):
    batch = published_batch(mt, draft)
    hit = batch.hits.order_by("position").first()
    response = client.get(
        f"/mturk/hit/{hit.pk}/",
        {"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE", "hitId": hit.provider_hit_id},
    )
    html = response.content.decode()
    assert response.status_code == 200 and 'id="preview"' in html
    assert 'id="instructions"' in html and 'id="example"' in html
    assert 'id="task-form"' not in html  # the HIT's questions only once it is accepted
    assert "X-Frame-Options" not in response.headers  # MTurk frames this page
    assert not Assignment.objects.exists()


def test_worker_page_stores_answers_then_posts_them_to_mturk(mt, draft, client):
    batch = published_batch(mt, draft)
    assignment = mt.take(batch, "WORKER1")
    assert not Assignment.objects.exists()  # opening the page wrote nothing
    # The page refuses a turkSubmitTo that is not MTurk's.
    hit = assignment.hit
    bad = client.get(
        f"/mturk/hit/{hit.pk}/",
        {"assignmentId": "A2", "workerId": "W2", "turkSubmitTo": "https://evil.example"},
    )
    assert bad.status_code == 400
    answers = {f"q{q.position}": "none" for q in hit.questions.all()}
    response = mt.post(assignment, answers)
    assert b"https://workersandbox.mturk.com/mturk/externalSubmit" in response.content
    stored = Assignment.objects.get()
    assert not stored.confirmed and stored.answers.count() == 2
    assert not PoolMembership.objects.exists()  # unconfirmed work grants no pool
    mt.open[assignment.provider_assignment_id] = (hit.pk, "WORKER1", "")
    mt.submit_confirm(assignment, answers)
    stored.refresh_from_db()
    assert stored.confirmed and stored.state == AssignmentState.SUBMITTED
    assert PoolMembership.objects.get(worker=stored.worker).granted_at is not None
    # Reloading after submitting shows the MTurk submit form again, nothing stored twice.
    again = client.get(
        f"/mturk/hit/{hit.pk}/",
        {
            "assignmentId": assignment.provider_assignment_id,
            "workerId": "WORKER1",
            "hitId": hit.provider_hit_id,
            "turkSubmitTo": SUBMIT_TO,
        },
    )
    assert b"https://workersandbox.mturk.com/mturk/externalSubmit" in again.content
    assert Answer.objects.filter(assignment=stored).count() == 2


def test_a_forged_form_is_refused(mt, draft, client):
    batch = published_batch(mt, draft)
    assignment = mt.take(batch, "WORKER1")
    response = client.post(
        f"/mturk/hit/{assignment.hit.pk}/",
        {
            "q0": "none",
            "q1": "none",
            "assignmentId": assignment.provider_assignment_id,
            "turkSubmitTo": SUBMIT_TO,
            "token": "forged",
        },
    )
    assert response.status_code == 400 and not Answer.objects.exists()


def remote_assignment(hit, worker, assignment_id, status, answers):
    now = datetime(2026, 11, 1, 12, 0, tzinfo=UTC)
    return {
        "AssignmentId": assignment_id,
        "WorkerId": worker,
        "HITId": hit.provider_hit_id,
        "AssignmentStatus": status,
        "AcceptTime": now,
        "SubmitTime": now.replace(minute=3),
        "Answer": answer_xml(answers),
    }


def test_sync_ingests_answers_that_reached_mturk_only_and_reconciles(mt, draft):
    batch = published_batch(mt, draft)
    hits = list(batch.hits.order_by("position"))
    local = mt.take(batch, "LOCALW")  # on hits[0]
    mt.submit(local, {f"q{q.position}": "none" for q in local.hit.questions.all()})
    none2 = {"q0": "none", "q1": "none"}
    page1 = {
        "Assignments": [
            remote_assignment(hits[0], "LOCALW", local.provider_assignment_id, "Approved", none2)
        ],
        "NumResults": 1,
        "NextToken": "page2",
    }
    mt.expect(
        "ListAssignmentsForHIT",
        page1,
        {"HITId": hits[0].provider_hit_id, "MaxResults": 100, "AssignmentStatuses": ANY},
    )
    mt.expect(
        "ListAssignmentsForHIT",
        {"Assignments": [], "NumResults": 0},
        {
            "HITId": hits[0].provider_hit_id,
            "MaxResults": 100,
            "AssignmentStatuses": ANY,
            "NextToken": "page2",
        },
    )
    lost = remote_assignment(
        hits[1], "REMOTEW", "REMOTEASSIGNMENT1".ljust(30, "X"), "Submitted", none2
    )
    bad = remote_assignment(
        hits[1], "BADW", "BADASSIGNMENT1".ljust(30, "X"), "Submitted", {**none2, "q9": "none"}
    )
    mt.expect(
        "ListAssignmentsForHIT",
        {"Assignments": [lost, bad], "NumResults": 2},
        {"HITId": hits[1].provider_hit_id, "MaxResults": 100, "AssignmentStatuses": ANY},
    )
    mt.expect_error(
        "ListAssignmentsForHIT", "RequestError", f"Hit {hits[2].provider_hit_id} does not exist."
    )
    mt.expect(
        "AssociateQualificationWithWorker",
        {},
        {
            "QualificationTypeId": ANY,
            "WorkerId": "REMOTEW",
            "IntegerValue": 1,
            "SendNotification": False,
        },
    )

    report = mturk_sync_batch(batch=batch)
    assert report.ingested == 1 and report.unknown_hits == [hits[2].provider_hit_id]
    assert len(report.errors) == 1 and "q9" in report.errors[0]
    local.refresh_from_db()
    assert local.state == AssignmentState.APPROVED  # approved at MTurk, now here too
    ingested = Assignment.objects.get(provider_assignment_id=lost["AssignmentId"])
    assert ingested.state == AssignmentState.SUBMITTED and ingested.answers.count() == 2
    assert (ingested.submitted_at - ingested.accepted_at).total_seconds() == 180
    # Refused answers write nothing (no worker, assignment or pool row) and are listed once.
    assert not Assignment.objects.filter(provider_assignment_id=bad["AssignmentId"]).exists()
    assert not Worker.objects.filter(external_id="BADW").exists()
    refused = Event.objects.get(action="mturk.answers_refused")
    assert refused.data["assignment"] == bad["AssignmentId"] and refused.data["worker"] == "BADW"
    assert Hit.objects.get(pk=hits[2].pk).status == HitStatus.UNKNOWN
    assert Event.objects.filter(action="mturk.hit_unknown").count() == 1


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


def test_review_actions_notify_extend_and_unblock(mt, draft):
    batch = published_batch(mt, draft)
    a = mt.take(batch, "W1")
    mt.submit(a, {"q0": "none", "q1": "none"})
    from annotation.services.money.batch_extension import batch_extend
    from annotation.services.work.worker_actions import worker_block, worker_unblock, workers_notify

    mt.expect(
        "NotifyWorkers",
        {"NotifyWorkersFailureStatuses": []},
        {"Subject": "Thanks", "MessageText": "More HITs soon", "WorkerIds": ["W1"]},
    )
    assert workers_notify(workers=[a.worker], subject="Thanks", message="More HITs soon") == 1
    assert workers_notify(workers=[a.worker], subject="Thanks", message="More HITs soon") == 0
    for hit in batch.hits.all():
        mt.expect("UpdateExpirationForHIT", {}, {"HITId": hit.provider_hit_id, "ExpireAt": ANY})
    batch_extend(batch=batch, seconds=3600)
    mt.expect("CreateWorkerBlock", {}, {"WorkerId": "W1", "Reason": "spam"})
    worker_block(worker=a.worker, reason="spam")
    mt.expect("DeleteWorkerBlock", {}, {"WorkerId": "W1", "Reason": "appeal accepted"})
    worker_unblock(worker=a.worker, reason="appeal accepted")
    worker_unblock(worker=a.worker, reason="appeal accepted")
    actions = list(Event.objects.filter(worker=a.worker).values_list("action", flat=True))
    assert (
        actions.count("worker.notified") == 1
        and "worker.blocked" in actions
        and actions.count("worker.unblocked") == 1
    )
    assert Event.objects.filter(batch=batch, action="batch.extended").exists()


def test_check_command_shows_endpoint_and_balance(mt, capsys):
    mt.expect("GetAccountBalance", {"AvailableBalance": "42.10"})
    call_command("mturk_check")
    out = capsys.readouterr().out
    assert "mturk-requester-sandbox.us-east-1.amazonaws.com" in out and "$42.10" in out


def test_stub_rejects_requests_that_do_not_fit_the_service_model():
    _, stubber, gateway, _ = stubbed_mturk()
    stubber.add_response("notify_workers", {"NotifyWorkersFailureStatuses": []})
    from botocore.exceptions import ParamValidationError

    with pytest.raises(ParamValidationError):
        gateway.client.notify_workers(Subject="x")  # missing MessageText and WorkerIds


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
