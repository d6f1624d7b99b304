"""A run's page: the funnel from the flow's own selector, submissions over time, agreement
per stage measured by hand, spend, jobs; its JSON; who may see it; and in Chromium the charts
drawn by the vendored Chart.js and a running job's progress followed live."""

import hashlib
from pathlib import Path

import pytest
from django.db import connection
from playwright.sync_api import expect

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.flows.bison.vocabulary import BisonItemKind, BisonStage
from annotation.flows.eccv.vocabulary import EccvStage
from annotation.models import Answer, Assignment, Item, Job, JobState, Run, RunStatus
from annotation.selectors.runs.run_page import run_page_data, stage_agreement
from annotation.selectors.runs.run_workers import run_workers
from annotation.services.runs.batches import batch_create, batch_publish
from pipeline.simulate import WorkerProfile
from tests.annotation.pages.work.test_shell_browser import browser, page  # noqa: F401 (fixtures)

ROOT = Path(__file__).resolve().parents[4]


@pytest.fixture
def worked(paired_run):
    batch = batch_publish(
        batch=batch_create(
            run=paired_run,
            stage=BisonStage.SELECTION,
            provider="simulated",
            assignments_per_hit=2,
            limit=4,
        )
    )
    simulate_crowd(batch=batch, workers=3, profile=WorkerProfile(accuracy=0.8))
    return paired_run, batch


@pytest.mark.django_db
def test_numbers_come_from_the_flow_and_the_answers(worked):
    run, batch = worked
    data = run_page_data(run)
    assert data["funnel"]["labels"] == ["image pairs", "triples", "verified"]
    assert (
        data["funnel"]["counts"][0]
        == Item.objects.filter(run=run, kind=BisonItemKind.IMAGE_PAIR).count()
    )
    (progress,) = data["progress"]
    submitted = Assignment.objects.filter(hit__batch=batch, submitted_at__isnull=False).count()
    assert len(progress["points"]) == submitted > 0
    assert [p["y"] for p in progress["points"]] == list(range(1, submitted + 1))
    # Agreement by hand: every pair of answers to one item, same label or not.
    by_item: dict[int, list[str]] = {}
    for item, label in Answer.objects.filter(question__hit__batch=batch).values_list(
        "question__item_id", "label"
    ):
        by_item.setdefault(item, []).append(label)
    pairs = [(a, b) for v in by_item.values() for i, a in enumerate(v) for b in v[i + 1 :]]
    (row,) = stage_agreement(run)
    assert row["pairs"] == len(pairs) > 0
    assert row["agreement"] == round(sum(a == b for a, b in pairs) / len(pairs), 4)
    assert data["spend"]["committed"] == str(batch.reward * batch.hits.count() * 2)


@pytest.mark.django_db
def test_eccv_page_has_its_funnel_and_answer_shares(proposed, admin_client):
    from annotation.flows.eccv.selectors import eccv_answer_shares

    batch = batch_publish(
        batch=batch_create(
            run=proposed, stage=EccvStage.JUDGMENT, provider="simulated", items_per_hit=6
        )
    )
    simulate_crowd(batch=batch, workers=2, profile=WorkerProfile(accuracy=1.0, gold_accuracy=1.0))
    data = run_page_data(proposed)
    assert data["funnel"]["labels"] == ["proposals", "candidate pairs", "judged", "positives"]
    assert data["shares"] == eccv_answer_shares(run=proposed) and data["shares"]
    html = admin_client.get(f"/runs/{proposed.pk}/").content.decode()
    assert 'id="shares-table"' in html
    # One assignment per HIT (the paper's default): the stage is listed with nothing compared.
    assert batch.assignments_per_hit == 1
    assert stage_agreement(proposed) == [
        {
            "stage": EccvStage.JUDGMENT,
            "title": EccvStage.JUDGMENT.label,  # shown on the page, not the raw value
            "agreement": None,
            "pairs": 0,
        }
    ]
    assert EccvStage.JUDGMENT.label in html
    assert "one answer per item (one assignment per HIT)" in html


@pytest.mark.django_db
def test_page_and_status_for_members_only(worked, admin_client, client, django_user_model):
    run, _ = worked
    run.refresh_from_db()
    assert admin_client.get(f"/runs/{run.pk}/").status_code == 200
    status = admin_client.get(f"/runs/{run.pk}/status.json").json()
    assert status["status"] == run.status and status["funnel"]["labels"][0] == "image pairs"
    client.force_login(django_user_model.objects.create_user("outsider", password="pw"))
    assert client.get(f"/runs/{run.pk}/").status_code == 404  # not in her projects: hidden
    assert client.get(f"/runs/{run.pk}/status.json").status_code == 404


