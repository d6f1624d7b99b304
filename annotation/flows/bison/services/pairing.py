"""BISON stage 1: pair every image with its FastText nearest neighbour, in both orders.

The job runs as a `prepare` task (tokenise, load or train vectors, average per image, save
the matrix) followed by one subtask per block of query images, so more Celery workers
finish it sooner. Each block stores both orders of its images' nearest-neighbour edges (the
paper's 67,564 ordered pairs = 2 x 33,782 edges); the last block to finish counts edges and
mutual pairs and checks that the vector space is not degenerate.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.db import transaction

from annotation.flows.bison.vocabulary import DEFAULT_EPOCHS, BisonItemKind
from annotation.models import Caption, Image, Item, Job, Run, RunStatus
from annotation.services.checks import check_int
from annotation.services.jobs.jobs import (
    LIVE,
    job_create,
    job_fail,
    job_finishing,
    job_part_done,
    job_parts_set,
    job_progress,
    job_start,
    job_succeed,
)
from annotation.services.runs.runs import run_require_status, run_set_status
from pipeline.embeddings import WordVectors, image_embeddings, load_word_vectors, train_word_vectors
from pipeline.errors import InputError
from pipeline.neighbours import nearest_neighbours, normalize_rows
from pipeline.pairing import cosine_summary, pairs_both_orders
from pipeline.text import tokenize

JOB_NAME = "bison.pairing"


def _workdir(run: Run) -> Path:
    path = Path(settings.MEDIA_ROOT) / "runs" / str(run.pk) / "pairing"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _vec_header_dim(path: Path) -> int | None:
    """Dimension from a .vec header, read cheaply so a mismatch is refused before the job."""
    if path.suffix != ".vec":
        return None
    with path.open("rb") as fh:
        head = fh.readline().split()
    if len(head) != 2 or not all(p.isdigit() for p in head):
        raise InputError(
            "not a FastText .vec file: the first line must be '<words> <dimension>'",
            file=str(path),
            record="line 1",
            field="header",
        )
    return int(head[1])


def _previous_dim(run: Run) -> tuple[int, int] | None:
    prev = (
        Run.objects.filter(dataset=run.dataset, embedding_dim__isnull=False)
        .order_by("-pk")
        .values_list("pk", "embedding_dim")
        .first()
    )
    return (prev[0], prev[1]) if prev is not None and prev[1] is not None else None


def _check_dim(*, run: Run, dim: int, file: str, allow_new_dim: bool) -> None:
    prev = _previous_dim(run)
    if prev is not None and prev[1] != dim and not allow_new_dim:
        differs = f"vectors have dimension {dim}, but run {prev[0]} on this dataset used {prev[1]}"
        raise InputError(
            f"{differs}; use vectors of the same dimension or pass allow_new_dim "
            "(--new-embedding-space)",
            file=file,
            field="dimension",
            page=f"{differs}; use vectors of the same dimension (a new embedding space is "
            "started through the API or the command line)",
        )


def pairing_start(
    *,
    run: Run,
    vectors_path: str | None = None,
    dim: int = 100,
    epochs: int = DEFAULT_EPOCHS,
    seed: int = 0,
    block_size: int | None = None,
    allow_new_dim: bool = False,
) -> Job:
    """Validate the request and enqueue stage 1 for `run`."""
    from annotation.flows.bison import tasks  # tasks import services: import here

    run_require_status(
        run=run, allowed={RunStatus.CREATED, RunStatus.FAILED}, action="start stage 1"
    )
    # Checked here for every caller (CLI, API, demo): gensim takes a 32-bit seed.
    check_int({"dim": dim}, "dim", low=2, high=2048)
    check_int({"epochs": epochs}, "epochs", low=1, high=500)
    check_int({"seed": seed}, "seed", low=0, high=2**32 - 1)
    if block_size is not None:
        check_int({"block_size": block_size}, "block_size", low=1, high=1_000_000)
    if vectors_path is not None:
        path = Path(vectors_path)
        if not path.is_file():
            raise InputError("vectors file does not exist", file=vectors_path)
        if path.suffix not in {".vec", ".bin"}:
            raise InputError(
                "expected a FastText .vec (text) or .bin (binary) file", file=vectors_path
            )
        header_dim = _vec_header_dim(path)
        if header_dim is not None:
            _check_dim(run=run, dim=header_dim, file=vectors_path, allow_new_dim=allow_new_dim)
    else:
        _check_dim(run=run, dim=dim, file="(trained vectors)", allow_new_dim=allow_new_dim)
    params = {
        "vectors_path": vectors_path,
        "dim": dim,
        "epochs": epochs,
        "seed": seed,
        "block_size": block_size or settings.CROWDVL_STAGE1_BLOCK,
        "allow_new_dim": allow_new_dim,
    }
    with transaction.atomic():
        # Again under the run's lock: a double POST (two requests, each with the run read
        # before the other's job) must start one job (issue 46).
        run.status = Run.objects.select_for_update().values_list("status", flat=True).get(pk=run.pk)
        run_require_status(
            run=run, allowed={RunStatus.CREATED, RunStatus.FAILED}, action="start stage 1"
        )
        if run.status == RunStatus.FAILED and not run.batches.exists():
            # A failed or cancelled attempt's blocks may have written pairs (maybe from other
            # vectors): a restart starts from none, so no pair of two attempts mixes.
            Item.objects.filter(run=run, kind=BisonItemKind.IMAGE_PAIR).delete()
        job = job_create(name=JOB_NAME, run=run, params=params)
        run_set_status(run=run, status=RunStatus.PREPARING, job=job.pk)
        transaction.on_commit(lambda: tasks.pairing_prepare_task.delay(job.pk))
    return job


def _load_or_train(*, job: Job, dataset: Any) -> WordVectors:
    p = job.params
    if p["vectors_path"]:
        job_progress(job_id=job.pk, progress=2, message=f"loading vectors {p['vectors_path']}")
        return load_word_vectors(p["vectors_path"])
    # Training reads the corpus several times, so it is held: one sentence per caption.
    sentences = [
        tokenize(text)
        for text in Caption.objects.filter(dataset=dataset)
        .order_by("pk")
        .values_list("text", flat=True)
    ]
    job_progress(
        job_id=job.pk,
        progress=2,
        message=f"training FastText on {len(sentences)} captions (dim {p['dim']}, seed {p['seed']})",
    )
    return train_word_vectors(sentences, dim=p["dim"], epochs=p["epochs"], seed=p["seed"])


IMAGE_CHUNK = 20_000


def _image_matrix(
    *, dataset: Any, images: list[int], vectors: WordVectors
) -> tuple[np.ndarray, np.ndarray]:
    """Each image's mean caption-word vector, `IMAGE_CHUNK` images at a time (their captions'
    tokens in caption order), so memory is the matrix, not every caption's tokens."""
    matrix = np.zeros((len(images), vectors.dim), dtype=np.float32)
    valid = np.zeros(len(images), dtype=bool)
    for first in range(0, len(images), IMAGE_CHUNK):
        chunk = images[first : first + IMAGE_CHUNK]
        index = {pk: i for i, pk in enumerate(chunk)}
        groups: list[list[str]] = [[] for _ in chunk]
        for image_pk, text in (
            Caption.objects.filter(dataset=dataset, image_id__gte=chunk[0], image_id__lte=chunk[-1])
            .order_by("pk")
            .values_list("image_id", "text")
        ):
            groups[index[image_pk]].extend(tokenize(text))
        rows, has_word = image_embeddings(groups, vectors)
        matrix[first : first + len(chunk)] = rows
        valid[first : first + len(chunk)] = has_word
    return matrix, valid


