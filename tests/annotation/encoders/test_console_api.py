"""The console's embeddings page and the API's embedding operations: the estimate before
starting, a job that encodes with the tiny model, the stored set listed with its provenance,
deleting it, who may do what, and refusals naming their field."""

from pathlib import Path

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from annotation.encoders.models import EmbeddingSet, EmbeddingState
from annotation.models import Project, ProjectMembership, ProjectRole
from tests.annotation.api.test_schema import check, schema  # noqa: F401  (fixture)

pytestmark = pytest.mark.django_db


def _member(role, name):
    user = User.objects.create_user(name, password="pw")
    project, _ = Project.objects.get_or_create(name="p")
    ProjectMembership.objects.create(project=project, user=user, role=role)
    return user


def _api(user):
    api = APIClient()
    api.force_authenticate(user)
    return api


def test_the_page_estimates_then_encodes_lists_and_deletes(
    dataset, import_dir, admin_client, django_capture_on_commit_callbacks, settings
):
    url = f"/datasets/{dataset.pk}/embeddings/"
    assert admin_client.get("/datasets/").content.decode().count(url) == 1
    form = {
        "library": "transformers",
        "checkpoint": "tiny-clip",
        "model_name": "",
        "device": "auto",
        "dtype": "float16",
        "license": "MIT",
        "source": "made by the tests",
    }
    shown = admin_client.post(url, {**form, "estimate": ""})
    assert shown.status_code == 200 and not EmbeddingSet.objects.exists()
    assert f"{dataset.images.count()} images at about" in shown.content.decode()

    with django_capture_on_commit_callbacks(execute=True):
        started = admin_client.post(url, {**form, "start": ""})
    assert started.status_code == 302 and started["Location"] == url
    es = EmbeddingSet.objects.get()
    assert es.state == EmbeddingState.READY and es.model_name == "tiny-clip"
    page = admin_client.get(url).content.decode()
    assert es.checkpoint_sha256[:12] in page and "float16" in page and "MIT" in page
    assert "made by the tests" in page and f'id="set-{es.pk}"' in page
    assert str(es.counts["images_encoded"]) in page and "100%" in page

    deleted = admin_client.post(f"{url}{es.pk}/delete/")
    assert deleted.status_code == 302 and not EmbeddingSet.objects.exists()


def test_the_page_reads_a_sets_preprocessing_and_its_job_in_words(
    dataset, import_dir, admin_client, run_on_commit
):
    """The preprocessing (nested settings) is a definition list, never a Python dict; the
    set's job page reports its counts the same way."""
    import re

    from annotation.encoders.services import embedding_set_start

    es = run_on_commit(embedding_set_start, dataset=dataset, checkpoint="tiny-clip")
    page = admin_client.get(f"/datasets/{dataset.pk}/embeddings/").content.decode()
    folded = re.search(r'<details class="preprocessing">(.*?)</details>', page, re.S).group(1)
    assert "{" not in folded and "&#x27;" not in folded  # no dict's braces or quotes
    assert "<dt>tokenizer sha256</dt>" in folded and "<dt>context length</dt>" in folded
    assert "<dt>do resize</dt><dd>yes</dd>" in folded
    job = admin_client.get(f"/jobs/{es.job_id}/").content.decode()
    result = re.search(r'<div id="job-result">(.*?)</div>', job, re.S).group(1)
    assert "<dt>images encoded</dt>" in result and "{" not in result


def test_a_missing_checkpoint_folder_is_refused_next_to_its_field(
    dataset, import_dir, admin_client
):
    url = f"/datasets/{dataset.pk}/embeddings/"
    form = {"library": "transformers", "checkpoint": "no-such-model", "device": "cpu"}
    refused = admin_client.post(url, {**form, "dtype": "float32", "start": ""})
    assert refused.status_code == 400 and not EmbeddingSet.objects.exists()
    assert "model folder does not exist" in refused.context["form"].errors["checkpoint"][0]
    outside = admin_client.post(url, {**form, "checkpoint": "../..", "dtype": "float32"})
    assert "only model folders inside the import folder" in str(
        outside.context["form"].errors["checkpoint"]
    )


