"""Caption-quality runs: candidate captions of several models for a dataset's images, the
items people judge (one candidate; or two, with their HC/HI/HM/MM category)."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

from django.db import transaction

from annotation.errors import ServiceError
from annotation.flows.quality.models import Candidate
from annotation.flows.quality.settings import quality_settings
from annotation.flows.quality.vocabulary import (
    SCALES as SCALES,  # the rating scales, declared there
)
from annotation.flows.quality.vocabulary import QualityItemKind, QualityStage
from annotation.models import Caption, Dataset, EventAction, Item, Project, Run, RunKind
from annotation.services.checks import check_name
from annotation.services.events import event_record
from annotation.services.runs.runs import run_create
from pipeline.errors import InputError
from pipeline.jsonio import check_text

REFERENCE = "reference"


def quality_run_create(
    *,
    dataset: Dataset,
    name: str = "",
    config: dict[str, Any] | None = None,
    project: Project | None = None,
    owner: Any = None,
) -> Run:
    return run_create(
        dataset=dataset,
        kind=RunKind.QUALITY,
        name=name,
        config=config or {},
        project=project,
        owner=owner,
    )


def _image_keys(dataset: Dataset) -> dict[str, int]:
    """Image pk by every way a results file may name it: the COCO id, the file name, the
    file name without its extension (Flickr8k's image ids)."""
    keys: dict[str, int] = {}
    for pk, coco_id, file_name in dataset.images.values_list("pk", "coco_id", "file_name"):
        keys[str(coco_id)] = pk
        keys[file_name] = pk
        keys[file_name.rsplit(".", 1)[0]] = pk
    return keys


def quality_candidates_import(*, run: Run, model: str, path: str) -> int:
    """A model's captions in COCO's results format (`[{"image_id", "caption"}]`): validated
    completely (unknown images, empty or unreadable captions name the record and field), then
    written in one transaction; returns the candidates written (a repeat writes none)."""
    if run.kind != RunKind.QUALITY:
        raise InputError(f"run {run.pk} is a {run.kind} run", field="run")
    check_name(model, field="model", limit=100)
    if not model.strip() or model == REFERENCE:
        raise InputError(f"needs a model name other than {REFERENCE!r}", field="model")
    try:
        rows = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=path) from None
    except ValueError as exc:
        raise InputError(f"not valid JSON: {exc}", file=path) from None
    if not isinstance(rows, list):
        raise InputError("must be a list of {image_id, caption}", file=path)
    keys = _image_keys(run.dataset)
    candidates: list[Candidate] = []
    seen: set[tuple[int, str]] = set()
    for n, row in enumerate(rows):
        if not isinstance(row, dict):
            raise InputError("must be an object", file=path, record=n, field="image_id")
        image = keys.get(str(row.get("image_id")))
        if image is None:
            raise InputError(
                f"image {row.get('image_id')!r} is not in dataset {run.dataset.name!r}",
                file=path,
                record=n,
                field="image_id",
            )
        text = row.get("caption")
        if not isinstance(text, str) or not text.strip():
            raise InputError("must be a non-empty caption", file=path, record=n, field="caption")
        text = check_text(" ".join(text.split()), file=path, record=n, field="caption")
        if (image, text) in seen:
            continue
        seen.add((image, text))
        candidates.append(Candidate(run=run, image_id=image, source=model, text=text))
    with transaction.atomic():
        before = Candidate.objects.filter(run=run, source=model).count()
        Candidate.objects.bulk_create(candidates, ignore_conflicts=True, batch_size=5000)
        written = Candidate.objects.filter(run=run, source=model).count() - before
        event_record(
            action=EventAction.QUALITY_CANDIDATES_IMPORTED,
            run=run,
            data={"model": model, "file": path, "rows": len(rows), "written": written},
        )
    return written


def quality_items_create(*, run: Run) -> dict[str, int]:
    """The items of the three tasks, once: every model candidate alone (ratings and binary
    judgments), and per image up to `pairs_per_image` preference pairs, one category at a time
    in turn: HC two of its references, HI one of its references and another image's, HM a
    reference and a model's caption, MM two models' captions (seeded)."""
    if Item.objects.filter(
        run=run, kind__in=(QualityItemKind.CANDIDATE_CAPTION, QualityItemKind.CANDIDATE_PAIR)
    ).exists():
        raise ServiceError(f"run {run.pk} already has its items")
    models = list(Candidate.objects.filter(run=run).exclude(source=REFERENCE).order_by("pk"))
    if not models:
        raise ServiceError(f"run {run.pk} has no candidate captions: import a model's first")
    settings = quality_settings(run)
    rng = random.Random(settings.seed)
    refs_of: dict[int, list[Caption]] = defaultdict(list)
    for caption in Caption.objects.filter(dataset=run.dataset).order_by("coco_id"):
        refs_of[caption.image_id].append(caption)
    by_image: dict[int, list[Candidate]] = defaultdict(list)
    for c in models:
        by_image[c.image_id].append(c)
    items = [
        Item(
            run=run,
            kind=QualityItemKind.CANDIDATE_CAPTION,
            positive_id=c.image_id,
            candidate=c,
            tag=c.source,
        )
        for c in models
    ]
    images = sorted(by_image)

    def reference(image: int, caption: Caption) -> Candidate:
        found, _ = Candidate.objects.get_or_create(
            run=run,
            image_id=image,
            source=REFERENCE,
            text=" ".join(caption.text.split()),
            defaults={"reference": caption},
        )
        return found

    pairs: list[Item] = []
    wanted = settings.pairs_per_image
    for image in images:
        refs = refs_of.get(image, [])
        others = [i for i in images if i != image and refs_of.get(i)]
        made = 0
        for turn in range(wanted * 4):
            if made >= wanted:
                break
            category = ("HC", "HI", "HM", "MM")[turn % 4]
            if category == "HC" and len(refs) >= 2:
                a, b = rng.sample(refs, 2)
                pair = (reference(image, a), reference(image, b))
            elif category == "HI" and refs and others:
                other = rng.choice(others)
                pair = (
                    reference(image, rng.choice(refs)),
                    reference(other, rng.choice(refs_of[other])),
                )
            elif category == "HM" and refs:
                pair = (reference(image, rng.choice(refs)), rng.choice(by_image[image]))
            elif category == "MM" and len(by_image[image]) >= 2:
                a2, b2 = rng.sample(by_image[image], 2)
                pair = (a2, b2)
            else:
                continue
            if pair[0].text == pair[1].text:
                continue  # never ask which of two identical captions is better
            pairs.append(
                Item(
                    run=run,
                    kind=QualityItemKind.CANDIDATE_PAIR,
                    positive_id=image,
                    candidate=pair[0],
                    candidate2=pair[1],
                    tag=category,
                )
            )
            made += 1
    with transaction.atomic():
        Item.objects.bulk_create(items + pairs, batch_size=5000)
    counts = {"candidates": len(items), "pairs": len(pairs)}
    for category in ("HC", "HI", "HM", "MM"):
        counts[category] = sum(p.tag == category for p in pairs)
    event_record(action=EventAction.QUALITY_ITEMS_CREATED, run=run, data=counts)
    return counts


STAGES = (QualityStage.RATING, QualityStage.BINARY, QualityStage.PREFERENCE)
