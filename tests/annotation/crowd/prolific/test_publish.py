"""Publishing at Prolific (annotation/crowd/prolific/publish.py, issue 24), against the stand-in of its API (tests/annotation/crowd/prolific/standin.py): one study
per batch, no second study after a crash or a lost answer, the refusals before anything is
made (currency, Prolific's minimum, budget, daily cap, balance, a full study before a pilot),
the launch page and the API, and a publish job that fails."""

from decimal import Decimal

import pytest

from annotation.crowd.prolific import studies
from annotation.crowd.prolific.fees import minor_units
from annotation.crowd.prolific.publish import prolific_publish_start
from annotation.errors import ServiceError
from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import BatchStatus, PoolQualification
from annotation.services.runs.batches import batch_create, batch_publish
from tests.annotation.crowd.prolific.test_provider import answers_for, draft

pytestmark = pytest.mark.django_db


def test_one_study_per_batch_from_the_batch(pro, paired_run):
    batch = pro.publish(draft(paired_run))
    assert batch.status == BatchStatus.PUBLISHED
    [study] = pro.standin.studies.values()
    assert batch.provider_hit_type_id == study["id"] and study["status"] == "ACTIVE"
    hits = list(batch.hits.all())
    assert study["total_available_places"] == len(hits) * batch.assignments_per_hit
    assert study["reward"] == minor_units(batch.reward)
    url = study["external_study_url"]
    assert url.startswith(f"https://crowd.example.org/prolific/study/{batch.pk}/?")
    for placeholder in ("{{%PROLIFIC_PID%}}", "{{%STUDY_ID%}}", "{{%SESSION_ID%}}"):
        assert placeholder in url
    assert study["maximum_allowed_time"] >= batch.assignment_duration_seconds // 60
    codes = {c["code_type"]: c for c in study["completion_codes"]}
    assert codes["COMPLETED"]["actions"] == [{"action": "MANUALLY_REVIEW"}]
    assert codes["NO_CONSENT"]["actions"][0]["action"] == "REQUEST_RETURN"
    assert codes["COMPLETED"]["code"] == studies.completion_code(batch, studies.COMPLETED)
    filters = {f["filter_id"]: f for f in study["filters"]}
    assert filters["approval_rate"]["selected_range"]["lower"] == 97
    # Countries as the choice ids of Prolific's filter list, not names (crowd/prolific/test_filters.py).
    [country] = [
        f for f in pro.standin.filter_list if f["filter_id"] == "current-country-of-residence"
    ]
    uk = next(cid for cid, label in country["choices"].items() if label == "United Kingdom")
    assert uk in filters["current-country-of-residence"]["selected_values"]
    # BISON stage 2's study excludes stage 3's pool and the project block.
    blocked = set(filters["participant_group_blocklist"]["selected_values"])
    pool3 = PoolQualification.objects.get(run=paired_run, stage=BisonStage.VERIFICATION)
    assert pool3.qualification_id in blocked and len(blocked) == 2
    assert all(h.provider_hit_id.startswith(study["id"]) for h in batch.hits.all())


def test_a_retry_after_a_crash_between_create_and_save_makes_no_second_study(pro, paired_run):
    batch = draft(paired_run)
    real = pro.client.call

    def crash_after_create(method, path, **kwargs):
        body = real(method, path, **kwargs)
        if (method, path) == ("POST", "studies/"):
            raise RuntimeError("the worker died before the study's id was saved")
        return body

    pro.client.call = crash_after_create
    with pytest.raises(RuntimeError):
        batch_publish(batch=batch)
    pro.client.call = real
    batch.refresh_from_db()
    assert batch.provider_hit_type_id == "" and batch.status == BatchStatus.DRAFT
    batch_publish(batch=batch)
    batch.refresh_from_db()
    assert len(pro.standin.studies) == 1
    assert batch.provider_hit_type_id == next(iter(pro.standin.studies))
    assert pro.standin.calls.count(("POST", "studies/")) == 1
    assert batch.status == BatchStatus.PUBLISHED


def test_a_workspace_in_another_currency_is_refused_never_converted(pro, paired_run):
    pro.standin.currency = "GBP"  # the installation counts in USD (the driver's setting)
    with pytest.raises(ServiceError, match="nothing is converted"):
        prolific_publish_start(batch=draft(paired_run), provider=pro.provider)
    assert not pro.standin.studies


def test_pay_under_prolifics_minimum_is_refused_even_when_low_pay_is_allowed(pro, paired_run):
    cheap = draft(paired_run, reward=Decimal("0.01"), options={"allow_low_pay": True})
    with pytest.raises(ServiceError, match="Prolific's enforced minimum"):
        batch_publish(batch=cheap)
    assert not pro.standin.studies


def test_budget_daily_cap_and_balance_are_checked_before_publishing(pro, paired_run, settings):
    batch = draft(paired_run)
    settings.CROWDVL_BUDGET = "0.10"
    with pytest.raises(ServiceError, match="CROWDVL_BUDGET"):
        prolific_publish_start(batch=batch, provider=pro.provider)
    settings.CROWDVL_BUDGET = None
    settings.CROWDVL_DAILY_CAP = "0.10"
    with pytest.raises(ServiceError, match="CROWDVL_DAILY_CAP"):
        prolific_publish_start(batch=batch, provider=pro.provider)
    settings.CROWDVL_DAILY_CAP = None
    pro.standin.balance = 1
    with pytest.raises(ServiceError, match="available"):
        prolific_publish_start(batch=batch, provider=pro.provider)
    assert not pro.standin.studies


