"""A panel batch's settings, kept in its options (`options["panel"]`) and checked here: the
study link's participant-id parameter, the panel's name (participant ids are unique within one
panel only), the completion code of each outcome and an optional completion URL."""

from __future__ import annotations

import re
import secrets
import string
import unicodedata
from typing import Any
from urllib.parse import quote, urlsplit, urlunsplit

from django.urls import reverse

from annotation.models import Batch
from pipeline.errors import InputError

PROVIDER = "panel"  # this package's provider
KEY = "panel"  # its part of a batch's options

DEFAULT_ID_PARAM = "participantId"
# The end of a participant's work: every HIT for them done (or they stopped after some),
# refused by the claim rules (another stage's pool, blocked), or nothing left for them.
COMPLETED, SCREENED_OUT, NO_WORK = "completed", "screened_out", "no_work"
OUTCOMES = (COMPLETED, SCREENED_OUT, NO_WORK)
OUTCOME_LABELS = {
    COMPLETED: "completed",
    SCREENED_OUT: "screened out",
    NO_WORK: "no work left",
}
# Stopping before any task was submitted: no code, the participant returns the study.
RETURNED = "returned"

ID_PARAM = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,39}\Z")
NAME_LENGTH = 20
NAME = re.compile(rf"[a-z0-9][a-z0-9-]{{0,{NAME_LENGTH - 1}}}\Z")
# A code the participant types at the panel or the panel reads from the completion URL:
# Connect shows its own code for the researcher to present at the end of the study
# (connect-researcher-help.cloudresearch.com, "Project Completion"); SONA uses none (its
# completion URL grants the credit). No panel we found publishes a code alphabet.
CODE = re.compile(r"[A-Za-z0-9_-]{1,64}\Z")
# What a panel puts in a study link: letters, digits and a few marks, no spaces. Panels
# publish no full format: SONA's %SURVEY_CODE% is a number of 2 to 7 digits without a
# leading zero (sona-systems.com/researcher/using-the-survey-code-feature/); a Connect id is
# "a random string of numbers and letters", length unpublished (connect-researcher-help.
# cloudresearch.com, "IRB Resources"); Prolific's PROLIFIC_PID is 24 hex digits; university
# pools may use e-mail addresses. Connect's own placeholder for the study link is not in any
# page we found. ASCII only (no look-alike or invisible characters); the first character is
# a letter or digit, so an id never starts a spreadsheet formula (= + - @) in the bonus CSV,
# and ':' is left out for `external_id`. A placeholder the panel did not fill in
# (`%SURVEY_CODE%`, `{{%PROLIFIC_PID%}}`) is refused. Case is kept: the id goes back to the
# panel as it spelled it.
PARTICIPANT_LENGTH = 64
PARTICIPANT_FIRST = frozenset(string.ascii_letters + string.digits)
PARTICIPANT_REST = PARTICIPANT_FIRST | frozenset("._@+-")
PARTICIPANT = re.compile(rf"[A-Za-z0-9][A-Za-z0-9._@+-]{{0,{PARTICIPANT_LENGTH - 1}}}\Z")
URL_LIMIT = 500
KEYS = {"id_param", "name", "completion", "completion_url"}


def new_code() -> str:
    """A completion code for a new batch (the researcher may set the panel's own instead):
    32 random bits, derived from nothing a participant sees. One per batch, as panels take
    one code per study; participants see it only at the end, after a submitted task."""
    return "C" + secrets.token_hex(4).upper()


def defaults() -> dict[str, Any]:
    return {
        "id_param": DEFAULT_ID_PARAM,
        "name": "",
        "completion": {COMPLETED: new_code(), SCREENED_OUT: "", NO_WORK: ""},
        "completion_url": "",
    }


def _field(key: str) -> str:
    return f"{KEY}.{key}"


def check_url(value: Any) -> str:
    """A completion URL: empty, or an http(s) address of at most 500 characters, which may
    hold `{code}` and `{id}` (the outcome's code, the participant's id)."""
    if value is None or value == "":
        return ""
    field = _field("completion_url")
    if not isinstance(value, str) or len(value) > URL_LIMIT:
        raise InputError(f"must be an address of at most {URL_LIMIT} characters", field=field)
    if any(c.isspace() or ord(c) < 32 or ord(c) == 127 for c in value):
        raise InputError("must not contain spaces or control characters", field=field)
    try:
        parts = urlsplit(value.replace("{code}", "x").replace("{id}", "x"))
        host = parts.hostname
    except ValueError:
        raise InputError(f"{value[:60]!r} is not an address", field=field) from None
    if parts.scheme.lower() not in ("http", "https") or not host:
        raise InputError(
            "only http:// and https:// addresses are accepted (e.g. "
            "https://connect.cloudresearch.com/participantsite/...?code={code})",
            field=field,
        )
    return value


def _check_code(outcome: str, value: Any) -> str:
    if value is None or value == "":
        return ""
    if not isinstance(value, str) or not CODE.match(value):
        raise InputError(
            "a completion code is 1 to 64 letters, digits, '-' or '_'",
            field=_field(f"completion.{outcome}"),
        )
    return value


