"""CxC export: the three rating CSVs in CxC's published layout, every rating as JSONL, and a
manifest (pairs per sampling method, raters per pair, inter-rater agreement)."""

from __future__ import annotations

import csv
import io
from typing import Any

import numpy as np
from django.db import transaction
from django.utils import timezone

from annotation.errors import ServiceError
from annotation.flows.cxc.selectors import (
    STAGES,
    cxc_agreement,
    cxc_has_ratings,
    cxc_rating_arrays,
)
from annotation.models import Export, Item, Job, Run, Stage, Worker
from annotation.selectors.invitations import consent_record
from annotation.selectors.pay import run_pay_summary
from annotation.selectors.pseudonyms import worker_pseudonym
from annotation.services.exports import export_discard, export_finish, export_staging
from annotation.services.files import AtomicLines
from annotation.services.jobs import (
    job_create,
    job_fail,
    job_finished_result,
    job_progress,
    job_start,
)
from pipeline.cxc import SIS_COLUMNS, SITS_COLUMNS, STS_COLUMNS

CXC_FORMAT = "cxc"
JOB_NAME = "cxc.export"
FILES = {
    Stage.CXC_SIS: ("sis", SIS_COLUMNS),
    Stage.CXC_STS: ("sts", STS_COLUMNS),
    Stage.CXC_SITS: ("sits", SITS_COLUMNS),
}


def cxc_export_start(*, run: Run) -> Job:
    from annotation.flows.cxc import tasks

    if not cxc_has_ratings(run=run):
        raise ServiceError(f"run {run.pk} has no counted ratings to export yet")
    with transaction.atomic():
        job = job_create(name=JOB_NAME, run=run)
        transaction.on_commit(lambda: tasks.cxc_export.delay(job.pk))
    return job


def _names(run: Run, item_ids: np.ndarray) -> dict[int, tuple[str, str, str]]:
    """The two names of each exported pair (as CxC writes them) and its sampling method."""
    prefix = "COCO_val2014"
    first = run.dataset.images.values_list("file_name", flat=True).first()
    if first and first.startswith("COCO_"):
        prefix = first.rsplit("_", 1)[0]
    names: dict[int, tuple[str, str, str]] = {}
    rows = (
        Item.objects.filter(pk__in=item_ids.tolist())
        .values_list(
            "pk",
            "tag",
            "positive__file_name",
            "negative__file_name",
            "caption__coco_id",
            "caption2__coco_id",
        )
        .iterator(chunk_size=20_000)
    )
    for pk, tag, image1, image2, caption1, caption2 in rows:
        if tag == "i2i_csim":
            names[pk] = (image1, image2, tag)
        elif caption2 is not None:
            names[pk] = (f"{prefix}:sentid:{caption1}", f"{prefix}:sentid:{caption2}", tag)
        else:
            names[pk] = (f"{prefix}:sentid:{caption1}", image1, tag)
    return names


def cxc_export_write(*, job_id: int) -> Export | None:
    done = job_finished_result(job_id=job_id)
    if done is not None:  # a redelivered task writes no second version
        return Export.objects.filter(pk=done.get("export")).first()
    job = job_start(job_id=job_id, message="reading ratings")
    run = job.run
    assert run is not None
    staging = None
    try:
        # The JSONL of every rating is streamed to disk before the version is taken.
        staging = export_staging(run=run, prefix="cxc", job_id=job_id)
        pseudonyms = {
            pk: worker_pseudonym(provider=provider, external_id=external)
            for pk, provider, external in Worker.objects.filter(assignments__hit__batch__run=run)
            .distinct()
            .values_list("pk", "provider", "external_id")
        }
        lines = AtomicLines(staging / "ratings.jsonl")
        template = '{"assignment": %d, "gold": %s, "item": %d, "rating": %d, "stage": "%s", "worker": "%s"}'

        def write(
            item: int, stage: str, worker: int, assignment: int, value: int, gold: bool
        ) -> None:
            lines.write(
                template
                % (assignment, "true" if gold else "false", item, value, stage, pseudonyms[worker])
            )

        ratings = cxc_rating_arrays(run=run, each=write)
        streamed = {"ratings.jsonl": lines.close()}
        job_progress(job_id=job_id, progress=60, message=f"{ratings.item.size} ratings read")
        keep = ~ratings.gold
        items, inverse = np.unique(ratings.item[keep], return_inverse=True)
        sums = np.bincount(inverse, weights=ratings.value[keep].astype(np.float64))
        counts = np.bincount(inverse)
        stage_of = np.zeros(items.size, dtype=np.int8)
        stage_of[inverse] = ratings.stage[keep]
        names = _names(run, items)
        name = str(run.config.get("export_name", "val"))
        per_method: dict[str, int] = {}
        files: dict[str, bytes] = {}
        for n, stage in enumerate(STAGES):
            prefix, columns = FILES[stage]
            out = io.StringIO()
            writer = csv.writer(out, lineterminator="\n")
            writer.writerow(columns)
            for at in np.flatnonzero(stage_of == n):
                first, second, tag = names[int(items[at])]
                writer.writerow([first, second, f"{sums[at] / counts[at]:.2f}", tag])
                per_method[tag] = per_method.get(tag, 0) + 1
            files[f"{prefix}_{name}.csv"] = out.getvalue().encode()
        job_progress(job_id=job_id, progress=80, message="agreement")
        sample = run.jobs.filter(name="cxc.sample", state="succeeded").order_by("-pk").first()
        manifest: dict[str, Any] = {
            "format": CXC_FORMAT,
            "created_at": timezone.now().isoformat(),
            "run": {"id": run.pk, "name": run.name, "config": run.config},
            "dataset": {"name": run.dataset.name, "sha256": run.dataset.checksum},
            "sampling": sample.result if sample else None,
            "pairs_per_sampling_method": dict(sorted(per_method.items())),
            "ratings": int(keep.sum()),
            "gold_ratings": int(ratings.gold.sum()),
            "agreement": cxc_agreement(ratings),
            "consent": consent_record(run),
            "pay": run_pay_summary(run=run),
            "files": streamed,
        }
        return export_finish(
            job_id=job_id,
            result={"pairs": per_method},
            message=f"{sum(per_method.values())} pairs -> ",
            run=run,
            format=CXC_FORMAT,
            prefix="cxc",
            title="Crisscrossed Captions",
            manifest=manifest,
            files=files,
            staged=staging,
        )
    except Exception as exc:
        export_discard(staging)
        job_fail(job_id=job_id, error=f"{type(exc).__name__}: {exc}")
        raise