def test_the_launch_page_and_the_api_publish_a_prolific_batch(
    pro, paired_run, admin_client, django_capture_on_commit_callbacks
):
    batch = draft(paired_run)
    page = admin_client.get(f"/batches/{batch.pk}/").content.decode()
    assert 'id="fees"' in page and "Prolific fees" not in page  # the fee row is the platform's
    assert 'id="requirements"' in page and "Approval Rate: at least 97" in page
    assert "median completion time" in page and "desktop only" in page
    assert 'id="refusal"' not in page
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(f"/api/batches/{batch.pk}/publish/")
    assert response.status_code == 202, response.content
    assert response.json()["job"]["name"] == "prolific.publish"
    batch.refresh_from_db()
    assert batch.status == BatchStatus.PUBLISHED
    assert pro.standin.studies[batch.provider_hit_type_id]["status"] == "ACTIVE"


def test_a_full_study_needs_a_pilot_whose_median_time_sets_the_pay(pro, dataset, run_on_commit):
    from annotation.crowd.prolific.spend import PILOT_PLACES
    from tests.factories import paired_run_factory

    run = paired_run_factory(dataset, run_on_commit=run_on_commit)
    full = batch_create(
        run=run, stage=BisonStage.SELECTION, provider="prolific", items_per_hit=1, limit=2
    )
    full.hits.update(extra_assignments=PILOT_PLACES)  # more places than a pilot's
    with pytest.raises(ServiceError, match="before a pilot"):
        batch_publish(batch=full)
    assert not pro.standin.studies
    pilot = pro.publish(
        batch_create(
            run=run, stage=BisonStage.SELECTION, provider="prolific", items_per_hit=1, limit=3
        )
    )
    pilot.hits.update(extra_assignments=1)  # 3 HITs x 2 places: 6 participants at most
    from annotation.crowd.prolific.studies import study_places_raise

    study_places_raise(batch=pilot, client=pro.client)
    for n in range(5):
        a = pro.take(pilot, f"pilot{n}")
        pro.submit(a, answers_for(a))
    assert pro.publish(full).status == BatchStatus.PUBLISHED


def _other_studies(pro, count):
    """Studies of other labs' batches in the workspace, so a look-up must page past the first."""
    for n in range(count):
        sid = pro.standin.new_id()
        pro.standin.studies[sid] = {
            "id": sid,
            "name": f"other {n}",
            "internal_name": f"someone-else-{n}",
            "status": "COMPLETED",
            "total_available_places": 1,
            "reward": 100,
            "completion_codes": [],
        }


def test_lost_answers_while_publishing_make_one_study_and_one_group_of_each(pro, paired_run):
    """Each creating call takes effect and its answer is lost (a dropped connection, a 502):
    the study and every group are looked up (past the first page) instead of made twice."""
    _other_studies(pro, 45)
    pro.standin.lose("POST", "participant-groups/")
    pro.standin.lose("POST", "participant-groups/", status=502)
    pro.standin.lose("POST", "studies/", status=502)
    batch = pro.publish(draft(paired_run))
    assert batch.status == BatchStatus.PUBLISHED
    mine = [s for s in pro.standin.studies.values() if s["internal_name"].startswith("crowdvl-")]
    assert len(mine) == 1 and batch.provider_hit_type_id == mine[0]["id"]
    assert pro.standin.calls.count(("POST", "studies/")) == 1
    names = [g["name"] for g in pro.standin.group_info.values()]
    assert len(names) == len(set(names)) == pro.standin.calls.count(("POST", "participant-groups/"))
    blocklist = next(
        f for f in mine[0]["filters"] if f["filter_id"] == "participant_group_blocklist"
    )
    assert set(blocklist["selected_values"]) <= set(pro.standin.groups)


def test_a_create_that_did_not_take_effect_is_sent_once_more_only_after_a_look_up(pro, paired_run):
    """A 502 before Prolific acted: unclear, so nothing is sent again at once; the next attempt
    looks the study up, finds none, and creates it."""
    from annotation.errors import RemoteUnclear
    from annotation.models import RemoteCall

    batch = draft(paired_run)
    pro.standin.fail("POST", "studies/", status=502, why="bad gateway")
    with pytest.raises(RemoteUnclear, match="may have taken effect"):
        batch_publish(batch=batch)
    assert pro.standin.calls.count(("POST", "studies/")) == 1 and not pro.standin.studies
    assert RemoteCall.objects.get(operation="study.create").state == "unclear"
    batch.refresh_from_db()
    assert batch.status == BatchStatus.DRAFT
    batch_publish(batch=batch)
    assert len(pro.standin.studies) == 1
    assert pro.standin.calls.count(("POST", "studies/")) == 2
    assert pro.standin.calls.count(("GET", "studies/")) >= 2  # looked up before each send


def test_an_unexpected_error_ends_the_publish_job_failed_and_recovery_leaves_it(
    pro, paired_run, monkeypatch, admin_client
):
    from annotation.crowd.prolific import publish, tasks
    from annotation.models import Job
    from annotation.services.jobs.job_recovery import jobs_recover

    batch = draft(paired_run)
    job = prolific_publish_start(batch=batch, provider=pro.provider)

    def broken(**kwargs):
        raise KeyError("id")  # e.g. an answer without the field the reference promises

    monkeypatch.setattr(publish, "study_create_once", broken)
    with pytest.raises(KeyError):
        tasks.prolific_publish_task(job.pk)
    job = Job.objects.get(pk=job.pk)
    assert job.state == "failed" and "KeyError" in job.error
    assert jobs_recover(stall_seconds=0) == []  # never re-sent: it may have acted outside
    page = admin_client.get("/").content.decode()
    assert "KeyError" in page
    assert pro.standin.calls.count(("POST", "participant-groups/")) == len(pro.standin.groups)
