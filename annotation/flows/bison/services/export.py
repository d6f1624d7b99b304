"""Exports: background jobs writing versioned files with a manifest."""

from __future__ import annotations

import hashlib
import json
import random
from typing import Any

from django.db import transaction
from django.utils import timezone

from annotation.errors import ServiceError
from annotation.flows.bison.selectors import (
    bison_selector_report,
    bison_stage_counts,
    bison_verified_triples,
)
from annotation.models import Export, Job, Run
from annotation.selectors.invitations import consent_record
from annotation.selectors.pay import run_pay_summary
from annotation.services.exports import export_finish
from annotation.services.jobs import (
    job_create,
    job_fail,
    job_finished_result,
    job_progress,
    job_start,
)
from pipeline.bison import BisonRecord, bison_document

BISON_FORMAT = "coco-bison"
JOB_NAME = "bison.export"


def bison_export_start(*, run: Run) -> Job:
    from annotation.flows.bison import tasks

    if not bison_verified_triples(run=run).exists():
        raise ServiceError(f"run {run.pk} has no verified triples to export yet")
    with transaction.atomic():
        job = job_create(name=JOB_NAME, run=run)
        transaction.on_commit(lambda: tasks.bison_export.delay(job.pk))
    return job


def bison_records(*, run: Run) -> list[BisonRecord]:
    """The verified triples as official records; candidate order is seeded per run."""
    seed = int(run.config.get("seed", 0))
    records = []
    triples = bison_verified_triples(run=run).select_related("caption", "positive", "negative")
    for bison_id, triple in enumerate(triples):
        assert triple.caption is not None and triple.negative is not None
        pair = [
            (triple.positive.coco_id, triple.positive.file_name),
            (triple.negative.coco_id, triple.negative.file_name),
        ]
        random.Random(f"{seed}:{triple.pk}").shuffle(pair)
        records.append(
            BisonRecord(
                bison_id=bison_id,
                caption_id=triple.caption.coco_id,
                true_image_id=triple.positive.coco_id,
                candidates=(pair[0], pair[1]),
            )
        )
    return records


def bison_export_write(*, job_id: int) -> Export | None:
    done = job_finished_result(job_id=job_id)
    if done is not None:  # a redelivered task: the export exists, write no second version
        return Export.objects.filter(pk=done.get("export")).first()
    job = job_start(job_id=job_id, message="collecting verified triples")
    run = job.run
    assert run is not None
    try:
        records = bison_records(run=run)
        job_progress(job_id=job_id, progress=50, message=f"writing {len(records)} records")
        split = str(run.dataset.info.get("split") or run.config.get("split") or "val2014")
        document = bison_document(records, source="coco", split=split)
        data = json.dumps(document, indent=None, separators=(",", ":")).encode()
        checksum = hashlib.sha256(data).hexdigest()
        name = f"bison_annotations.coco{split}.json"
        return export_finish(
            job_id=job_id,
            result={"records": len(records)},
            message=f"{len(records)} records -> ",
            run=run,
            format=BISON_FORMAT,
            prefix="bison",
            title="COCO-BISON",
            manifest=_manifest(run=run, records=len(records), checksum=checksum, name=name),
            files={name: data},
            main_file=name,
            checksum=checksum,
        )
    except Exception as exc:
        job_fail(job_id=job_id, error=f"{type(exc).__name__}: {exc}")
        raise


def _manifest(*, run: Run, records: int, checksum: str, name: str) -> dict[str, Any]:
    counts = bison_stage_counts(run=run)
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
        "stage2": {**counts["stage2"], "selectors": bison_selector_report(run=run)},
        "stage3": counts["stage3"],
        "consent": consent_record(run),
        "pay": run_pay_summary(run=run),
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
