"""Confirming a panel batch's work from the panel's CSV of approved participants: the file is
read whole and checked first (a bad line names the file, the line and the field), then every
listed participant's waiting work is confirmed through `assignment_confirm` in one
transaction (so capacity and pool rules apply), and what was not found is reported."""

from __future__ import annotations

import csv
import io
import re
from dataclasses import dataclass, field

from django.db import transaction

from annotation.crowd.panel import options
from annotation.crowd.panel.services import panel_batch_check
from annotation.errors import ServiceError
from annotation.models import Assignment, AssignmentState, Batch
from annotation.selectors.counting import COUNTED_STATES
from annotation.services.confirm import assignment_confirm
from annotation.services.decisions import assignment_mark
from annotation.services.events import event_record
from pipeline.errors import InputError

MAX_BYTES = 5 * 1024 * 1024
MAX_ROWS = 100_000
# Column names panels give their participant ids (compared without case, spaces or marks);
# the batch's own id parameter is recognised too.
ID_COLUMNS = {
    "participantid",
    "participant",
    "id",
    "pid",
    "workerid",
    "prolificpid",
    "surveycode",
    "connectid",
    "userid",
}
STATUS_COLUMNS = {"status", "approvalstatus", "submissionstatus"}
# A status column, where the file has one, must say the row was approved.
APPROVED = {
    "approved",
    "complete",
    "completed",
    "awarded",
    "granted",
    "credited",
    "paid",
    "accepted",
}


class PanelFileError(InputError):
    """A bad line of an uploaded panel file, named by file, line and field."""

    def __init__(self, message: str, *, file: str, line: int, field: str) -> None:
        super().__init__(message, file=file, record=line, field=field)

    def __str__(self) -> str:
        return f"{self.file}, line {self.record}, field '{self.field}': {self.message}"


def _name(cell: str) -> str:
    return re.sub(r"[^a-z0-9]", "", cell.casefold())


@dataclass
class ApprovedList:
    ids: list[str]  # distinct, in the file's order
    not_approved: list[str] = field(default_factory=list)  # rows whose status says otherwise


def approved_ids(data: bytes, *, file: str, id_param: str) -> ApprovedList:
    """The participant ids a panel's CSV lists: a header naming the id column (participant_id,
    id, the batch's id parameter, ...; other columns ignored, a status column must say
    approved), or a bare list of ids, one per line. InputError on anything else."""
    if len(data) > MAX_BYTES:
        raise InputError(f"is larger than {MAX_BYTES // (1024 * 1024)} MB", file=file)
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PanelFileError(
            "is not UTF-8 text (save the panel's list as CSV UTF-8)",
            file=file,
            line=data[: exc.start].count(b"\n") + 1,
            field="(encoding)",
        ) from None
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    ids: dict[str, None] = {}
    not_approved: dict[str, None] = {}
    column: int | None = None
    status: int | None = None
    label = "participant id"
    try:
        for row in reader:
            line = reader.line_num
            if line > MAX_ROWS:
                raise InputError(f"has more than {MAX_ROWS} lines", file=file)
            if not any(cell.strip() for cell in row):
                continue
            if "\x00" in "".join(row):
                raise PanelFileError("holds a NUL character", file=file, line=line, field="(csv)")
            if column is None:  # the first line: a header, or the first id of a bare list
                names = [_name(cell) for cell in row]
                wanted = ID_COLUMNS | {_name(id_param)}
                found = [i for i, n in enumerate(names) if n in wanted]
                if found:
                    column, label = found[0], row[found[0]].strip()
                    statuses = [i for i, n in enumerate(names) if n in STATUS_COLUMNS]
                    status = statuses[0] if statuses else None
                    continue
                if len(row) == 1 and options.participant_id_check(row[0]):
                    column = 0
                else:
                    raise PanelFileError(
                        "no participant id column: the first line names it (participant_id, "
                        f"id or {id_param}), or every line holds one id",
                        file=file,
                        line=line,
                        field="header",
                    )
            value = row[column].strip() if column < len(row) else ""
            if not value:
                raise PanelFileError("no participant id", file=file, line=line, field=label)
            if not options.participant_id_check(value):
                raise PanelFileError(
                    f"{value[:40]!r} is not a participant id (letters, digits and . _ @ + -, "
                    "at most 64)",
                    file=file,
                    line=line,
                    field=label,
                )
            if status is not None:
                said = row[status].strip() if status < len(row) else ""
                if said.casefold() not in APPROVED:
                    not_approved[value] = None
                    continue
            ids[value] = None
    except csv.Error as exc:
        raise PanelFileError(
            f"malformed CSV: {exc}", file=file, line=reader.line_num, field="(csv)"
        ) from None
    if column is None:
        raise PanelFileError(
            "is empty: expected a header such as participant_id and one approved id per line",
            file=file,
            line=1,
            field="header",
        )
    return ApprovedList(ids=list(ids), not_approved=[i for i in not_approved if i not in ids])


