"""No page or URL reveals which image is which (issue 8, part 2).

The attacker holds the public COCO captions file (file names, ids, URLs, widths and heights
of every image, and every caption) and every byte the browser receives, but no copy of the
images. Before this change image URLs named the COCO file and the served file had its own
size: such a client answered BISON stage 3 without looking at an image."""

import hashlib
import io
import json
import math
import re
from datetime import timedelta

import numpy as np
import pytest
from PIL import Image as PILImage

from annotation.flows.bison.vocabulary import BisonItemKind, BisonStage
from annotation.flows.eccv.vocabulary import EccvStage
from annotation.models import (
    Assignment,
    AssignmentState,
    Batch,
    BatchStatus,
    Hit,
    Image,
    Item,
    Job,
    Question,
    Run,
    RunStatus,
)
from annotation.selectors.work.task_page import hit_image_places
from annotation.services.datasets import images as image_service
from annotation.services.datasets.images import ImageUnavailable, image_cached, reencode
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.runs.projects import project_default
from annotation.services.work.claim import assignment_claim_next
from annotation.services.work.submit import assignment_submit
from annotation.services.work.worker_identity import worker_get_or_create
from tests.factories import dataset_factory, join

pytestmark = [pytest.mark.long, pytest.mark.django_db]
N = 410  # stage-3 items the attacker answers


def coco_file(n: int) -> dict:
    """Images of distinct sizes (as in COCO, where the size often identifies the image)."""
    images, annotations = [], []
    for i in range(n):
        images.append(
            {
                "id": 5000 + i,
                "file_name": f"COCO_val2014_{5000 + i:012d}.jpg",
                "coco_url": f"http://images.cocodataset.org/val2014/COCO_val2014_{5000 + i:012d}.jpg",
                "width": 40 + i % 97,
                "height": 30 + i // 97,
            }
        )
        annotations.append(
            {"id": 90000 + i, "image_id": 5000 + i, "caption": f"a photo of thing number {i}"}
        )
    return {"info": {}, "images": images, "annotations": annotations, "licenses": []}


@pytest.fixture
def big_run(tmp_path):
    document = coco_file(N)
    folder = tmp_path / "images"
    folder.mkdir()
    for n, record in enumerate(document["images"]):
        colour = ((n * 67) % 256, (n * 131) % 256, (n * 29 + 80) % 256)
        image = PILImage.new("RGB", (record["width"], record["height"]), colour)
        image.save(folder / record["file_name"], exif=b"Exif\x00\x00secret-id-" + str(n).encode())
    dataset = dataset_factory(tmp_path, image_dir=folder, document=document, name="big")
    run = Run.objects.create(
        dataset=dataset, kind="bison", status=RunStatus.PREPARED, project=project_default()
    )
    ordered = list(dataset.images.order_by("coco_id"))
    Item.objects.bulk_create(
        Item(run=run, kind=BisonItemKind.IMAGE_PAIR, positive=a, negative=ordered[(i + 1) % N])
        for i, a in enumerate(ordered)
    )
    selection = batch_publish(
        batch=batch_create(
            run=run, stage=BisonStage.SELECTION, provider="local", items_per_hit=1000
        )
    )
    selector = worker_get_or_create(provider="local", external_id="selector")
    taken = assignment_claim_next(batch=selection, worker=selector)
    answers = {f"q{q.position}": "c0" for q in taken.hit.questions.select_related("item__positive")}
    assignment_submit(assignment_id=taken.pk, worker=selector, answers=answers)
    return run, document, folder


def attack(document, page_bytes, fetch):
    """Answer each stage-3 question from everything the browser got plus the COCO file.

    For the caption shown, the file says which image it belongs to: that image's id, file
    name, URL and size. A side whose URL, headers or bytes carry any of them is the positive;
    with no clue the attacker answers "left"."""
    by_caption = {a["caption"]: a["image_id"] for a in document["annotations"]}
    meta = {i["id"]: i for i in document["images"]}
    html = page_bytes.decode()
    questions = re.findall(
        r'<p class="query">(.*?)</p>.*?<img src="([^"]*)".*?<img src="([^"]*)"', html, re.S
    )
    answers = []
    for caption, left, right in questions:
        target = meta[by_caption[caption.strip().strip('\u201c\u201d"')]]
        clues = {str(target["id"]), target["file_name"], target["coco_url"]}

        def matches(url, target=target, clues=clues):
            body, headers = fetch(url)
            text = url + json.dumps(headers)
            if any(c in text for c in clues) or any(c.encode() in body for c in clues):
                return True
            try:
                size = PILImage.open(io.BytesIO(body)).size
            except Exception:  # noqa: BLE001 - unreadable bytes are simply no clue
                return False
            return size == (target["width"], target["height"])

        if matches(left):
            answers.append("left")
        elif matches(right):
            answers.append("right")
        else:
            answers.append("left")
    return answers


