"""One Prolific study per batch: its body (places = HITs x assignments per HIT, reward in minor
units, times from the batch, completion codes with their actions, filters from the batch's
requirements), creating it once across crashes and lost answers (`remote_calls`: the intent is
recorded first; a second attempt looks the study up by its internal name), publishing it, and
raising its places."""

from __future__ import annotations

import hashlib
import hmac
import math
from typing import Any

from django.conf import settings
from django.urls import reverse
from django.utils import timezone

from annotation.crowd.prolific.client import COMPLETE_URL, ProlificClient, ProlificUnclear
from annotation.crowd.prolific.fees import minor_units
from annotation.crowd.prolific.filters import batch_filters, vocabulary
from annotation.crowd.prolific.pay import declared_pay
from annotation.errors import ServiceError
from annotation.models import Batch, EventAction, Hit
from annotation.selectors.installation import installation_id
from annotation.services.events import event_record
from annotation.services.jobs.jobs import Progress
from annotation.services.jobs.remote_calls import remote_call_once
from pipeline.errors import InputError

PROVIDER = "prolific"
# The outcomes a participant leaves with, each a completion code with its actions.
COMPLETED, NO_WORK, NO_CONSENT = "completed", "no_work", "no_consent"
CODE_TYPES = {COMPLETED: "COMPLETED", NO_WORK: "OTHER", NO_CONSENT: "NO_CONSENT"}
RETURN_REASONS = {
    NO_WORK: "No task was left for you in this study; please return it.",
    NO_CONSENT: "You did not consent to take part; please return the study.",
}


def internal_name(batch: Batch) -> str:
    """The study's internal name: this installation and batch (what a retry looks for)."""
    return f"crowdvl-{installation_id()}-batch-{batch.pk}"


def completion_code(batch: Batch, outcome: str) -> str:
    """The code of an outcome: derived from the server's secret, so it is stable across
    retries and cannot be guessed from the batch's id."""
    key = settings.SECRET_KEY.encode()
    digest = hmac.new(key, f"prolific|{batch.pk}|{outcome}".encode(), hashlib.sha256)
    return "C" + digest.hexdigest()[:7].upper()


def completion_url(batch: Batch, outcome: str) -> str:
    return COMPLETE_URL + completion_code(batch, outcome)


def study_url(batch: Batch) -> str:
    root = settings.CROWDVL_PUBLIC_URL.rstrip("/")
    if not root.startswith("https://"):
        raise InputError(
            f"CROWDVL_PUBLIC_URL must be an HTTPS address Prolific sends participants to, got "
            f"{root!r}",
            field="CROWDVL_PUBLIC_URL",
        )
    path = reverse("prolific-start", args=[batch.pk])
    return (
        f"{root}{path}?PROLIFIC_PID={{{{%PROLIFIC_PID%}}}}&STUDY_ID={{{{%STUDY_ID%}}}}"
        f"&SESSION_ID={{{{%SESSION_ID%}}}}"
    )


def places(batch: Batch) -> int:
    """Every slot of the batch's HITs: HITs x assignments per HIT, plus what was added."""
    return sum(hit.capacity for hit in batch.hits.all())


def filters(batch: Batch, *, client: ProlificClient) -> list[dict[str, Any]]:
    """The batch's worker requirements as Prolific filters, resolved in Prolific's filter list
    (`filters.py`: choice ids, not names; InputError for what it lacks); the pools and the
    project block are added by `groups.study_group_filters`."""
    return batch_filters(batch, vocabulary(client))


def study_body(
    batch: Batch, *, client: ProlificClient, extra_filters: list[dict[str, Any]]
) -> dict[str, Any]:
    """The study as POST /studies/ takes it."""
    # The time and reward checked before publishing are the ones sent (`pay.declared_pay`).
    minutes = declared_pay(batch).minutes
    # Prolific's floor for the maximum time: 2 + 2 x estimate + 2 x sqrt(estimate) minutes.
    floor = math.ceil(2 + 2 * minutes + 2 * math.sqrt(minutes))
    codes: list[dict[str, Any]] = [
        {
            "code": completion_code(batch, COMPLETED),
            "code_type": CODE_TYPES[COMPLETED],
            "actions": [{"action": "MANUALLY_REVIEW"}],
        }
    ]
    for outcome in (NO_WORK, NO_CONSENT):
        codes.append(
            {
                "code": completion_code(batch, outcome),
                "code_type": CODE_TYPES[outcome],
                "actions": [{"action": "REQUEST_RETURN", "return_reason": RETURN_REASONS[outcome]}],
            }
        )
    body: dict[str, Any] = {
        "name": batch.title[:120],
        "internal_name": internal_name(batch),
        "description": batch.description or batch.title,
        "external_study_url": study_url(batch),
        "prolific_id_option": "url_parameters",
        "completion_codes": codes,
        "total_available_places": places(batch),
        "estimated_completion_time": minutes,
        "maximum_allowed_time": max(floor, math.ceil(batch.assignment_duration_seconds / 60)),
        "reward": minor_units(batch.reward),
        "device_compatibility": ["desktop"] if batch.options.get("large_screen", True) else [],
        "peripheral_requirements": [],
        "filters": filters(batch, client=client) + extra_filters,
        "submissions_config": {"max_submissions_per_participant": 1},
        "study_labels": ["annotation"],
    }
    if settings.CROWDVL_PROLIFIC_PROJECT:
        body["project"] = settings.CROWDVL_PROLIFIC_PROJECT
    return body


