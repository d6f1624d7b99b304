"""CxC export: the three rating CSVs in CxC's published layout, every rating as JSONL, and a
manifest (pairs per sampling method, raters per pair, inter-rater agreement)."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from annotation.errors import ServiceError
from annotation.flows.cxc.selectors import cxc_agreement, cxc_items, cxc_ratings
from annotation.models import Caption, Export, Image, Item, Job, Run, RunStatus, Stage
from annotation.selectors.invitations import consent_record
from annotation.selectors.pseudonyms import worker_pseudonym
from annotation.services.files import file_write_atomic
from annotation.services.jobs import (
    job_create,
    job_fail,
    job_finished_result,
    job_progress,
    job_start,
    job_succeed,
)
from annotation.services.runs import run_set_status
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

    if not any(not r.gold for r in cxc_ratings(run=run)):
        raise ServiceError(f"run {run.pk} has no counted ratings to export yet")
    with transaction.atomic():
        job = job_create(name=JOB_NAME, run=run)
        transaction.on_commit(lambda: tasks.cxc_export.delay(job.pk))
    return job


def image_name(image: Image) -> str:
    """CxC writes images as their COCO file name (COCO_val2014_<12 digits>.jpg)."""
    return image.file_name


def caption_name(caption: Caption, image: Image) -> str:
    """CxC writes captions as COCO_<split>:sentid:<caption id>; the split is read off an image
    file name of the same dataset (COCO_val2014_...)."""
    prefix = (
        image.file_name.rsplit("_", 1)[0] if image.file_name.startswith("COCO_") else "COCO_val2014"
    )
    return f"{prefix}:sentid:{caption.coco_id}"


def _row(stage: str, item: Item, score: float) -> list[str]:
    mean = f"{score:.2f}"
    if stage == Stage.CXC_SIS:
        assert item.negative is not None
        return [image_name(item.positive), image_name(item.negative), mean, item.tag]
    if stage == Stage.CXC_STS:
        assert item.caption is not None and item.caption2 is not None and item.negative
        return [
            caption_name(item.caption, item.positive),
            caption_name(item.caption2, item.negative),
            mean,
            item.tag,
        ]
    assert item.caption is not None
    return [caption_name(item.caption, item.positive), image_name(item.positive), mean, item.tag]


def cxc_export_write(*, job_id: int) -> Export | None:
    done = job_finished_result(job_id=job_id)
    if done is not None:  # a redelivered task writes no second version
        return Export.objects.filter(pk=done.get("export")).first()
    job = job_start(job_id=job_id, message="aggregating ratings")
    run = job.run
    assert run is not None
    try:
        ratings = cxc_ratings(run=run)
        by_item: dict[int, list[int]] = {}
        stage_of: dict[int, str] = {}
        for r in ratings:
            if not r.gold:
                by_item.setdefault(r.item_id, []).append(r.value)
                stage_of[r.item_id] = r.stage
        items = cxc_items(run=run, item_ids=list(by_item))
        job_progress(job_id=job_id, progress=40, message=f"{len(by_item)} pairs")
        name = str(run.config.get("export_name", "val"))
        files: dict[str, bytes] = {}
        per_method: dict[str, int] = {}
        for stage, (prefix, columns) in FILES.items():
            out = io.StringIO()
            writer = csv.writer(out, lineterminator="\n")
            writer.writerow(columns)
            for pk in sorted(p for p in by_item if stage_of[p] == stage):
                item = items[pk]
                values = by_item[pk]
                row = _row(stage, item, sum(values) / len(values))
                writer.writerow(row)
                per_method[item.tag] = per_method.get(item.tag, 0) + 1
            files[f"{prefix}_{name}.csv"] = out.getvalue().encode()
        lines = [
            json.dumps(
                {
                    "stage": r.stage,
                    "item": r.item_id,
                    "gold": r.gold,
                    "worker": worker_pseudonym(
                        provider=r.worker.split(":", 1)[0], external_id=r.worker.split(":", 1)[1]
                    ),
                    "assignment": r.assignment_id,
                    "rating": r.value,
                },
                sort_keys=True,
            )
            for r in ratings
        ]
        files["ratings.jsonl"] = ("\n".join(lines) + "\n").encode()
        sample = run.jobs.filter(name="cxc.sample", state="succeeded").order_by("-pk").first()
        manifest: dict[str, Any] = {
            "format": CXC_FORMAT,
            "created_at": timezone.now().isoformat(),
            "run": {"id": run.pk, "name": run.name, "config": run.config},
            "dataset": {"name": run.dataset.name, "sha256": run.dataset.checksum},
            "sampling": sample.result if sample else None,
            "pairs_per_sampling_method": dict(sorted(per_method.items())),
            "ratings": len([r for r in ratings if not r.gold]),
            "gold_ratings": len([r for r in ratings if r.gold]),
            "agreement": cxc_agreement(ratings),
            "consent": consent_record(run),
        }
        with transaction.atomic():
            Run.objects.select_for_update().get(pk=run.pk)
            last = Export.objects.filter(run=run, format=CXC_FORMAT).aggregate(v=Max("version"))
            version = (last["v"] or 0) + 1
            folder = Path(settings.MEDIA_ROOT) / "exports" / f"run-{run.pk}" / f"cxc-v{version}"
            folder.mkdir(parents=True, exist_ok=True)
            manifest["files"] = {
                file: file_write_atomic(path=folder / file, data=data)
                for file, data in files.items()
            }
            data = json.dumps(manifest, indent=2).encode()
            file_write_atomic(path=folder / "manifest.json", data=data)
            export = Export.objects.create(
                run=run,
                format=CXC_FORMAT,
                version=version,
                path=str(folder),
                checksum=hashlib.sha256(data).hexdigest(),
                manifest=manifest,
            )
            run_set_status(run=run, status=RunStatus.EXPORTED, export=export.pk)
        job_succeed(
            job_id=job_id,
            result={"export": export.pk, "path": str(folder), "pairs": per_method},
            message=f"{sum(per_method.values())} pairs -> {folder}",
        )
        return export
    except Exception as exc:
        job_fail(job_id=job_id, error=f"{type(exc).__name__}: {exc}")
        raise
