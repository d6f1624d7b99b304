"""A batch's preview (annotation/pages/batches/preview.py, issue 28): every task page of a draft
with its items, storing nothing, for the members who may view the run; console, API and CLI."""

import io
import json
import re

import pytest
from django.core.management import call_command

from annotation.models import Answer, Assignment, BatchStatus, ProjectRole
from tests.annotation.api.test_schema import check, schema  # noqa: F401
from tests.annotation.api.test_urls_lists import member
from tests.annotation.pages.batches.test_views_running import local_batch

pytestmark = pytest.mark.django_db


# Preview


def test_preview_shows_every_task_page_of_a_draft_with_its_items_and_stores_nothing(
    paired_run, client, django_user_model
):
    draft = local_batch(paired_run, publish=False)
    hits = list(draft.hits.order_by("position"))
    assert len(hits) >= 2
    viewer = django_user_model.objects.create_user("vera", password="pw")
    paired_run.project.memberships.create(user=viewer, role=ProjectRole.VIEWER)
    client.force_login(viewer)
    first = client.get(f"/batches/{draft.pk}/preview/").content.decode()
    assert 'id="preview-banner"' in first and f"task 1 of {len(hits)}" in first
    assert first.count('class="question"') == hits[0].questions.count()
    # Its images load as the researcher's (no assignment, so no worker page key).

    images = re.findall(r'<img[^>]* src="([^"]+)"', first)
    assert images and "{page-key}" not in first
    for url in images:
        assert "/img/" not in url, url
        shown = client.get(url)
        assert shown.status_code == 200 and shown["Content-Type"] == "image/jpeg", url
    second = client.get(f"/batches/{draft.pk}/preview/2/").content.decode()
    caption = hits[1].questions.first().item.positive.captions.first().text
    assert caption in second and 'id="preview-previous"' in second
    assert client.get(f"/batches/{draft.pk}/preview/{len(hits) + 1}/").status_code == 404

    refused = client.post(f"/batches/{draft.pk}/preview/", {"q0": "none"})
    assert refused.status_code == 400 and "would be refused" in refused.content.decode()
    answers = {f"q{q.position}": "none" for q in hits[0].questions.all()}
    accepted = client.post(f"/batches/{draft.pk}/preview/", answers, follow=True)
    assert accepted.status_code == 200 and "would be accepted" in accepted.content.decode()
    assert not Answer.objects.exists() and not Assignment.objects.exists()
    draft.refresh_from_db()
    assert draft.status == BatchStatus.DRAFT


def test_preview_only_for_members_who_may_view_the_run(paired_run, client, django_user_model):
    batch = local_batch(paired_run)
    assert client.get(f"/batches/{batch.pk}/preview/").status_code == 302  # sign in first
    django_user_model.objects.create_user("olga", password="pw")
    client.login(username="olga", password="pw")
    assert client.get(f"/batches/{batch.pk}/preview/").status_code in (403, 404)
    batch_page = member(django_user_model, paired_run, "rita", ProjectRole.RESEARCHER)
    assert batch_page.get(f"/api/batches/{batch.pk}/preview/1/").status_code == 200


def test_preview_in_the_api_and_the_cli(paired_run, django_user_model, schema):  # noqa: F811
    batch = local_batch(paired_run, publish=False)
    alice = member(django_user_model, paired_run, "alice", ProjectRole.VIEWER)
    response = alice.get(f"/api/batches/{batch.pk}/preview/1/")
    check(schema, "/api/batches/{batch_id}/preview/{number}/", "get", response)
    body = response.json()
    assert body["total"] == batch.hits.count() and body["url"].endswith("/preview/1/")
    assert len(body["questions"]) == 2 and "gold" not in json.dumps(body)
    out = io.StringIO()
    call_command("batch_preview", str(batch.pk), "--number", "2", stdout=out)
    assert json.loads(out.getvalue())["number"] == 2