def test_a_client_with_the_coco_file_and_every_byte_sent_answers_stage3_at_chance(client, big_run):
    run, document, folder = big_run
    verification = batch_publish(
        batch=batch_create(
            run=run,
            stage=BisonStage.VERIFICATION,
            provider="local",
            items_per_hit=1000,
            assignments_per_hit=1,
        )
    )
    assert Question.objects.filter(hit__batch=verification).count() >= 400
    answers, truth, leaked, fetched = [], [], [], {}
    # Stage-3 HITs are image-disjoint (each image is in two triples here): a worker per HIT.
    for hit in verification.hits.order_by("position"):
        worker = join(client, run, f"attacker-{hit.position}")
        assignment = assignment_claim_next(batch=verification, worker=worker)
        assert assignment.hit_id == hit.pk
        page = client.get(f"/work/assignment/{assignment.pk}/").content

        def fetch(url):
            if url not in fetched:
                response = client.get(url)
                fetched[url] = (response.content, dict(response.headers))
            return fetched[url]

        answers += attack(document, page, fetch)
        truth += ["right" if q.swapped else "left" for q in hit.questions.order_by("position")]
        places = hit_image_places(hit.pk)

        # The same client against the files themselves (what the old /images/<pk>/ sent).
        def fetch_original(url, places=places):
            image = Image.objects.get(pk=places[url.rsplit("/", 1)[1]][0])
            return (folder / image.file_name).read_bytes(), {}

        leaked += attack(document, page, fetch_original)
    assert len(answers) == len(truth)
    n = len(truth)
    accuracy = sum(a == t for a, t in zip(answers, truth, strict=True)) / n
    half_width = 2.576 * math.sqrt(0.25 / n)  # the 99% binomial interval around 0.5
    assert abs(accuracy - 0.5) <= half_width, accuracy
    # Every served image is the same size and format, whatever its source.
    sizes = {PILImage.open(io.BytesIO(body)).size for body, _ in fetched.values()}
    assert sizes == {(image_service.SIZE, image_service.SIZE)}
    assert {h["Content-Type"] for _, h in fetched.values()} == {"image/jpeg"}
    assert not any("Content-Disposition" in h for _, h in fetched.values())
    assert sum(a == t for a, t in zip(leaked, truth, strict=True)) / n > 0.95


def test_image_urls_are_per_question_and_assignment_and_end_with_it(client, paired_run):
    """Issue 25: a URL names the page's assignment (signed) and the question's place, never
    the image; two workers of one HIT get different URLs; they stop working at submit."""
    batch = batch_publish(
        batch=batch_create(
            run=paired_run,
            stage=BisonStage.SELECTION,
            provider="local",
            items_per_hit=6,
            assignments_per_hit=2,
        )
    )
    pages = []
    for name in ("first", "second"):
        worker = join(client, paired_run, name)
        assignment = assignment_claim_next(batch=batch, worker=worker)
        html = client.get(f"/work/assignment/{assignment.pk}/").content.decode()
        pages.append((assignment, worker, re.findall(r'<img src="(/img/[^"]+)"', html)))
    (a, worker_a, urls_a), (b, _, urls_b) = pages
    assert a.hit_id == b.hit_id and len(urls_a) == 12
    assert len(set(urls_a)) == 12 and not set(urls_a) & set(urls_b)
    images = Image.objects.filter(pk__in={v[0] for v in hit_image_places(a.hit_id).values()})
    for url in urls_a:
        for image in images:
            assert str(image.coco_id) not in url and image.file_name not in url
        assert client.get(url).status_code == 200
    # The same image in two questions of the page: different bytes each time.
    bodies = {}
    for url in urls_a:
        image_id = hit_image_places(a.hit_id)[url.rsplit("/", 1)[1]][0]
        bodies.setdefault(image_id, set()).add(client.get(url).content)
    assert any(len(b) > 1 for b in bodies.values())
    assert all(len(b) == sum(1 for _ in b) for b in bodies.values())
    # Forged or unknown keys and places are 404s.
    key = urls_a[0].split("/")[2]
    assert client.get(f"/img/{key}x/0-0").status_code == 404
    assert client.get(f"/img/{key}/99-0").status_code == 404
    assert client.get("/img/not-a-key/0-0").status_code == 404
    assert client.get(f"/images/{images[0].pk}/").status_code == 404  # the old sequential URL
    # Submitted: the page's images are gone; the other worker's still load.
    answers = {f"q{q.position}": "none" for q in a.hit.questions.all()}
    assignment_submit(assignment_id=a.pk, worker=worker_a, answers=answers)
    assert client.get(urls_a[0]).status_code == 404
    assert client.get(urls_b[0]).status_code == 200
    # Abandoned (returned, timed out): gone too.
    Assignment.objects.filter(pk=b.pk).update(state=AssignmentState.ABANDONED)
    assert client.get(urls_b[0]).status_code == 404


