"""Issue 25's remaining low findings, one section each: what an attacker tried, and what they
get now."""

import re
from pathlib import Path

import pytest
from django.test import Client

pytestmark = pytest.mark.django_db


# 3. Every answer under /api/ is JSON with `error`, including unknown URLs and server errors;
# other pages keep their HTML.


def test_every_api_error_is_json_with_error_and_other_pages_keep_html(admin_client, client):
    unknown_id = admin_client.get("/api/runs/999999/").json()
    for method, url, status in (
        ("get", "/api/", 404),
        ("get", "/api/nothing/", 404),
        ("post", "/api/runs/1/nothing/", 404),
        ("get", "/api/jobs/x/", 404),
        ("put", "/api/runs/", 405),  # DRF's own refusals were JSON already
        ("delete", "/api/jobs/", 405),
    ):
        response = getattr(admin_client, method)(url)
        assert response.status_code == status, url
        assert response["Content-Type"] == "application/json", url
        assert response.json()["error"]
        if status == 404:  # the same body as a known URL's unknown id
            assert response.json() == unknown_id, url
        anonymous = getattr(client, method)(url)  # unknown URLs: 404 before authentication
        assert anonymous["Content-Type"] == "application/json" and anonymous.json()["error"]
    page = admin_client.get("/nothing/")
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")
    assert b"Not found" in page.content


@pytest.mark.urls("tests.annotation.boom_urls")
def test_a_server_error_under_the_api_is_json_and_tells_nothing(settings):
    settings.DEBUG = False
    client = Client(raise_request_exception=False)
    response = client.get("/api/boom/")
    assert response.status_code == 500
    assert response.json() == {"error": "server error", "detail": "server error"}
    page = client.get("/boom/")
    assert page.status_code == 500 and page["Content-Type"].startswith("text/html")


# 2. A `project=` naming a project the caller is no member of answers as an unknown one.


@pytest.fixture
def two_projects(django_user_model):
    """Alice: researcher in Alpha; Vic: viewer in Alpha and researcher in Gamma; Beta: no one's."""
    from annotation.models import Project, ProjectMembership, ProjectRole

    alpha, beta, gamma = (Project.objects.create(name=n) for n in ("Alpha", "Beta", "Gamma"))
    alice = django_user_model.objects.create_user("alice")
    vic = django_user_model.objects.create_user("vic")
    ProjectMembership.objects.create(project=alpha, user=alice, role=ProjectRole.RESEARCHER)
    ProjectMembership.objects.create(project=alpha, user=vic, role=ProjectRole.VIEWER)
    ProjectMembership.objects.create(project=gamma, user=vic, role=ProjectRole.RESEARCHER)
    return {"alpha": alpha, "beta": beta, "gamma": gamma, "alice": alice, "vic": vic}


def test_another_projects_id_in_a_run_creation_answers_as_an_unknown_id(two_projects, dataset):
    from rest_framework.test import APIClient

    from annotation.models import Run
    from annotation.permissions import Action, require

    def create(user, project):
        client = APIClient()
        client.force_authenticate(user)
        return client.post("/api/runs/", {"dataset": dataset.pk, "project": project}, "json")

    alice, vic = two_projects["alice"], two_projects["vic"]
    hidden = create(alice, two_projects["beta"].pk)
    missing = create(alice, 10**9)
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == missing.json() == {"error": "not found", "detail": "not found"}
    # A member whose role lacks the action: 403 that says so.
    refused = create(vic, two_projects["alpha"].pk)
    assert refused.status_code == 403 and "may not" in refused.json()["error"]
    assert create(alice, two_projects["alpha"].pk).status_code == 201
    assert create(vic, two_projects["gamma"].pk).status_code == 201
    assert not Run.objects.filter(project=two_projects["beta"]).exists()
    # The one check every page and operation calls: the same rule.
    from django.core.exceptions import PermissionDenied
    from django.http import Http404

    with pytest.raises(Http404):
        require(alice, Action.ACT, project=two_projects["beta"])
    with pytest.raises(PermissionDenied):
        require(vic, Action.ACT, project=two_projects["alpha"])


# 4. Before accepting (MTurk's preview) or consenting (panel, Prolific) a visitor sees the
# instructions and one fixed example, the same on all three pages, never a real item.


