"""Prolific's filter vocabulary (`GET filters/`) and a batch's requirements resolved in it.

Prolific's filters change over time and its select filters take choice ids, not labels
(docs/reference/prolific-api-notes.md §5). So the vocabulary is read from Prolific (every page),
kept in Django's cache for a few hours per API address, and each requirement is looked up in
it: by the filter id known here, else by its title; a country by its English name among the
choice labels. What the vocabulary lacks is refused (an InputError naming the batch's setting),
never guessed."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from django.core.cache import cache

from annotation.crowd.prolific.client import ProlificClient
from annotation.models import Batch
from pipeline.errors import InputError

# Filters change rarely; a new or renamed one is seen within hours.
VOCABULARY_SECONDS = 4 * 3600
# What is kept of each filter: a select filter's choices, a range filter's bounds.
KEPT = ("filter_id", "title", "type", "data_type", "choices", "min", "max")


@dataclass(frozen=True)
class KnownFilter:
    filter_id: str
    type: str  # "select" or "range"
    title: str | None  # found by this title when the id is not listed (None: by id only)
    rule: str | None  # the batch's qualification it carries (None: groups.py fills it)


# Every filter id this project sends, in one place, with where each comes from in the notes
# (§5 "Filter ids"; none is in a reference excerpt, hence the title fallback). The notes give
# no titles: these are guesses at Prolific's, used only when the id is not listed.
KNOWN: dict[str, KnownFilter] = {
    # [3p] only: a range filter, e.g. 95-100.
    "approval_rate": KnownFilter("approval_rate", "range", "Approval Rate", "min_approval_percent"),
    # [3p] only: a range filter.
    "approved_submissions": KnownFilter(
        "approval_numbers", "range", "Approval Numbers", "min_approved_hits"
    ),
    # [CLI] example (Prolific's own CLI); [3p] gives its choice "1" as United States.
    "country": KnownFilter(
        "current-country-of-residence", "select", "Current Country of Residence", "locales"
    ),
    # [3p] only; its values are participant group ids ([CLI] shows the allowlist twin).
    "group_blocklist": KnownFilter("participant_group_blocklist", "select", None, None),
}

# English names of the country codes a batch may give (ISO 3166-1; other spellings a label may
# use after the first). The notes list no countries Prolific recruits in: this covers the
# project's default locales, the OECD members and South Africa (where Prolific is commonly
# said to recruit; unverified here). The vocabulary decides: a name that is not among its
# choices is refused.
COUNTRY_NAMES: dict[str, tuple[str, ...]] = {
    "US": ("United States", "United States of America", "USA"),
    "GB": ("United Kingdom", "United Kingdom of Great Britain and Northern Ireland", "UK"),
    "CA": ("Canada",),
    "AU": ("Australia",),
    "NZ": ("New Zealand",),
    "IE": ("Ireland",),
    "AT": ("Austria",),
    "BE": ("Belgium",),
    "CH": ("Switzerland",),
    "CL": ("Chile",),
    "CO": ("Colombia",),
    "CR": ("Costa Rica",),
    "CZ": ("Czech Republic", "Czechia"),
    "DE": ("Germany",),
    "DK": ("Denmark",),
    "EE": ("Estonia",),
    "ES": ("Spain",),
    "FI": ("Finland",),
    "FR": ("France",),
    "GR": ("Greece",),
    "HU": ("Hungary",),
    "IL": ("Israel",),
    "IS": ("Iceland",),
    "IT": ("Italy",),
    "JP": ("Japan",),
    "KR": ("South Korea", "Korea, Republic of", "Republic of Korea", "Korea"),
    "LT": ("Lithuania",),
    "LU": ("Luxembourg",),
    "LV": ("Latvia",),
    "MX": ("Mexico",),
    "NL": ("Netherlands", "The Netherlands"),
    "NO": ("Norway",),
    "PL": ("Poland",),
    "PT": ("Portugal",),
    "SE": ("Sweden",),
    "SI": ("Slovenia",),
    "SK": ("Slovakia",),
    "TR": ("Turkey", "Türkiye"),
    "ZA": ("South Africa",),
}


def _plain(text: str) -> str:
    """A title or label compared loosely: case, spacing and a leading "the" aside."""
    words = str(text).casefold().split()
    return " ".join(words[1:] if words[:1] == ["the"] else words)


def _field(known: KnownFilter) -> str:
    return f"qualifications.{known.rule}" if known.rule else "filters"


@dataclass(frozen=True)
class Vocabulary:
    """Prolific's filters by id, as `GET filters/` lists them."""

    filters: dict[str, dict[str, Any]]

    def find(self, name: str) -> dict[str, Any]:
        """The filter of KNOWN[name]: by its id, else by its title; refused when missing or
        of another type."""
        known = KNOWN[name]
        found = self.filters.get(known.filter_id)
        if found is None and known.title:
            wanted = _plain(known.title)
            found = next(
                (f for f in self.filters.values() if _plain(f.get("title") or "") == wanted),
                None,
            )
        named = f"{known.filter_id!r}" + (f" (titled {known.title!r})" if known.title else "")
        if found is None:
            raise InputError(
                f"Prolific's filter list has no filter {named}: remove the requirement or ask "
                "Prolific which filter replaced it",
                field=_field(known),
            )
        if found.get("type") != known.type:
            raise InputError(
                f"Prolific's filter {named} is a {found.get('type')} filter, not a "
                f"{known.type} filter",
                field=_field(known),
            )
        return found

    def title(self, filter_id: str) -> str:
        return str(self.filters.get(filter_id, {}).get("title") or filter_id)


