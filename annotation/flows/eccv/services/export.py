"""ECCV Caption export (a background job) and evaluation of retrieval models on an export."""

from __future__ import annotations

import json
from pathlib import Path
from statistics import mean
from typing import Any

from annotation.errors import ServiceError
from annotation.flows.eccv.models import Annotator
from annotation.flows.eccv.positive_links import SOURCES, Pairs, PositiveLinks, query_originals
from annotation.flows.eccv.selectors import (
    eccv_answer_shares,
    eccv_item_proposers,
    eccv_judged_pairs,
    eccv_original_positives,
    eccv_positive_item_ids,
    eccv_positive_links,
)
from annotation.flows.eccv.services.judged_columns import (
    JudgedColumns,
    judged_columns,
    pairs_lines,
    pairs_table,
)
from annotation.flows.eccv.settings import eccv_settings
from annotation.flows.eccv.vocabulary import PAPER
from annotation.json_order import keys_sorted
from annotation.models import Export, Job, Review, ReviewStatus, Run, RunKind
from annotation.services.release.export_jobs import (
    ExportParts,
    ExportSpec,
    ExportWork,
    export_job_start,
    export_manifest_crowd,
    export_manifest_head,
)
from pipeline.eccv_candidates import ModelRanking
from pipeline.eccv_embeddings import load_model_embeddings, load_ranked_lists, model_ranking
from pipeline.eccv_metrics import retrieval_metrics
from pipeline.errors import InputError

ECCV_FORMAT = "eccv-caption"
I2T_FILE = "eccv_image_to_caption.json"
T2I_FILE = "eccv_caption_to_image.json"
PAIRS_FILE = "eccv_judged_pairs.jsonl"


def _open_reviews(run: Run) -> list[dict[str, Any]]:
    return [
        {"assignment": a, "hit": h, "reasons": len(r)}
        for a, h, r in Review.objects.filter(
            assignment__hit__batch__run=run, status=ReviewStatus.OPEN
        )
        .order_by("assignment_id")
        .values_list("assignment_id", "assignment__hit_id", "reasons")
    ]


def eccv_export_start(
    *, run: Run, allow_open_reviews: bool = False, release: dict[str, Any] | None = None
) -> Job:
    """Export once every held submission has been reviewed: held work does not count, so
    exporting before would silently drop it. `allow_open_reviews` exports anyway and lists the
    excluded work in the manifest."""
    if run.kind != RunKind.ECCV:
        raise ServiceError(f"run {run.pk} is not an ECCV run")
    held = _open_reviews(run)
    if held and not allow_open_reviews:
        raise ServiceError(
            f"run {run.pk} has {len(held)} submission(s) waiting for review (/review/); "
            "decide them first, or export with --allow-open-reviews to leave them out",
            page=f"run {run.pk} has {len(held)} submission(s) waiting for review: decide them "
            "first in the review queue (an export through the API or the command line may "
            "leave them out)",
        )
    if not eccv_judged_pairs(run=run).exists():
        raise ServiceError(f"run {run.pk} has no judged pairs to export yet")
    return export_job_start(
        run=run,
        spec=ECCV_EXPORT,
        params={"allow_open_reviews": allow_open_reviews},
        release=release,
    )


def _build(work: ExportWork) -> ExportParts:
    run = work.run
    aggregation = eccv_settings(run).aggregation_rule
    # The judged pairs, their answers and proposals: three COPYs, columns in numpy/Arrow.
    columns = judged_columns(
        run, None if aggregation == "majority" else eccv_positive_item_ids(run=run)
    )
    originals = query_originals(run)
    links = eccv_positive_links(run=run, human=columns.human, originals=originals)
    work.progress(40, "writing the judged pairs")
    manifest = _manifest(run=run, links=links, columns=columns, originals=originals)
    # Work still held for review does not count; say which, so nothing is lost silently.
    manifest["excluded_open_reviews"] = _open_reviews(run)
    files = {
        I2T_FILE: json.dumps({str(k): v for k, v in links.i2t.items()}).encode(),
        T2I_FILE: json.dumps({str(k): v for k, v in links.t2i.items()}).encode(),
        PAIRS_FILE: pairs_lines(columns, links),
    }
    return ExportParts(
        manifest=manifest,
        files=files,
        result={"counts": manifest["counts"]},
        message="exported to ",
        tables={"eccv_judged_pairs": pairs_table(columns, links)},
    )


def _per_query(mapping: dict[int, list[int]]) -> float:
    return round(mean(len(v) for v in mapping.values()), 3) if mapping else 0.0


