"""The panel's player for the contract tests: a participant opens the study link with their
id, consents and takes a task through the pages (Django's test client); after answering on
the task page, the researcher confirms the work by uploading the panel's CSV."""

from __future__ import annotations

import re
from typing import Any

from annotation.crowd.panel import options
from annotation.crowd.panel.approvals import panel_confirm
from annotation.models import Assignment, Batch
from tests.annotation.crowd.testing import ServerDriver

TASK = re.compile(r"/panel/task/(\d+)/$")


class PanelDriver(ServerDriver):
    def __init__(self, http: Any) -> None:
        super().__init__(options.PROVIDER)
        self.http = http

    def arrive(self, batch: Batch, participant: str) -> None:
        """Open the study link as `participant` and accept the consent text if asked."""
        param = options.settings_of(batch)["id_param"]
        response = self.http.get(f"/panel/{batch.pk}/", {param: participant})
        assert response.status_code == 302, response.content
        page = self.http.get(f"/panel/{batch.pk}/")
        assert page.status_code == 200, page.content
        version = re.search(rb'name="version" value="([^"]+)"', page.content)
        if version is not None:
            consent = self.http.post(f"/panel/{batch.pk}/", {"version": version.group(1).decode()})
            assert consent.status_code == 302, consent.content

    def take(self, batch: Batch, worker_name: str) -> Assignment | None:
        self.arrive(batch, worker_name)
        response = self.http.get(f"/panel/{batch.pk}/next/")
        found = TASK.search(response.get("Location", "")) if response.status_code == 302 else None
        if found is None:
            return None
        return Assignment.objects.get(pk=int(found.group(1)))

    def submit(self, assignment: Assignment, answers: dict[str, str]) -> None:
        batch = assignment.hit.batch
        settings = options.settings_of(batch)
        participant = options.participant_of(settings, assignment.worker.external_id)
        self.arrive(batch, participant)
        response = self.http.post(f"/panel/task/{assignment.pk}/", answers)
        assert response.status_code == 302, response.content
        panel_confirm(
            batch=batch, data=f"participant_id\n{participant}\n".encode(), file="approved.csv"
        )


def driver(http: Any) -> PanelDriver:
    return PanelDriver(http)
