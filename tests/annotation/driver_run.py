"""A paired BISON run on whatever database Django is set up for, for the drivers that tests run
in their own processes (pg_restart_driver.py, embedded_driver.py)."""

import json
import tempfile
from pathlib import Path

import numpy as np
from django.conf import settings
from django.core.management import call_command
from PIL import Image as PILImage


def paired_run(*, images: int, name: str):
    """Migrate, import `images` one-caption images with random word vectors, and run stage 1
    in-process (done on return)."""
    from annotation.flows.bison.services.pairing import pairing_start
    from annotation.models import ImageSource
    from annotation.services.datasets.datasets import dataset_import
    from annotation.services.runs.runs import run_create

    call_command("migrate", verbosity=0)
    folder = Path(tempfile.mkdtemp())
    # The pictures on this machine, where the server reads a local folder's: the batch's
    # caching job then never leaves it (with made-up URLs it resolved one name per image, out to
    # the internet, or with no network waiting on the resolver: 19 s of a 120-image setup).
    pictures = Path(settings.CROWDVL_IMPORT_DIR) / f"{name}-images"
    pictures.mkdir(parents=True, exist_ok=True)
    colours = np.random.default_rng(5).integers(0, 256, size=(images, 3))
    for i, colour in enumerate(colours):
        PILImage.new("RGB", (32, 24), tuple(int(c) for c in colour)).save(pictures / f"{1 + i}.jpg")
    words = [f"w{i}" for i in range(images)]
    document = {
        "info": {},
        "licenses": [],
        "images": [{"id": 1 + i, "file_name": f"{1 + i}.jpg"} for i in range(images)],
        "annotations": [
            {"id": 5000 + i, "image_id": 1 + i, "caption": f"a {w}"} for i, w in enumerate(words)
        ],
    }
    (folder / "c.json").write_text(json.dumps(document))
    vectors = np.random.default_rng(3).standard_normal((images, 8))
    lines = [f"{images} 8"] + [
        w + " " + " ".join(f"{v:.4f}" for v in row) for w, row in zip(words, vectors, strict=True)
    ]
    (folder / "v.vec").write_text("\n".join(lines) + "\n")
    imported = dataset_import(
        path=folder / "c.json",
        name=name,
        image_source=ImageSource.LOCAL_DIR,
        image_location=str(pictures),
    )
    run = run_create(dataset=imported.dataset)
    pairing_start(run=run, vectors_path=str(folder / "v.vec"))
    return run


def submitted_and_partial(batch_id: int) -> tuple[int, int]:
    """The batch's submitted assignments, and how many of them lack an answer to a question."""
    from django.db.models import Count, F

    from annotation.models import Assignment, AssignmentState

    done = Assignment.objects.filter(hit__batch_id=batch_id, state=AssignmentState.SUBMITTED)
    partial = (
        done.annotate(
            n_answers=Count("answers", distinct=True),
            questions=Count("hit__questions", distinct=True),
        )
        .exclude(n_answers=F("questions"))
        .count()
    )
    return done.count(), partial
