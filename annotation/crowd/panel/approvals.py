"""Confirming a panel batch's work from the panel's CSV of approved participants: the file is
read whole and checked first (a bad line names the file, the line and the field), then every
listed participant's waiting work is confirmed through `assignment_confirm` in one
transaction (so capacity and pool rules apply), and what was not found is reported."""

from __future__ import annotations

import codecs
import csv
import io
import re
from dataclasses import dataclass, field

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction

from annotation.crowd.panel import options
from annotation.crowd.panel.services import panel_batch_check
from annotation.errors import ServiceError
from annotation.models import Assignment, AssignmentState, Batch, EventAction
from annotation.selectors.counting import COUNTED_STATES
from annotation.services.events import event_record
from annotation.services.work.confirm import assignment_confirm
from annotation.services.work.decisions import assignment_mark
from pipeline.errors import InputError

MAX_BYTES = 5 * 1024 * 1024
MAX_ROWS = 100_000
# Ids per query: far below the bound parameters PostgreSQL (65,535) and SQLite (32,766) take.
QUERY_CHUNK = 10_000
# No panel we found documents its export's columns: Connect's help says approvals can be
# uploaded as a CSV (connect-researcher-help.cloudresearch.com, "Manage Participants") but
# names no column; SONA's "Download Participant List" page names none either. So the id
# column is found by name (compared without case, spaces or marks), the most specific first
# (the batch's own id parameter before these): a bare "id" comes last, so a row number or a
# submission "ID" before "Participant ID" is never read as participant ids.
ID_COLUMNS = (
    "participantid",
    "prolificpid",
    "connectid",
    "surveycode",
    "workerid",
    "participant",
    "pid",
    "userid",
    "id",
)
STATUS_COLUMNS = {"status", "approvalstatus", "submissionstatus"}
# A status column, where the file has one, must say the row was approved. Connect's help
# names the states Approved, Rejected, Returned and Timed Out (and "pending"); Prolific's are
# APPROVED, AWAITING REVIEW, REJECTED, RETURNED, TIMED-OUT. Any other value is not approved.
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
# Between fields: Excel writes ';' where ',' is the decimal mark, and a tab in "Unicode text".
DELIMITERS = (",", ";", "\t")


class PanelFileError(InputError):
    """A bad line of an uploaded panel file, named by file, line and field."""

    def __init__(self, message: str, *, file: str, line: int, field: str) -> None:
        super().__init__(message, file=file, record=line, field=field)

    def __str__(self) -> str:
        return f"{self.file}, line {self.record}, field '{self.field}': {self.message}"


def upload_limit() -> int:
    """The largest panel file read, in bytes: MAX_BYTES, or CROWDVL_MAX_UPLOAD_MB where lower."""
    return min(MAX_BYTES, int(settings.CROWDVL_MAX_UPLOAD_MB) * 1024 * 1024)


def size_check(size: int, *, file: str, field: str) -> None:
    """Refuse a panel file of `size` bytes over `upload_limit`, before anything reads it."""
    limit = upload_limit()
    if size > limit:
        raise InputError(
            f"is larger than {limit // (1024 * 1024)} MB ({size:,} bytes; a panel's list is "
            f"at most {MAX_BYTES // (1024 * 1024)} MB, or CROWDVL_MAX_UPLOAD_MB where lower)",
            file=file,
            field=field,
        )


def upload_read(upload: UploadedFile, *, file: str) -> bytes:
    """An uploaded panel file's bytes, its size checked first (Django knows it before any read:
    a large upload waits in a temporary file)."""
    size_check(upload.size or 0, file=file, field="file")
    return upload.read(upload_limit() + 1)


def _name(cell: str) -> str:
    return re.sub(r"[^a-z0-9]", "", cell.casefold())


@dataclass
class ApprovedList:
    ids: list[str]  # distinct, in the file's order
    not_approved: list[str] = field(default_factory=list)  # rows whose status says otherwise