@pytest.mark.django_db
@pytest.mark.parametrize("path", ["/runs/{}/status.json", "/runs/{}/"])
def test_a_job_shown_done_comes_with_the_status_it_finished_with(paired_run, admin_client, path):
    """Stage 1's last step commits the run's status with the job's success. The page and its
    poll read both: a job shown done beside the status before it stopped the page's polling
    on a stale status (the first-run browser test, under load). Here the step finishes just
    before the jobs are read, after the run was."""
    run = paired_run
    run.status = RunStatus.PREPARING
    run.save(update_fields=["status"])
    job = Job.objects.create(name="bison.pairing", run=run, state=JobState.RUNNING)
    finished: list[bool] = []

    def finish_before_the_jobs_are_read(execute, sql, params, many, context):  # type: ignore[no-untyped-def]
        if not finished and 'FROM "annotation_job"' in sql:
            finished.append(True)
            Run.objects.filter(pk=run.pk).update(status=RunStatus.PREPARED)
            Job.objects.filter(pk=job.pk).update(state=JobState.SUCCEEDED, progress=100)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(finish_before_the_jobs_are_read):
        response = admin_client.get(path.format(run.pk))
    assert finished and response.status_code == 200
    if path.endswith(".json"):
        body = response.json()
        assert {j["id"]: j["state"] for j in body["jobs"]}[job.pk] == "succeeded"
        assert body["status"] == RunStatus.PREPARED
    else:
        page = response.content.decode()
        assert f'#{job.pk} bison.pairing</a></td><td class="state">succeeded</td>' in page
        label = Run(kind=run.kind, status=RunStatus.PREPARED).get_status_display()
        assert f'<span id="run-status">{label}</span>' in page


def test_vendored_chartjs_matches_its_checksums():
    folder = ROOT / "frontend/static/vendor/chartjs"
    for line in (folder / "SHA256SUMS").read_text().splitlines():
        digest, name = line.split()
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == digest, name
    assert (
        "Chart.js v" + (folder / "VERSION").read_text().strip()
        in (folder / "chart.umd.js").read_text()[:200]
    )


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_charts_drawn_and_a_running_job_followed(page, live_server, worked, django_user_model):  # noqa: F811
    run, _ = worked
    job = Job.objects.create(
        name="bison.export", run=run, state=JobState.RUNNING, progress=10, message="writing"
    )
    django_user_model.objects.create_superuser("admin", "a@example.org", "pw-for-test")
    page.goto(f"{live_server.url}/admin/login/?next=/runs/{run.pk}/")
    page.fill("#id_username", "admin")
    page.fill("#id_password", "pw-for-test")
    page.click("input[type=submit]")
    expect(page.locator("#funnel-chart")).to_be_visible()
    drawn = page.evaluate(
        "['funnel-chart', 'progress-chart', 'agreement-chart']"
        ".map(id => !!window.Chart.getChart(document.getElementById(id)))"
    )
    assert drawn == [True, True, True]
    bars = page.evaluate("window.Chart.getChart('funnel-chart').data.datasets[0].data")
    assert bars == run_page_data(run)["funnel"]["counts"]
    Job.objects.filter(pk=job.pk).update(state=JobState.SUCCEEDED, progress=100, message="done")
    expect(page.locator(f"#job-{job.pk} .state")).to_have_text("succeeded", timeout=10_000)
    assert page.evaluate(f"document.querySelector('#job-{job.pk} progress').value") == 100
    expect(page.locator(f"#job-{job.pk} .message")).to_have_text("done")
    page.goto(f"{live_server.url}/runs/{run.pk}/workers/")
    histogram = page.evaluate("window.Chart.getChart('histogram-chart').data.datasets[0].data")
    assert sum(histogram) == len(run_workers(run=run)) > 0


@pytest.mark.django_db
def test_stage_one_started_from_the_page(dataset, admin_client, django_capture_on_commit_callbacks):
    from annotation.models import Run
    from annotation.services.runs.runs import run_create

    run = run_create(dataset=dataset, kind="bison")
    html = admin_client.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="start-pairing"' in html
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(f"/runs/{run.pk}/jobs/pairing/", follow=True)
    assert "started" in response.content.decode()
    job = Job.objects.get(run=run)
    assert job.name == "bison.pairing" and job.state == JobState.SUCCEEDED, job.error
    assert Run.objects.get(pk=run.pk).status == "prepared"
    assert run_page_data(run)["funnel"]["counts"][0] > 0
    # Again: the run is paired, the service refuses and says why; nothing new starts.
    response = admin_client.post(f"/runs/{run.pk}/jobs/pairing/", follow=True)
    assert "Not started" in response.content.decode() and Job.objects.filter(run=run).count() == 1
    assert admin_client.post(f"/runs/{run.pk}/jobs/nonsense/").status_code == 404