def _cache_key(base_url: str) -> str:
    return "prolific-filters:" + hashlib.sha256(base_url.encode()).hexdigest()[:32]


def _vocabulary_read(client: ProlificClient) -> list[dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    for item in client.pages("filters/"):
        filter_id = item.get("filter_id") if isinstance(item, dict) else None
        if not isinstance(filter_id, str) or not filter_id:
            continue
        if filter_id in rows:  # a page repeating what was read: `page` was ignored
            break
        rows[filter_id] = {k: item[k] for k in KEPT if k in item}
    return list(rows.values())


def vocabulary(client: ProlificClient) -> Vocabulary:
    """Prolific's filters, read once per VOCABULARY_SECONDS per API address (Django's cache,
    shared by the processes when it is Redis)."""
    key = _cache_key(client.base_url)
    rows = cache.get(key)
    if rows is None:
        rows = _vocabulary_read(client)
        if rows:  # an empty answer is not kept: everything would be refused for hours
            cache.set(key, rows, VOCABULARY_SECONDS)
    return Vocabulary({row["filter_id"]: row for row in rows})


def vocabulary_forget(base_url: str) -> None:
    """Read the vocabulary again on next use (tests; a filter Prolific just added)."""
    cache.delete(_cache_key(base_url))


def country_choices(country: dict[str, Any], codes: list[str]) -> list[str]:
    """The choice ids of the country filter for `codes`, found by the countries' English
    names among the choice labels; every code that has none is refused at once."""
    choices = country.get("choices")
    by_label = (
        {_plain(label): str(cid) for cid, label in choices.items()}
        if isinstance(choices, dict)
        else {}
    )
    ids: list[str] = []
    missing: list[str] = []
    for code in codes:
        names = COUNTRY_NAMES.get(code, ())
        cid = next((by_label[_plain(n)] for n in names if _plain(n) in by_label), None)
        if cid is None:
            missing.append(f"{code} ({names[0]})" if names else f"{code} (no English name known)")
        elif cid not in ids:
            ids.append(cid)
    if missing:
        raise InputError(
            f"no choice of Prolific's filter {country.get('title') or country['filter_id']!r} "
            f"for {', '.join(missing)}: give other country codes",
            field=_field(KNOWN["country"]),
        )
    return ids


def _range(found: dict[str, Any], name: str, lower: int, upper: int | None) -> dict[str, Any]:
    """A range filter from `lower` to the filter's maximum (else `upper`)."""
    top = found.get("max", upper)
    if isinstance(top, int | float) and lower > top:
        raise InputError(
            f"at most {top} for Prolific's filter {found.get('title') or found['filter_id']!r}",
            field=_field(KNOWN[name]),
        )
    return {"filter_id": found["filter_id"], "selected_range": {"lower": lower, "upper": top}}


def batch_filters(batch: Batch, vocab: Vocabulary) -> list[dict[str, Any]]:
    """The batch's worker requirements as Prolific filters (approval rate, approved
    submissions, country of residence); the pools and the project block are added by
    `groups.study_group_filters`."""
    rules = batch.qualifications or {}
    found: list[dict[str, Any]] = []
    if rules.get("min_approval_percent") is not None:
        rate = vocab.find("approval_rate")
        found.append(_range(rate, "approval_rate", int(rules["min_approval_percent"]), 100))
    if rules.get("min_approved_hits") is not None:
        done = vocab.find("approved_submissions")
        found.append(_range(done, "approved_submissions", int(rules["min_approved_hits"]), None))
    if rules.get("locales"):
        country = vocab.find("country")
        values = country_choices(country, list(rules["locales"]))
        found.append({"filter_id": country["filter_id"], "selected_values": values})
    return found


def filter_described(rule: dict[str, Any], vocab: Vocabulary) -> str:
    """A study filter in words: its title, and its choice labels or its range."""
    listed = vocab.filters.get(rule["filter_id"], {})
    title = vocab.title(rule["filter_id"])
    if "selected_range" in rule:
        low, high = rule["selected_range"].get("lower"), rule["selected_range"].get("upper")
        if high is None or high == listed.get("max"):
            return f"{title}: at least {low}"
        return f"{title}: {low} to {high}"
    choices = listed.get("choices")
    if not isinstance(choices, dict):
        choices = {}
    labels = [str(choices.get(v, v)) for v in rule.get("selected_values", [])]
    return f"{title}: {', '.join(labels)}"


def settings_described(batch: Batch) -> list[str]:
    """The batch's requirements from its own settings (when Prolific's list is unknown)."""
    rules = batch.qualifications or {}
    lines = []
    if rules.get("min_approval_percent") is not None:
        lines.append(f"approval rate: at least {rules['min_approval_percent']}%")
    if rules.get("min_approved_hits") is not None:
        lines.append(f"approved submissions: at least {rules['min_approved_hits']}")
    if rules.get("locales"):
        names = [
            f"{COUNTRY_NAMES[c][0]} ({c})" if c in COUNTRY_NAMES else c for c in rules["locales"]
        ]
        lines.append(f"country of residence: {', '.join(names)}")
    return lines


def _without_retries(client: ProlificClient) -> ProlificClient:
    """The same client trying once: a page does not wait on back-off."""
    return ProlificClient(
        token=client.token, base_url=client.base_url, session=client.session, max_attempts=1
    )


def requirements_described(*, batch: Batch, client: Callable[[], ProlificClient]) -> list[str]:
    """The batch's filters as Prolific will apply them (titles, choice labels). When Prolific's
    filter list cannot be read (no token, no answer), the batch's own settings with a note;
    when a requirement is not in it, the refusal publishing will meet. Never raises: the
    launch page shows what it can."""
    try:
        vocab = vocabulary(_without_retries(client()))
    except Exception as exc:  # noqa: BLE001 - whatever Prolific answers, the page renders
        return [
            *settings_described(batch),
            f"Prolific's filter list could not be read ({exc}): these are the batch's own "
            "settings, matched to Prolific's filters when it is published",
        ]
    try:
        rules = batch_filters(batch, vocab)
    except InputError as exc:
        return [*settings_described(batch), f"publishing will be refused: {exc}"]
    return [filter_described(rule, vocab) for rule in rules]
