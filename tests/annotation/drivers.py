"""How a test plays a crowd provider's workers and remote side, one class per provider, so
the same contract tests run against every provider."""

from __future__ import annotations

import re
from typing import Any

import boto3
from botocore import xform_name
from botocore.stub import ANY, Stubber

from annotation.crowd import provider_for
from annotation.crowd.mturk import MTurkGateway, gateway_default
from annotation.models import Assignment, AssignmentState, Batch, HitStatus
from annotation.services.assignments import (
    assignment_claim_next,
    assignment_submit,
    worker_get_or_create,
)
from annotation.services.batches import batch_publish

SUBMIT_TO = "https://workersandbox.mturk.com"


def stubbed_mturk() -> tuple[Any, Stubber, MTurkGateway, list[float]]:
    client = boto3.client(
        "mturk", region_name="sandbox", aws_access_key_id="test", aws_secret_access_key="test"
    )
    stubber = Stubber(client)
    stubber.activate()
    sleeps: list[float] = []
    return client, stubber, MTurkGateway(client, sleep=sleeps.append), sleeps


def fake_id(prefix: str, n: int) -> str:
    return (prefix + str(n)).upper().ljust(30, "X")[:30]


class ServerDriver:
    """local and simulated: workers act through the services; nothing leaves the server."""

    def __init__(self, name: str) -> None:
        self.name = name

    def expect(self, operation: str, response: dict | None = None, params: Any = None) -> None:
        return None

    def publish(self, batch: Batch) -> Batch:
        return batch_publish(batch=batch)

    def take(self, batch: Batch, worker_name: str) -> Assignment | None:
        worker = worker_get_or_create(provider=self.name, external_id=worker_name)
        return assignment_claim_next(batch=batch, worker=worker)

    def submit(self, assignment: Assignment, answers: dict[str, str]) -> None:
        assignment_submit(assignment_id=assignment.pk, worker=assignment.worker, answers=answers)

    def done(self) -> None:
        return None


class MTurkDriver:
    """MTurk: every remote call checked by botocore's Stubber; workers arrive through the
    worker page with MTurk's query parameters, as MTurk's frame would send them."""

    name = "mturk"

    def __init__(self, client: Any) -> None:
        self.http = client
        _, self.stubber, self.gateway, self.sleeps = stubbed_mturk()
        self.provider = provider_for("mturk")
        self.provider.use_gateway(lambda: self.gateway)
        self.tokens: dict[int, str] = {}
        self.counter = 0

    def expect(self, operation: str, response: dict | None = None, params: Any = None) -> None:
        method = xform_name(operation)
        self.stubber.add_response(method, response or {}, params)

    def expect_error(self, operation: str, code: str, message: str, params: Any = None) -> None:
        method = xform_name(operation)
        self.stubber.add_client_error(
            method, service_error_code=code, service_message=message, expected_params=params
        )

    def expect_publish(self, batch: Batch, *, balance: str = "1000.00", pools: bool = True) -> None:
        self.expect("GetAccountBalance", {"AvailableBalance": balance})
        if pools:
            for n in range(2):
                self.expect(
                    "CreateQualificationType",
                    {
                        "QualificationType": {
                            "QualificationTypeId": fake_id("Q", batch.run_id * 10 + n)
                        }
                    },
                )
        self.expect("CreateHITType", {"HITTypeId": fake_id("T", batch.pk)})
        for hit in batch.hits.order_by("position"):
            self.expect(
                "CreateHITWithHITType",
                {"HIT": {"HITId": fake_id("H", hit.pk)}},
                {
                    "HITTypeId": fake_id("T", batch.pk),
                    "MaxAssignments": batch.assignments_per_hit,
                    "LifetimeInSeconds": batch.lifetime_seconds,
                    "Question": ANY,
                    "RequesterAnnotation": f"crowdvl-hit-{hit.pk}",
                    "UniqueRequestToken": f"crowdvl-hit-{hit.pk}",
                },
            )

    def publish(self, batch: Batch) -> Batch:
        self.expect_publish(batch)
        return batch_publish(batch=batch)

    def take(self, batch: Batch, worker_name: str) -> Assignment | None:
        # MTurk offers the worker a HIT with a free slot they have not done; we pick the same.
        for hit in batch.hits.filter(status=HitStatus.OPEN).order_by("position"):
            active = hit.assignments.exclude(
                state__in=[AssignmentState.REJECTED, AssignmentState.ABANDONED]
            )
            if (
                active.count() >= hit.capacity
                or hit.assignments.filter(worker__external_id=worker_name).exists()
            ):
                continue
            self.counter += 1
            remote = fake_id(f"A{worker_name}", self.counter)
            response = self.http.get(
                f"/mturk/hit/{hit.pk}/",
                {
                    "assignmentId": remote,
                    "hitId": hit.provider_hit_id,
                    "workerId": worker_name,
                    "turkSubmitTo": SUBMIT_TO,
                },
            )
            assert response.status_code == 200, response.content
            token = re.search(rb'name="token" value="([^"]+)"', response.content)
            assignment = Assignment.objects.get(provider_assignment_id=remote)
            self.tokens[assignment.pk] = token.group(1).decode()
            return assignment
        return None

    def submit(self, assignment: Assignment, answers: dict[str, str]) -> None:
        self.expect(
            "AssociateQualificationWithWorker",
            {},
            {
                "QualificationTypeId": ANY,
                "WorkerId": assignment.worker.external_id,
                "IntegerValue": 1,
                "SendNotification": False,
            },
        )
        response = self.http.post(
            f"/mturk/hit/{assignment.hit_id}/",
            {
                **answers,
                "assignmentId": assignment.provider_assignment_id,
                "turkSubmitTo": SUBMIT_TO,
                "token": self.tokens[assignment.pk],
            },
        )
        assert response.status_code == 200, response.content
        assert b"/mturk/externalSubmit" in response.content

    def done(self) -> None:
        self.provider.use_gateway(gateway_default)  # later tests get the real client factory
        self.stubber.assert_no_pending_responses()
