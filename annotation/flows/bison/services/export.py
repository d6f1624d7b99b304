"""The BISON export: the verified triples in the official annotation layout, and its manifest
(the job around it is the core's, `annotation/services/export_jobs.py`)."""

from __future__ import annotations

import hashlib
import json
import random
from collections import defaultdict
from typing import Any

import pyarrow as pa
from django.utils import timezone

from annotation.errors import ServiceError
from annotation.flows.bison.selectors import (
    bison_selection_outcomes,
    bison_selector_report,
    bison_stage_counts,
    bison_verified_triples,
)
from annotation.flows.bison.vocabulary import BisonItemKind, BisonStage
from annotation.models import Answer, Job, Run
from annotation.selectors.counting import counted
from annotation.services.export_jobs import (
    ExportParts,
    ExportSpec,
    ExportWork,
    export_job_start,
    export_manifest_crowd,
)
from annotation.services.release_tables import table_from_columns, worker_pseudonyms
from pipeline.bison import BisonRecord, bison_document

BISON_FORMAT = "coco-bison"
JOB_NAME = "bison.export"


def bison_export_start(*, run: Run, release: dict[str, Any] | None = None) -> Job:
    """Start the export job, once the run has verified triples."""
    if not bison_verified_triples(run=run).exists():
        raise ServiceError(f"run {run.pk} has no verified triples to export yet")
    return export_job_start(run=run, spec=BISON_EXPORT, release=release)


# What the export reads of each verified triple: plain rows, not three model objects per
# triple (40,000 images: seconds), read once for the records and their provenance.
_TRIPLE_ROW = (
    "pk",
    "caption__coco_id",
    "positive__coco_id",
    "positive__file_name",
    "negative__coco_id",
    "negative__file_name",
    "votes",
    "positive_votes",
)


def _triple_rows(run: Run) -> list[tuple[Any, ...]]:
    return list(bison_verified_triples(run=run).values_list(*_TRIPLE_ROW))


def bison_records(*, run: Run, rows: list[tuple[Any, ...]] | None = None) -> list[BisonRecord]:
    """The verified triples as official records; candidate order is seeded per run. `rows`:
    the triples as `_triple_rows` reads them, if already read."""
    seed = int(run.config.get("seed", 0))
    records = []
    for bison_id, row in enumerate(_triple_rows(run) if rows is None else rows):
        pk, caption, positive, positive_file, negative, negative_file = row[:6]
        assert caption is not None and negative is not None
        pair = [(positive, positive_file), (negative, negative_file)]
        random.Random(f"{seed}:{pk}").shuffle(pair)
        records.append(
            BisonRecord(
                bison_id=bison_id,
                caption_id=caption,
                true_image_id=positive,
                candidates=(pair[0], pair[1]),
            )
        )
    return records


def bison_triples_table(
    *, run: Run, records: list[BisonRecord], rows: list[tuple[Any, ...]] | None = None
) -> pa.Table:
    """The `bison_triples` record set: each exported record with its verification's
    provenance (judgments, how many picked the positive image, their share, the workers).
    `rows`: the triples as `_triple_rows` reads them, if already read."""
    triples = [(r[0], r[6], r[7]) for r in (_triple_rows(run) if rows is None else rows)]
    answers: dict[int, list[int]] = defaultdict(list)
    # Every verification answer of the run's triples (no id list that grows with the run:
    # those of triples that were not verified are read and left unused).
    for item, worker in (
        Answer.objects.filter(
            counted("assignment__"),
            question__item__run=run,
            question__item__kind=BisonItemKind.TRIPLE,
            question__hit__batch__stage=BisonStage.VERIFICATION,
        )
        .order_by("question__item_id", "assignment_id")
        .values_list("question__item_id", "assignment__worker_id")
    ):
        answers[item].append(worker)
    names = worker_pseudonyms(worker_ids={w for ws in answers.values() for w in ws})
    return table_from_columns(
        {
            "bison_id": pa.array([r.bison_id for r in records], pa.int64()),
            "caption_id": pa.array([r.caption_id for r in records], pa.int64()),
            "true_image_id": pa.array([r.true_image_id for r in records], pa.int64()),
            "image_id_0": pa.array([r.candidates[0][0] for r in records], pa.int64()),
            "image_filename_0": [r.candidates[0][1] for r in records],
            "image_id_1": pa.array([r.candidates[1][0] for r in records], pa.int64()),
            "image_filename_1": [r.candidates[1][1] for r in records],
            "judgments": pa.array([votes for _, votes, _ in triples], pa.int32()),
            "positive_judgments": pa.array([pos for _, _, pos in triples], pa.int32()),
            "agreement": pa.array(
                [round(pos / votes, 4) if votes else None for _, votes, pos in triples],
                pa.float64(),
            ),
            "workers": pa.array(
                [[names[w] for w in answers[pk]] for pk, _, _ in triples], pa.list_(pa.string())
            ),
        }
    )


