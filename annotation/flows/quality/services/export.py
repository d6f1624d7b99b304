"""Caption-quality export: Flickr8k-Expert and Flickr8k-CF derived JSON layouts (ratings and
yes/no judgments), a CSV per task, and a manifest with inter-rater agreement."""

from __future__ import annotations

import csv
import io
import json
import statistics
from collections import Counter, defaultdict
from dataclasses import replace
from typing import Any

import numpy as np
import pyarrow as pa
from django.db.models import Exists, OuterRef

from annotation.errors import ServiceError
from annotation.flows.quality.vocabulary import PAPER, QualityStage
from annotation.models import GOLD_KINDS, Answer, Caption, Item, Job, Question, Run
from annotation.selectors.counting import counted_reviewed
from annotation.selectors.pseudonyms import run_worker_pseudonyms
from annotation.services.release.export_jobs import (
    ExportParts,
    ExportSpec,
    ExportWork,
    export_job_start,
    export_manifest_crowd,
    export_manifest_head,
)
from annotation.services.release.release_tables import majority_share, table_from_columns
from pipeline.agreement import krippendorff_alpha_interval, mean_pairwise_spearman
from pipeline.flickr8k import Judgement, derived_document
from pipeline.scales import bradley_terry

QUALITY_FORMAT = "caption-quality"
JOB_NAME = "quality.export"
EXPERT_FILE = "flickr8k_expert_layout.json"
CF_FILE = "flickr8k_cf_layout.json"


# Beside the preference file: each caption's Bradley-Terry strength among its image's captions,
# with a 95 % interval (pipeline/scales.py); the share of wins is the plain reading.
STRENGTHS_FILE = "quality_preference_strengths.csv"
STRENGTHS_COLUMNS = [
    "image", "source", "caption", "strength", "low95", "high95", "wins", "comparisons",
]  # fmt: skip


def _strengths(contests: dict[str, list[tuple[Any, Any]]]) -> list[list[Any]]:
    """Rows of STRENGTHS_COLUMNS from (winner, loser) candidates per image."""
    rows: list[list[Any]] = []
    for image in sorted(contests):
        pairs = contests[image]
        by_pk = {c.pk: c for pair in pairs for c in pair}
        fit = bradley_terry(
            np.array([w.pk for w, _ in pairs]), np.array([lo.pk for _, lo in pairs])
        )
        games = Counter(c.pk for pair in pairs for c in pair)
        for pk, strength, low, high, share in zip(
            fit.items.tolist(), fit.strength, fit.low, fit.high, fit.share, strict=True
        ):
            candidate = by_pk[pk]
            wins = round(share * games[pk])
            rows.append(
                [image, candidate.source, candidate.text, f"{strength:.3f}", f"{low:.3f}",
                 f"{high:.3f}", wins, games[pk]]
            )  # fmt: skip
    return rows


def _answers(run: Run, stage: str) -> dict[int, list[tuple[int, str]]]:
    """Counted answers of `stage` by item pk: (worker pk, label)."""
    rows = (
        Answer.objects.filter(counted_reviewed(), question__item__run=run)
        .filter(question__hit__batch__stage=stage)
        .exclude(question__item__kind__in=GOLD_KINDS)  # gold copies are checks, not data
        .values_list("question__item_id", "assignment__worker_id", "label")
        .order_by("question__item_id", "assignment_id")
    )
    out: dict[int, list[tuple[int, str]]] = defaultdict(list)
    for item, worker, label in rows:
        out[item].append((worker, label))
    return dict(out)


def _items(run: Run, stage: str, *related: str) -> dict[int, Item]:
    """The run's items asked in `stage`, by pk, with `related` read alongside: found by a
    join on the run and stage, never a list of the answered items' ids (one bound value per
    item)."""
    asked = Question.objects.filter(item=OuterRef("pk"), hit__batch__stage=stage)
    return {i.pk: i for i in Item.objects.filter(Exists(asked), run=run).select_related(*related)}


def quality_export_start(*, run: Run, release: dict[str, Any] | None = None) -> Job:
    """Start the export job, once the run has counted judgments."""
    if not any(
        _answers(run, stage)
        for stage in (QualityStage.RATING, QualityStage.BINARY, QualityStage.PREFERENCE)
    ):
        raise ServiceError(f"run {run.pk} has no counted judgments to export yet")
    return export_job_start(run=run, spec=QUALITY_EXPORT, release=release)


def _csv(header: list[str], rows: list[list[Any]]) -> bytes:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue().encode()


