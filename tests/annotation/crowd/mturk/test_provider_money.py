"""MTurk: no crash, retry, second installation or environment switch pays twice, loses a HIT or
drops work (issue 9). Every call is checked by botocore's Stubber against MTurk's model."""

from datetime import timedelta

import pytest
from botocore.stub import ANY
from django.utils import timezone

from annotation.crowd.mturk import client as mturk
from annotation.crowd.mturk.client import MTurkError
from annotation.crowd.mturk.sync import mturk_batches_to_sync, mturk_sync_open
from annotation.errors import ServiceError
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import (
    AssignmentState,
    Batch,
    BatchStatus,
    Bonus,
    Event,
    Hit,
    HitStatus,
    PoolQualification,
)
from annotation.selectors.installation import installation_id
from annotation.services.access.installation import installation_regenerate
from annotation.services.runs.batches import batch_create, batch_expire, batch_publish
from annotation.services.work.decisions import assignment_reject
from annotation.services.work.worker_actions import worker_bonus
from tests.annotation.drivers import MTurkDriver, fake_id

pytestmark = pytest.mark.django_db


@pytest.fixture
def mt(client, settings):
    settings.CROWDVL_PUBLIC_URL = "https://crowd.example.org"
    driver = MTurkDriver(client)
    yield driver
    driver.done()


def draft(run, **kwargs):
    options = {"items_per_hit": 2, "reward": "0.50", **kwargs}
    return batch_create(run=run, stage=BisonStage.SELECTION, provider="mturk", **options)


def hit_call(hit, hit_id=None):
    token = mturk.hit_token(hit)
    return {
        "HITTypeId": ANY,
        "MaxAssignments": ANY,
        "LifetimeInSeconds": ANY,
        "Question": ANY,
        "RequesterAnnotation": token,
        "UniqueRequestToken": token,
    }


def worked(mt, batch, name="W1"):
    assignment = mt.take(batch, name)
    mt.submit(assignment, {f"q{q.position}": "none" for q in assignment.hit.questions.all()})
    return assignment


# --- money and identity ---------------------------------------------------------------------


def test_amounts_are_always_sent_as_dollars_and_cents(mt, paired_run):
    batch = draft(paired_run, reward="0.5")  # publishing in the same command, as the CLI does
    mt.expect("GetAccountBalance", {"AvailableBalance": "100.00"})
    for n in range(2):
        mt.expect(
            "CreateQualificationType", {"QualificationType": {"QualificationTypeId": f"Q{n}"}}
        )
    mt.expect(
        "CreateHITType",
        {"HITTypeId": "T".ljust(30, "X")},
        {
            "Title": ANY,
            "Description": ANY,
            "Keywords": ANY,
            "Reward": "0.50",
            "AssignmentDurationInSeconds": ANY,
            "AutoApprovalDelayInSeconds": ANY,
            "QualificationRequirements": ANY,
        },
    )
    for hit in batch.hits.order_by("position"):
        mt.expect("CreateHITWithHITType", {"HIT": {"HITId": fake_id("H", hit.pk)}}, hit_call(hit))
    batch_publish(batch=batch)
    assert mturk.mturk_amount(batch.reward) == "0.50"


def test_tokens_and_names_carry_installation_environment_and_object(mt, paired_run):
    batch = mt.publish(draft(paired_run))
    hit = batch.hits.order_by("position").first()
    key = installation_id()
    assert mturk.hit_token(hit) == f"crowdvl-{key}-sb-hit-{hit.pk}"
    assert Batch.objects.get(pk=batch.pk).environment == "sandbox"
    assert set(PoolQualification.objects.values_list("environment", flat=True)) == {"sandbox"}
    name = mturk.pool_name(run_id=paired_run.pk, stage=BisonStage.SELECTION, environment="sandbox")
    assert name.startswith(f"crowdvl {key} sb run {paired_run.pk}")
    # A restored copy regenerates its id: its tokens and names no longer collide.
    new = installation_regenerate()
    assert new != key and mturk.hit_token(hit) == f"crowdvl-{new}-sb-hit-{hit.pk}"
    assert Event.objects.filter(action="installation.regenerated").exists()