def _save_atomic(path: Path, array: np.ndarray) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as f:
        np.save(f, array)
    os.replace(tmp, path)


def similarity_rows(*, images: int) -> int:
    """Query rows per similarity product: 2,048 (val2014's 40,504 images fit that in 512 MB),
    fewer as the dataset grows, so a worker's memory is the image matrix plus
    CROWDVL_STAGE1_MEMORY_MB."""
    budget = settings.CROWDVL_STAGE1_MEMORY_MB * 1024 * 1024
    return max(16, min(2048, budget // (4 * max(images, 1))))


def pairing_block_args(job: Job, part: int) -> list[int]:
    """A block's (part, start, stop), for recovery re-sending a lost block."""
    size, images = int(job.params["block_size"]), int(job.result["images"])
    return [part, part * size, min((part + 1) * size, images)]


def pairing_prepare(*, job_id: int) -> list[tuple[int, int, int]]:
    """Build the image matrix; return the (part, start, stop) blocks still to compute."""
    job = Job.objects.select_related("run").get(pk=job_id)
    run = job.run
    assert run is not None
    if job.parts_total:  # a redelivered or resumed prepare: the blocks were sent already
        return []
    try:
        job_start(job_id=job_id, message="reading captions")
        images = list(run.dataset.images.order_by("pk").values_list("pk", flat=True))
        vectors = _load_or_train(job=job, dataset=run.dataset)
        _check_dim(
            run=run,
            dim=vectors.dim,
            file=job.params["vectors_path"] or "(trained vectors)",
            allow_new_dim=job.params["allow_new_dim"],
        )
        job_progress(
            job_id=job_id, progress=5, message=f"averaging vectors of {len(images)} images"
        )
        matrix, valid = _image_matrix(dataset=run.dataset, images=images, vectors=vectors)
        unit = normalize_rows(matrix)
        workdir = _workdir(run)
        # Whole files renamed into place: a resumed prepare may rewrite them while blocks read.
        _save_atomic(workdir / "unit.npy", unit)
        _save_atomic(workdir / "valid.npy", valid)
        _save_atomic(workdir / "image_pks.npy", np.asarray(images, dtype=np.int64))
        Run.objects.filter(pk=run.pk).update(
            embedding_dim=vectors.dim, embedding_source=vectors.source[:500]
        )
        size = int(job.params["block_size"])
        blocks = [
            (i, start, min(start + size, len(images)))
            for i, start in enumerate(range(0, len(images), size))
        ]
        if not blocks:
            pairing_fail(job_id=job_id, error=f"dataset {run.dataset.name!r} has no images to pair")
            return []
        if not job_parts_set(job_id=job_id, total=len(blocks)):
            return []  # an earlier delivery of this step split the work and sent the blocks
        Job.objects.filter(pk=job_id).update(
            result={
                "images": len(images),
                "images_without_known_words": int((~valid).sum()),
                "dimension": vectors.dim,
                "vectors": vectors.source,
            }
        )
        job_progress(
            job_id=job_id, progress=10, message=f"searching neighbours in {len(blocks)} blocks"
        )
        return blocks
    except (InputError, OSError, ValueError) as exc:
        pairing_fail(job_id=job_id, error=str(exc))
        return []


def _nn_file(workdir: Path, part: int) -> Path:
    return workdir / f"nn-{part:05d}.npz"


def pairing_block(*, job_id: int, part: int, start: int, stop: int) -> bool:
    """Compute and store the pairs of one block of query images: each image with its nearest
    neighbour, in both orders. Safe to retry."""
    job = Job.objects.select_related("run").get(pk=job_id)
    run = job.run
    assert run is not None
    if part in job.parts_done:  # a redelivered or re-sent block
        return False
    workdir = _workdir(run)
    unit = np.load(workdir / "unit.npy", mmap_mode="r")
    valid = np.load(workdir / "valid.npy")
    pks = np.load(workdir / "image_pks.npy")
    idx, sims = nearest_neighbours(
        np.asarray(unit),
        start=start,
        stop=stop,
        valid=valid,
        block_size=similarity_rows(images=len(pks)),
    )
    # Kept for pairing_finish (edges, mutual pairs, cosines); written whole, then renamed.
    tmp = workdir / f"nn-{part:05d}.tmp.npz"
    np.savez(tmp, start=np.int64(start), idx=idx, sims=sims)
    tmp.replace(_nn_file(workdir, part))
    rows = []
    for i, (j, s) in enumerate(zip(idx, sims, strict=True)):
        if j < 0:
            continue
        a, b = int(pks[start + i]), int(pks[j])
        rows.append(
            Item(
                run=run,
                kind=BisonItemKind.IMAGE_PAIR,
                positive_id=a,
                negative_id=b,
                similarity=float(s),
            )
        )
        rows.append(
            Item(
                run=run,
                kind=BisonItemKind.IMAGE_PAIR,
                positive_id=b,
                negative_id=a,
                similarity=float(s),
            )
        )
    # The conditional unique constraint (run, positive, negative) drops the second copy of a
    # mutual edge, and makes a retried block insert nothing twice. Rows go in key order, so
    # blocks inserting the two orders of one edge at once wait for each other, never deadlock.
    rows.sort(key=lambda item: (item.positive_id, item.negative_id))
    Item.objects.bulk_create(rows, batch_size=5000, ignore_conflicts=True)
    last = job_part_done(
        job_id=job_id, part=part, message=f"block {part} done (images {start}-{stop - 1})"
    )
    if last:
        pairing_finish(job_id=job_id)
    return last


def pairing_finish(*, job_id: int) -> None:
    job = Job.objects.select_related("run").get(pk=job_id)
    run = job.run
    assert run is not None
    workdir = _workdir(run)
    unit = np.load(workdir / "unit.npy", mmap_mode="r")
    valid = np.load(workdir / "valid.npy")
    parts = [np.load(_nn_file(workdir, part)) for part in range(job.parts_total)]
    parts.sort(key=lambda f: int(f["start"]))
    nn = np.concatenate([f["idx"] for f in parts]) if parts else np.zeros(0, np.int64)
    sims = np.concatenate([f["sims"] for f in parts]) if parts else np.zeros(0)
    graph = pairs_both_orders(nn)
    cosines = cosine_summary(np.asarray(unit), sims[nn >= 0], valid=valid, seed=run.pk)
    pairs = Item.objects.filter(run=run, kind=BisonItemKind.IMAGE_PAIR).count()
    result: dict[str, Any] = {
        **job.result,
        "pairs": pairs,
        "edges": graph.edges,
        "mutual_edges": graph.mutual,
        "cosines": cosines.as_dict(),
    }
    warning = cosines.warning()
    if warning:
        result["warning"] = warning
    if pairs == 0:
        pairing_fail(
            job_id=job_id,
            error="stage 1 found no pairs: no image has a vector (do the vectors cover the "
            "captions' words?)",
        )
        return
    message = f"{pairs} ordered pairs from {graph.edges} edges ({graph.mutual} mutual)"
    with job_finishing(job_id=job_id) as running:
        if not running:  # finished by another delivery of this step, or cancelled
            return
        run_set_status(run=run, status=RunStatus.PREPARED, pairs=pairs, edges=graph.edges)
        job_succeed(
            job_id=job_id, result=result, message=message + (f"; {warning}" if warning else "")
        )


def pairing_fail(*, job_id: int, error: str) -> None:
    job = Job.objects.select_related("run").get(pk=job_id)
    if job.state not in LIVE:  # a late step of a cancelled or finished job changes nothing
        return
    job_fail(job_id=job_id, error=error)
    if job.run is not None:
        run_set_status(run=job.run, status=RunStatus.FAILED, error=error)


__all__ = ["Image", "pairing_block", "pairing_prepare", "pairing_start"]