def _text(data: bytes, *, file: str) -> str:
    """The file's text: UTF-8 (with or without a BOM), or UTF-16 with its BOM (Excel's
    "Unicode text"). Other encodings are refused, not guessed."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        try:
            return data.decode("utf-16")
        except UnicodeDecodeError as exc:
            line = data[: exc.start].decode("utf-16", errors="replace").count("\n") + 1
            raise PanelFileError(
                "is not valid UTF-16 text (save the panel's list as CSV UTF-8)",
                file=file,
                line=line,
                field="(encoding)",
            ) from None
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise PanelFileError(
            f"byte 0x{data[exc.start]:02X} is not UTF-8 text (Excel's plain 'CSV' is "
            "Windows-1252: save the panel's list as 'CSV UTF-8')",
            file=file,
            line=data[: exc.start].count(b"\n") + 1,
            field="(encoding)",
        ) from None


def _delimiter(text: str) -> str:
    """The delimiter of the first non-blank line (outside quotes) that it holds most of:
    ',' (the default), ';' or a tab."""
    for line in text.splitlines():
        if line.strip():
            counts = dict.fromkeys(DELIMITERS, 0)
            quoted = False
            for char in line:
                if char == '"':
                    quoted = not quoted
                elif not quoted and char in counts:
                    counts[char] += 1
            best = max(DELIMITERS, key=lambda d: counts[d])  # ties: the first, ','
            return best if counts[best] else ","
    return ","


def _id_column(names: list[str], id_param: str) -> int | None:
    """The id column of a header: the most specific name (see ID_COLUMNS), the first of
    equals."""
    preference = [_name(id_param), *ID_COLUMNS]
    found = [(preference.index(n), i) for i, n in enumerate(names) if n in preference]
    return min(found)[1] if found else None


def _status_column(row: list[str], *, file: str, line: int) -> int | None:
    """The status column of a header: one of STATUS_COLUMNS, or else any column whose name
    holds "status" ("Review Status", "Credit status"): ignoring one would count a rejected
    row as approved. Two of a kind are refused: which one decides is the researcher's call."""
    names = [_name(cell) for cell in row]
    exact = [i for i, n in enumerate(names) if n in STATUS_COLUMNS]
    found = exact or [i for i, n in enumerate(names) if "status" in n]
    if len(found) > 1:
        columns = ", ".join(row[i].strip() for i in found)
        raise PanelFileError(
            f"several status columns ({columns}): keep the one that says whether the panel "
            "approved the participant",
            file=file,
            line=line,
            field="header",
        )
    return found[0] if found else None


def approved_ids(data: bytes, *, file: str, id_param: str) -> ApprovedList:
    """The participant ids a panel's CSV lists: a header naming the id column (participant_id,
    id, the batch's id parameter, ...; other columns ignored, a status column must say
    approved), or a bare list of ids, one per line; ',', ';' or tab between fields. InputError
    on anything else."""
    size_check(len(data), file=file, field="file")
    text = _text(data, file=file)
    reader = csv.reader(io.StringIO(text, newline=""), delimiter=_delimiter(text), strict=True)
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
                raise PanelFileError(
                    "holds a NUL character (UTF-16 without a BOM? save the panel's list as "
                    "CSV UTF-8)",
                    file=file,
                    line=line,
                    field="(csv)",
                )
            if column is None:  # the first line: a header, or the first id of a bare list
                column = _id_column([_name(cell) for cell in row], id_param)
                if column is not None:
                    label = row[column].strip()
                    status = _status_column(row, file=file, line=line)
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
                    f"{ascii(value[:40])} is not a participant id: "
                    f"{options.participant_id_problem(value)}",
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


def _listed_work(batch: Batch, externals: list[str]) -> list[Assignment]:
    """The submitted work in `batch` of the panel workers `externals`, oldest first: asked
    in chunks, as a panel's list may hold more ids than a query may bind."""
    work: list[Assignment] = []
    for start in range(0, len(externals), QUERY_CHUNK):
        work += Assignment.objects.filter(
            hit__batch=batch,
            worker__provider=options.PROVIDER,
            worker__external_id__in=externals[start : start + QUERY_CHUNK],
            state__in=COUNTED_STATES,
        ).select_related("worker")
    return sorted(work, key=lambda a: a.pk)


def panel_confirm(
    *, batch: Batch, data: bytes, file: str, release_unlisted: bool = False
) -> ConfirmReport:
    """Confirm the waiting work of every participant the panel's CSV `data` lists as approved
    (`assignment_confirm`: capacity, one assignment per HIT and worker, pools). The file is
    checked whole first, and everything is written in one transaction. Work the rules refuse
    stays unconfirmed and is reported. With `release_unlisted` (the file is the panel's
    final list), waiting work of participants it does not list is rejected: it never
    counts, and its HITs take someone else; a final list without an approved id is refused."""
    panel_batch_check(batch)
    settings = options.settings_of(batch)
    approved = approved_ids(data, file=file, id_param=settings["id_param"])
    if release_unlisted and not approved.ids:
        # As the final list, a file without one approved id (only a header, a filter left
        # on, every row pending) would reject everyone's waiting work.
        raise InputError(
            "lists no approved participant, so as the panel's final list it would release "
            "every participant's waiting work; nothing was changed",
            file=file,
        )
    keys = {options.external_id(settings, pid): pid for pid in approved.ids}
    report = ConfirmReport(file=file, listed=len(approved.ids), not_approved=approved.not_approved)
    confirmed_of: set[str] = set()
    found: set[str] = set()
    with transaction.atomic():
        Batch.objects.select_for_update().filter(pk=batch.pk).first()  # one upload at a time
        for assignment in _listed_work(batch, list(keys)):
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
            # The batch's waiting work, filtered here: `exclude(..__in=keys)` would bind one
            # parameter per listed id.
            waiting = (
                Assignment.objects.filter(
                    hit__batch=batch, confirmed=False, state__in=COUNTED_STATES
                )
                .select_related("hit__batch__run", "worker")
                .order_by("pk")
            )
            for assignment in waiting:
                if assignment.worker.external_id in keys:
                    continue
                assignment_mark(
                    assignment=assignment,
                    state=AssignmentState.REJECTED,
                    source="panel",
                    feedback="not in the panel's list of approved participants",
                    file=file,
                )
                report.released += 1
        event_record(
            action=EventAction.PANEL_CONFIRMED,
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
