"""The Prolific provider: one study per batch; participants arrive on this server, are checked
at Prolific, claim a HIT by the core's rule and leave through the completion URL; statuses come
back by polling and webhooks. Platform calls go through `client.py`; this package's services
keep the database in step."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from django.urls import reverse
from django.utils import timezone

from annotation.crowd.prolific.client import (
    ID_LENGTH,
    REJECTION_CATEGORIES,
    REJECTION_MESSAGE_MIN,
    ProlificClient,
    client_default,
)
from annotation.crowd.prolific.fees import estimate_cost, prolific_fee
from annotation.errors import Refused, ServiceError
from annotation.models import Assignment, Batch, BatchStatus, Hit, Worker
from annotation.providers.base import CostEstimate, CrowdProvider, IdShapes, LaunchNote
from annotation.services.jobs.remote_calls import NO_OBJECT, remote_call_once
from pipeline.errors import InputError

if TYPE_CHECKING:
    from annotation.models import Job
    from annotation.providers.base import Progress

PROVIDER = "prolific"


def rejection_parts(feedback: str) -> tuple[str, str]:
    """A rejection's category and message: "CATEGORY: message" or the message alone (category
    OTHER); Prolific wants a documented category and at least 100 characters."""
    head, sep, rest = feedback.partition(":")
    category, message = (head.strip().upper(), rest.strip()) if sep else ("OTHER", feedback)
    if category not in REJECTION_CATEGORIES:
        category, message = "OTHER", feedback.strip()
    if len(message) < REJECTION_MESSAGE_MIN:
        raise InputError(
            f"Prolific needs a rejection message of at least {REJECTION_MESSAGE_MIN} characters "
            f"(this one has {len(message)}), optionally after a category "
            f"({', '.join(REJECTION_CATEGORIES)}) and a colon",
            field="feedback",
        )
    return category, message


class ProlificProvider(CrowdProvider):
    """Prolific (api.prolific.com, `CROWDVL_PROLIFIC_*` settings)."""

    name = PROVIDER
    label = "Prolific"
    remote = True
    # A participant's claim holds its HIT, but the work counts only once synchronisation sees
    # their submission completed at Prolific (AWAITING REVIEW or APPROVED).
    claims_unconfirmed = True
    case_sensitive_ids = True
    takes_qualifications = True
    charges_fees = True
    # Prolific documents no way back from a rejection.
    reversal_window = timedelta(0)
    # Prolific's ids (participants, submissions, studies, groups, workspaces) are 24
    # hexadecimal characters; a HIT is "<study id>/<HIT pk>" (`studies.hits_mark_offered`).
    id_shapes = IdShapes(
        worker=ID_LENGTH,
        assignment=ID_LENGTH,
        hit=ID_LENGTH + 1 + 19,
        hit_type=ID_LENGTH,
        qualification=ID_LENGTH,
        environment=ID_LENGTH,
        reference="docs.prolific.com/api-reference (every example id)",
    )
    # Prolific has no account-wide block: a participant group every study excludes.
    block_scopes = ("project",)
    rejection_categories = REJECTION_CATEGORIES
    staff_pages = (("prolific-reconcile", "Prolific money"),)
    rejection_min_length = REJECTION_MESSAGE_MIN
    urls = "annotation.crowd.prolific.urls"
    api_urls = "annotation.crowd.prolific.api_urls"

    def __init__(self) -> None:
        self._client_factory: Callable[[], ProlificClient] = client_default

    # Tests mount the stand-in (`tests/annotation/crowd/prolific/standin.py`) through this.
    def use_client(self, factory: Callable[[], ProlificClient]) -> None:
        self._client_factory = factory

    @property
    def client(self) -> ProlificClient:
        return self._client_factory()

    # --- money ------------------------------------------------------------------------------

    def estimate(self, *, hits: int, assignments_per_hit: int, reward: Decimal) -> CostEstimate:
        return estimate_cost(hits=hits, assignments_per_hit=assignments_per_hit, reward=reward)

    def slot_cost(self, *, batch: Batch) -> Decimal:
        return batch.reward + prolific_fee(batch.reward)

    def bonus_cost(self, *, amount: Decimal) -> Decimal:
        return amount + prolific_fee(amount)

    def spend_refusal(self, *, amount: Decimal, what: str) -> str | None:
        from annotation.services.money.spend import daily_cap_reason

        return daily_cap_reason(amount=amount, what=what)

    def committed_since(self, *, since: datetime) -> Decimal:
        from annotation.services.money.spend import platform_committed_since

        return platform_committed_since(provider=self, since=since)

    def publish_check(self, *, batch: Batch) -> CostEstimate:
        from annotation.crowd.prolific.spend import prolific_cost_check, prolific_refusals

        try:
            client: ProlificClient | None = self.client
        except InputError as exc:  # no token: said with every other refusal
            reasons, _ = prolific_refusals(batch=batch, client=None)
            raise Refused([str(exc), *reasons]) from None
        return prolific_cost_check(batch=batch, client=client)

    # --- publishing and synchronisation -----------------------------------------------------

    def publish_start(self, *, batch: Batch) -> Job:
        from annotation.crowd.prolific.publish import prolific_publish_start

        return prolific_publish_start(batch=batch, provider=self)

    def publish_remote(self, *, batch: Batch, progress: Progress | None = None) -> None:
        from annotation.crowd.prolific.publish import prolific_publish_study

        prolific_publish_study(batch=batch, client=self.client, progress=progress)

    def pause(self, *, batch: Batch) -> None:
        """The study's PAUSE: hidden from participants; those who started may finish."""
        self._transition(batch, "ACTIVE", "PAUSE")

    def resume(self, *, batch: Batch) -> None:
        self._transition(batch, "PAUSED", "START")

    def _transition(self, batch: Batch, when: str, action: str) -> None:
        from annotation.crowd.prolific.studies import study_transition

        if batch.provider_hit_type_id:
            study_transition(batch=batch, client=self.client, when=(when,), action=action)

    def sync(self, *, batch: Batch) -> int:
        from annotation.crowd.prolific.publish import prolific_sync_one

        return prolific_sync_one(batch=batch, client=self.client).changed

    def sync_open(self) -> None:
        from annotation.crowd.prolific.publish import prolific_sync_open

        prolific_sync_open(provider=self)

    def declared_seconds(self, *, seconds: float) -> float:
        from annotation.crowd.prolific.pay import declared_minutes

        return 60.0 * declared_minutes(seconds)

    def requirements(self, *, batch: Batch) -> list[str]:
        from annotation.crowd.prolific.fees import PROLIFIC_MINIMUM_HOURLY, currency
        from annotation.crowd.prolific.filters import requirements_described
        from annotation.selectors.money.pay import pay_estimate

        # Titles and choice labels from Prolific's filter list (the batch's own settings with
        # a note when it cannot be read: this never raises).
        lines = requirements_described(batch=batch, client=lambda: self.client)
        if batch.options.get("large_screen", True):
            lines.append("desktop only (the task needs a large screen)")
        pay = pay_estimate(batch=batch)
        lines.append(
            f"Prolific computes the hourly rate from the median completion time; at the "
            f"expected {pay.seconds_per_hit / 60:.1f} min it is {currency()} {pay.hourly}/h "
            f"(Prolific's minimum {currency()} {PROLIFIC_MINIMUM_HOURLY[currency()]}/h)"
        )
        lines.append("participants in another stage's pool of this run, or blocked, are excluded")
        return lines

    def launch_notes(self, *, batch: Batch, base: str) -> list[LaunchNote]:
        """The pay as Prolific will compute it (declared time, its rates) and, once published,
        the page of the pay at the median time and its adjustment."""
        from annotation.crowd.prolific.pay import declared_pay
        from annotation.crowd.prolific.return_rate import return_rate_notes
        from annotation.crowd.prolific.spend import reward_advice

        declared = declared_pay(batch)
        try:
            client: ProlificClient | None = self.client
        except InputError:
            client = None
        advice = reward_advice(client)
        at_recommended = (advice.recommended * declared.minutes / 60).quantize(Decimal("0.01"))
        notes = [
            LaunchNote(
                label="Pay at Prolific",
                text=(
                    f"{declared.describe()}; Prolific's minimum {advice.minimum}/h and "
                    f"recommended {advice.recommended}/h ({advice.source}): a reward of "
                    f"{at_recommended} pays the recommended rate at {declared.minutes} min"
                ),
            )
        ]
        if batch.status == BatchStatus.DRAFT:
            notes.append(
                LaunchNote(
                    label="Test study",
                    text="try the round trip with your test participants before spending",
                    link=reverse("prolific-test", args=[batch.pk]),
                )
            )
        else:
            notes.append(
                LaunchNote(
                    label="Pay at the median time",
                    text="Prolific judges the pay on the median completion time",
                    link=reverse("prolific-pay", args=[batch.pk]),
                )
            )
        return [*return_rate_notes(batch=batch), *notes]  # Prolific's warning first

    def launch_hint(self, *, batch: Batch) -> str:
        return (
            f"publish it to create its Prolific study: manage.py prolific_publish {batch.pk} "
            "(or the batch page's Publish); participants arrive from Prolific"
        )

    # --- platform calls ---------------------------------------------------------------------

    def expire(self, *, batch: Batch) -> None:
        """Stop the study (Prolific: STOP; no new participants, started ones may finish)."""
        from annotation.crowd.prolific.studies import study_transition

        if batch.provider_hit_type_id:
            study_transition(
                batch=batch, client=self.client, when=("ACTIVE", "PAUSED"), action="STOP"
            )

    def extend(self, *, batch: Batch, seconds: int) -> None:
        """A study has no lifetime at Prolific: a paused one starts again; a stopped one
        reopens only with more places."""
        if not batch.provider_hit_type_id:
            return
        from annotation.crowd.prolific.studies import study_transition

        study_transition(batch=batch, client=self.client, when=("PAUSED",), action="START")
        study = self.client.call("GET", f"studies/{batch.provider_hit_type_id}/")
        if study.get("status") == "COMPLETED":
            raise ServiceError(
                "the Prolific study was stopped: it reopens only with more places (add assignments)"
            )

    def add_assignments(self, *, hit: Hit, count: int, token: str) -> None:
        """More places on the study: every slot of the batch plus these, as an absolute
        target (a retry adds nothing)."""
        from annotation.crowd.prolific.studies import study_places_raise

        if hit.batch.provider_hit_type_id:
            study_places_raise(batch=hit.batch, client=self.client, extra=count)

    def approve(self, *, assignment: Assignment) -> None:
        self.client.call(
            "POST",
            f"submissions/{assignment.provider_assignment_id}/transition/",
            json={"action": "APPROVE"},
            idempotent=True,  # the reference: the same transition again changes nothing
        )

    def reject(self, *, assignment: Assignment, feedback: str, redo: bool = True) -> bool:
        """Reject with a category and a message of Prolific's minimum length; Prolific frees
        the place itself, so the HIT takes another participant (True)."""
        category, message = rejection_parts(feedback)
        self.client.call(
            "POST",
            f"submissions/{assignment.provider_assignment_id}/transition/",
            json={"action": "REJECT", "rejection_category": category, "message": message},
            idempotent=True,
        )
        return True

    def approve_rejected(self, *, assignment: Assignment, feedback: str) -> None:
        raise ServiceError("Prolific documents no way to reverse a rejection: pay a bonus instead")

    def redo(self, *, assignment: Assignment) -> bool:
        """Counted work excluded here still holds its place at Prolific: one more place."""
        from annotation.crowd.prolific.studies import study_places_raise

        study_places_raise(batch=assignment.hit.batch, client=self.client, extra=1)
        return True

    def bonus(
        self,
        *,
        assignment: Assignment,
        amount: Decimal,
        reason: str,
        token: str,
        look_first: bool = False,
    ) -> None:
        from annotation.crowd.prolific.bonuses import prolific_bonus_send

        prolific_bonus_send(
            assignment=assignment, amount=amount, reason=reason, token=token, client=self.client
        )

    def block(self, *, worker: Worker, reason: str) -> None:
        raise ServiceError("Prolific has no account-wide block: block in this project instead")

    def unblock(self, *, worker: Worker, reason: str) -> None:
        return None

    def block_in_project(self, *, worker: Worker, reason: str) -> None:
        from annotation.crowd.prolific.groups import block_group_add

        block_group_add(worker=worker, client=self.client)

    def unblock_in_project(self, *, worker: Worker, reason: str) -> None:
        from annotation.crowd.prolific.groups import block_group_remove

        block_group_remove(worker=worker, client=self.client)

    def notify(self, *, workers: list[Worker], subject: str, message: str) -> None:
        """Prolific's messages need a study: each participant's latest one here."""
        by_study: dict[str, list[str]] = {}
        for worker in workers:
            latest = (
                Assignment.objects.filter(worker=worker)
                .exclude(hit__batch__provider_hit_type_id="")
                .order_by("-accepted_at")
                .values_list("hit__batch__provider_hit_type_id", flat=True)
                .first()
            )
            if latest is None:
                raise ServiceError(f"participant {worker.external_id} took no study here")
            by_study.setdefault(str(latest), []).append(worker.external_id)
        body = f"{subject}\n\n{message}"
        # Each send is recorded before it goes; a second attempt or a lost answer reads the
        # first recipient's messages of the last 30 days (the reference's limit) first.
        since = timezone.now() - timedelta(days=30)
        for study, ids in by_study.items():
            digest = hashlib.sha256("\n".join([study, body, *sorted(ids)]).encode()).hexdigest()

            def send(study: str = study, ids: list[str] = ids) -> str:
                payload = {"ids": ids, "study_id": study, "body": body}
                self.client.call("POST", "messages/bulk/", json=payload)
                return NO_OBJECT

            def seen(study: str = study, ids: list[str] = ids) -> str | None:
                found = self._message_seen(participant=ids[0], study=study, body=body, since=since)
                return NO_OBJECT if found else None

            remote_call_once(
                provider=PROVIDER,
                operation="message.send",
                key=f"prolific|message|{digest}",
                send=send,
                look_up=seen,
                data={"study": study, "recipients": len(ids)},
            )

    def _message_seen(self, *, participant: str, study: str, body: str, since: datetime) -> bool:
        listed = self.client.call(
            "GET",
            "messages/",
            params={"user_id": participant, "created_after": since.isoformat()},
        )
        return any(
            m.get("body") == body and (m.get("data") or {}).get("study_id") == study
            for m in (listed or {}).get("results", [])
        )

    def grant_pool(self, *, qualification_id: str, worker: Worker, **kwargs: Any) -> None:
        self.client.call(
            "POST",
            f"participant-groups/{qualification_id}/participants/",
            json={"participant_ids": [worker.external_id]},
            idempotent=True,  # the reference: existing members are ignored
        )


def prolific_provider() -> ProlificProvider:
    """The registered Prolific provider, with its type (the registry gives the base class)."""
    from annotation.providers import provider_for

    provider = provider_for("prolific")
    assert isinstance(provider, ProlificProvider)
    return provider
