"""Issue 25's low findings: no absolute server path reaches a researcher or a viewer."""

import re
from pathlib import Path

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


# No absolute server path reaches a non-staff user: import and job messages, job results,
# run inputs, exports' manifest and datasheet, the datasets page and API. Sources and uploads
# are named by their original file name (and sha256).


def _server_paths(settings) -> tuple[list[str], re.Pattern]:
    """Strings of the server's absolute paths: its folders (as set and resolved), and any
    path under the usual top-level folders of a server (not the /work/<id>/ worker URLs)."""
    import tempfile

    folders = [
        settings.MEDIA_ROOT,
        settings.CROWDVL_IMPORT_DIR,
        settings.BASE_DIR,
        *settings.CROWDVL_IMAGE_DIRS,
        tempfile.gettempdir(),
        Path.home(),
    ]
    literal = sorted({str(p) for f in folders for p in (Path(f), Path(f).resolve())}, key=len)
    pattern = re.compile(
        r"(?<![\w.:/-])/(?:tmp|home|root|var|srv|opt|mnt|usr|etc|private|Users"
        r"|work(?!/(?:\d+|assignment)/))/[^\s\"'<>`)]+"
    )
    return literal[::-1], pattern


def _found(body: str, literal: list[str], pattern: re.Pattern) -> list[str]:
    """Each absolute path in `body` once: a known folder (with what follows it) or a path
    under a server's usual top-level folders."""
    folders = "|".join(re.escape(p) for p in literal)
    either = re.compile(rf"(?:{folders})(?![\w.-])[^\s\"'<>`)]*|{pattern.pattern}")
    return [m.group(0) for m in either.finditer(body)]


@pytest.fixture
def import_dir(settings, tmp_path):
    root = tmp_path / "import"
    (root / "coco").mkdir(parents=True)
    settings.CROWDVL_IMPORT_DIR = root
    return root