def _agreement(units: dict[int, dict[int, float]]) -> dict[str, Any]:
    per = [len(u) for u in units.values()]
    rho, pairs = mean_pairwise_spearman(units)
    alpha = krippendorff_alpha_interval([list(u.values()) for u in units.values()])
    return {
        "items": len(units),
        "judgments": sum(per),
        "workers_per_item": statistics.median(per) if per else 0,
        "krippendorff_alpha_interval": None if alpha is None else round(alpha, 4),
        "mean_pairwise_spearman": None if rho is None else round(rho, 4),
        "worker_pairs_in_spearman": pairs,
    }


def _judgments_table(
    rows: list[list[Any]],
    provenance: list[tuple[list[float], list[int]]],
    layout: str,
    names: dict[int, str],
) -> pa.Table:
    """A ratings (`expert`) or yes/no (`cf`) record set: the CSV's columns as numbers, each
    judgment with its worker's pseudonym, their count and agreement (the majority's share;
    for ratings also the population standard deviation); `names`: the run's worker
    pseudonyms."""
    columns: dict[str, Any] = {
        "image": [r[0] for r in rows],
        "model": [r[1] for r in rows],
        "caption": [r[2] for r in rows],
    }
    if layout == "expert":
        columns["mean"] = pa.array([round(statistics.mean(v), 4) for v, _ in provenance])
        columns["spread"] = pa.array([round(statistics.pstdev(v), 4) for v, _ in provenance])
        columns["ratings"] = pa.array([v for v, _ in provenance], pa.list_(pa.float64()))
    else:
        columns["yes"] = pa.array([r[3] for r in rows], pa.int32())
        columns["no"] = pa.array([r[4] for r in rows], pa.int32())
        columns["yes_share"] = pa.array([round(sum(v) / len(v), 4) for v, _ in provenance])
    columns["judgments"] = pa.array([len(v) for v, _ in provenance], pa.int32())
    columns["agreement"] = pa.array(
        [majority_share([f"{x:g}" for x in v]) for v, _ in provenance], pa.float64()
    )
    columns["workers"] = pa.array(
        [[names[w] for w in ws] for _, ws in provenance], pa.list_(pa.string())
    )
    return table_from_columns(columns)


def _preferences_table(
    rows: list[list[Any]], voters: list[list[int]], agree: list[float], names: dict[int, str]
) -> pa.Table:
    """The preference record set: the CSV's columns, the votes' count, the majority's share
    and the voters' pseudonyms (`names`: the run's)."""
    header = ["image", "category", "source_first", "caption_first", "source_second",
              "caption_second"]  # fmt: skip
    columns: dict[str, Any] = {h: [r[n] for r in rows] for n, h in enumerate(header)}
    columns["votes_first"] = pa.array([r[6] for r in rows], pa.int32())
    columns["votes_second"] = pa.array([r[7] for r in rows], pa.int32())
    columns["share_first"] = pa.array([float(r[8]) for r in rows], pa.float64())
    columns["judgments"] = pa.array([len(ws) for ws in voters], pa.int32())
    columns["agreement"] = pa.array([round(a, 4) for a in agree], pa.float64())
    columns["workers"] = pa.array([[names[w] for w in ws] for ws in voters], pa.list_(pa.string()))
    return table_from_columns(columns)


