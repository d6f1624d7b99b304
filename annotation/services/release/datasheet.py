"""A DATASHEET.md beside every export, under Gebru et al.'s headings ("Datasheets for
Datasets") where they apply, filled from the run, its batches and the export's manifest."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from django.db.models import Count

from annotation.json_order import keys_sorted
from annotation.models import Assignment, Review, Run
from annotation.paths import paths_hidden
from annotation.providers import provider_for
from annotation.selectors.counting import COUNTED_STATES, counted
from annotation.services.files import file_write_atomic
from annotation.services.release.datasheet_cells import cell_text, listed, pairs, table
from annotation.services.release.release_facts import (
    GoldTally,
    MissingWork,
    agreement_lines,
    collection_timeframe,
    gold_tally,
    missing_work,
)
from annotation.tasktypes import task_type_for


def _batches(run: Run) -> list[dict[str, Any]]:
    # Every batch's counts in one read each (a read per batch scanned the run's work again).
    done = {
        row["hit__batch"]: row
        for row in Assignment.objects.filter(
            hit__batch__run=run, state__in=COUNTED_STATES, confirmed=True
        )
        .values("hit__batch")
        .annotate(n=Count("pk"), workers=Count("worker", distinct=True))
        .order_by()
    }
    held: dict[int, dict[str, int]] = {}
    for row in (
        Review.objects.filter(assignment__hit__batch__run=run)
        .values("assignment__hit__batch", "status")
        .annotate(n=Count("pk"))
        .order_by()
    ):
        held.setdefault(row["assignment__hit__batch"], {})[row["status"]] = row["n"]
    rows = []
    for batch in run.batches.exclude(status="draft").order_by("pk"):
        task = task_type_for(batch.stage)
        counts = done.get(batch.pk, {"n": 0, "workers": 0})
        rows.append(
            {
                "batch": batch.pk,
                "stage": batch.get_stage_display(),
                "title": task.title,
                "provider": batch.provider
                + (" (SIMULATED workers)" if provider_for(batch.provider).simulated else ""),
                "items_per_hit": batch.items_per_hit,
                "workers_per_hit": batch.assignments_per_hit,
                "reward": str(batch.reward),
                "qualifications": keys_sorted(batch.qualifications)
                if provider_for(batch.provider).takes_qualifications
                else f"none ({batch.provider} takes none)",
                "workers": counts["workers"],
                "assignments": counts["n"],
                "held_for_review": dict(sorted(held.get(batch.pk, {}).items())),
                "options": keys_sorted(
                    provider_for(batch.provider).published_options(options=batch.options)
                ),
            }
        )
    return rows


def _quality(run: Run, simulated: bool) -> list[str]:
    """The simulated crowd's quality lines (a human run's come with the export's tables:
    `_real_quality`, written with the datasheet)."""
    from annotation.flow_registry import flow_for_kind
    from annotation.selectors.release.simulated_quality import quality_lines

    flow = flow_for_kind(run.kind)
    if not simulated or flow is None:
        return []
    if flow.datasheet_quality is None:
        return [
            "The workers were simulated; this flow's export is not scored against the run's "
            "latent truth here.",
            *_population_quality(run),
        ]
    return [
        "The workers were simulated, so the export can be scored against the latent truth "
        "of the run's simulated world (`pipeline/world.py`, seeded by the run's seed): "
        "measured share with its 95 % Wilson interval. The closed-form expectation for a "
        "worker population is printed by `manage.py quality_sweep` and the demo.",
        "```",
        *quality_lines(flow.datasheet_quality(run)),
        "```",
        *_population_quality(run),
    ]


def _real_quality(gold: GoldTally, agreement: list[str]) -> list[str]:
    """Real workers: no truth to score against; the gold accuracy over the run's counted gold
    answers, with its interval, and the agreement the records carry (none: said so)."""
    return [
        "No simulation against a known truth was run for this export (real workers).",
        "",
        f"- Gold accuracy: {gold.sentence()}.",
        "- Agreement between workers: "
        + (
            "; ".join(agreement)
            if agreement
            else "no measure of agreement in this export's records"
        )
        + ".",
    ]


def _images_rule(run: Run) -> list[str]:
    """Image-disjoint stages: whether each published batch kept the claim's rule (nobody sees
    an image in two HITs) or relaxed it for a trusted pool (issue 46)."""
    from annotation.services.datasets.images import images_kept_apart

    kept: dict[str, list[int]] = {}
    relaxed: dict[str, list[int]] = {}
    for batch in run.batches.exclude(status="draft").order_by("pk"):
        if task_type_for(batch.stage).images_disjoint:
            side = kept if images_kept_apart(batch) else relaxed
            side.setdefault(batch.get_stage_display(), []).append(batch.pk)
    lines = []
    for stage in dict.fromkeys([*kept, *relaxed]):
        text = f"- Image-disjointness, {stage}:"
        if stage in kept:
            text += f" kept in batch(es) {', '.join(map(str, kept[stage]))} (nobody saw an image in two HITs)"
        if stage in relaxed:
            text += (
                f"{';' if stage in kept else ''} **relaxed in batch(es) "
                f"{', '.join(map(str, relaxed[stage]))}** (the researchers' choice for a trusted "
                "pool: a worker could see one image in two HITs and answer the second from "
                "memory rather than by looking)"
            )
        lines.append(text + ".")
    return lines


def _population_quality(run: Run) -> list[str]:
    """What this flow's rules and aggregations give on the realistic and held-out simulated
    crowds (not this run's workers): a small Monte Carlo, the same table as
    `quality_sweep`'s (which runs more seeds)."""
    from pipeline.flow_quality import figure_lines, flow_figures
    from pipeline.simulate import population_named

    figures = [
        figure
        for name in ("realistic", "held-out")
        for figure in flow_figures(
            population_named(name), seeds=3, items=450, team=30, kinds=(run.kind,)
        )
    ]
    return [
        "",
        "The same flow's rules on the simulated realistic and held-out crowds (shared item "
        "difficulty, biased raters, careless workers, gold-aware cheaters; "
        "`pipeline/flow_quality.py`, 3 seeds of 450 items, 95 % t interval over seeds; "
        "`manage.py quality_sweep` runs 10 seeds of 1,500):",
        "```",
        *figure_lines(figures),
        "```",
    ]


def consent_lines(consent: dict[str, Any]) -> str:
    accepted = consent.get("accepted_by_version") or {}
    # Manifests written before every provider recorded consent have no per-provider count.
    by_provider = (
        "; per provider: "
        + cell_text(consent["accepted_by_provider"], key="consent.accepted_by_provider")
        if "accepted_by_provider" in consent
        else ""
    )
    return (
        f"- Consent: workers saw the information text version `{consent.get('version', '')}` "
        "(its words: manifest.json, consent.text); "
        f"{consent.get('invited', 0)} worker(s) invited by link; people who accepted, per "
        f"text version: {cell_text(accepted, key='consent.accepted_by_version')}{by_provider}."
    )


def _people(providers: tuple[str, ...]) -> str:
    """Who answered, naming the crowds whose counted work the export holds."""
    if not providers:
        return "No counted answer yet: no crowd contributed to this export."
    return "All answers come from people, recruited through: " + "; ".join(providers) + "."


def held_summary(batches: list[dict[str, Any]]) -> str:
    """The run's submissions held for review, by how each was decided (the batch rows')."""
    held: dict[str, int] = {}
    for row in batches:
        for status, n in row["held_for_review"].items():
            held[status] = held.get(status, 0) + n
    if not held:
        return "none was held"
    return (
        f"{sum(held.values())} held ("
        + ", ".join(f"{k} {v}" for k, v in sorted(held.items()))
        + ")"
    )


def exclusion_lines(manifest: dict[str, Any]) -> list[str]:
    if manifest.get("excluded_open_reviews"):
        return listed(
            manifest["excluded_open_reviews"],
            key="excluded_open_reviews",
            lead="- Exclusions: submissions still held for review when exported, left out",
        )
    value = manifest.get("exclusions")
    return listed(value or "none", key="exclusions", lead="- Exclusions")


@dataclass(frozen=True)
class DatasheetRun:
    """What the datasheet says of the run rather than of the export's files: its batches and
    the simulated crowds' quality. An export job reads it beside its build
    (services/release/beside.py), as it needs nothing the build makes."""

    batches: list[dict[str, Any]]
    simulated: bool
    quality: list[str]
    providers: tuple[str, ...] = ()  # the labels of the crowds whose counted work it holds
    images_rule: tuple[str, ...] = ()  # image-disjoint stages: kept or relaxed, per batch
    gold: GoldTally = GoldTally()  # counted answers to gold questions (any crowd)
    timeframe: tuple[str, str] | None = None  # first accept, last submission of counted work
    provider_names: tuple[str, ...] = ()  # the same crowds by their registry names
    missing: MissingWork = MissingWork()  # work and items the export leaves out


def datasheet_run(*, run_id: int) -> DatasheetRun:
    run = Run.objects.get(pk=run_id)
    # Each crowd once, in the order of the run's first batch of it, among the batches whose
    # work counts: what the export's rows come from (a published batch nobody worked on
    # contributed nothing).
    names = list(
        dict.fromkeys(
            Assignment.objects.filter(counted(), hit__batch__run=run)
            .order_by("hit__batch_id")
            .values_list("hit__batch__provider", flat=True)
            .distinct()
        )
    )
    simulated = any(provider_for(name).simulated for name in names)
    return DatasheetRun(
        batches=_batches(run),
        simulated=simulated,
        quality=_quality(run, simulated),
        providers=tuple(provider_for(name).label for name in names),
        images_rule=tuple(_images_rule(run)),
        gold=gold_tally(run),
        timeframe=collection_timeframe(run),
        provider_names=tuple(names),
        missing=missing_work(run),
    )


def datasheet_write(
    *,
    folder: Path,
    run: Run,
    manifest: dict[str, Any],
    flow: str,
    of_run: DatasheetRun | None = None,
    tables: dict[str, pa.Table] | None = None,
) -> str:
    """Write DATASHEET.md into `folder` (`of_run`: the run's part, read now if not given;
    `tables`: the export's record sets, whose agreement it states); returns its sha256."""
    dataset = run.dataset
    of_run = of_run or datasheet_run(run_id=run.pk)
    batches, simulated = of_run.batches, of_run.simulated
    measured = agreement_lines(tables or {})
    pay = manifest.get("pay", [])
    agreement = manifest.get("agreement")
    counts: dict[str, Any] = {
        k: manifest[k]
        for k in (
            "counts",
            "stage1",
            "stage2",
            "stage3",
            "pairs_per_sampling_method",
            "judged",
            "records",
            "ratings",
        )
        if k in manifest
    }
    lines = [
        f"# Datasheet: {flow} export of run {run.pk}" + (f" ({run.name})" if run.name else ""),
        "",
        "Headings follow Gebru et al., *Datasheets for Datasets*; figures come from this export's "
        "`manifest.json` and the run's records.",
        "",
        "## Motivation",
        f"Built with crowdvl's {flow} flow, reproducing the procedure of the corresponding paper "
        "(see the project README for where the defaults follow the paper and how they may be changed).",
        "",
        "## Composition",
        f"- Source data: dataset `{dataset.name}` imported from the file "
        f"`{Path(dataset.source_file).name}` "
        f"(sha256 `{dataset.checksum}`). COCO annotations are CC BY 4.0; images keep their own "
        "licenses (Flickr terms), listed in the source file.",
        "- Counts (the funnel from candidates to the exported records):",
        "",
        *pairs(counts),
        "",
        "## Collection process",
        "- Sampling: "
        + ("as below" if manifest.get("sampling") else "as the flow defines it (README)"),
        *(
            ["", *pairs(manifest["sampling"], source="sampling"), ""]
            if manifest.get("sampling")
            else []
        ),
        "- HIT design, instructions and workers per stage (instructions are the task pages "
        "shown to workers; qualifications apply on MTurk):",
        "",
        *table(batches, source="batches"),
        "",
        "- "
        + (
            "**Some or all answers come from SIMULATED workers** (the demo's stand-in for "
            "people): this export is not a human-annotated dataset."
            if simulated
            else _people(of_run.providers)
        ),
        consent_lines(manifest.get("consent", {})),
        *of_run.images_rule,
        "- Instructions per stage (`default`: the task page's own, the paper's wording; "
        "otherwise the version of the run's own text):",
        "",
        *table(
            [
                {"stage": stage, **(v if isinstance(v, dict) else {"version": v})}
                for stage, v in manifest.get("instructions", {}).items()
            ],
            source="instructions",
        ),
        "",
        "## Preprocessing, cleaning, labeling",
        f"- Gold items and reviews: {of_run.gold.sentence()}; submissions that fail the run's "
        "checks (gold items, or BISON stage 3's traps: `stage3.trap_answers` above) are held "
        f"for a person's review: {held_summary(batches)} (`held_for_review` per batch above). Only counted work (submitted or approved, confirmed by its provider, not "
        "excluded, not held) enters the export.",
        *exclusion_lines(manifest),
        f"- Missing data: {of_run.missing.sentence()}.",
        "- Inter-rater agreement: "
        + (
            "; ".join(measured) + "."
            if measured
            else ("" if agreement else "no measure of agreement in this export's records.")
        ),
        *(["", *pairs(agreement, source="agreement")] if agreement else []),
        "",
        "## Pay",
        "Expected hourly pay (from the papers' times, documented assumptions or a pilot) and "
        "effective hourly pay (active time, capped at the expected time per HIT) per batch:",
        "",
        *table(pay if isinstance(pay, list) else [pay], source="pay"),
        "",
        "## Quality estimate",
        *(of_run.quality if simulated else _real_quality(of_run.gold, measured)),
        "",
        "## Uses, distribution, maintenance",
        "- License: "
        + (
            "**unlicensed** (no license was given for this run or export; do not publish it as is)."
            if manifest.get("release", {}).get("license", "unlicensed") == "unlicensed"
            else f"`{manifest['release']['license']}`."
        )
        + " Source data: "
        + "; ".join(
            f"{s['name']}: {s['license']}"
            for s in manifest.get("release", {}).get("source_licenses", [])
        )
        + ".",
        "- Evaluation of vision-and-language models, as the corresponding paper intended.",
        "- Worker ids are pseudonymised (a keyed hash); no name, email or worker id is published.",
        f"- Files and their sha256: see `manifest.json` (format `{manifest.get('format', flow)}`).",
        "",
    ]
    text = paths_hidden("\n".join(lines))  # a file for researchers: no server paths
    return file_write_atomic(path=folder / "DATASHEET.md", data=text.encode())