def test_a_hit_named_by_mturk_is_adopted_only_if_it_is_this_installations(mt, paired_run):
    batch = draft(paired_run)
    hit = batch.hits.order_by("position").first()
    other = "OTHERHIT".ljust(30, "X")
    mt.expect("GetAccountBalance", {"AvailableBalance": "100.00"})
    for n in range(2):
        mt.expect(
            "CreateQualificationType", {"QualificationType": {"QualificationTypeId": f"Q{n}"}}
        )
    mt.expect("CreateHITType", {"HITTypeId": "T".ljust(30, "X")})
    mt.stubber.add_client_error(
        "create_hit_with_hit_type",
        service_error_code="RequestError",
        service_message=f"The HIT with ID {other} already exists.",
        modeled_fields={
            "Message": f"The HIT with ID {other} already exists.",
            "TurkErrorCode": mturk.HIT_EXISTS,
        },
        expected_params=hit_call(hit),
    )
    # Another database on the same account made that HIT: its annotation says so.
    mt.expect(
        "GetHIT",
        {"HIT": {"HITId": other, "RequesterAnnotation": f"crowdvl-0000beef-sb-hit-{hit.pk}"}},
        {"HITId": other},
    )
    with pytest.raises(MTurkError, match="not this installation's HIT"):
        batch_publish(batch=batch)
    assert Hit.objects.get(pk=hit.pk).provider_hit_id == ""


def test_duplicates_are_recognised_by_turk_error_code_not_wording(mt, paired_run):
    batch = draft(paired_run)
    hits = list(batch.hits.order_by("position"))
    mt.expect("GetAccountBalance", {"AvailableBalance": "100.00"})
    for n in range(2):
        mt.expect(
            "CreateQualificationType", {"QualificationType": {"QualificationTypeId": f"Q{n}"}}
        )
    mt.expect("CreateHITType", {"HITTypeId": "T".ljust(30, "X")})
    mt.stubber.add_client_error(
        "create_hit_with_hit_type",
        service_error_code="RequestError",
        service_message="Duplicate request.",  # no "already exists", no HIT id
        modeled_fields={"Message": "Duplicate request.", "TurkErrorCode": mturk.HIT_EXISTS},
        expected_params=hit_call(hits[0]),
    )
    found = fake_id("H", hits[0].pk)
    mt.expect(
        "ListHITs",
        {"HITs": [{"HITId": found, "RequesterAnnotation": mturk.hit_token(hits[0])}]},
        {"MaxResults": 100},
    )
    for hit in hits[1:]:
        mt.expect("CreateHITWithHITType", {"HIT": {"HITId": fake_id("H", hit.pk)}}, hit_call(hit))
    batch_publish(batch=batch)
    assert Hit.objects.get(pk=hits[0].pk).provider_hit_id == found


def test_bonuses_are_paid_once_whatever_happens(mt, paired_run):
    batch = mt.publish(draft(paired_run))
    a = worked(mt, batch)
    mt.expect(
        "SendBonus",
        {},
        {
            "WorkerId": "W1",
            "AssignmentId": a.provider_assignment_id,
            "BonusAmount": "0.50",
            "Reason": ANY,
            "UniqueRequestToken": ANY,
        },
    )
    first = worker_bonus(assignment=a, amount="0.5", reason="Careful work")
    again = worker_bonus(assignment=a, amount="0.50", reason="Careful work")  # same bonus
    # One bonus: a second SendBonus would find no stubbed response and fail.
    assert first.pk == again.pk and Bonus.objects.count() == 1
    assert first.token == again.token


def test_a_bonus_retried_after_mturk_forgot_its_token_looks_before_paying(mt, paired_run):
    batch = mt.publish(draft(paired_run))
    a = worked(mt, batch)
    # The first attempt reached MTurk, then the worker process died before recording it.
    mt.expect_error("SendBonus", "ServiceUnavailable", "connection reset")
    mt.gateway.max_attempts = 1
    with pytest.raises(MTurkError):
        worker_bonus(assignment=a, amount="0.25", reason="Careful work")
    bonus = Bonus.objects.get()
    assert bonus.sent_at is None and bonus.attempted_at is not None
    Bonus.objects.filter(pk=bonus.pk).update(attempted_at=timezone.now() - timedelta(hours=25))
    reference = f"[ref {bonus.token[-12:]}]"
    mt.expect(
        "ListBonusPayments",
        {"BonusPayments": [{"WorkerId": "W1", "Reason": f"Careful work {reference}"}]},
        {"AssignmentId": a.provider_assignment_id, "MaxResults": 100},
    )
    paid = worker_bonus(assignment=a, amount="0.25", reason="Careful work")
    assert paid.sent_at is not None  # found at MTurk: no second SendBonus


