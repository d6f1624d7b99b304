"""A dry run at Prolific before anything is spent: the draft batch's study is created (as
publishing would, once) and Prolific's test study is made from it (`POST
studies/<id>/test-study`: a copy published to the workspace's test participants only, who
cannot cash out). A test participant follows the real link, consent and Prolific's session
check, sees the batch's first task as a preview (nothing is stored, no HIT is claimed) and
leaves through the real completion code. It checks the round trip, not the pay: the test
participants are the lab's own accounts, so their times are not a crowd's, and a full study
still needs a pilot of real participants (`spend.pilot_check`)."""

from __future__ import annotations

from dataclasses import dataclass

from annotation.crowd.prolific.client import ProlificClient
from annotation.crowd.prolific.groups import study_group_filters
from annotation.crowd.prolific.studies import filters, internal_name, study_create_once, study_url
from annotation.errors import ServiceError
from annotation.models import Batch, BatchStatus, EventAction, RemoteCall, RemoteCallState
from annotation.services.events import event_record
from annotation.services.jobs.remote_calls import remote_call_once

PROVIDER = "prolific"
OPERATION = "study.test"


@dataclass(frozen=True)
class ProlificTestStudy:
    study_id: str
    url: str


def _key(batch: Batch) -> str:
    return f"prolific|test-study|{internal_name(batch)}"


def prolific_test_study_of(batch: Batch) -> ProlificTestStudy | None:
    """The batch's test study, if one was made."""
    row = RemoteCall.objects.filter(key=_key(batch), state=RemoteCallState.DONE).first()
    if row is None:
        return None
    return ProlificTestStudy(study_id=row.remote_id, url=str(row.data.get("url", "")))


def prolific_test_study(*, batch: Batch, client: ProlificClient) -> ProlificTestStudy:
    """The draft batch's test study at Prolific, made once (a test study costs nothing, so a
    lost answer is not looked up: the next attempt makes another)."""
    if batch.provider != PROVIDER:
        raise ServiceError(f"batch {batch.pk} uses the {batch.provider!r} provider, not prolific")
    if batch.status != BatchStatus.DRAFT:
        raise ServiceError(f"batch {batch.pk} is {batch.status}: only a draft can be tested")
    found = prolific_test_study_of(batch)
    if found is not None:
        return found
    study_url(batch)
    filters(batch, client=client)
    extra = study_group_filters(batch=batch, client=client)
    draft = study_create_once(batch=batch, client=client, extra_filters=extra)
    made: dict[str, str] = {}

    def send() -> str:
        try:
            body = client.call("POST", f"studies/{draft}/test-study", json={})
        except ServiceError as exc:
            only = (
                f"{exc}: Prolific makes test studies only where the workspace has the feature "
                "and at least one test participant"
            )
            raise ServiceError(
                f"{only} (manage.py prolific_test_participant <email>); otherwise pilot with a "
                "small real study (--limit)",
                page=f"{only} (add one on this page); otherwise pilot with a small real study "
                '("At most this many items" on the new-batch form)',
            ) from exc
        made["url"] = str(body.get("study_url", ""))
        return str(body["study_id"])

    study_id = remote_call_once(
        provider=PROVIDER,
        operation=OPERATION,
        key=_key(batch),
        send=send,
        look_up=lambda: None,
        data={"batch": batch.pk, "draft": draft},
    )
    RemoteCall.objects.filter(key=_key(batch)).update(
        data={"batch": batch.pk, "draft": draft, "url": made.get("url", "")}
    )
    event_record(
        action=EventAction.PROLIFIC_TEST_STUDY_CREATED,
        run=batch.run,
        batch=batch,
        data={"draft": draft, "test_study": study_id},
    )
    return ProlificTestStudy(study_id=study_id, url=made.get("url", ""))


def prolific_test_participant_create(*, email: str, client: ProlificClient) -> str:
    """A test participant of the researcher's workspaces (`POST researchers/participants/`;
    the email must not be registered at Prolific). Not repeated after a lost answer: Prolific
    refuses the same email twice, so the error says it exists."""
    body = client.call("POST", "researchers/participants/", json={"email": email})
    return str(body["participant_id"])
