import pytest

from annotation.flows.bison.vocabulary import BisonStage
from annotation.services.runs.batches import batch_create, batch_publish

pytestmark = pytest.mark.django_db


def test_dashboard_lists_runs_jobs_batches_for_staff_only(client, admin_client, paired_run):
    batch = batch_publish(
        batch=batch_create(run=paired_run, stage=BisonStage.SELECTION, provider="local")
    )
    assert client.get("/").status_code == 302
    html = admin_client.get("/").content.decode()
    assert f'id="run-{paired_run.pk}"' in html
    assert "bison.pairing" in html and "succeeded" in html
    assert f"/work/{batch.pk}/" in html  # the link local workers open
    assert 'http-equiv="refresh"' not in html  # nothing running: no auto-refresh


def test_dashboard_without_runs(admin_client):
    assert 'id="empty"' in admin_client.get("/").content.decode()


def test_worker_links_follow_the_host_the_page_was_served_from(admin_client, paired_run, settings):
    settings.ALLOWED_HOSTS = ["crowd.example.org", "testserver"]
    batch = batch_publish(
        batch=batch_create(run=paired_run, stage=BisonStage.SELECTION, provider="local")
    )
    settings.CROWDVL_PUBLIC_URL_SET = False
    html = admin_client.get("/", HTTP_HOST="crowd.example.org").content.decode()
    assert f"http://crowd.example.org/work/{batch.pk}/" in html
    assert "127.0.0.1:8000" not in html
    # A configured public address wins (e.g. behind a proxy that rewrites the host).
    settings.CROWDVL_PUBLIC_URL_SET = True
    settings.CROWDVL_PUBLIC_URL = "https://crowd.lab.org"
    html = admin_client.get("/", HTTP_HOST="crowd.example.org").content.decode()
    assert f"https://crowd.lab.org/work/{batch.pk}/" in html


def test_the_dashboard_filters_runs_and_names_them(admin_client, paired_run, dataset):
    from annotation.models import Run
    from annotation.services.runs.projects import project_create

    other = Run.objects.create(
        dataset=dataset, kind="eccv", name="eccv pilot", project=project_create(name="Eyes")
    )
    everything = admin_client.get("/").content.decode()
    assert f'id="run-{paired_run.pk}"' in everything and f'id="run-{other.pk}"' in everything
    assert f"Run {other.pk}: eccv pilot" in everything  # the run's name, not only its dataset's
    by_name = admin_client.get("/", {"q": "pilot"}).content.decode()
    assert f'id="run-{other.pk}"' in by_name and f'id="run-{paired_run.pk}"' not in by_name
    by_project = admin_client.get("/", {"project": other.project_id}).content.decode()
    assert f'id="run-{paired_run.pk}"' not in by_project and f'id="run-{other.pk}"' in by_project
    by_kind = admin_client.get("/", {"kind": "bison"}).content.decode()
    assert f'id="run-{paired_run.pk}"' in by_kind and f'id="run-{other.pk}"' not in by_kind
    by_id = admin_client.get("/", {"q": str(paired_run.pk)}).content.decode()
    assert f'id="run-{paired_run.pk}"' in by_id
    nothing = admin_client.get("/", {"status": "exported", "q": "zzz"}).content.decode()
    assert 'id="no-match"' in nothing and 'id="empty"' not in nothing


def test_every_page_names_its_icon_so_no_browser_asks_for_a_missing_favicon(admin_client):
    """Issue 46: /favicon.ico answered 404 on every page."""
    for url in ("/", "/accounts/login/", "/no-such-page/"):
        page = admin_client.get(url).content.decode()
        assert '<link rel="icon" href="data:,">' in page, url
