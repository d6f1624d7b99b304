"""CxC runs and their pairs: intramodal pairs by indirect sampling (a Celery job), then
intermodal pairs from the highest-rated intramodal ones, and gold pairs with known ratings."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import Avg, Count, FloatField, Q
from django.db.models.functions import Cast

from annotation.errors import ServiceError
from annotation.flows.cxc.sampling_encoders import encoders_record, sampling_encoders_check
from annotation.flows.cxc.services.similarity_sources import (
    caption_similarity_rows,
    image_similarity_source,
)
from annotation.flows.cxc.settings import cxc_settings
from annotation.flows.cxc.vocabulary import CxcItemKind, CxcStage
from annotation.models import (
    Caption,
    Dataset,
    EventAction,
    GoldItemKind,
    Item,
    Job,
    Project,
    Run,
    RunKind,
    RunStatus,
)
from annotation.selectors.counting import counted
from annotation.services.events import event_record
from annotation.services.jobs.jobs import (
    job_create,
    job_fail,
    job_finishing,
    job_progress,
    job_start,
    job_succeed,
)
from annotation.services.runs.gold import PAPER, gold_source
from annotation.services.runs.runs import run_create, run_require_status, run_set_status
from pipeline.cxc import load_sis, load_sits, load_sts
from pipeline.cxc_sampling import (
    C2C_COCAPTION,
    C2C_ISIM,
    C2I_INTRASIM,
    C2I_ORIGINAL,
    I2I_CSIM,
    bin_histogram,
    binned_pairs,
    cocaption_pairs,
    pick,
)
from pipeline.eccv_embeddings import load_image_embeddings
from pipeline.errors import InputError

JOB_NAME = "cxc.sample"
STANDIN_PREFIX = "standin:"
# Which stage rates pairs of each sampling method.
STAGE_OF = {
    I2I_CSIM: CxcStage.SIS,
    C2C_ISIM: CxcStage.STS,
    C2C_COCAPTION: CxcStage.STS,
    C2I_INTRASIM: CxcStage.SITS,
    C2I_ORIGINAL: CxcStage.SITS,
}
METHODS_OF: defaultdict[str, list[str]] = defaultdict(list)
for _method, _stage in STAGE_OF.items():
    METHODS_OF[_stage].append(_method)


def cxc_run_create(
    *,
    dataset: Dataset,
    name: str = "",
    config: dict[str, Any] | None = None,
    project: Project | None = None,
    owner: Any = None,
) -> Run:
    return run_create(
        dataset=dataset,
        kind=RunKind.CXC,
        name=name,
        config=config or {},
        project=project,
        owner=owner,
    )


def standin_name(*, dim: int, seed: int) -> str:
    return f"{STANDIN_PREFIX}seeded-gaussian-{dim}d-seed{seed}"


def cxc_sample_start(
    *,
    run: Run,
    image_embeddings_path: str | None,
    standin: bool = False,
    encoder: dict[str, Any] | None = None,
    caption_encoder: dict[str, Any] | None = None,
) -> Job:
    """Check the request and enqueue the intramodal sampling job. Image similarity comes from
    the user's image embeddings (`.npz` with image_ids, image_embeddings), or, only when asked
    (`standin`), from a named stand-in: seeded random vectors, which make `c2c_isim` pairs
    random rather than image-similar (said in the manifest). Caption similarity never stands
    in for image similarity. `encoder` (from `cxc_sample_from_encoder`) names the image-text
    model whose stored set the path is; `caption_encoder` another model whose caption
    embeddings give the caption similarity. By default (run setting `sampling_encoders`,
    `different`) the two similarities come from different encoders, as CxC's: without
    `caption_encoder`, FastText trained on the dataset's captions; `joint` takes both from
    `encoder` and is recorded as a deviation."""
    from annotation.flows.cxc import tasks

    if run.kind != RunKind.CXC:
        raise InputError(f"run {run.pk} is a {run.kind} run, not cxc", field="run")
    run_require_status(run=run, allowed={RunStatus.CREATED, RunStatus.FAILED}, action="sample")
    if bool(image_embeddings_path) == bool(standin):
        raise InputError(
            "give image embeddings (.npz with image_ids and image_embeddings), or ask for the "
            "named stand-in explicitly (--standin-image-embeddings)",
            field="image_embeddings",
            page="give image embeddings (a .npz file with image_ids and image_embeddings), or "
            "ask for the named stand-in (seeded random image vectors) explicitly",
        )
    sampling_encoders_check(
        mode=cxc_settings(run).sampling_encoders, encoder=encoder, caption_encoder=caption_encoder
    )
    if image_embeddings_path:
        known = run.dataset.images.values_list("coco_id", flat=True)
        load_image_embeddings(image_embeddings_path, known_image_ids=list(known))  # check now
    source = image_embeddings_path or standin_name(dim=512, seed=cxc_settings(run).seed)
    with transaction.atomic():
        params: dict[str, Any] = {"image_embeddings": source}
        if encoder:
            params["encoder"] = encoder
        if caption_encoder:
            params["caption_encoder"] = caption_encoder
        job = job_create(name=JOB_NAME, run=run, params=params)
        run_set_status(run=run, status=RunStatus.PREPARING, job=job.pk)
        transaction.on_commit(lambda: tasks.cxc_sample_task.delay(job.pk))
    return job


def _examples(
    dataset: Dataset,
) -> tuple[list[int], list[int], list[list[int]], list[str], list[int]]:
    """Images with captions (by COCO id order): image pks, image COCO ids, caption pks per
    image, and every caption's text and COCO id in the order of the flattened caption pks."""
    rows = list(
        Caption.objects.filter(dataset=dataset)
        .order_by("image__coco_id", "coco_id")
        .values_list("image_id", "image__coco_id", "pk", "text", "coco_id")
    )
    image_pks: list[int] = []
    coco_ids: list[int] = []
    captions: list[list[int]] = []
    texts: list[str] = []
    caption_coco_ids: list[int] = []
    for image_pk, coco_id, caption_pk, text, caption_coco_id in rows:
        if not image_pks or image_pks[-1] != image_pk:
            image_pks.append(image_pk)
            coco_ids.append(coco_id)
            captions.append([])
        captions[-1].append(caption_pk)
        texts.append(text)
        caption_coco_ids.append(caption_coco_id)
    return image_pks, coco_ids, captions, texts, caption_coco_ids


