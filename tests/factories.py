"""Test data builders: small COCO files, imported datasets, runs at each stage."""

from __future__ import annotations

import json
from pathlib import Path

from django.db import connection

# Captions chosen so that nearest neighbours are unambiguous: images come in topic pairs.
TOPICS = [
    (
        "dog",
        [
            "a brown dog runs on the grass",
            "a dog playing with a ball in a park",
            "the puppy chases a red ball",
            "a happy dog on green grass",
            "dog running outside",
        ],
    ),
    (
        "dog2",
        [
            "a black dog sleeps on a couch",
            "a dog lying on the sofa",
            "the puppy naps on a couch",
            "a sleepy dog indoors",
            "dog resting on furniture",
        ],
    ),
    (
        "pizza",
        [
            "a pizza with cheese and tomato",
            "a large pizza on a wooden table",
            "slices of pizza on a plate",
            "a cheesy pizza ready to eat",
            "pizza with pepperoni",
        ],
    ),
    (
        "pizza2",
        [
            "a man eating pizza at a table",
            "a person holding a slice of pizza",
            "someone takes a bite of pizza",
            "a guy with pizza in a restaurant",
            "eating pizza",
        ],
    ),
    (
        "train",
        [
            "a red train on the tracks",
            "a train pulling into the station",
            "a passenger train near a platform",
            "the locomotive on railway tracks",
            "train at a station",
        ],
    ),
    (
        "train2",
        [
            "a freight train crossing a bridge",
            "a long train on a bridge over a river",
            "train cars on a bridge",
            "a cargo train moving across a bridge",
            "train over water",
        ],
    ),
]


def coco_document(n_topics: int = 6, *, extra_images: int = 0) -> dict:
    images, annotations = [], []
    cid = 1000
    for i, (_name, caps) in enumerate(TOPICS[:n_topics]):
        image_id = 100 + i
        images.append(
            {
                "id": image_id,
                "file_name": f"COCO_val2014_{image_id:012d}.jpg",
                "coco_url": f"http://images.cocodataset.org/val2014/COCO_val2014_{image_id:012d}.jpg",
                "width": 64,
                "height": 48,
            }
        )
        for text in caps:
            annotations.append({"id": cid, "image_id": image_id, "caption": text})
            cid += 1
    for k in range(extra_images):
        images.append(
            {
                "id": 900 + k,
                "file_name": f"COCO_val2014_{900 + k:012d}.jpg",
                "coco_url": "",
                "width": 64,
                "height": 48,
            }
        )
    return {
        "info": {"description": "test"},
        "images": images,
        "annotations": annotations,
        "licenses": [],
    }


def write_coco(path: Path, document: dict | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(document if document is not None else coco_document()))
    return path


def placeholder_images(folder: Path, ids: range | list[int] = range(100, 112)) -> Path:
    """Small JPEGs named like COCO files, each a different colour."""
    from PIL import Image as PILImage

    folder.mkdir(parents=True, exist_ok=True)
    for n, image_id in enumerate(ids):
        colour = ((n * 67) % 256, (n * 131) % 256, (n * 29 + 80) % 256)
        PILImage.new("RGB", (64, 48), colour).save(folder / f"COCO_val2014_{image_id:012d}.jpg")
    return folder


def dataset_factory(
    tmp_path: Path,
    *,
    image_dir: Path | None = None,
    document: dict | None = None,
    name: str = "toy",
):
    from annotation.services.datasets.datasets import dataset_import

    path = write_coco(tmp_path / f"{name}.json", document)
    if image_dir is None:
        return dataset_import(path=path, name=name).dataset
    return dataset_import(
        path=path, name=name, image_source="local_dir", image_location=str(image_dir)
    ).dataset