def _build(work: ExportWork) -> ExportParts:
    run = work.run
    refs: dict[int, list[str]] = defaultdict(list)
    for image_id, text in (
        Caption.objects.filter(dataset=run.dataset)
        .order_by("coco_id")
        .values_list("image_id", "text")
    ):
        refs[image_id].append(" ".join(text.split()))
    files: dict[str, bytes] = {}
    agreement: dict[str, Any] = {}
    counts: dict[str, int] = {}
    tables: dict[str, pa.Table] = {}
    names = run_worker_pseudonyms(run=run)  # every table's workers, joined by the run
    # Ratings (Flickr8k-Expert layout: one judgement per rating) and yes/no (CF layout:
    # one per caption, the share of "yes").
    for stage, layout, name in (
        (QualityStage.RATING, "expert", EXPERT_FILE),
        (QualityStage.BINARY, "cf", CF_FILE),
    ):
        answers = _answers(run, stage)
        items = _items(run, stage, "positive", "candidate")
        judgements: list[Judgement] = []
        rows: list[list[Any]] = []
        provenance: list[tuple[list[float], list[int]]] = []
        units: dict[int, dict[int, float]] = {}
        for pk in sorted(answers):
            item = items[pk]
            assert item.candidate is not None
            image = item.positive
            stem = image.file_name.rsplit(".", 1)[0]
            key = stem if layout == "expert" else image.file_name
            references = tuple(r for r in refs[image.pk] if r != item.candidate.text)
            values = (
                [1.0 if label == "yes" else 0.0 for _, label in answers[pk]]
                if layout == "cf"
                else [float(label) for _, label in answers[pk]]
            )
            units[pk] = {worker: v for (worker, _), v in zip(answers[pk], values, strict=True)}
            provenance.append((values, [worker for worker, _ in answers[pk]]))
            # The item's judgement; each rating (or the share of "yes") replaces its rating.
            common = Judgement(
                key=key,
                image_id=key,
                image_path=f"images/{image.file_name}",
                caption=item.candidate.text,
                rating=0.0,
                references=references,
            )
            if layout == "expert":
                judgements += [replace(common, rating=v) for v in values]
                rows.append(
                    [
                        image.file_name,
                        item.candidate.source,
                        item.candidate.text,
                        ";".join(f"{v:g}" for v in values),
                        f"{statistics.mean(values):.4f}",
                    ]
                )
            else:
                share = sum(values) / len(values)
                judgements.append(replace(common, rating=round(share, 4)))
                rows.append(
                    [
                        image.file_name,
                        item.candidate.source,
                        item.candidate.text,
                        int(sum(values)),
                        int(len(values) - sum(values)),
                        f"{share:.4f}",
                    ]
                )
        if answers:
            files[name] = json.dumps(derived_document(judgements), indent=1).encode()
            header = (
                ["image", "model", "caption", "ratings", "mean"]
                if layout == "expert"
                else ["image", "model", "caption", "yes", "no", "yes_share"]
            )
            files[f"{stage}.csv"] = _csv(header, rows)
            agreement[str(stage)] = _agreement(units)
            tables[str(stage)] = _judgments_table(rows, provenance, layout, names)
            counts[str(stage)] = len(answers)
    answers = _answers(run, QualityStage.PREFERENCE)
    if answers:
        items = _items(run, QualityStage.PREFERENCE, "positive", "candidate", "candidate2")
        rows = []
        agree: list[float] = []
        voters: list[list[int]] = []
        contests: dict[str, list[tuple[Any, Any]]] = defaultdict(list)
        for pk in sorted(answers):
            item = items[pk]
            assert item.candidate is not None and item.candidate2 is not None
            first = sum(label == "first" for _, label in answers[pk])
            n = len(answers[pk])
            one, two = item.candidate, item.candidate2
            contests[item.positive.file_name] += [(one, two)] * first + [(two, one)] * (n - first)
            rows.append(
                [
                    item.positive.file_name,
                    item.tag,
                    item.candidate.source,
                    item.candidate.text,
                    item.candidate2.source,
                    item.candidate2.text,
                    first,
                    n - first,
                    f"{first / n:.4f}",
                ]
            )
            agree.append(max(first, n - first) / n)
            voters.append([worker for worker, _ in answers[pk]])
        files[f"{QualityStage.PREFERENCE}.csv"] = _csv(
            [
                "image",
                "category",
                "source_first",
                "caption_first",
                "source_second",
                "caption_second",
                "votes_first",
                "votes_second",
                "share_first",
            ],
            rows,
        )
        files[STRENGTHS_FILE] = _csv(STRENGTHS_COLUMNS, _strengths(contests))
        agreement[str(QualityStage.PREFERENCE)] = {
            "pairs": len(answers),
            "judgments": sum(len(a) for a in answers.values()),
            "mean_share_with_majority": round(statistics.mean(agree), 4),
        }
        counts[str(QualityStage.PREFERENCE)] = len(answers)
        tables[str(QualityStage.PREFERENCE)] = _preferences_table(rows, voters, agree, names)
    manifest: dict[str, Any] = {
        **export_manifest_head(run=run, format=QUALITY_FORMAT),
        "judged": counts,
        "agreement": agreement,
        **export_manifest_crowd(run=run),
    }
    return ExportParts(
        manifest=manifest,
        files=files,
        result={"judged": counts},
        message=_judged_words(counts) + " -> ",
        tables=tables,
    )


# What each stage's count is, in the job's message (never the counts' dict).
JUDGED = {
    QualityStage.RATING: "captions rated",
    QualityStage.BINARY: "captions judged yes or no",
    QualityStage.PREFERENCE: "caption pairs compared",
}


def _judged_words(counts: dict[str, int]) -> str:
    """ "12 captions rated, 5 caption pairs compared" (the stages judged, in order)."""
    said = [f"{counts[s]} {words}" for s, words in JUDGED.items() if counts.get(str(s))]
    return ", ".join(said) or "nothing judged yet"


QUALITY_EXPORT = ExportSpec(
    job_name=JOB_NAME,
    format=QUALITY_FORMAT,
    prefix="quality",
    title="caption-quality judgments",
    first_message="collecting judgments",
    build=_build,
    paper=PAPER,
    task_categories=("image-to-text",),
    # The image and the candidate (both candidates for a preference).
    record_keys={
        "quality_rating": ("image", "model", "caption"),
        "quality_binary": ("image", "model", "caption"),
        "quality_preference": (
            "image",
            "source_first",
            "caption_first",
            "source_second",
            "caption_second",
        ),
    },  # fmt: skip
)
