"""CxC caption-image ratings merged into an ECCV run as positives of a further source."""

from __future__ import annotations

from pathlib import Path

from django.db import transaction

from annotation.flows.eccv.models import ExternalPositive
from annotation.flows.eccv.settings import eccv_settings
from annotation.models import Caption, EventAction, Run
from annotation.services.events import event_record
from pipeline.cxc import parse_sits
from pipeline.errors import InputError


def eccv_cxc_import(
    *, run: Run, path: str, threshold: float | None = None, skip_unknown: bool = False
) -> int:
    """Import CxC caption-image ratings >= threshold as positives of source "cxc".

    Ids unknown to the dataset are an error naming the line, unless `skip_unknown` (a trimmed
    dataset meets ratings of images it does not hold); nothing is written on error.
    """
    threshold = eccv_settings(run).cxc_threshold if threshold is None else float(threshold)
    if not 0.0 <= threshold <= 5.0:
        raise InputError(f"threshold must be within 0..5, got {threshold}", field="threshold")
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror}", file=path) from None
    images = dict(run.dataset.images.values_list("coco_id", "pk"))
    captions = dict(Caption.objects.filter(dataset=run.dataset).values_list("coco_id", "pk"))
    if skip_unknown:
        rows = [
            r
            for r in parse_sits(raw, file=path)
            if r.image_id in images and r.caption_id in captions
        ]
    else:
        rows = parse_sits(
            raw, file=path, known_caption_ids=set(captions), known_image_ids=set(images)
        )
    chosen = [r for r in rows if r.score >= threshold]
    with transaction.atomic():
        # bulk_create(ignore_conflicts) returns every object, written or not: count rows.
        before = ExternalPositive.objects.filter(run=run, source="cxc").count()
        ExternalPositive.objects.bulk_create(
            [
                ExternalPositive(
                    run=run,
                    source="cxc",
                    image_id=images[r.image_id],
                    caption_id=captions[r.caption_id],
                    score=r.score,
                )
                for r in chosen
            ],
            ignore_conflicts=True,
        )
        written = ExternalPositive.objects.filter(run=run, source="cxc").count() - before
        event_record(
            action=EventAction.ECCV_CXC_IMPORTED,
            run=run,
            data={
                "file": path,
                "threshold": threshold,
                "rows": len(rows),
                "positives": len(chosen),
                "written": written,
            },
        )
    return written
