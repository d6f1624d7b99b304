"""A stored set as a run input of each flow (`POST /api/runs/<id>/inputs/<name>/`): ECCV adds
an image-text annotator, CxC samples from its image embeddings, caption quality writes the
family's scores; a set of another dataset or an unknown id is refused naming `set`."""

import io
import json

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from annotation.encoders.selectors import embedding_set_image_ids
from annotation.encoders.services import embedding_set_start
from annotation.flows.cxc.services.sampling import cxc_run_create
from annotation.flows.eccv.models import Annotator
from annotation.flows.quality.services.candidates import (
    quality_candidates_import,
    quality_run_create,
)
from annotation.models import Job, JobState, Run
from tests.annotation.encoders.conftest import SMALL_CXC
from tests.factories import dataset_factory, placeholder_images

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(admin_user):
    client = APIClient()
    client.force_authenticate(admin_user)
    return client


def _ready(run_on_commit, dataset):
    es = run_on_commit(embedding_set_start, dataset=dataset, checkpoint="tiny-clip")
    es.refresh_from_db()
    assert es.state == "ready", es.job.error
    return es


def test_eccv_takes_an_image_text_annotator_from_a_set(
    eccv_run, import_dir, run_on_commit, api, tmp_path
):
    es = _ready(run_on_commit, eccv_run.dataset)
    url = f"/api/runs/{eccv_run.pk}/inputs/encoder/"
    added = api.post(url, {"options": {"set": es.pk}}, format="json")
    assert added.status_code == 200, added.json()
    annotator = Annotator.objects.get(run=eccv_run, kind="image_text")
    assert annotator.name == es.label and annotator.params["embedding_set"] == es.pk

    other = dataset_factory(
        tmp_path / "other", image_dir=placeholder_images(tmp_path / "o"), name="other"
    )
    foreign = _ready(run_on_commit, other)
    refused = api.post(url, {"options": {"set": foreign.pk}}, format="json")
    assert refused.status_code == 400 and refused.json()["field"] == "set"
    unknown = api.post(url, {"options": {"set": 99999}}, format="json")
    assert unknown.status_code == 400 and unknown.json()["field"] == "set"
    assert Annotator.objects.filter(run=eccv_run, kind="image_text").count() == 1


def test_cxc_samples_from_a_set(dataset, import_dir, run_on_commit, api):
    run = cxc_run_create(
        dataset=dataset,
        config=SMALL_CXC,
    )
    es = _ready(run_on_commit, dataset)
    url = f"/api/runs/{run.pk}/inputs/sample_encoder/"
    # A caption set that is unknown, or the image set's own model, is refused naming it.
    for caption_set in (99999, es.pk):
        refused = api.post(url, {"options": {"set": es.pk, "caption_set": caption_set}}, "json")
        assert refused.status_code == 400 and refused.json()["field"] == "caption_set"
    assert not Job.objects.filter(run=run).exists()
    started = run_on_commit(api.post, url, {"options": {"set": es.pk}}, format="json")
    assert started.status_code == 202, started.json()  # a job started
    job = Job.objects.get(pk=started.json()["job"]["id"], run=run)
    assert job.state == JobState.SUCCEEDED, job.error
    assert job.result["image_embeddings_standin"] is False
    assert es.label in job.result["image_embeddings"]
    assert job.result["encoders"]["different"] is True  # captions: FastText, not the set's


def test_quality_scores_from_a_set(dataset, import_dir, run_on_commit, api, tmp_path):
    run = quality_run_create(dataset=dataset, config={"pairs_per_image": 4})
    images = list(dataset.images.order_by("coco_id"))
    path = tmp_path / "good.json"
    path.write_text(
        json.dumps([{"image_id": i.coco_id, "caption": i.captions.first().text} for i in images])
    )
    quality_candidates_import(run=run, model="good", path=str(path))
    es = _ready(run_on_commit, dataset)
    url = f"/api/runs/{run.pk}/inputs/encoder_scores/"
    written = api.post(url, {"options": {"set": es.pk, "scores": "CLIP-S"}}, format="json")
    assert written.status_code == 200, written.json()
    assert "CLIP-S" in written.json()["message"] and "PAC-S" not in written.json()["message"]
    refused = api.post(url, {"options": {"set": es.pk, "scores": "SigLIP-S"}}, format="json")
    assert refused.status_code == 400


def test_an_eccv_run_draws_its_image_queries_from_the_images_a_set_encoded(
    dataset, image_dir, import_dir, run_on_commit, api
):
    """A set that could not read some images: a run created through the API with
    `image_query_set` asks only encoded images, so the set's annotator is accepted; a run
    without the setting may draw an unreadable image and the annotator is refused."""
    images = sorted(image_dir.iterdir())
    for broken in images[:3]:
        broken.write_bytes(b"not a jpeg")
    es = _ready(run_on_commit, dataset)
    assert es.counts["images_failed"] == 3
    encoded = set(embedding_set_image_ids(embedding_set=es))
    every = set(dataset.images.values_list("coco_id", flat=True))
    config = {"image_queries": len(every), "caption_queries": 3, "k": 2, "models": 2}

    made = api.post(
        "/api/runs/",
        {"dataset": dataset.pk, "kind": "eccv", "config": {**config, "image_query_set": es.pk}},
        format="json",
    )
    assert made.status_code == 201, made.json()
    run = Run.objects.get(pk=made.json()["id"])
    assert set(run.config["query_images"]) == encoded and len(encoded) == len(every) - 3
    added = api.post(
        f"/api/runs/{run.pk}/inputs/encoder/", {"options": {"set": es.pk}}, format="json"
    )
    assert added.status_code == 200, added.json()

    plain = api.post(
        "/api/runs/", {"dataset": dataset.pk, "kind": "eccv", "config": config}, format="json"
    )
    plain_run = Run.objects.get(pk=plain.json()["id"])
    refused = api.post(
        f"/api/runs/{plain_run.pk}/inputs/encoder/", {"options": {"set": es.pk}}, format="json"
    )
    assert refused.status_code == 400 and f"image_query_set = {es.pk}" in refused.json()["error"]

    unknown = api.post(
        "/api/runs/",
        {"dataset": dataset.pk, "kind": "eccv", "config": {**config, "image_query_set": 99999}},
        format="json",
    )
    assert unknown.status_code == 400 and unknown.json()["field"] == "image_query_set"


def test_eccv_create_run_takes_the_image_query_set(dataset, image_dir, import_dir, run_on_commit):
    sorted(image_dir.iterdir())[0].write_bytes(b"not a jpeg")
    es = _ready(run_on_commit, dataset)
    every = dataset.images.count()
    out = io.StringIO()
    call_command(
        "eccv_create_run", str(dataset.pk), "--image-queries", str(every), "--caption-queries",
        "3", "--k", "2", "--image-query-set", str(es.pk), stdout=out,
    )  # fmt: skip
    run = Run.objects.latest("pk")
    assert set(run.config["query_images"]) == set(embedding_set_image_ids(embedding_set=es))
    assert len(run.config["query_images"]) == every - 1 and run.config["image_query_set"] == es.pk
