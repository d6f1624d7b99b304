"""Prolific's client (annotation/crowd/prolific/client.py), against the stand-in of its API (tests/annotation/crowd/prolific/standin.py): 429 honoured, lists paged,
never a POST or PATCH sent twice by itself."""

import pytest

from annotation.crowd.prolific.client import ProlificClient, ProlificError
from tests.annotation.crowd.prolific.standin import ProlificStandIn, standin_session

pytestmark = pytest.mark.django_db


def test_the_client_honours_429_and_pages_through_lists(settings):
    standin = ProlificStandIn()
    sleeps: list[float] = []
    api = "https://api.prolific.test/api/v1/"
    client = ProlificClient(
        token="t", base_url=api, session=standin_session(standin, api), sleep=sleeps.append
    )
    standin.throttle(2)
    assert client.call("GET", "users/me/")["id"] == standin.researcher
    assert sleeps == [0.0, 0.0]  # Retry-After: 0, twice
    standin.throttle(10)
    with pytest.raises(ProlificError) as caught:
        client.call("GET", "users/me/")
    assert caught.value.status == 429 and len(sleeps) == 2 + 4  # five attempts in all
    standin.throttle(0)
    study = standin.new_id("st")
    standin.studies[study] = {
        "id": study,
        "status": "ACTIVE",
        "total_available_places": 9,
        "completion_codes": [],
    }
    for n in range(5):
        standin.start(study, f"pp{n}")
    listed = list(client.pages("submissions/", params={"study": study}, page_size=2))
    assert sorted(s["participant_id"] for s in listed) == [f"pp{n}" for n in range(5)]
    assert standin.calls.count(("GET", "submissions/")) == 3


def test_the_client_never_sends_a_post_or_patch_twice_by_itself(settings):
    from annotation.crowd.prolific.client import ProlificUnclear

    api = "https://api.prolific.test/api/v1/"
    standin = ProlificStandIn(base_url=api)
    sleeps = []
    client = ProlificClient(
        token="t", base_url=api, session=standin_session(standin, api), sleep=sleeps.append
    )
    body = {"workspace_id": standin.workspace, "name": "g"}
    standin.fail("POST", "participant-groups/", status=503)
    with pytest.raises(ProlificUnclear):
        client.call("POST", "participant-groups/", json=body)
    standin.lose("POST", "participant-groups/")
    with pytest.raises(ProlificUnclear, match="no answer"):
        client.call("POST", "participant-groups/", json=body)
    assert standin.calls.count(("POST", "participant-groups/")) == 2 and sleeps == []
    assert len(standin.groups) == 1  # the lost one took effect; nothing was sent again
    # A 429 means Prolific did not act: waited for and sent again, whatever the method.
    standin.throttle(1)
    created = client.call("POST", "participant-groups/", json=body)
    assert len(created["id"]) == 24 and sleeps == [0.0]
    # Reading is safe to repeat: a dropped GET is sent again.
    standin.lose("GET", "users/me/")
    assert client.call("GET", "users/me/")["id"] == standin.researcher