def test_no_absolute_server_path_reaches_a_researcher_or_a_viewer(
    two_projects, import_dir, settings, tmp_path, django_capture_on_commit_callbacks
):
    """A researcher imports datasets (an upload, a server file with its image folder, five
    failing imports), runs ECCV (a model uploaded, one from the import folder, a refused one,
    proposals, simulated judgments, an export) and BISON's stage 1 (vectors from the import
    folder, a missing vectors file); then the researcher and a viewer read every job, list,
    page, manifest and datasheet. No body names a server path."""
    import json

    from django.core.files.uploadedfile import SimpleUploadedFile
    from rest_framework.test import APIClient

    from annotation.crowd.simulated.crowd import simulate_crowd
    from annotation.models import Dataset, Export, Job, Review, Run
    from annotation.services.runs.batches import batch_create, batch_publish
    from annotation.services.work.reviews import review_decide
    from pipeline.simulate import WorkerProfile
    from tests.annotation.conftest import rankings_file
    from tests.factories import coco_document, placeholder_images, topic_vectors_file, write_coco

    alpha = two_projects["alpha"].pk
    bodies: list[tuple[str, str]] = []

    def keep(label, response):
        streamed = getattr(response, "streaming", False)
        content = b"".join(response.streaming_content) if streamed else response.content
        bodies.append((f"{len(bodies)} {label}", content.decode("utf-8", "replace")))
        return response

    apis = {name: APIClient() for name in ("alice", "vic")}
    for name, api in apis.items():
        api.force_authenticate(two_projects[name])

    def post(url, data=None, expected=202, multipart=False):
        with django_capture_on_commit_callbacks(execute=True):
            response = apis["alice"].post(url, data, format="multipart" if multipart else "json")
        assert response.status_code == expected, (url, response.content)
        return keep(f"POST {url}", response).json()

    def upload(name, content):
        return {"file": SimpleUploadedFile(name, content, content_type="application/json")}

    write_coco(import_dir / "coco" / "captions_small.json")
    placeholder_images(import_dir / "coco" / "images")
    topic_vectors_file(import_dir / "topics.vec")
    bad = coco_document()
    bad["annotations"].append({"id": 1, "image_id": 999, "caption": "x"})
    imports = "/api/datasets/import/"
    post(imports, upload("my captions.json", json.dumps(coco_document()).encode()), multipart=True)
    served = {"path": "coco/captions_small.json", "name": "served", "image_source": "local_dir"}
    post(imports, {**served, "image_location": "coco/images"})
    post(imports, upload("broken.json", b'{"images": ['), multipart=True)
    post(imports, upload("bad.json", json.dumps(bad).encode()), multipart=True)
    post(imports, {"path": "coco/missing.json"}, expected=400)
    post(imports, {"path": "../outside.json"}, expected=400)
    # A folder that is not there: refused before a job starts (issue 46).
    post(imports, {**served, "name": "no images", "image_location": "coco/nope"}, expected=400)
    assert Job.objects.filter(name="dataset.import", state="failed").count() == 2

    config = {"image_queries": 3, "caption_queries": 4, "k": 2, "models": 2, "seed": 1}
    dataset = Dataset.objects.get(name="served")
    eccv = {"dataset": dataset.pk, "kind": "eccv", "project": alpha, "config": config}
    run = post("/api/runs/", eccv, expected=201)["id"]
    ranked = Path(rankings_file(tmp_path, Run.objects.get(pk=run))).read_bytes()
    (import_dir / "ranked.json").write_bytes(ranked)
    model = f"/api/runs/{run}/inputs/annotator/"
    listed = {"name": "listed", "kind": "rankings"}
    post(model, {**upload("ranked.json", ranked), **listed}, expected=200, multipart=True)
    post(model, {"path": "ranked.json", "options": {**listed, "name": "served"}}, expected=200)
    wrong = {**upload("wrong.json", b"[1, 2"), **listed, "name": "wrong"}
    post(model, wrong, expected=400, multipart=True)
    post(f"/api/runs/{run}/jobs/propose/")
    # The simulated crowd (offered by the API with DEBUG only) answers through the services.
    batch = batch_create(
        run=Run.objects.get(pk=run), stage="eccv_judgment", provider="simulated", items_per_hit=6
    )
    simulate_crowd(
        batch=batch_publish(batch=batch),
        workers=2,
        profile=WorkerProfile(accuracy=1.0, gold_accuracy=1.0),
    )
    for review in Review.objects.filter(status="open"):
        review_decide(review=review, approve=True)
    post(f"/api/runs/{run}/exports/")
    export = Export.objects.get(run_id=run)
    uploaded = Dataset.objects.get(name="my captions")
    bison = {"dataset": uploaded.pk, "kind": "bison", "project": alpha}
    bison = post("/api/runs/", bison, expected=201)["id"]
    post(f"/api/runs/{bison}/pairing/", {"vectors_path": "missing.vec"}, expected=400)
    post(f"/api/runs/{bison}/pairing/", {"vectors_path": "topics.vec"})

    # Everything a researcher and a viewer read; the export's files for the researcher.
    api_urls = [
        "/api/jobs/",
        *[f"/api/jobs/{pk}/" for pk in Job.objects.values_list("pk", flat=True)],
        "/api/datasets/",
        "/api/runs/",
        f"/api/runs/{run}/",
        f"/api/runs/{run}/exports/",
        f"/api/runs/{run}/batches/",
        f"/api/runs/{bison}/summary/",
    ]
    pages = [
        "/",
        "/datasets/",
        *[f"/runs/{r}/{p}" for r in (run, bison) for p in ("", "status.json")],
    ]
    pages.append(f"/runs/{run}/exports/")
    files = ["manifest.json", "DATASHEET.md"]
    browser = Client()

    def read(label, response):
        assert response.status_code == 200, (label, response.status_code)
        keep(label, response)

    for name, api in apis.items():
        browser.force_login(two_projects[name])
        for url in api_urls:
            read(f"{name} {url}", api.get(url))
        for url in pages:
            read(f"{name} {url}", browser.get(url))
    browser.force_login(two_projects["alice"])  # the import pages and downloads: researchers
    for job in Job.objects.filter(name="dataset.import"):
        read("import job page", browser.get(f"/datasets/import/jobs/{job.pk}/"))
    for file in files:
        read(file, apis["alice"].get(f"/api/exports/{export.pk}/files/{file}"))
        read(file, browser.get(f"/exports/{export.pk}/files/{file}"))
    datasheet = bodies[-1][1]
    assert "`captions_small.json`" in datasheet
    assert dataset.checksum in datasheet  # named by its file name and sha256

    literal, pattern = _server_paths(settings)
    leaks = {label: _found(body, literal, pattern) for label, body in bodies}
    leaks = {label: found for label, found in leaks.items() if found}
    count = sum(map(len, leaks.values()))
    assert leaks == {}, f"{count} absolute paths in {len(leaks)} of {len(bodies)} bodies"
