"""A participant's pages (annotation/crowd/prolific/views.py), against the stand-in of its API (tests/annotation/crowd/prolific/standin.py): the link's ids are
claims checked at Prolific; declining consent returns them with the no-consent code."""

import pytest
from django.test import Client

from annotation.crowd.prolific import studies
from annotation.models import Assignment, Worker
from tests.annotation.crowd.prolific.test_provider import draft

pytestmark = pytest.mark.django_db


def test_the_urls_ids_are_claims_checked_at_prolific(pro, paired_run):
    batch = pro.publish(draft(paired_run))
    study = batch.provider_hit_type_id
    alice, mallory, bob = (pro.standin.participant() for _ in range(3))
    sid = pro.standin.start(study, alice)
    browser = Client()
    # Another study's id, or ids not of Prolific's shape (24 hex): refused before anything is
    # asked or written.
    for pid, study_id, session in (
        (alice, pro.standin.new_id(), sid),
        ("alice", study, sid),
        (alice, study, sid.upper()),
        (alice, study, sid + "0"),
    ):
        bad = browser.get(
            f"/prolific/study/{batch.pk}/",
            {"PROLIFIC_PID": pid, "STUDY_ID": study_id, "SESSION_ID": session},
        )
        assert bad.status_code == 400
    # Mallory claims Alice's session: Prolific says it is Alice's.
    page = browser.get(
        f"/prolific/study/{batch.pk}/",
        {"PROLIFIC_PID": mallory, "STUDY_ID": study, "SESSION_ID": sid},
    )
    assert page.status_code == 200 and b"consent" in page.content
    assert mallory.encode() not in page.content  # the page never echoes the participant id
    version = page.content.split(b'name="version" value="')[1].split(b'"')[0].decode()
    refused = browser.post(f"/prolific/study/{batch.pk}/", {"version": version})
    assert refused.status_code == 403
    # A session Prolific does not know at all.
    browser.get(
        f"/prolific/study/{batch.pk}/",
        {"PROLIFIC_PID": bob, "STUDY_ID": study, "SESSION_ID": pro.standin.new_id()},
    )
    refused = browser.post(f"/prolific/study/{batch.pk}/", {"version": version})
    assert refused.status_code == 403 and b"does not know" in refused.content
    assert not Worker.objects.filter(provider="prolific").exists()
    assert not Assignment.objects.filter(hit__batch=batch).exists()


def test_declining_consent_returns_the_participant_with_the_no_consent_code(pro, paired_run):
    batch = pro.publish(draft(paired_run))
    pro.arrive(batch, "carol")
    browser = pro.browsers[pro.pid("carol")]
    page = browser.get(
        f"/prolific/study/{batch.pk}/",
        {
            "PROLIFIC_PID": pro.pid("carol"),
            "STUDY_ID": batch.provider_hit_type_id,
            "SESSION_ID": pro.session("carol"),
        },
    )
    version = page.content.split(b'name="version" value="')[1].split(b'"')[0].decode()
    response = browser.post(f"/prolific/study/{batch.pk}/", {"version": version, "decline": "1"})
    assert response["Location"].endswith(studies.completion_code(batch, studies.NO_CONSENT))
    assert not Assignment.objects.filter(hit__batch=batch).exists()