def test_an_image_url_stops_working_when_its_claim_expires(client, paired_run):
    batch = batch_publish(
        batch=batch_create(run=paired_run, stage=BisonStage.SELECTION, provider="local")
    )
    worker = join(client, paired_run, "slow")
    assignment = assignment_claim_next(batch=batch, worker=worker)
    html = client.get(f"/work/assignment/{assignment.pk}/").content.decode()
    url = re.findall(r'<img src="(/img/[^"]+)"', html)[0]
    assert client.get(url).status_code == 200
    late = assignment.accepted_at - timedelta(seconds=batch.assignment_duration_seconds + 1)
    Assignment.objects.filter(pk=assignment.pk).update(accepted_at=late)
    assert client.get(url).status_code == 404


def test_eccv_pages_and_images_carry_no_identifier(client, proposed):
    """Gold items are original COCO pairs and pairs no model proposed: with no image
    identifier in the page or the image responses, only the caption text is left to go on."""
    batch = batch_publish(
        batch=batch_create(
            run=proposed, stage=EccvStage.JUDGMENT, provider="local", items_per_hit=6
        )
    )
    worker = join(client, proposed, "judge")
    assignment = assignment_claim_next(batch=batch, worker=worker)
    page = client.get(f"/work/assignment/{assignment.pk}/").content
    received = [page]
    for url in re.findall(rb'<img src="([^"]+)"', page):
        response = client.get(url.decode())
        assert response.status_code == 200
        received += [response.content, json.dumps(dict(response.headers)).encode()]
    blob = b"".join(received)
    for image in proposed.dataset.images.all():
        for clue in (image.file_name, image.coco_url, f"/images/{image.pk}/"):
            assert clue.encode() not in blob
    assert b"gold" not in page.lower()


def test_only_raster_images_are_served_and_metadata_is_stripped(tmp_path):
    svg = b'<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'
    html = b"<html><script>alert(1)</script></html>"
    for data in (svg, html, b""):
        with pytest.raises(ImageUnavailable):
            reencode(data)
    source = io.BytesIO()
    PILImage.new("RGB", (80, 60), (10, 200, 30)).save(
        source, format="JPEG", exif=b"Exif\x00\x00COCO_val2014_000000005000"
    )
    out = reencode(source.getvalue())
    served = PILImage.open(io.BytesIO(out))
    assert served.format == "JPEG" and served.size == (512, 512)
    assert not served.info.get("exif") and b"COCO_val2014" not in out


