"""A shown assignment's fixed facts kept per process (selectors/work/task_page.py, issue 32): later
views read only what can change, and whatever changed, they answer as the first view would."""

import pytest
from django.core import signing
from django.core.cache import caches
from django.db import connection
from django.test import Client, override_settings
from django.test.utils import CaptureQueriesContext

from annotation.crowd.local.invitations import invitation_consent, invitation_revoke
from annotation.models import Assignment, AssignmentState, Invitation
from annotation.selectors.work.images import SALT, page_key
from annotation.selectors.work.invitations import run_consent
from annotation.selectors.work.task_page import _Known, _known_key, task_page
from annotation.services.runs.run_texts import run_consent_set, run_instructions_set
from tests.annotation.pages.work.test_shell import local_batch
from tests.factories import join

pytestmark = pytest.mark.django_db


def _claimed(client, run, label="alice"):
    """(worker, assignment, its page's URL) of `label` claiming a task of a new batch."""
    batch = local_batch(run)
    worker = join(client, run, label)
    response = client.get(f"/work/{batch.pk}/next/")
    assert response.status_code == 302
    url = response["Location"]
    assignment = Assignment.objects.get(pk=int(url.rstrip("/").rsplit("/", 1)[1]))
    return worker, assignment, url


def _statements(client, url):
    """The response and its SQL, the session's own read left out (the tests' sessions are the
    database's; a deployment's come from the shared cache)."""
    with CaptureQueriesContext(connection) as ctx:
        response = client.get(url)
    return response, [q["sql"] for q in ctx if not q["sql"].startswith('SELECT "django_session"')]


def test_a_later_view_reads_what_can_change_by_primary_keys(client, paired_run):
    worker, assignment, url = _claimed(client, paired_run)
    first, sql = _statements(client, url)
    assert first.status_code == 200
    assert any("annotation_hit" in s for s in sql)  # the first view: the whole join
    known = caches["assignments"].get(_known_key(assignment.pk))
    assert known == _Known(
        "local",
        assignment.hit_id,
        assignment.hit.batch_id,
        assignment.hit.batch.stage,
        paired_run.pk,
    )
    later, sql = _statements(client, url)
    assert later.status_code == 200
    assert len(sql) == 1 and "annotation_hit" not in sql[0] and "annotation_run" in sql[0]
    # The same page as read with nothing remembered.
    remembered = task_page(assignment_id=assignment.pk, worker_id=worker.pk, provider="local")
    caches["assignments"].clear()
    fresh = task_page(assignment_id=assignment.pk, worker_id=worker.pk, provider="local")
    assert remembered == fresh and remembered is not None


def test_after_a_view_other_workers_and_forged_ids_are_not_found(client, paired_run):
    _, assignment, url = _claimed(client, paired_run)
    assert client.get(url).status_code == 200  # remembered from here on
    bob = Client()
    bob_worker = join(bob, paired_run, "bob")
    assert bob.get(url).status_code == 404
    assert Client().get(url).status_code == 404  # no session
    assert task_page(assignment_id=assignment.pk, worker_id=bob_worker.pk, provider="local") is None
    # Another provider's view of the same assignment: not this one's.
    assert (
        task_page(assignment_id=assignment.pk, worker_id=assignment.worker_id, provider="mturk")
        is None
    )
    forged = url.replace(str(assignment.pk), str(assignment.pk + 10_000))
    assert client.get(forged).status_code == 404
    assert client.get(url).status_code == 200


@pytest.mark.parametrize(
    "state", [AssignmentState.SUBMITTED, AssignmentState.ABANDONED, AssignmentState.REJECTED]
)
def test_after_a_view_a_closed_assignment_goes_to_the_next(client, paired_run, state):
    _, assignment, url = _claimed(client, paired_run)
    assert client.get(url).status_code == 200
    Assignment.objects.filter(pk=assignment.pk).update(state=state)
    response = client.get(url)
    assert response.status_code == 302
    assert response["Location"] == f"/work/{assignment.hit.batch_id}/next/"


def test_after_a_view_a_revoked_link_is_not_found_and_new_consent_text_keeps_the_task(
    client, paired_run
):
    _, _, url = _claimed(client, paired_run)
    assert client.get(url).status_code == 200
    run_consent_set(run=paired_run, text="A new information sheet.")
    # The task taken under the old text stays the worker's to finish (issue 46); the next
    # claim asks again (test_invitations.py).
    assert client.get(url).status_code == 200
    invitation = Invitation.objects.get(run=paired_run, label="alice")
    paired_run.refresh_from_db()
    invitation_consent(invitation=invitation, version=run_consent(paired_run)["version"])
    assert client.get(url).status_code == 200  # nothing refused is remembered
    invitation_revoke(invitation=invitation)
    assert client.get(url).status_code == 404


def test_after_a_view_new_instructions_are_shown(client, paired_run):
    _, assignment, url = _claimed(client, paired_run)
    assert "Read these first." not in client.get(url).content.decode()
    run_instructions_set(run=paired_run, stage=assignment.hit.batch.stage, text="Read these first.")
    assert "Read these first." in client.get(url).content.decode()


def test_a_remembered_assignment_of_another_hit_is_read_afresh(client, paired_run):
    worker, assignment, url = _claimed(client, paired_run)
    key = _known_key(assignment.pk)
    # As if the database had been put back with other rows under the same ids.
    caches["assignments"].set(key, _Known("local", -1, -1, "other", paired_run.pk), None)
    page = task_page(assignment_id=assignment.pk, worker_id=worker.pk, provider="local")
    assert page is not None and page.hit_id == assignment.hit_id
    assert caches["assignments"].get(key).hit_id == assignment.hit_id
    assert client.get(url).status_code == 200


def test_a_page_key_reads_back_only_under_its_secret_and_salt():
    for assignment_id in (0, 1, 42, 123_456_789, 2**62):
        key = page_key(assignment_id=assignment_id)
        assert signing.loads(key, salt=SALT) == assignment_id
    assert signing.loads(page_key(hit_id=3, external="A1"), salt=SALT) == [3, "A1"]
    with pytest.raises(signing.BadSignature):
        signing.loads(page_key(assignment_id=42), salt="another salt")
    with override_settings(SECRET_KEY="another-secret-" + "y" * 40):
        other = page_key(assignment_id=42)
    with pytest.raises(signing.BadSignature):
        signing.loads(other, salt=SALT)
