"""A job's page (`/jobs/<id>/`) and where a finished job leads: an imported dataset to a new
run on it, an export to its version, files and datasheet; the dashboard and the run page
link each job to its page."""

import re

import pytest

from annotation.models import Job, Project, Run
from tests.factories import write_coco

pytestmark = pytest.mark.django_db


def test_an_import_leads_to_a_run_on_its_dataset(admin_client, tmp_path, run_on_commit):
    path = write_coco(tmp_path / "fresh.json")
    with open(path, "rb") as fh:
        response = run_on_commit(
            admin_client.post, "/datasets/import/", {"file": fh, "image_source": "coco_url"}
        )
    job = Job.objects.get(name="dataset.import")
    assert job.state == "succeeded", job.error
    dataset = job.result["dataset"]
    for page in (admin_client.get(response["Location"]), admin_client.get(f"/jobs/{job.pk}/")):
        steps = re.search(r'<ul id="next-steps">(.*?)</ul>', page.content.decode(), re.S)
        assert f'<a href="/runs/new/?dataset={dataset}">Start a run on fresh</a>' in steps.group(1)
    chooser = admin_client.get(f"/runs/new/?dataset={dataset}").content.decode()
    assert f'href="/runs/new/bison/?dataset={dataset}"' in chooser
    form = admin_client.get(f"/runs/new/bison/?dataset={dataset}").context["form"]
    assert str(form["dataset"].value()) == str(dataset)


def test_the_job_page_follows_a_running_job_and_hides_it_from_outsiders(
    paired_run, admin_client, client, django_user_model
):
    job = Job.objects.create(name="bison.pairing", run=paired_run, state="running", progress=40)
    page = admin_client.get(f"/jobs/{job.pk}/").content.decode()
    assert 'id="state">running<' in page and 'http-equiv="refresh"' in page
    assert f'href="/runs/{paired_run.pk}/"' in page
    Run.objects.filter(pk=paired_run.pk).update(project=Project.objects.create(name="other"))
    client.force_login(django_user_model.objects.create_user("out", password="pw"))
    assert client.get(f"/jobs/{job.pk}/").status_code == 404


def test_the_dashboard_and_the_run_page_link_each_job(paired_run, admin_client):
    job = Job.objects.filter(run=paired_run).latest("pk")
    for url in ("/", f"/runs/{paired_run.pk}/"):
        assert f'href="/jobs/{job.pk}/"' in admin_client.get(url).content.decode(), url
