"""Who made a release and under what terms: license, creators and citation, entered per run
(the run setting `release`) and overridable per export (the export job's params). An export
without a license is "unlicensed" in every file and the job's message warns about it."""

from __future__ import annotations

from typing import Any

from annotation.models import Run
from annotation.run_settings import run_settings

UNLICENSED = "unlicensed"

# What the papers' own files build on: every flow starts from COCO (or Flickr8k-style)
# images and captions; their terms travel with the release.
SOURCE_LICENSES = [
    {
        "name": "COCO annotations (captions, image ids)",
        "license": "CC BY 4.0",
        "url": "https://cocodataset.org/#termsofuse",
    },
    {
        "name": "COCO images",
        "license": "Flickr terms of use, per image (the license listed in the source file)",
        "url": "https://www.flickr.com/creativecommons/",
    },
]


def release_terms_checked(*, release: dict[str, Any]) -> dict[str, Any]:
    """The terms a researcher entered (form, API, CLI), trimmed: `license` (an SPDX or Hub id,
    e.g. cc-by-4.0), `creators` (a list, or names separated by ";"), `citation`."""
    creators = release.get("creators") or []
    if isinstance(creators, str):
        creators = creators.split(";")
    out = {
        "license": str(release.get("license") or "").strip()[:100],
        "creators": [str(c).strip()[:200] for c in creators if str(c).strip()][:50],
        "citation": str(release.get("citation") or "").strip()[:4000],
    }
    return {k: v for k, v in out.items() if v}


def run_release_terms_set(*, run: Run, release: dict[str, Any]) -> Run:
    """Store the run's release terms (every later export's, unless an export gives its own)."""
    run.config = {**run.config, "release": release_terms_checked(release=release)}
    run.save(update_fields=["config"])
    return run


def release_terms(*, run: Run, params: dict[str, Any] | None = None) -> dict[str, Any]:
    """The release's license, creators and citation: the export's own (`params["release"]`)
    over the run's (its setting `release`); no license given means "unlicensed"."""
    terms: dict[str, Any] = {**(run_settings(run).release or {})}
    terms.update({k: v for k, v in ((params or {}).get("release") or {}).items() if v})
    license_id = str(terms.get("license") or "").strip() or UNLICENSED
    creators = terms.get("creators") or []
    if isinstance(creators, str):
        creators = [c.strip() for c in creators.split(";") if c.strip()]
    return {
        "license": license_id,
        "unlicensed": license_id == UNLICENSED,
        "creators": [str(c) for c in creators],
        "citation": str(terms.get("citation") or "").strip(),
        "source_licenses": SOURCE_LICENSES,
    }


def release_people(*, run: Run) -> dict[str, Any]:
    """Who did the work, for the release's metadata: the platforms, whether any workers were
    stand-ins (not people), and how many distinct workers' counted work the run holds."""
    from annotation.models import Assignment
    from annotation.providers import provider_for
    from annotation.selectors.counting import COUNTED_STATES

    providers = sorted(set(run.batches.exclude(status="draft").values_list("provider", flat=True)))
    workers = (
        Assignment.objects.filter(hit__batch__run=run, state__in=COUNTED_STATES, confirmed=True)
        .values("worker")
        .distinct()
        .count()
    )
    return {
        "providers": providers,
        "stand_in": any(provider_for(p).simulated for p in providers),
        "workers": workers,
    }