def test_viewers_see_the_sets_but_only_researchers_encode_or_delete(
    dataset, import_dir, client, run_on_commit
):
    from annotation.encoders.services import embedding_set_start

    project, _ = Project.objects.get_or_create(name="p")
    es = run_on_commit(
        embedding_set_start, dataset=dataset, checkpoint="tiny-clip", project=project
    )
    url = f"/datasets/{dataset.pk}/embeddings/"
    form = {"library": "transformers", "checkpoint": "tiny-clip", "device": "cpu"}
    assert client.get(url).status_code == 302  # to the sign-in page

    client.force_login(_member(ProjectRole.VIEWER, "vic"))
    page = client.get(url)
    assert page.status_code == 200 and f'id="set-{es.pk}"' in page.content.decode()
    assert "encode-form" not in page.content.decode()
    assert client.post(url, {**form, "dtype": "float32", "start": ""}).status_code == 403
    assert client.post(f"{url}{es.pk}/delete/").status_code == 403
    viewer_api = _api(page.wsgi_request.user)
    assert viewer_api.get(f"/api/datasets/{dataset.pk}/embeddings/").json()["count"] == 1
    assert viewer_api.delete(f"/api/embeddings/{es.pk}/").status_code == 403
    assert EmbeddingSet.objects.filter(pk=es.pk).exists()

    client.force_login(_member(ProjectRole.RESEARCHER, "alice"))
    assert client.post(f"{url}{es.pk}/delete/").status_code == 302
    assert not EmbeddingSet.objects.exists()


def test_the_api_estimates_starts_shows_and_deletes(
    dataset,
    import_dir,
    django_capture_on_commit_callbacks,
    schema,  # noqa: F811
):
    api = _api(_member(ProjectRole.RESEARCHER, "alice"))
    url = f"/api/datasets/{dataset.pk}/embeddings/"
    body = {"checkpoint": "tiny-siglip", "dtype": "float32", "device": "cpu"}
    estimate = api.post(url, {**body, "estimate_only": True}, format="json")
    assert estimate.status_code == 200 and estimate.json()["images"] == dataset.images.count()
    assert estimate.json()["seconds"] > 0 and not EmbeddingSet.objects.exists()
    check(schema, "/api/datasets/{dataset_id}/embeddings/", "post", estimate)

    with django_capture_on_commit_callbacks(execute=True):
        started = api.post(url, {**body, "license": "Apache-2.0"}, format="json")
    assert started.status_code == 202, started.json()
    check(schema, "/api/datasets/{dataset_id}/embeddings/", "post", started)
    es = EmbeddingSet.objects.get()
    assert started.json()["id"] == es.pk and started.json()["family"] == "siglip"
    shown = api.get(f"/api/embeddings/{es.pk}/")
    check(schema, "/api/embeddings/{set_id}/", "get", shown)
    detail = shown.json()
    assert detail["state"] == "ready" and detail["job"]["state"] == "succeeded"
    assert detail["license"] == "Apache-2.0" and detail["size_bytes"] > 0
    assert detail["checkpoint_sha256"] == es.checkpoint_sha256 and detail["dtype"] == "float32"
    listing = api.get(url)
    check(schema, "/api/datasets/{dataset_id}/embeddings/", "get", listing)
    listed = listing.json()
    assert [s["id"] for s in listed["results"]] == [es.pk]
    assert api.delete(f"/api/embeddings/{es.pk}/").status_code == 204
    assert api.get(f"/api/embeddings/{es.pk}/").status_code == 404
    gone = api.delete(f"/api/embeddings/{es.pk}/")
    assert gone.status_code == 404
    check(schema, "/api/embeddings/{set_id}/", "delete", gone)


@pytest.mark.parametrize(
    ("body", "field", "message"),
    [
        ({"checkpoint": "no-such-model"}, "checkpoint", "model folder does not exist"),
        ({"checkpoint": "tiny-clip", "dtype": "int8"}, "dtype", "is not a valid choice"),
        ({"checkpoint": "tiny-clip", "device": "tpu"}, "device", "is not a valid choice"),
        ({"dtype": "float32"}, "checkpoint", "required"),
    ],
    ids=["missing-folder", "dtype", "device", "no-checkpoint"],
)
def test_bad_api_input_names_its_field(dataset, import_dir, body, field, message):
    api = _api(_member(ProjectRole.RESEARCHER, "alice"))
    refused = api.post(f"/api/datasets/{dataset.pk}/embeddings/", body, format="json")
    assert refused.status_code == 400
    assert refused.json()["field"] == field and message in refused.json()["error"]
    assert not EmbeddingSet.objects.exists()


def test_cuda_is_refused_before_a_job_where_torch_reports_none(
    dataset, import_dir, django_capture_on_commit_callbacks
):
    import torch

    api = _api(_member(ProjectRole.RESEARCHER, "alice"))
    body = {"checkpoint": "tiny-clip", "device": "cuda", "dtype": "float32"}
    with django_capture_on_commit_callbacks(execute=True):
        answer = api.post(f"/api/datasets/{dataset.pk}/embeddings/", body, format="json")
    if torch.cuda.is_available():
        assert answer.status_code == 202 and answer.json()["device"] == "cuda"
    else:
        assert answer.status_code == 400 and answer.json()["field"] == "device"
        assert "no CUDA device" in answer.json()["error"] and not EmbeddingSet.objects.exists()