def test_expired_credentials_are_a_failure_not_already_paid(mt, paired_run):
    batch = mt.publish(draft(paired_run))
    a = worked(mt, batch)
    mt.expect_error(
        "SendBonus",
        "ExpiredTokenException",
        "The security token included in the request is expired",
    )
    with pytest.raises(MTurkError, match="expired"):
        worker_bonus(assignment=a, amount="0.25", reason="Careful work")
    assert Bonus.objects.get().sent_at is None


def test_a_refused_repeat_counts_as_paid_only_if_mturk_lists_the_payment(mt, paired_run):
    batch = mt.publish(draft(paired_run))
    a = worked(mt, batch)
    mt.expect_error("SendBonus", "RequestError", "This request has already been processed")
    mt.expect("ListBonusPayments", {"BonusPayments": []})
    with pytest.raises(MTurkError):
        worker_bonus(assignment=a, amount="0.25", reason="Careful work")
    assert Bonus.objects.get().sent_at is None


# --- crash and retry ---------------------------------------------------------------------------


def test_publishing_records_its_intent_and_a_late_retry_looks_up_the_hit_first(mt, paired_run):
    batch = draft(paired_run)
    hits = list(batch.hits.order_by("position"))
    mt.expect("GetAccountBalance", {"AvailableBalance": "100.00"})
    for n in range(2):
        mt.expect(
            "CreateQualificationType", {"QualificationType": {"QualificationTypeId": f"Q{n}"}}
        )
    mt.expect("CreateHITType", {"HITTypeId": "T".ljust(30, "X")})
    mt.expect("CreateHITWithHITType", {"HIT": {"HITId": fake_id("H", hits[0].pk)}})
    mt.expect_error("CreateHITWithHITType", "ServiceUnavailable", "down")
    mt.gateway.max_attempts = 1
    with pytest.raises(MTurkError):
        batch_publish(batch=batch)
    lost = Hit.objects.get(pk=hits[1].pk)
    assert lost.provider_hit_id == "" and lost.create_attempted_at is not None
    # 25 hours later MTurk has forgotten the token: look by annotation before creating.
    Hit.objects.filter(pk=lost.pk).update(create_attempted_at=timezone.now() - timedelta(hours=25))
    mt.expect("GetAccountBalance", {"AvailableBalance": "100.00"})
    made = fake_id("H", hits[1].pk)
    mt.expect(
        "ListHITs",
        {"HITs": [{"HITId": made, "RequesterAnnotation": mturk.hit_token(lost)}]},
        {"MaxResults": 100},
    )
    mt.expect("CreateHITWithHITType", {"HIT": {"HITId": fake_id("H", hits[2].pk)}})
    batch_publish(batch=batch)
    assert Hit.objects.get(pk=lost.pk).provider_hit_id == made


def test_a_pool_qualification_lost_in_a_crash_is_found_by_name(mt, paired_run):
    batch = draft(paired_run)
    name = mturk.pool_name(run_id=paired_run.pk, stage=BisonStage.SELECTION, environment="sandbox")
    mt.expect("GetAccountBalance", {"AvailableBalance": "100.00"})
    mt.expect_error(
        "CreateQualificationType",
        "RequestError",
        "You have already created a QualificationType with this name.",
    )
    mt.expect(
        "ListQualificationTypes",
        {"QualificationTypes": [{"QualificationTypeId": "QLOST", "Name": name}]},
        {"Query": name, "MustBeRequestable": False, "MustBeOwnedByCaller": True, "MaxResults": 100},
    )
    mt.expect("CreateQualificationType", {"QualificationType": {"QualificationTypeId": "Q2"}})
    mt.expect("CreateHITType", {"HITTypeId": "T".ljust(30, "X")})
    for hit in batch.hits.order_by("position"):
        mt.expect("CreateHITWithHITType", {"HIT": {"HITId": fake_id("H", hit.pk)}})
    batch_publish(batch=batch)
    assert PoolQualification.objects.get(stage=BisonStage.SELECTION).qualification_id == "QLOST"


