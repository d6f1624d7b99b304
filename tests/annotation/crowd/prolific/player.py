"""Prolific's player for tests: the stand-in of its API (`standin.py`) mounted on the
provider's client, and participants who take a place at Prolific, arrive through the study's
link in their own browser session, consent, answer and leave through the completion URL.
`driver(http_client)` is what the contract tests every provider passes ask for."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import parse_qs, urlparse

from django.test import Client
from django.test.utils import override_settings

from annotation.crowd.prolific.client import ProlificClient, client_default
from annotation.models import Assignment, Batch
from annotation.providers import provider_for
from annotation.services.runs.batches import batch_publish, batch_sync
from tests.annotation.crowd.prolific.standin import ProlificStandIn, standin_session

API = "https://api.prolific.test/api/v1/"
SECRET = "hook-secret-for-tests"


class ProlificDriver:
    name = "prolific"

    def __init__(self, http: Any = None, *, currency: str = "USD") -> None:
        self.standin = ProlificStandIn(currency=currency, base_url=API)
        self.settings = override_settings(
            CROWDVL_PROLIFIC_API_URL=API,
            CROWDVL_PROLIFIC_WORKSPACE=self.standin.workspace,
            CROWDVL_PROLIFIC_HOOK_SECRET=SECRET,
            CROWDVL_CURRENCY=currency,
        )
        self.settings.enable()
        self.sleeps: list[float] = []
        self.client = ProlificClient(
            token="test-token",
            base_url=API,
            session=standin_session(self.standin, API),
            sleep=self.sleeps.append,
        )
        self.provider = provider_for("prolific")
        self.provider.use_client(lambda: self.client)  # type: ignore[attr-defined]
        self.browsers: dict[str, Client] = {}
        self.sessions: dict[str, str] = {}  # participant id: submission id
        self.pids: dict[str, str] = {}  # a test's name for a participant: their Prolific id
        self.seconds_taken: float | None = None  # how long participants take, start to end

    def pid(self, name: str) -> str:
        """The Prolific id (24 hex) of the participant a test calls `name`."""
        if name not in self.pids:
            self.pids[name] = self.standin.participant()
        return self.pids[name]

    def session(self, name: str) -> str:
        """The submission id of the participant a test calls `name`."""
        return self.sessions[self.pid(name)]

    def expect(self, operation: str, response: dict | None = None, params: Any = None) -> None:
        return None  # the stand-in keeps Prolific's state: nothing to script

    def publish(self, batch: Batch) -> Batch:
        return batch_publish(batch=batch)

    def arrive(self, batch: Batch, name: str) -> Any:
        """The participant takes a place at Prolific and opens the study's link."""
        participant = self.pid(name)
        batch.refresh_from_db()
        study = self.standin.studies.get(batch.provider_hit_type_id)
        if study is None or study["status"] != "ACTIVE":
            return None
        if participant in self.sessions or (
            self.standin.places_taken(study["id"]) >= study["total_available_places"]
        ):
            return None
        sid = self.standin.start(study["id"], participant)
        self.sessions[participant] = sid
        browser = self.browsers.setdefault(participant, Client())
        query = {"PROLIFIC_PID": participant, "STUDY_ID": study["id"], "SESSION_ID": sid}
        page = browser.get(f"/prolific/study/{batch.pk}/", query)
        assert page.status_code == 200, page.content
        return page

    def consent(self, batch: Batch, name: str) -> Any:
        version = re.search(rb'name="version" value="([^"]+)"', self.arrive_page.content)
        assert version is not None
        return self.browsers[self.pid(name)].post(
            f"/prolific/study/{batch.pk}/", {"version": version.group(1).decode()}
        )

    def take(self, batch: Batch, worker_name: str) -> Assignment | None:
        page = self.arrive(batch, worker_name)
        if page is None:
            return None
        self.arrive_page = page
        response = self.consent(batch, worker_name)
        assert response.status_code == 302, response.content
        target = response["Location"]
        if "/prolific/assignment/" not in target:  # no HIT left: back to Prolific
            self.complete_at_prolific(self.pid(worker_name), target)
            return None
        return Assignment.objects.get(pk=int(target.rstrip("/").rsplit("/", 1)[1]))

    def submit(self, assignment: Assignment, answers: dict[str, str]) -> None:
        participant = assignment.worker.external_id
        response = self.browsers[participant].post(
            f"/prolific/assignment/{assignment.pk}/", answers
        )
        assert response.status_code == 302, response.content
        self.complete_at_prolific(participant, response["Location"])
        batch_sync(batch=assignment.hit.batch)  # the work counts once synchronisation sees it
        assignment.refresh_from_db()

    def complete_at_prolific(self, participant: str, url: str) -> str:
        """The browser lands on Prolific's completion URL; its code's actions run there."""
        assert url.startswith("https://app.prolific.com/submissions/complete?cc="), url
        code = parse_qs(urlparse(url).query)["cc"][0]
        return self.standin.complete(self.sessions[participant], code, seconds=self.seconds_taken)

    def done(self) -> None:
        self.provider.use_client(client_default)  # type: ignore[attr-defined]
        self.settings.disable()


def driver(http: Any) -> ProlificDriver:
    return ProlificDriver(http)