def _manifest(
    *,
    run: Run,
    links: PositiveLinks,
    columns: JudgedColumns,
    originals: Pairs,
) -> dict[str, Any]:
    propose = run.jobs.filter(name="eccv.propose", state="succeeded").order_by("-pk").first()
    original = eccv_original_positives(run=run, originals=originals)
    n_positive = sum(len(v) for v in links.i2t.values())
    # Links with each source (dropped ones too, as the sources list every link).
    count = {name: int((links.sources >> n & 1).sum()) for n, name in enumerate(SOURCES)}
    return {
        **export_manifest_head(run=run, format=ECCV_FORMAT),
        **export_manifest_crowd(run=run),
        "annotators": [
            {"name": a.name, "kind": a.kind, "source": a.source, "params": keys_sorted(a.params)}
            for a in run.annotators.order_by("pk")
        ],
        "counts": {
            "pairs_proposed": propose.result.get("proposed") if propose else None,
            "pairs_after_merging_duplicates": columns.candidates,
            "pairs_judged": int(columns.item.size),
            "i2t_positive_links": n_positive,
            "positives_per_image_query": _per_query(links.i2t),
            "positives_per_caption_query": _per_query(links.t2i),
            "original_positives_per_image_query": _per_query(original["i2t"]),
            "original_positives_per_caption_query": _per_query(original["t2i"]),
            "image_queries": len(links.i2t),
            "caption_queries": len(links.t2i),
            "queries_without_positives": links.queries_without_positives,
            "links_dropped_by_exclusions": links.dropped,
            "cxc_links": count["cxc"],
            "coco_links": count["coco"],
            "human_links": count["human"],
        },
        "answer_share_percent_by_model_and_rank": (
            eccv_answer_shares(run=run) if columns.shares is None else columns.shares
        ),
    }


ECCV_EXPORT = ExportSpec(
    job_name="eccv.export",
    format=ECCV_FORMAT,
    prefix="eccv",
    title="ECCV Caption",
    first_message="post-processing positives",
    build=_build,
    paper=PAPER,
    task_categories=("image-to-text", "text-to-image"),
    record_keys={"eccv_judged_pairs": ("image_id", "caption_id")},
    proposers=eccv_item_proposers,
    provenance_beside=True,
)


# --- evaluation ------------------------------------------------------------------------------


def _load_export(folder: Path) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    try:
        i2t = {int(k): v for k, v in json.loads((folder / I2T_FILE).read_text()).items()}
        t2i = {int(k): v for k, v in json.loads((folder / T2I_FILE).read_text()).items()}
    except (OSError, ValueError) as exc:
        raise InputError(f"not an ECCV export: {exc}", file=str(folder)) from None
    return i2t, t2i


def eccv_evaluate(
    *,
    export: Export,
    rankings_path: str | None = None,
    embeddings_path: str | None = None,
    ks: tuple[int, ...] = (1, 5, 10),
) -> dict[str, dict[str, Any]]:
    """mAP@R, R-Precision and R@K for image-to-text and text-to-image on an export's positives,
    from ranked lists (JSON) or embeddings (.npz) to rank."""
    if export.format != ECCV_FORMAT:
        raise InputError(
            f"export {export.pk} is {export.format}, not {ECCV_FORMAT}", field="export"
        )
    i2t, t2i = _load_export(Path(export.path))
    if (rankings_path is None) == (embeddings_path is None):
        raise InputError("give either rankings or embeddings", field="rankings/embeddings")
    dataset = export.run.dataset
    known_images = set(dataset.images.values_list("coco_id", flat=True))
    known_captions = set(dataset.captions.values_list("coco_id", flat=True))
    if rankings_path:
        ranking: ModelRanking = load_ranked_lists(
            rankings_path, known_image_ids=known_images, known_caption_ids=known_captions
        )
        file = rankings_path
    else:
        assert embeddings_path is not None
        embeddings = load_model_embeddings(
            embeddings_path, known_image_ids=known_images, known_caption_ids=known_captions
        )
        depth = max([*ks, *(len(v) for v in i2t.values()), *(len(v) for v in t2i.values())])
        ranking = model_ranking(
            embeddings,
            depth=min(depth, embeddings.image_ids.size, embeddings.caption_ids.size),
            image_queries=sorted(i2t),
            caption_queries=sorted(t2i),
        )
        file = embeddings_path
    return {
        direction: _scores(positives, lists, ks=ks, file=file)
        for direction, positives, lists in (("i2t", i2t, ranking.i2t), ("t2i", t2i, ranking.t2i))
    }


def eccv_evaluate_annotator(
    *, export: Export, annotator: Annotator, ks: tuple[int, ...] = (1, 5, 10)
) -> dict[str, dict[str, Any]]:
    """The metrics of one of the run's own annotators, ranking as deep as the export needs."""
    from annotation.flows.eccv.services.rankings import annotator_ranking

    i2t, t2i = _load_export(Path(export.path))
    depth = max([*ks, *(len(v) for v in i2t.values()), *(len(v) for v in t2i.values())])
    ranking = annotator_ranking(annotator=annotator, depth=depth)
    return {
        "i2t": _scores(i2t, ranking.i2t, ks=ks, file=annotator.name),
        "t2i": _scores(t2i, ranking.t2i, ks=ks, file=annotator.name),
    }


def _scores(
    positives: dict[int, list[int]], lists: Any, *, ks: tuple[int, ...], file: str
) -> dict[str, Any]:
    scores = retrieval_metrics(positives, lists, ks=ks, file=file)
    return {
        "mAP@R": round(100 * scores.map_at_r, 2),
        "R-Precision": round(100 * scores.r_precision, 2),
        **{f"R@{k}": round(100 * v, 2) for k, v in scores.recall_at_k.items()},
        "queries": int(scores.query_ids.size),
    }