def study_look_up(*, batch: Batch, client: ProlificClient) -> str | None:
    """The id of the batch's study at Prolific, found by its internal name on every page of the
    workspace's studies; None when there is none."""
    name = internal_name(batch)
    for study in client.pages("studies/"):
        if study.get("internal_name") == name:
            return str(study["id"])
    return None


def study_create_once(
    *, batch: Batch, client: ProlificClient, extra_filters: list[dict[str, Any]]
) -> str:
    """The batch's study id: created once. The intent is recorded before the call; a second
    attempt, or a lost answer, looks the study up by its internal name instead of creating
    another."""
    if batch.provider_hit_type_id:
        return batch.provider_hit_type_id
    name = internal_name(batch)
    body = study_body(batch, client=client, extra_filters=extra_filters)
    event_record(
        action=EventAction.PROLIFIC_STUDY_CREATE_REQUESTED,
        run=batch.run,
        batch=batch,
        data={"internal_name": name, "places": body["total_available_places"]},
    )
    study_id = remote_call_once(
        provider=PROVIDER,
        operation="study.create",
        key=f"prolific|study|{name}",
        send=lambda: str(client.call("POST", "studies/", json=body)["id"]),
        look_up=lambda: study_look_up(batch=batch, client=client),
        data={"batch": batch.pk, "internal_name": name},
    )
    Batch.objects.filter(pk=batch.pk).update(provider_hit_type_id=study_id)
    batch.provider_hit_type_id = study_id
    return study_id


# A study's transitions and the status each leads to (the reference's study statuses).
TRANSITIONS = {"PUBLISH": "ACTIVE", "PAUSE": "PAUSED", "START": "ACTIVE", "STOP": "COMPLETED"}


def study_transition(
    *, batch: Batch, client: ProlificClient, when: tuple[str, ...], action: str
) -> None:
    """Move the batch's study by `action` if it is in one of the statuses `when` (otherwise it
    was done already: nothing is sent). After a lost answer the study is read again: the
    transition is done when the study shows its status, else the error stands."""
    study_id = study_of(batch)
    study = client.call("GET", f"studies/{study_id}/")
    if study.get("status") not in when:
        return
    try:
        client.call("POST", f"studies/{study_id}/transition/", json={"action": action})
    except ProlificUnclear:
        now = client.call("GET", f"studies/{study_id}/").get("status")
        if now != TRANSITIONS[action]:
            raise


def study_publish(
    *, batch: Batch, client: ProlificClient, progress: Progress | None = None
) -> None:
    """Publish the study (a draft: PUBLISH; already live: nothing) and mark its HITs as offered."""
    study_id = batch.provider_hit_type_id
    study_transition(batch=batch, client=client, when=("UNPUBLISHED",), action="PUBLISH")
    hits_mark_offered(batch=batch)
    if progress:
        progress(100.0, f"study {study_id} published with {places(batch)} places")


def hits_mark_offered(*, batch: Batch) -> int:
    """Each HIT of the batch carries the study's id once its places are in the study."""
    todo = list(batch.hits.filter(provider_hit_id="").values_list("pk", flat=True))
    now = timezone.now()
    for pk in todo:
        Hit.objects.filter(pk=pk).update(
            provider_hit_id=f"{batch.provider_hit_type_id}/{pk}", create_attempted_at=now
        )
    return len(todo)


def study_places_raise(*, batch: Batch, client: ProlificClient, extra: int = 0) -> int:
    """Raise the study's places to every slot of the batch plus `extra` (an absolute target,
    so a retry raises nothing twice; Prolific only ever raises places)."""
    target = places(batch) + extra
    study = client.call("GET", f"studies/{batch.provider_hit_type_id}/")
    current = int(study.get("total_available_places", 0))
    if target > current:
        try:
            client.call(
                "PATCH",
                f"studies/{batch.provider_hit_type_id}/",
                json={"total_available_places": target},
            )
        except ProlificUnclear:  # read again: the target reached is the answer
            study = client.call("GET", f"studies/{batch.provider_hit_type_id}/")
            if int(study.get("total_available_places", 0)) < target:
                raise
    return max(target, current)


def study_of(batch: Batch) -> str:
    if not batch.provider_hit_type_id:
        raise ServiceError(f"batch {batch.pk} has no Prolific study yet: publish it first")
    return batch.provider_hit_type_id
