"""The 20 Responsible-AI fields of Croissant's RAI vocabulary the NeurIPS 2026 Evaluations &
Datasets track asks for, filled from what the run knows: its rows (through the facts the
datasheet states too, `release_facts.py` and `DatasheetRun`), the export's manifest and
tables, and the release terms. Where the project cannot know something (the workers'
demographics) one plain sentence says so. Names as the RAI vocabulary spells them
(`croissant_rai.ttl`: `dataCollectionTimeframe`, `dataManipulationProtocol`)."""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from annotation.models import Run
from annotation.run_settings import run_settings
from annotation.services.datasets.images import SIZE
from annotation.services.release.datasheet import DatasheetRun, held_summary
from annotation.services.release.release_facts import agreement_lines, annotations_per_item


def _pay_lines(manifest: dict[str, Any], currency: str) -> list[str]:
    """Per batch: the reward per HIT, the median time spent on a HIT and the hourly rate the
    reward pays at it, and the effective hourly pay over active time."""
    lines = []
    for p in manifest.get("pay", []):
        if not isinstance(p, dict):
            continue
        effective = p.get("effective") or {}
        median = effective.get("median_seconds_per_hit")
        at_median = effective.get("hourly_at_median_time")
        lines.append(
            f"batch {p.get('batch')} ({p.get('stage')}, {p.get('provider')}): "
            f"{currency}{p.get('reward')} per HIT; "
            + (
                f"median time per HIT {median} s, i.e. {currency}{at_median} per hour; "
                if median
                else "no submitted HIT to time; "
            )
            + f"effective {currency}{effective.get('hourly')} per hour over active time "
            f"(expected {currency}{(p.get('expected') or {}).get('hourly')}); "
            f"{effective.get('below_minimum', 0)} worker(s) below the minimum of "
            f"{currency}{effective.get('minimum')} per hour"
        )
    return lines


def _machine_tools(manifest: dict[str, Any]) -> list[str]:
    """The models and samplers that proposed or chose the items workers judged."""
    tools = []
    for a in manifest.get("annotators", []):
        params = a.get("params") or {}
        sha = params.get("checkpoint_sha256")
        tools.append(
            f"{a.get('name')} ({a.get('kind')}"
            + (f", model {params['model']}" if params.get("model") else "")
            + (f", checkpoint sha256 {sha}" if sha else ", no checkpoint file: "
               "trained in the run or a file of ranked lists")
            + "): proposed candidate pairs (its top-k per query)"
        )  # fmt: skip
    encoders = (manifest.get("sampling") or {}).get("encoders")
    if isinstance(encoders, dict):
        tools.append(
            f"CxC sampling encoders (rule {encoders.get('rule')}): image similarity by "
            f"{encoders.get('image')}; caption similarity by {encoders.get('caption')}"
        )
    stage1 = manifest.get("stage1") or {}
    if stage1.get("embedding_source") or stage1.get("embedding_dim"):
        tools.append(
            "BISON stage 1 pairing: each image's mean caption word vector "
            f"({stage1.get('embedding_dim')} dimensions, from "
            f"{stage1.get('embedding_source') or 'vectors trained in the run'}), "
            "paired with its cosine nearest neighbour"
        )
    if not tools:
        tools.append(
            "No model proposed or labelled items: every label is a person's judgment "
            "(or a simulated worker's, where marked)."
        )
    aggregation = (manifest.get("run") or {}).get("config", {}).get("aggregation")
    if aggregation == "dawid_skene":
        tools.append("Dawid-Skene EM aggregation of the judgments into labels (pipeline)")
    return tools