def check(value: Any) -> dict[str, Any]:
    """The settings `value` (a dict, missing keys taken from the defaults), checked: an
    InputError names the first bad one."""
    if not isinstance(value, dict):
        raise InputError(
            "must be an object (id_param, name, completion, completion_url)", field=KEY
        )
    unknown = sorted(set(value) - KEYS)
    if unknown:
        raise InputError(
            f"unknown setting(s) {', '.join(unknown)}; known: {', '.join(sorted(KEYS))}",
            field=_field(unknown[0]),
        )
    base = defaults()
    id_param = value.get("id_param", base["id_param"])
    if not isinstance(id_param, str) or not ID_PARAM.match(id_param):
        raise InputError(
            "the id parameter is a name such as participantId, id or PROLIFIC_PID (letters, "
            "digits, '_', '.', '-'; at most 40)",
            field=_field("id_param"),
        )
    name = value.get("name", base["name"]) or ""
    if not isinstance(name, str) or (name and not NAME.match(name)):
        raise InputError(
            "a panel's name is up to 20 lower-case letters, digits or '-' (e.g. connect, "
            "sona-psych)",
            field=_field("name"),
        )
    completion = value.get("completion", base["completion"])
    if not isinstance(completion, dict):
        raise InputError("must be an object of codes by outcome", field=_field("completion"))
    unknown = sorted(set(completion) - set(OUTCOMES))
    if unknown:
        raise InputError(
            f"unknown outcome(s) {', '.join(unknown)}; known: {', '.join(OUTCOMES)}",
            field=_field(f"completion.{unknown[0]}"),
        )
    codes = {o: _check_code(o, completion.get(o, "")) for o in OUTCOMES}
    return {
        "id_param": id_param,
        "name": name,
        "completion": codes,
        "completion_url": check_url(value.get("completion_url", "")),
    }


def _distinct_codes(settings: dict[str, Any]) -> dict[str, Any]:
    """`settings` if no outcome reached without a submitted task (screened out, no work left)
    shares the "completed" code: the panel pays that code as finished work, so a shared one
    would pay anyone screened out, blocked or arriving after the batch filled up."""
    done = settings["completion"][COMPLETED]
    for outcome in (SCREENED_OUT, NO_WORK):
        if done and settings["completion"][outcome] == done:
            raise InputError(
                f"must differ from the completed code: participants {OUTCOME_LABELS[outcome]} "
                "submitted no task (leave it empty, or give the panel a code of its own)",
                field=_field(f"completion.{outcome}"),
            )
    return settings


def batch_options(options: dict[str, Any]) -> dict[str, Any]:
    """A new panel batch's options: its settings checked, or the defaults (a fresh completion
    code for "completed")."""
    return {**options, KEY: _distinct_codes(check(options.get(KEY) or {}))}


def settings_of(batch: Batch) -> dict[str, Any]:
    """The batch's panel settings (defaults filled in for a batch made without them)."""
    stored = batch.options.get(KEY)
    if not isinstance(stored, dict):
        return {**defaults(), "completion": dict.fromkeys(OUTCOMES, "")}
    return check(stored)


def settings_merge(current: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    """`current` with `changes` (codes merged by outcome), checked."""
    if not isinstance(changes, dict):
        raise InputError("must be an object of settings", field=KEY)
    merged = {**current, **changes}
    if isinstance(changes.get("completion"), dict):
        merged["completion"] = {**current.get("completion", {}), **changes["completion"]}
    return _distinct_codes(check(merged))


def participant_id_check(value: str) -> str | None:
    """The participant id a study link carries, or None if it is not one."""
    value = value.strip()
    return value if PARTICIPANT.match(value) else None


def participant_id_problem(value: str) -> str:
    """Why `value` is not a participant id, naming the first bad character by its code point
    (a Cyrillic 'Р' or a zero-width space looks fine on screen); '' when it is one."""
    value = value.strip()
    if not value:
        return "it is empty"
    if len(value) > PARTICIPANT_LENGTH:
        return f"it has {len(value)} characters, at most {PARTICIPANT_LENGTH}"
    for position, char in enumerate(value, start=1):
        allowed = PARTICIPANT_FIRST if position == 1 else PARTICIPANT_REST
        if char not in allowed:
            name = unicodedata.name(char, "")
            where = "it starts with" if position == 1 else f"character {position} is"
            return (
                f"{where} U+{ord(char):04X}{f' {name}' if name else ''}; an id is letters, "
                "digits and . _ @ + - (a letter or digit first)"
            )
    return ""


def external_id(settings: dict[str, Any], participant: str) -> str:
    """The worker id of `participant` on the batch's panel: ids are unique within one panel,
    so a named panel's ids carry its name (participant ids hold no ':')."""
    return f"{settings['name']}:{participant}" if settings["name"] else participant


def participant_of(settings: dict[str, Any], external: str) -> str:
    """The panel's own id of a worker (`external_id` undone)."""
    prefix = f"{settings['name']}:" if settings["name"] else ""
    return external.removeprefix(prefix) if prefix else external


def completion_link(url: str, *, code: str, participant: str) -> str:
    """The completion URL for one participant: `{code}` and `{id}` filled in; without a
    `{code}`, the code is added as the `code` query parameter."""
    link = url.replace("{code}", quote(code, safe="")).replace("{id}", quote(participant, safe=""))
    if "{code}" in url:
        return link
    parts = urlsplit(link)
    query = (
        f"{parts.query}&code={quote(code, safe='')}"
        if parts.query
        else f"code={quote(code, safe='')}"
    )
    return urlunsplit(parts._replace(query=query))


def study_link(base: str, batch: Batch, settings: dict[str, Any]) -> str:
    """The link the researcher pastes into the panel, ending in the id parameter (the panel's
    placeholder for its participant id goes after it)."""
    return f"{base.rstrip('/')}{reverse('panel-entry', args=[batch.pk])}?{settings['id_param']}="