def test_remote_images_are_cached_by_a_job_and_a_failing_source_is_unavailable(
    tmp_path, monkeypatch, run_on_commit, client
):
    from tests.factories import coco_document

    dataset = dataset_factory(tmp_path, document=coco_document(2), name="remote")
    run = Run.objects.create(
        dataset=dataset, kind="bison", status=RunStatus.PREPARED, project=project_default()
    )
    a, b = dataset.images.order_by("pk")
    Item.objects.create(run=run, kind=BisonItemKind.IMAGE_PAIR, positive=a, negative=b)
    picture = io.BytesIO()
    PILImage.new("RGB", (64, 48), (1, 2, 3)).save(picture, format="PNG")
    fetched = []

    def fake_download(url):  # tests never touch the network
        fetched.append(url)
        if url == b.coco_url:
            raise ImageUnavailable("HTTP 404")
        return picture.getvalue()

    monkeypatch.setattr(image_service, "download", fake_download)
    batch = run_on_commit(
        batch_create, run=run, stage=BisonStage.SELECTION, provider="local", items_per_hit=1
    )
    job = Job.objects.get(name="images.cache")
    assert job.state == "succeeded" and job.progress == 100.0
    assert job.result["images"] == 2 and job.result["unavailable"] == 1
    assert sorted(fetched) == sorted([a.coco_url, b.coco_url])
    # Published as if its image were back (publishing refuses images that cannot be shown).
    Batch.objects.filter(pk=batch.pk).update(status=BatchStatus.PUBLISHED)
    batch.refresh_from_db()
    worker = join(client, run, "viewer")
    assignment = assignment_claim_next(batch=batch, worker=worker)
    html = client.get(f"/work/assignment/{assignment.pk}/").content.decode()
    places = hit_image_places(assignment.hit_id)
    url = {places[u.rsplit("/", 1)[1]][0]: u for u in re.findall(r'<img src="(/img/[^"]+)"', html)}
    assert client.get(url[a.pk]).status_code == 200
    assert client.get(url[b.pk]).status_code == 404  # shown as "Unavailable"
    # A request never fetches: a second call serves from the cache only.
    fetched.clear()
    assert client.get(url[a.pk]).status_code == 200 and fetched == []
    assert image_cached(image=a)[:2] == b"\xff\xd8"
    assert Hit.objects.filter(batch=batch).exists()


def test_renderings_differ_in_bytes_but_not_to_a_perceptual_hash():
    """Renderings defeat a byte hash; a perceptual hash still sees one image in them, which is
    why image-disjoint stages never show a worker one image twice (issue 25)."""
    rng = np.random.default_rng(1)
    pictures = []
    for _ in range(2):
        grid = rng.integers(0, 256, size=(6, 8, 3), dtype=np.uint8)
        source = io.BytesIO()
        PILImage.fromarray(grid).resize((160, 120), PILImage.Resampling.BICUBIC).save(
            source, format="PNG"
        )
        pictures.append(reencode(source.getvalue()))
    renderings = [image_service.render_variant(pictures[0], seed=bytes([n])) for n in range(4)]
    assert len({hashlib.sha256(r).digest() for r in renderings}) == 4

    def dhash(body):
        with PILImage.open(io.BytesIO(body)) as opened:
            grey = np.asarray(opened.convert("L").resize((9, 8)), dtype=np.float32)
        return (grey[:, 1:] > grey[:, :-1]).flatten()

    same = max(int((dhash(r) != dhash(pictures[0])).sum()) for r in renderings)
    other = int((dhash(pictures[1]) != dhash(pictures[0])).sum())
    assert same < other


def test_renderings_show_the_whole_picture_as_it_is():
    """Issue 47: a rendering is the cached picture itself (no crop, brightness or contrast
    change: those cut up to a fifth of a picture and its edge objects from what workers
    judged). Every pixel stays within JPEG's error of the cached re-encoding, the corners
    and edges included."""
    rng = np.random.default_rng(5)
    grid = rng.integers(0, 256, size=(12, 16, 3), dtype=np.uint8)
    source = io.BytesIO()
    PILImage.fromarray(grid).resize((640, 480), PILImage.Resampling.BICUBIC).save(
        source, format="PNG"
    )
    base = reencode(source.getvalue())
    with PILImage.open(io.BytesIO(base)) as opened:
        cached = np.asarray(opened.convert("RGB"), dtype=np.float32)
    for n in range(6):
        rendering = image_service.render_variant(base, seed=bytes([n, 7]))
        with PILImage.open(io.BytesIO(rendering)) as opened:
            assert opened.size == (image_service.SIZE, image_service.SIZE)
            shown = np.asarray(opened.convert("RGB"), dtype=np.float32)
        difference = np.abs(shown - cached)
        assert difference.mean() < 2.0, n
        # The outermost 16-pixel frame: a crop of 3 % would move it by more than that.
        frame = np.ones(difference.shape[:2], dtype=bool)
        frame[16:-16, 16:-16] = False
        assert difference[frame].mean() < 2.5, n