def _build(work: ExportWork) -> ExportParts:
    run = work.run
    rows = _triple_rows(run)
    records = bison_records(run=run, rows=rows)
    work.progress(50, f"writing {len(records)} records")
    split = str(run.dataset.info.get("split") or run.config.get("split") or "val2014")
    document = bison_document(records, source="coco", split=split)
    data = json.dumps(document, indent=None, separators=(",", ":")).encode()
    checksum = hashlib.sha256(data).hexdigest()
    name = f"bison_annotations.coco{split}.json"
    return ExportParts(
        manifest=_manifest(run=run, records=len(records), checksum=checksum, name=name),
        files={name: data},
        result={"records": len(records)},
        message=f"{len(records)} records -> ",
        main_file=name,
        checksum=checksum,
        tables={"bison_triples": bison_triples_table(run=run, records=records, rows=rows)},
    )


def _manifest(*, run: Run, records: int, checksum: str, name: str) -> dict[str, Any]:
    outcomes = bison_selection_outcomes(run=run)  # read once for both of its uses
    counts = bison_stage_counts(run=run, outcomes=outcomes)
    pairing = run.jobs.filter(name="bison.pairing", state="succeeded").order_by("-pk").first()
    return {
        "format": BISON_FORMAT,
        "file": name,
        "sha256": checksum,
        "records": records,
        "created_at": timezone.now().isoformat(),
        "run": {"id": run.pk, "kind": run.kind, "name": run.name, "config": run.config},
        "dataset": {
            "name": run.dataset.name,
            "source_file": run.dataset.source_file,
            "sha256": run.dataset.checksum,
        },
        "stage1": {
            **counts["stage1"],
            # Both orders of every distinct nearest-neighbour edge (paper: 2 x 33,782).
            "edges": pairing.result.get("edges") if pairing else None,
            "mutual_edges": pairing.result.get("mutual_edges") if pairing else None,
            "ordered_pairs": counts["stage1"]["pairs"],
            "cosines": pairing.result.get("cosines") if pairing else None,
            "warning": pairing.result.get("warning") if pairing else None,
            "embedding_dim": run.embedding_dim,
            "embedding_source": run.embedding_source,
            "params": pairing.params if pairing else None,
        },
        "stage2": {
            **counts["stage2"],
            "selectors": bison_selector_report(run=run, outcomes=outcomes),
        },
        "stage3": counts["stage3"],
        **export_manifest_crowd(run=run),
        "batches": [
            {
                "id": b.pk,
                "stage": b.stage,
                "provider": b.provider,
                "hits": b.hits.count(),
                "items_per_hit": b.items_per_hit,
                "assignments_per_hit": b.assignments_per_hit,
                "reward": str(b.reward),
                "qualifications": b.qualifications,
            }
            for b in run.batches.order_by("pk")
        ],
    }


BISON_EXPORT = ExportSpec(
    job_name=JOB_NAME,
    format=BISON_FORMAT,
    prefix="bison",
    title="COCO-BISON",
    first_message="collecting verified triples",
    build=_build,
    paper=(
        "Hu, H., Misra, I. and van der Maaten, L. Evaluating Text-to-Image Matching using "
        "Binary Image Selection (BISON). ICCV Workshops, 2019. arXiv:1901.06595"
    ),
    task_categories=("text-to-image", "image-to-text"),
    # The caption and both images (the candidates' order is seeded per run and triple).
    record_keys={"bison_triples": ("caption_id", "true_image_id", "image_id_0", "image_id_1")},
)