@pytest.mark.parametrize("name", ["../../escaped", "../../../../../escaped", "a/./b", "x\x07"])
def test_the_api_refuses_a_model_name_that_reads_as_a_path(dataset, import_dir, tmp_path, name):
    """Issue 47: the audit's attack through the API writes nothing, here or elsewhere."""
    api = _api(_member(ProjectRole.RESEARCHER, "alice"))
    body = {"checkpoint": "tiny-clip", "model_name": name, "dtype": "float32", "device": "cpu"}
    refused = api.post(f"/api/datasets/{dataset.pk}/embeddings/", body, format="json")
    assert refused.status_code == 400 and refused.json()["field"] == "model_name"
    assert not EmbeddingSet.objects.exists()
    media = tmp_path / "media"
    assert [p for p in tmp_path.rglob("*escaped*") if media not in p.parents] == []
    assert not (media / "embeddings").exists()


def _researcher_of(project_name, name):
    user = User.objects.create_user(name, password="pw")
    project, _ = Project.objects.get_or_create(name=project_name)
    ProjectMembership.objects.create(project=project, user=user, role=ProjectRole.RESEARCHER)
    return user, project


def test_another_projects_researcher_can_neither_see_use_nor_delete_a_set(
    eccv_run, import_dir, run_on_commit, client
):
    """Audit issue 47: `DELETE /api/embeddings/<id>/` deleted any project's set."""
    from annotation.encoders.models import EmbeddingSetUse
    from annotation.encoders.services import embedding_set_start
    from annotation.flows.eccv.models import Annotator
    from annotation.flows.eccv.services.runs import eccv_run_create

    es = run_on_commit(embedding_set_start, dataset=eccv_run.dataset, checkpoint="tiny-clip")
    es.refresh_from_db()
    assert es.state == EmbeddingState.READY and es.project_id == eccv_run.project_id
    mallory, elsewhere = _researcher_of("elsewhere", "mallory")
    her_run = eccv_run_create(
        dataset=eccv_run.dataset,
        config={"image_queries": 3, "caption_queries": 4, "k": 2, "models": 2},
        project=elsewhere,
    )
    api = _api(mallory)
    assert api.get(f"/api/embeddings/{es.pk}/").status_code == 404
    assert api.delete(f"/api/embeddings/{es.pk}/?force=true").status_code == 404
    assert api.get(f"/api/datasets/{es.dataset_id}/embeddings/").json()["count"] == 0
    assert api.get(f"/api/jobs/{es.job_id}/").status_code == 404
    assert api.post(f"/api/jobs/{es.job_id}/cancel/").status_code == 404
    assert es.job_id not in [j["id"] for j in api.get("/api/jobs/").json()["results"]]
    used = api.post(
        f"/api/runs/{her_run.pk}/inputs/encoder/", {"options": {"set": es.pk}}, format="json"
    )
    assert used.status_code == 400 and used.json()["field"] == "set"
    assert "in project 'elsewhere'" in used.json()["error"]
    client.force_login(mallory)
    page = client.get(f"/datasets/{es.dataset_id}/embeddings/")
    assert page.status_code == 200 and f'id="set-{es.pk}"' not in page.content.decode()
    deleted = client.post(f"/datasets/{es.dataset_id}/embeddings/{es.pk}/delete/", {"force": "1"})
    assert deleted.status_code == 404
    assert client.get(f"/jobs/{es.job_id}/").status_code == 404
    assert EmbeddingSet.objects.filter(pk=es.pk).exists()
    assert (Path(settings.MEDIA_ROOT) / es.file).exists()
    assert not Annotator.objects.filter(run=her_run).exists()
    assert not EmbeddingSetUse.objects.exists()


def test_deleting_a_set_a_run_used_is_refused_naming_the_run_unless_forced(
    eccv_run, import_dir, run_on_commit, client
):
    from annotation.encoders.services import embedding_set_start

    es = run_on_commit(embedding_set_start, dataset=eccv_run.dataset, checkpoint="tiny-clip")
    es.refresh_from_db()
    owner, _ = _researcher_of(eccv_run.project.name, "olga")
    api = _api(owner)
    added = api.post(
        f"/api/runs/{eccv_run.pk}/inputs/encoder/", {"options": {"set": es.pk}}, format="json"
    )
    assert added.status_code == 200, added.json()
    refused = api.delete(f"/api/embeddings/{es.pk}/")
    assert refused.status_code == 400 and refused.json()["field"] == "set"
    assert f"used by run(s) {eccv_run.pk}" in refused.json()["error"]
    client.force_login(owner)
    page = client.post(f"/datasets/{es.dataset_id}/embeddings/{es.pk}/delete/", follow=True)
    assert f"used by run(s) {eccv_run.pk}" in page.content.decode()
    assert "delete-force" in page.content.decode()
    assert (Path(settings.MEDIA_ROOT) / es.file).exists()
    assert api.delete(f"/api/embeddings/{es.pk}/?force=true").status_code == 204
    assert not EmbeddingSet.objects.filter(pk=es.pk).exists()
    assert not (Path(settings.MEDIA_ROOT) / es.file).exists()