def rai_fields(
    *,
    run: Run,
    manifest: dict[str, Any],
    tables: dict[str, pa.Table],
    of_run: DatasheetRun,
    terms: dict[str, Any],
    people: dict[str, Any],
    paper: str,
    title: str,
    version: int,
    currency: str,
) -> dict[str, Any]:
    """The `rai:` entries of croissant.json (keys with their prefix)."""
    from annotation.services.release.release_judgments import PROVENANCE_SET

    judgments = tables[PROVENANCE_SET].num_rows if PROVENANCE_SET in tables else 0
    crowds = "; ".join(of_run.providers) or "no crowd"
    stand_in = of_run.simulated
    stages = sorted({b["title"] for b in of_run.batches})
    dataset = run.dataset
    consent = manifest.get("consent") or {}
    instructions = manifest.get("instructions") or {}
    aggregation = run_settings(run).aggregation_chosen or "the flow's default rule"
    codes = {p.get("batch"): p.get("stage") for p in manifest.get("pay", []) if isinstance(p, dict)}
    locales = sorted(
        {
            loc
            for b in of_run.batches
            if isinstance(b["qualifications"], dict)
            for loc in b["qualifications"].get("locales", [])
        }
    )
    analysis = [
        *agreement_lines({k: v for k, v in tables.items() if k != PROVENANCE_SET}),
        f"Gold accuracy: {of_run.gold.sentence()}",
        "Review: submissions that fail the run's checks (gold items, or BISON stage 3's traps) "
        f"are held for a person; {held_summary(of_run.batches)}",
    ]
    stage3 = manifest.get("stage3")
    if isinstance(stage3, dict) and "trap_answers" in stage3:
        analysis.append(
            f"Traps (questions where people's answer is not a picture lookup's): "
            f"{stage3['trap_answers']} counted answers, {stage3['trap_answers_lookup']} of them "
            "the lookup's answer"
        )
    if isinstance(manifest.get("agreement"), dict):
        for name, measures in manifest["agreement"].items():
            if isinstance(measures, dict) and "krippendorff_alpha_interval" in measures:
                counted_ratings = measures.get("ratings", measures.get("judgments"))
                over = f" over {counted_ratings} ratings" if counted_ratings is not None else ""
                analysis.append(
                    f"{name}: Krippendorff's alpha (interval) "
                    f"{measures['krippendorff_alpha_interval']}{over}"
                )
    creators = ", ".join(terms["creators"]) or "the run's owner (no creator named yet)"
    previous = (manifest.get("changes") or {}).get("previous_version")
    fields: dict[str, Any] = {
        "dataCollection": (
            f"{title} labels collected with crowdvl (run {run.pk}) following {paper}: "
            f"{judgments} counted judgments by {people['workers']} worker(s) through {crowds}, "
            f"in {len(of_run.batches)} batch(es) of the stage(s) {', '.join(stages) or 'none'}; "
            "each item shown to several workers in HITs with gold checks; only counted work "
            "(submitted or approved, confirmed by its provider, not excluded, not held) "
            "enters the export."
        ),
        "dataCollectionType": ["Crowdsourcing", "Secondary Data analysis"]
        + (["Others: simulated workers (software), not people"] if stand_in else []),
        "dataCollectionMissingData": of_run.missing.sentence().capitalize() + ".",
        "dataCollectionRawData": (
            f"Images and captions of the dataset `{dataset.name}` (imported from "
            f"{dataset.source_file.rsplit('/', 1)[-1]}, sha256 {dataset.checksum}; COCO "
            "annotations CC BY 4.0, images under their Flickr licenses). Every judgment "
            f"behind the labels is published as given, in the `{PROVENANCE_SET}` record set."
        ),
        "dataImputationProtocol": (
            "None: a record with no counted judgment is left out, never filled in; a value "
            "the run did not compute (an interval) stays empty."
        ),
        "dataManipulationProtocol": (
            f"Each record aggregates its counted judgments by the run's rule ({aggregation}); "
            "worker ids are replaced by keyed pseudonyms; nothing else is changed. The "
            f"judgments themselves are unaltered in `{PROVENANCE_SET}`."
        ),
        "dataPreprocessingProtocol": [
            f"Images shown to workers: decoded and re-encoded as a {SIZE}x{SIZE} JPEG without "
            "metadata, the whole picture fitted inside on a blurred copy of itself (no crop), "
            "each showing with at most one grey level of noise and its own JPEG quality, so "
            "no two renderings share bytes (annotation/services/datasets/images.py).",
            "Captions shown as the source dataset gives them.",
        ],
        "dataAnnotationProtocol": (
            "; ".join(
                f"batch {b['batch']}: {b['title']} ({b['stage']}), {b['items_per_hit']} items "
                f"per HIT, {b['workers_per_hit']} worker(s) per HIT, instructions version "
                f"{(instructions.get(codes.get(b['batch'], '')) or {}).get('version', 'default')}"
                for b in of_run.batches
            )
            + f". Informed consent text version {consent.get('version', 'none')}."
        ),
        "dataAnnotationPlatform": [
            "crowdvl (this software: task pages, HIT packing, gold checks, review)",
            *(f"Crowd: {label}" for label in of_run.providers),
            *_pay_lines(manifest, currency),
        ],
        "dataAnnotationAnalysis": analysis,
        "dataReleaseMaintenancePlan": (
            f"Version {version}.0.0 of this export, maintained by {creators}, license "
            f"{terms['license']}. "
            + (f"It follows version {previous}; " if previous else "It is the first version; ")
            + "each new export of the run is a new version with CHANGES.md naming what was "
            "added, removed or changed against the previous one and every file's sha256. "
            "No update schedule or deprecation date has been set."
        ),
        "personalSensitiveInformation": [
            "Worker ids are keyed pseudonyms (never a platform's id); no name, email, "
            "location or demographic of any worker is collected or published.",
            "Images come from COCO and may show people (the source dataset's terms apply).",
        ],
        "dataSocialImpact": (
            "Labels for evaluating vision-and-language models; crowd work was paid per HIT ("
            + ("; ".join(_pay_lines(manifest, currency)) or "no paid work recorded")
            + ")."
        ),
        "dataBiases": [
            "Candidates come only from the models and samplers listed under "
            "machineAnnotationTools, so pairs they never proposed are missing.",
            f"Workers came through {crowds}"
            + (f", limited to the locales {', '.join(locales)}" if locales else "")
            + ".",
        ],
        "dataLimitations": [
            *(
                ["SIMULATED workers answered some or all items: not a human-annotated dataset."]
                if stand_in
                else []
            ),
            "Labels reflect the sampled candidates only (an item never shown is not a "
            "negative); agreement and gold accuracy bound their reliability.",
        ],
        "dataUseCases": [
            f"Evaluation of vision-and-language models, as {paper} intended.",
            "Not for training models to identify or profile people in the images.",
        ],
        "annotationsPerItem": "; ".join(annotations_per_item(tables)) or "no records",
        "annotatorDemographics": (
            f"{people['workers']} distinct worker(s), named by pseudonyms only; no "
            "demographic data was collected, so none can be reported."
            + (f" Workers had to be in one of the locales {', '.join(locales)}." if locales else "")
        ),
        "machineAnnotationTools": _machine_tools(manifest),
    }
    if of_run.timeframe:
        fields["dataCollectionTimeframe"] = list(of_run.timeframe)
    return {f"rai:{key}": value for key, value in fields.items()}
