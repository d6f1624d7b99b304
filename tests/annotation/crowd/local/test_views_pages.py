"""Worker pages through Django's test client: flow, errors, and nothing given away."""

import re

import pytest

from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Answer, Assignment, PoolMembership, Question
from annotation.selectors.work.task_page import hit_image_places
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.worker_identity import worker_get_or_create
from tests.factories import join, selection_done_factory

pytestmark = pytest.mark.django_db


def start(client, batch, worker_id):
    join(client, batch.run, worker_id)
    response = client.get(f"/work/{batch.pk}/next/")
    assert response.status_code == 302, response.content
    return response["Location"]


def test_selection_page_flow_and_error_message(client, paired_run):
    batch = batch_publish(
        batch=batch_create(
            run=paired_run, stage=BisonStage.SELECTION, provider="local", items_per_hit=3
        )
    )
    url = start(client, batch, "alice")
    page = client.get(url).content.decode()
    assert page.count('class="question"') == 3
    assert "None of the above captions are suitable" in page
    assert "/img/" in page  # through this server, by the batch's tokens
    response = client.post(url, {"q0": "none"})
    assert response.status_code == 400 and "not answered" in response.content.decode()
    assert not Answer.objects.exists()
    response = client.post(url, {"q0": "none", "q1": "none", "q2": "none"})
    assert response.status_code == 302 and response["Location"].endswith("/next/")
    assert Answer.objects.count() == 3


def test_another_worker_cannot_open_an_assignment(client, paired_run):
    batch = batch_publish(
        batch=batch_create(run=paired_run, stage=BisonStage.SELECTION, provider="local")
    )
    url = start(client, batch, "alice")
    join(client, paired_run, "mallory")
    assert client.get(url).status_code == 404
    assert client.post(url, {"q0": "none"}).status_code == 404


def test_verification_page_gives_nothing_away(client, paired_run):
    selection_done_factory(paired_run)
    batch = batch_publish(
        batch=batch_create(
            run=paired_run, stage=BisonStage.VERIFICATION, provider="local", items_per_hit=100
        )
    )
    url = start(client, batch, "verifier")
    html = client.get(url).content.decode()
    assignment = Assignment.objects.get(worker__external_id="verifier")
    questions = list(Question.objects.filter(hit=assignment.hit).select_related("item"))
    drawn = [q.swapped for q in Question.objects.filter(hit__batch=batch)]
    assert any(drawn) and not all(drawn)
    lowered = html.lower()
    for word in ("positive", "negative", "swapped", "true_image", "gold"):
        assert word not in lowered
    # Item and image database ids other than the served image URLs do not appear.
    for q in questions:
        assert f'value="{q.item.positive_id}"' not in html
    # Each question's two image URLs are in the order the server drew.
    urls = re.findall(r'<img src="/img/([^"/]+)/([^"]+)"', html)
    assert len({key for key, _ in urls}) == 1  # one page key, this assignment's
    places = hit_image_places(assignment.hit_id)
    shown = [str(places[place][0]) for _, place in urls]
    expected = []
    for q in sorted(questions, key=lambda q: q.position):
        pair = [q.item.positive_id, q.item.negative_id]
        expected += [str(i) for i in (reversed(pair) if q.swapped else pair)]
    assert shown == expected


def test_pool_conflict_page(client, paired_run):
    selection_done_factory(paired_run)
    verification = batch_publish(
        batch=batch_create(run=paired_run, stage=BisonStage.VERIFICATION, provider="local")
    )
    # A local worker who already did stage-2 work is refused stage 3.
    alice = worker_get_or_create(provider="local", external_id="alice")
    PoolMembership.objects.create(run=paired_run, worker=alice, stage=BisonStage.SELECTION)
    join(client, paired_run, "alice")
    response = client.get(f"/work/{verification.pk}/next/")
    page = response.content.decode()
    # In plain words, with the way back to their own tasks (not "the two stages' workers").
    assert response.status_code == 403 and "closed to you, through no fault of yours" in page
    assert "must be different people" not in page and 'id="home"' in page
    assert not Assignment.objects.filter(worker=alice).exists()
    # Their home lists only what they may take: stage 2 (closed now: no batch of it left open).
    home = client.get(re.search(r'href="(/join/[^"]+/)"', page).group(1)).content.decode()
    assert f"/work/{verification.pk}/" not in home


def test_the_home_page_lists_progress_and_pay_per_task(client, paired_run):
    batch = batch_publish(
        batch=batch_create(
            run=paired_run, stage=BisonStage.SELECTION, provider="local", items_per_hit=1
        )
    )
    url = start(client, batch, "bea")
    keys = re.findall(r'name="(q\d+)"', client.get(url).content.decode())
    assert client.post(url, {k: "none" for k in keys}).status_code == 302
    total = batch.hits.count()
    start_page = client.get(f"/work/{batch.pk}/").content.decode()
    assert "You have done 1 task here" in start_page
    assert f"up to {total - 1} more are open for you" in start_page
    assert f"Each task pays ${batch.reward}" in start_page


def test_image_files_are_served_only_from_the_dataset_folder(client, admin_client, dataset):
    image, other = dataset.images.order_by("pk")[:2]
    assert client.get(f"/staff/images/{image.pk}/").status_code == 302  # staff only
    response = admin_client.get(f"/staff/images/{image.pk}/")
    assert response.status_code == 200 and response.content[:2] == b"\xff\xd8"
    other.file_name = "../../etc/passwd"
    other.save()
    assert admin_client.get(f"/staff/images/{other.pk}/").status_code == 404