@dataclass
class ConfirmReport:
    """What an upload did: counts of assignments, and the ids it could not use."""

    file: str
    listed: int = 0  # distinct approved ids in the file
    confirmed: int = 0  # assignments confirmed now
    participants: int = 0  # listed participants with work confirmed now
    already: int = 0  # assignments confirmed by an earlier upload
    not_found: list[str] = field(default_factory=list)  # listed, no submitted work here
    not_approved: list[str] = field(default_factory=list)  # the file's status says otherwise
    refused: list[dict[str, object]] = field(default_factory=list)  # the rules said no
    released: int = 0  # waiting work of participants not listed, released

    def describe(self) -> str:
        parts = [
            f"{self.file}: {self.listed} approved id(s); {self.confirmed} assignment(s) of "
            f"{self.participants} participant(s) confirmed",
        ]
        if self.already:
            parts.append(f"{self.already} confirmed before")
        if self.not_found:
            parts.append(
                f"{len(self.not_found)} id(s) with no submitted work in this batch: "
                + ", ".join(self.not_found[:20])
                + (" ..." if len(self.not_found) > 20 else "")
            )
        if self.not_approved:
            parts.append(f"{len(self.not_approved)} row(s) whose status is not approved skipped")
        for row in self.refused:
            parts.append(f"{row['participant']} (assignment {row['assignment']}): {row['reason']}")
        if self.released:
            parts.append(
                f"{self.released} waiting assignment(s) of participants not listed released"
            )
        return "; ".join(parts)


def panel_confirm(
    *, batch: Batch, data: bytes, file: str, release_unlisted: bool = False
) -> ConfirmReport:
    """Confirm the waiting work of every participant the panel's CSV `data` lists as approved
    (`assignment_confirm`: capacity, one assignment per HIT and worker, pools). The file is
    checked whole first, and everything is written in one transaction. Work the rules refuse
    stays unconfirmed and is reported. With `release_unlisted` (the file is the panel's
    final list), waiting work of participants it does not list is rejected: it never
    counts, and its HITs take someone else."""
    panel_batch_check(batch)
    settings = options.settings_of(batch)
    approved = approved_ids(data, file=file, id_param=settings["id_param"])
    keys = {options.external_id(settings, pid): pid for pid in approved.ids}
    report = ConfirmReport(file=file, listed=len(approved.ids), not_approved=approved.not_approved)
    confirmed_of: set[str] = set()
    found: set[str] = set()
    with transaction.atomic():
        Batch.objects.select_for_update().filter(pk=batch.pk).first()  # one upload at a time
        work = (
            Assignment.objects.filter(
                hit__batch=batch,
                worker__provider=options.PROVIDER,
                worker__external_id__in=list(keys),
                state__in=COUNTED_STATES,
            )
            .select_related("worker")
            .order_by("pk")
        )
        for assignment in work:
            participant = keys[assignment.worker.external_id]
            found.add(participant)
            if assignment.confirmed:
                report.already += 1
                continue
            try:
                assignment_confirm(assignment=assignment, source=f"panel file {file}")
            except ServiceError as exc:
                report.refused.append(
                    {"participant": participant, "assignment": assignment.pk, "reason": str(exc)}
                )
            else:
                report.confirmed += 1
                confirmed_of.add(participant)
        report.participants = len(confirmed_of)
        report.not_found = [pid for pid in approved.ids if pid not in found]
        if release_unlisted:
            waiting = (
                Assignment.objects.filter(
                    hit__batch=batch, confirmed=False, state__in=COUNTED_STATES
                )
                .exclude(worker__external_id__in=list(keys))
                .select_related("hit__batch__run", "worker")
                .order_by("pk")
            )
            for assignment in waiting:
                assignment_mark(
                    assignment=assignment,
                    state=AssignmentState.REJECTED,
                    source="panel",
                    feedback="not in the panel's list of approved participants",
                    file=file,
                )
                report.released += 1
        event_record(
            action="panel.confirmed",
            run=batch.run,
            batch=batch,
            data={
                "file": file,
                "listed": report.listed,
                "confirmed": report.confirmed,
                "already": report.already,
                "not_found": len(report.not_found),
                "not_approved": len(report.not_approved),
                "refused": len(report.refused),
                "released": report.released,
            },
        )
    return report