def test_a_rejection_is_recorded_even_when_the_hit_cannot_grow(mt, paired_run):
    batch = mt.publish(draft(paired_run))
    a = worked(mt, batch)
    mt.expect("RejectAssignment", {})
    mt.stubber.add_client_error(
        "create_additional_assignments_for_hit",
        service_error_code="RequestError",
        service_message="The maximum number of assignments cannot be increased",
        modeled_fields={
            "Message": "cannot increase",
            "TurkErrorCode": mturk.CANNOT_GROW,
        },
    )
    assignment_reject(assignment=a, feedback="Captions chosen at random.")
    a.refresh_from_db()
    assert a.state == AssignmentState.REJECTED
    assert Event.objects.filter(action="hit.cannot_grow", assignment=a).exists()


def test_extra_assignments_with_a_repeated_token_are_success(mt, paired_run):
    batch = mt.publish(draft(paired_run))
    hit = batch.hits.order_by("position").first()
    mt.stubber.add_client_error(
        "create_additional_assignments_for_hit",
        service_error_code="RequestError",
        service_message="The UniqueRequestToken was already used",
    )
    mt.provider.add_assignments(hit=hit, count=1, token="crowdvl-x-add-1")


# --- synchronisation ---------------------------------------------------------------------------


def test_one_failing_batch_does_not_stop_the_others(mt, paired_run, admin_client):
    first = mt.publish(draft(paired_run, limit=2))
    mt.expect_publish(draft(paired_run), pools=False)
    second = Batch.objects.order_by("-pk").first()
    batch_publish(batch=second)
    mt.expect_error("ListAssignmentsForHIT", "RequestError", "Access denied for this HIT type")
    for _hit in second.hits.order_by("position"):
        mt.expect("ListAssignmentsForHIT", {"Assignments": [], "NumResults": 0})
    reports = mturk_sync_open()
    assert len(reports) == 1
    first.refresh_from_db()
    assert "Access denied" in first.sync_error
    assert "sync failed" in admin_client.get("/").content.decode()


def test_each_batch_keeps_its_environment(mt, paired_run, settings):
    batch = mt.publish(draft(paired_run))
    seen = []
    mt.provider.use_gateway(lambda environment=None: seen.append(environment) or mt.gateway)
    settings.CROWDVL_MTURK_ENV = "production"  # the default changes after publishing
    for _hit in batch.hits.order_by("position"):
        mt.expect("ListAssignmentsForHIT", {"Assignments": [], "NumResults": 0})
    from annotation.crowd.mturk.sync import mturk_sync_batch

    mturk_sync_batch(batch=batch)
    assert seen and set(seen) == {"sandbox"}
    assert not Hit.objects.filter(batch=batch, status=HitStatus.UNKNOWN).exists()


def test_completed_and_expired_batches_are_synchronised_until_final(mt, paired_run):
    batch = mt.publish(draft(paired_run))
    Batch.objects.filter(pk=batch.pk).update(status=BatchStatus.COMPLETED)
    assert batch.pk in [b.pk for b in mturk_batches_to_sync()]  # MTurk may still auto-approve
    Batch.objects.filter(pk=batch.pk).update(
        status=BatchStatus.EXPIRED, published_at=timezone.now() - timedelta(days=90)
    )
    assert batch.pk not in [b.pk for b in mturk_batches_to_sync()]  # final: no more calls


def test_expiring_finds_and_expires_a_hit_whose_id_was_lost(mt, paired_run):
    batch = mt.publish(draft(paired_run))
    lost = batch.hits.order_by("position").last()
    lost_id = lost.provider_hit_id
    Hit.objects.filter(pk=lost.pk).update(provider_hit_id="", create_attempted_at=timezone.now())
    for hit in batch.hits.order_by("position"):
        if hit.pk == lost.pk:
            mt.expect(
                "ListHITs",
                {"HITs": [{"HITId": lost_id, "RequesterAnnotation": mturk.hit_token(lost)}]},
            )
            mt.expect("UpdateExpirationForHIT", {}, {"HITId": lost_id, "ExpireAt": ANY})
        else:
            mt.expect("UpdateExpirationForHIT", {}, {"HITId": hit.provider_hit_id, "ExpireAt": ANY})
    batch_expire(batch=batch)


def test_unconfirmed_work_cannot_be_paid_a_bonus(mt, paired_run):
    batch = mt.publish(draft(paired_run))
    taken = mt.take(batch, "W9")
    mt.post(taken, {f"q{q.position}": "none" for q in taken.hit.questions.all()})
    from annotation.models import Assignment

    with pytest.raises(ServiceError, match="not confirmed"):
        worker_bonus(assignment=Assignment.objects.get(), amount="1.00", reason="x")
