"""Values the ECCV Caption flow's modules share: its stages, item kinds and status words."""

from django.db import models

# How a pair's judgments decide its side (the run setting `aggregation`).
AGGREGATIONS = ("majority", "weighted_majority", "dawid_skene", "posterior")
GOLD_DEPTH = 25  # gold negatives are in no model's top-25 (paper, 3.2)

# The core's run statuses in ECCV's words: models propose, workers judge.
STATUS_WORDS = {
    "preparing": "proposing",
    "prepared": "proposed",
    "collecting": "judging",
    "collected": "judged",
}


class EccvStage(models.TextChoices):
    JUDGMENT = "eccv_judgment", "ECCV Caption: image-caption judgments"


class EccvItemKind(models.TextChoices):
    """Besides its gold items (the core's `GoldItemKind.POSITIVE` and `NEGATIVE`)."""

    CANDIDATE = "candidate", "Image-caption pair proposed by models"