def _image_vectors(source: str, coco_ids: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """One row per example and which examples have one."""
    if source.startswith(STANDIN_PREFIX):
        dim = int(source.split("-")[2].rstrip("d"))
        seed = int(source.rsplit("seed", 1)[1])
        # Keyed by COCO id, so an image keeps its vector whatever else is in the dataset.
        rows = np.stack(
            [np.random.default_rng([seed, c]).normal(size=dim) for c in coco_ids]
        ).astype(np.float32)
        return rows, np.ones(len(coco_ids), dtype=bool)
    ids, emb = load_image_embeddings(source, known_image_ids=coco_ids)
    row = {int(i): n for n, i in enumerate(ids)}
    out = np.zeros((len(coco_ids), emb.shape[1]), dtype=np.float32)
    has = np.zeros(len(coco_ids), dtype=bool)
    for n, coco in enumerate(coco_ids):
        if coco in row:
            out[n] = emb[row[coco]]
            has[n] = True
    return out, has


def cxc_sample_job(*, job_id: int) -> None:
    """The sampling job: caption representations (mean over co-captions of the image-text
    model's caption embeddings, or of FastText trained on the dataset's captions), image
    representations (the model's, the user's embeddings or the stand-in), then i2i_csim,
    c2c_isim and c2c_cocaption pairs as items. Safe to redeliver."""
    job = job_start(job_id=job_id, message="encoding captions")
    run = job.run
    assert run is not None
    try:
        result = _sample(run=run, job=job)
    except InputError as exc:
        job_fail(job_id=job_id, error=str(exc))
        run_set_status(run=run, status=RunStatus.FAILED, error=str(exc))
        return
    with job_finishing(job_id=job_id) as running:
        if running:  # not cancelled, not finished by another delivery
            run_set_status(run=run, status=RunStatus.PREPARED, job=job_id)
            job_succeed(job_id=job_id, result=result, message=_summary(result))


def _summary(result: dict[str, Any]) -> str:
    counts = result["pairs"]
    return ", ".join(f"{counts[m]} {m}" for m in counts) + " pairs"


def _sample(*, run: Run, job: Job) -> dict[str, Any]:
    settings = cxc_settings(run)
    seed = settings.seed
    image_pks, coco_ids, captions, texts, caption_coco_ids = _examples(run.dataset)
    if len(image_pks) < 2:
        raise InputError("the dataset needs at least two images with captions", field="dataset")
    encoder = job.params.get("encoder")
    mode = settings.sampling_encoders
    text_rows, caption_source = caption_similarity_rows(
        settings=settings,
        texts=texts,
        caption_ids=caption_coco_ids,
        counts=[len(c) for c in captions],
        encoder=encoder,
        caption_encoder=job.params.get("caption_encoder"),
        mode=mode,
    )
    job_progress(job_id=job.pk, progress=40, message="reading image embeddings")
    source = str(job.params["image_embeddings"])
    image_rows, has_image = _image_vectors(source, coco_ids)
    if has_image.sum() < 2:
        raise InputError(
            "fewer than two of the dataset's images have an image embedding",
            file=source,
            field="image_ids",
        )
    bins = settings.bins
    common: dict[str, Any] = {
        "neighbours": settings.neighbours,
        "random_per_example": settings.random_per_example,
        "bins": bins,
        "shares": settings.shares,
    }
    job_progress(job_id=job.pk, progress=60, message="sampling pairs")
    # Image pairs by caption similarity; caption pairs by image similarity (indirect).
    sis = binned_pairs(text_rows, n_pairs=settings.sis_pairs, seed=seed, **common)
    with_image = np.flatnonzero(has_image)
    sts = binned_pairs(image_rows[with_image], n_pairs=settings.sts_pairs, seed=seed + 1, **common)
    rng = np.random.default_rng(seed + 2)
    owner_of = {c: n for n, caps in enumerate(captions) for c in caps}
    items: list[Item] = []
    for p in sis:
        items.append(
            Item(
                run=run,
                kind=CxcItemKind.RATING_PAIR,
                positive_id=image_pks[p.i],
                negative_id=image_pks[p.j],
                tag=I2I_CSIM,
                similarity=p.similarity,
            )
        )
    for p in sts:
        i, j = int(with_image[p.i]), int(with_image[p.j])
        c1, c2 = pick(captions[i], rng), pick(captions[j], rng)
        items.append(_caption_pair(run, image_pks, owner_of, c1, c2, C2C_ISIM, p.similarity))
    cocap = cocaption_pairs(captions, n_pairs=settings.cocaption_pairs, seed=seed + 3)
    for c1, c2 in cocap:
        items.append(_caption_pair(run, image_pks, owner_of, c1, c2, C2C_COCAPTION, None))
    with transaction.atomic():
        # A redelivered job replaces what an earlier attempt wrote before it failed.
        Item.objects.filter(run=run, kind=CxcItemKind.RATING_PAIR, questions__isnull=True).filter(
            tag__in=(I2I_CSIM, C2C_ISIM, C2C_COCAPTION)
        ).delete()
        Item.objects.bulk_create(items, batch_size=5000)
    standin = source.startswith(STANDIN_PREFIX)
    image_source = image_similarity_source(source=source, encoder=encoder, standin=standin)
    return {
        "examples": len(image_pks),
        "examples_with_image_embedding": int(has_image.sum()),
        "image_embeddings": source,
        "image_embeddings_standin": standin,
        "standin_note": (
            "no image encoder is available here: image similarity is a seeded random stand-in, "
            "so c2c_isim pairs are random pairs, not image-similar ones"
            if standin
            else ""
        ),
        "text_encoder": caption_source["model"],
        # Which model gave each similarity, and which fell back to FastText (the manifest's).
        "similarity": {"image": image_source, "caption": caption_source},
        # Both encoders by name, whether they differ (CxC's rule) and what departs from CxC.
        **encoders_record(mode=mode, image=image_source, caption=caption_source),
        "pairs": {I2I_CSIM: len(sis), C2C_ISIM: len(sts), C2C_COCAPTION: len(cocap)},
        "bins": list(bins),
        "histogram": {
            I2I_CSIM: bin_histogram([p.similarity for p in sis], bins),
            C2C_ISIM: bin_histogram([p.similarity for p in sts], bins),
        },
    }


def _caption_pair(
    run: Run,
    image_pks: list[int],
    owner_of: dict[int, int],
    c1: int,
    c2: int,
    method: str,
    similarity: float | None,
) -> Item:
    return Item(
        run=run,
        kind=CxcItemKind.RATING_PAIR,
        positive_id=image_pks[owner_of[c1]],
        negative_id=image_pks[owner_of[c2]],
        caption_id=c1,
        caption2_id=c2,
        tag=method,
        similarity=similarity,
    )


def pair_means(*, run: Run, methods: tuple[str, ...]) -> list[tuple[Item, float, int]]:
    """Rated pairs of `methods` with their mean counted rating and number of ratings."""
    rated = Q(questions__answers__isnull=False) & counted("questions__answers__assignment__")
    rows = (
        Item.objects.filter(run=run, kind=CxcItemKind.RATING_PAIR, tag__in=methods)
        .annotate(
            n=Count("questions__answers", filter=rated),
            mean=Avg(Cast("questions__answers__label", FloatField()), filter=rated),
        )
        .filter(n__gt=0)
        .order_by("pk")
    )
    return [(item, float(item.mean), int(item.n)) for item in rows]


def cxc_intermodal_create(*, run: Run) -> int:
    """c2i_intrasim pairs from the highest-rated intramodal pairs (the image of one example
    with a caption of the other), and c2i_original pairs (an image with its own caption: all
    of them, or a seeded sample). Once per run; returns how many were made."""
    made_before = Item.objects.filter(
        run=run, kind=CxcItemKind.RATING_PAIR, tag__in=(C2I_INTRASIM, C2I_ORIGINAL)
    )
    if made_before.exists():  # gold pairs carry these tags too: only rating pairs count
        return 0
    settings = cxc_settings(run)
    seed = settings.seed
    rated = pair_means(run=run, methods=(I2I_CSIM, C2C_ISIM, C2C_COCAPTION))
    if not rated:
        raise ServiceError(
            f"run {run.pk} has no rated image-image or caption-caption pairs yet: rate them "
            "first (intermodal pairs come from the highest-rated ones)"
        )
    captions_of: dict[int, list[int]] = defaultdict(list)
    for pk, image in Caption.objects.filter(dataset=run.dataset).values_list("pk", "image_id"):
        captions_of[image].append(pk)
    rng = np.random.default_rng(seed + 4)
    made: set[tuple[int, int]] = set()
    items: list[Item] = []
    wanted = settings.intrasim_pairs
    # Highest mean first; ties by pk (stable).
    for item, mean, _n in sorted(rated, key=lambda r: (-r[1], r[0].pk)):
        if len(items) >= wanted:
            break
        a, b = item.positive_id, item.negative_id
        if a is None or b is None or a == b or not captions_of[b]:
            continue  # co-caption pairs share one image: no cross pair
        caption = item.caption2_id if item.caption2_id else pick(sorted(captions_of[b]), rng)
        key = (a, caption)
        if key in made:
            continue
        made.add(key)
        items.append(
            Item(
                run=run,
                kind=CxcItemKind.RATING_PAIR,
                positive_id=a,
                caption_id=caption,
                tag=C2I_INTRASIM,
                similarity=round(mean, 4),
                source=item,
            )
        )
    originals = sorted((image, caption) for image, caps in captions_of.items() for caption in caps)
    if settings.original_pairs != "all":
        size = min(int(settings.original_pairs), len(originals))
        take = rng.choice(len(originals), size=size, replace=False)
        originals = sorted({originals[int(t)] for t in take})
    items += [
        Item(run=run, kind=CxcItemKind.RATING_PAIR, positive_id=i, caption_id=c, tag=C2I_ORIGINAL)
        for i, c in originals
    ]
    Item.objects.bulk_create(items, batch_size=5000)
    event_record(
        action=EventAction.CXC_INTERMODAL_CREATED,
        run=run,
        data={"c2i_intrasim": len(items) - len(originals), "c2i_original": len(originals)},
    )
    return len(items)


def cxc_gold_note(*, run: Run) -> str:
    """What imported ratings are for in `run`: shown as gold only with gold_source "paper"."""
    if gold_source(run) == PAPER:
        return ""
    return (
        " (kept, not shown as gold: this run's gold are copies of pairs its own raters agreed "
        "on, gold_source 'established'; published ratings anyone can look up)"
    )


def cxc_gold_import(*, run: Run, path: str, stage: str) -> int:
    """Gold pairs with known ratings from a CxC file (sis, sts or sits, by `stage`): pairs of
    this dataset and their `agg_score`. Rows naming images or captions outside the dataset are
    skipped (a CxC file covers all of COCO); bad rows are an error naming the line. HITs show
    them only in a run whose `gold_source` is "paper" (`cxc_gold_note`)."""
    images = dict(run.dataset.images.values_list("coco_id", "pk"))
    captions = dict(Caption.objects.filter(dataset=run.dataset).values_list("coco_id", "pk"))
    owner = dict(Caption.objects.filter(dataset=run.dataset).values_list("pk", "image_id"))
    items: list[Item] = []
    if not Path(path).is_file():
        raise InputError("file does not exist", file=path, field="path")
    if stage == CxcStage.SIS:
        for r in load_sis(path):
            if r.image_id_1 in images and r.image_id_2 in images:
                items.append(
                    Item(
                        run=run,
                        kind=GoldItemKind.RATING,
                        positive_id=images[r.image_id_1],
                        negative_id=images[r.image_id_2],
                        tag=r.sampling_method,
                        target=r.score,
                    )
                )
    elif stage == CxcStage.STS:
        for sts in load_sts(path):
            if sts.caption_id_1 in captions and sts.caption_id_2 in captions:
                c1, c2 = captions[sts.caption_id_1], captions[sts.caption_id_2]
                items.append(
                    Item(
                        run=run,
                        kind=GoldItemKind.RATING,
                        positive_id=owner[c1],
                        negative_id=owner[c2],
                        caption_id=c1,
                        caption2_id=c2,
                        tag=sts.sampling_method,
                        target=sts.score,
                    )
                )
    elif stage == CxcStage.SITS:
        for sits in load_sits(path):
            if sits.image_id in images and sits.caption_id in captions:
                items.append(
                    Item(
                        run=run,
                        kind=GoldItemKind.RATING,
                        positive_id=images[sits.image_id],
                        caption_id=captions[sits.caption_id],
                        tag=sits.sampling_method,
                        target=sits.score,
                    )
                )
    else:
        raise InputError(f"must be one of {', '.join(METHODS_OF)}", field="stage")
    with transaction.atomic():
        Item.objects.filter(run=run, kind=GoldItemKind.RATING, tag__in=METHODS_OF[stage]).filter(
            questions__isnull=True
        ).delete()
        Item.objects.bulk_create(items)
        event_record(
            action=EventAction.CXC_GOLD_IMPORTED,
            run=run,
            data={"file": path, "stage": stage, "pairs": len(items)},
        )
    return len(items)