def _example(body: str) -> str:
    import re

    found = re.search(r'<section id="example">.*?</section>', body, re.S)
    assert found, "no example section"
    return found.group(0)


def _real_items(run, pages: list[str]) -> tuple[set[str], set[str]]:
    """Every caption text of the run's dataset, and every image address the real task pages
    (after accepting) show."""
    import html
    import re

    from annotation.models import Caption

    texts = set(Caption.objects.filter(image__dataset=run.dataset).values_list("text", flat=True))
    texts |= {html.escape(t) for t in texts}
    images = {src for page in pages for src in re.findall(r'<img[^>]*src="([^"]+)"', page)}
    assert images, "the real task pages show images"
    return texts, images


def _leaks(body: str, texts: set[str], images: set[str]) -> list[str]:
    marks = ["/img/", "/staff/images/", "COCO_val2014_", 'class="question"', "data-total"]
    return [t for t in texts | images | set(marks) if t in body]


def test_previews_and_visitor_pages_show_a_fixed_example_and_no_real_item(
    client, dataset, run_on_commit, settings
):
    from annotation.flows.bison.vocabulary import BisonStage
    from annotation.services.runs.batches import batch_create, batch_publish
    from tests.annotation.crowd.prolific import ProlificDriver
    from tests.annotation.drivers import MTurkDriver
    from tests.factories import paired_run_factory

    settings.CROWDVL_PUBLIC_URL = "https://crowd.example.org"

    def stage2(provider):  # a run of its own each: one stage-2 batch takes a run's pairs
        run = paired_run_factory(dataset, run_on_commit=run_on_commit)
        return batch_create(run=run, stage=BisonStage.SELECTION, provider=provider, items_per_hit=3)

    # MTurk: the anonymous preview, with MTurk's preview id and with none.
    mt = MTurkDriver(Client())
    mturk = mt.publish(stage2("mturk"))
    hit = mturk.hits.order_by("position").first()
    previews = [
        client.get(f"/mturk/hit/{hit.pk}/", query).content.decode()
        for query in (
            {"assignmentId": "ASSIGNMENT_ID_NOT_AVAILABLE", "hitId": hit.provider_hit_id},
            {},
        )
    ]
    taken = mt.take(mturk, "WORKER1")  # accepted: the HIT's real questions
    real_pages = [
        client.get(
            f"/mturk/hit/{hit.pk}/",
            {
                "assignmentId": taken.provider_assignment_id,
                "hitId": hit.provider_hit_id,
                "workerId": "WORKER1",
                "turkSubmitTo": "https://workersandbox.mturk.com",
            },
        ).content.decode()
    ]
    mt.submit(taken, {f"q{q.position}": "none" for q in hit.questions.all()})
    taken.refresh_from_db()
    assert taken.confirmed and taken.answers.count() == hit.questions.count()
    mt.done()

    # The panel: the study link, then the page before consent.
    panel = batch_publish(batch=stage2("panel"))
    visitor = Client()
    visitor.get(f"/panel/{panel.pk}/", {"participantId": "P1"})
    previews.append(visitor.get(f"/panel/{panel.pk}/").content.decode())
    from annotation.selectors.work.invitations import run_consent

    version = run_consent(panel.run)["version"]
    assert visitor.post(f"/panel/{panel.pk}/", {"version": version}).status_code == 302
    task = visitor.get(f"/panel/{panel.pk}/next/")["Location"]
    real_pages.append(visitor.get(task).content.decode())
    assert real_pages[-1].count('class="question"') == 3

    # Prolific: the study link's page before consent.
    pro = ProlificDriver(Client())
    prolific = pro.publish(stage2("prolific"))
    previews.append(pro.arrive(prolific, "PARTICIPANT1").content.decode())
    pro.done()

    texts, images = _real_items(mturk.run, real_pages)
    assert any(t in real_pages[0] for t in texts)  # the real page does show captions
    for body in previews:
        assert 'id="instructions"' in body
        assert _leaks(body, texts, images) == []
    assert len({_example(body) for body in previews}) == 1  # one shared example


# 1. No absolute server path reaches a non-staff user: import and job messages, job results,
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