def paired_run_factory(dataset, *, run_on_commit, seed: int = 0, verifiers: int = 2):
    """A run whose stage 1 has finished (tasks in-process)."""
    from django.conf import settings

    from annotation.flows.bison.services.pairing import pairing_start
    from annotation.models import Run
    from annotation.services.runs.runs import run_create

    run = run_create(dataset=dataset, config={"seed": seed, "verifiers": verifiers})
    # Vectors with known neighbours (three mutual edges): six ordered pairs, both orders.
    Path(settings.MEDIA_ROOT).mkdir(parents=True, exist_ok=True)
    vectors = topic_vectors_file(Path(settings.MEDIA_ROOT) / "topics.vec")
    run_on_commit(pairing_start, run=run, vectors_path=str(vectors), seed=seed)
    return Run.objects.get(pk=run.pk)


def selection_done_factory(run, *, workers: int = 2, accuracy: float = 1.0, seed: int = 0):
    """Stage 2 published to simulated workers and completed."""
    from annotation.crowd.simulated.crowd import simulate_crowd
    from annotation.services.runs.batches import batch_create, batch_publish
    from pipeline.simulate import WorkerProfile

    batch = batch_publish(
        batch=batch_create(
            run=run, stage="bison_selection", provider="simulated", items_per_hit=3, seed=seed
        )
    )
    simulate_crowd(
        batch=batch, workers=workers, profile=WorkerProfile(accuracy=accuracy), seed=seed
    )
    return batch


def verify_every_hit(batch, picks, *, after_first=None):
    """Answer every HIT of a BISON stage-3 batch, one worker per role in `picks` (role ->
    answer for a question) per HIT. Nobody may take two HITs showing one image (issue 25), so
    a role is played by a fresh worker per HIT ("v1", "v1-2", ...); with as many roles as
    workers per HIT, each HIT is full before the next one is claimed. `after_first` runs once
    the first role answered the first HIT. Returns the assignments."""
    from annotation.services.work.claim import assignment_claim_next
    from annotation.services.work.submit import assignment_submit
    from annotation.services.work.worker_identity import worker_get_or_create

    assert len(picks) == batch.assignments_per_hit
    done = []
    for n in range(batch.hits.count()):
        for role, pick in picks.items():
            name = role if n == 0 else f"{role}-{n + 1}"
            worker = worker_get_or_create(provider=batch.provider, external_id=name)
            assignment = assignment_claim_next(batch=batch, worker=worker)
            assert assignment.hit.position == n  # the HIT before is full
            questions = assignment.hit.questions.select_related("item")
            answers = {f"q{q.position}": pick(q) for q in questions}
            assignment_submit(assignment_id=assignment.pk, worker=worker, answers=answers)
            done.append(assignment)
            if after_first is not None and len(done) == 1:
                after_first()
    return done


def database_name() -> str:
    return connection.settings_dict["NAME"]


def topic_vectors_file(path: Path, *, dim: int = 12) -> Path:
    """A .vec file in which the two images of each topic pair share a direction, so the
    nearest neighbour of every toy image is known: 100<->101, 102<->103, 104<->105."""
    import numpy as np

    from pipeline.text import tokenize

    owners: dict[str, set[int]] = {}
    for i, (_, caps) in enumerate(TOPICS):
        for text in caps:
            for token in tokenize(text):
                owners.setdefault(token, set()).add(i)
    rows = []
    for token, images in sorted(owners.items()):
        groups = {i // 2 for i in images}
        vec = np.zeros(dim, dtype=np.float32)
        if len(groups) == 1:
            vec[groups.pop()] = 1.0
            for i in images:
                vec[3 + i] = 0.3
        rows.append(token + " " + " ".join(f"{v:.4f}" for v in vec))
    path.write_text(f"{len(rows)} {dim}\n" + "\n".join(rows) + "\n")
    return path


def invited(run, label: str = "worker"):
    """An invitation to `run` whose holder has accepted the current consent text."""
    from annotation.crowd.local.invitations import invitation_consent, invitations_create
    from annotation.selectors.work.invitations import run_consent

    invitation = invitations_create(run=run, labels=[label])[0]
    return invitation_consent(invitation=invitation, version=run_consent(run)["version"])


def join(client, run, label: str = "worker"):
    """Open `label`'s invitation link in Django's test `client`; returns the worker."""
    invitation = invited(run, label)
    response = client.get(f"/join/{invitation.token}/")
    assert response.status_code == 200, response.content
    return invitation.worker
