"""The panel's reads: a session's participant, their task page, a batch's figures and its
bonuses for the panel."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any

from django.db.models import Count, Q

from annotation.crowd.panel import options
from annotation.crowd.panel.models import Finish, Participant
from annotation.models import Assignment, AssignmentState, Batch, Bonus, Run, Worker
from annotation.selectors.counting import COUNTED_STATES
from annotation.selectors.work.drafts import draft_view
from annotation.selectors.work.invitations import consent_version, run_consent
from annotation.selectors.work.run_texts import run_instructions
from annotation.selectors.work.task_page import TaskPage
from annotation.spreadsheet import spreadsheet_cell


def panel_worker(*, batch: Batch, participant: str) -> Worker | None:
    """The worker the participant id names on the batch's panel, if they ever consented."""
    settings = options.settings_of(batch)
    return Worker.objects.filter(
        provider=options.PROVIDER, external_id=options.external_id(settings, participant)
    ).first()


def consented(*, run: Run, worker: Worker) -> bool:
    """Whether `worker` accepted the run's current information and consent text."""
    return Participant.objects.filter(
        run=run, worker=worker, consent_version=run_consent(run)["version"]
    ).exists()


def panel_task_page(*, assignment_id: int, worker_id: int) -> TaskPage | None:
    """`worker_id`'s assignment of a panel batch, with their answers in progress, if they
    consented to its run's current text; else None (two queries)."""
    row = (
        Assignment.objects.filter(
            pk=assignment_id,
            worker_id=worker_id,
            worker__provider=options.PROVIDER,
            hit__batch__provider=options.PROVIDER,
        )
        .values_list(
            "pk",
            "state",
            "worker_id",
            "hit_id",
            "hit__batch_id",
            "hit__batch__stage",
            "hit__batch__run_id",
            "hit__batch__run__config",
            "draft__answers",
            "draft__updated_at",
        )
        .first()
    )
    if row is None:
        return None
    pk, state, worker, hit, batch, stage, run, config, *draft = row
    if not Participant.objects.filter(
        run_id=run, worker_id=worker, consent_version=consent_version(config or {})
    ).exists():
        return None
    instructions = run_instructions(config, stage)
    return TaskPage(pk, state, worker, hit, batch, stage, instructions, draft_view(*draft))


def submitted_count(*, batch: Batch, worker: Worker) -> int:
    """How many of `batch`'s tasks the participant submitted (confirmed or not)."""
    return Assignment.objects.filter(
        hit__batch=batch, worker=worker, state__in=COUNTED_STATES
    ).count()


@dataclass(frozen=True)
class PanelFigures:
    participants: int  # with a claim in the batch
    waiting: int  # submitted, waiting for the panel's confirmation
    confirmed: int
    released: int  # rejected: not on the panel's final list
    finished: dict[str, int]  # participants per outcome shown


def panel_figures(*, batch: Batch) -> PanelFigures:
    work = Assignment.objects.filter(hit__batch=batch).aggregate(
        n_participants=Count("worker", distinct=True),
        n_waiting=Count("pk", filter=Q(confirmed=False, state__in=COUNTED_STATES)),
        n_confirmed=Count("pk", filter=Q(confirmed=True, state__in=COUNTED_STATES)),
        n_released=Count("pk", filter=Q(confirmed=False, state=AssignmentState.REJECTED)),
    )
    finished = (
        Finish.objects.filter(batch=batch)
        .values("outcome")
        .annotate(n=Count("worker", distinct=True))
    )
    return PanelFigures(
        participants=work["n_participants"],
        waiting=work["n_waiting"],
        confirmed=work["n_confirmed"],
        released=work["n_released"],
        finished={str(row["outcome"]): row["n"] for row in finished},
    )


def bonus_rows(*, batch: Batch) -> list[dict[str, Any]]:
    """The batch's bonuses, for the panel to pay (it has no API): participant id as the panel
    spells it, amount, reason; oldest first."""
    settings = options.settings_of(batch)
    bonuses = (
        Bonus.objects.filter(assignment__hit__batch=batch, sent_at__isnull=False)
        .select_related("assignment__worker")
        .order_by("created_at", "pk")
    )
    return [
        {
            "participant_id": options.participant_of(settings, b.assignment.worker.external_id),
            "amount": f"{b.amount:.2f}",
            "reason": b.reason,
        }
        for b in bonuses
    ]


def bonus_csv(*, batch: Batch) -> str:
    """`bonus_rows` as CSV: participant_id, amount, reason. The researcher opens it in a
    spreadsheet: no text cell may start a formula. A participant id cannot (the study link
    refuses one not starting with a letter or digit), but a worker row is kept for ever and
    the check may change, so the id is guarded too; a guarded id is no id of the panel's."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["participant_id", "amount", "reason"])
    for row in bonus_rows(batch=batch):
        writer.writerow(
            [
                spreadsheet_cell(row["participant_id"]),
                row["amount"],
                spreadsheet_cell(row["reason"]),
            ]
        )
    return out.getvalue()
