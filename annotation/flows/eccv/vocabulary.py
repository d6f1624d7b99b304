"""Values the ECCV Caption flow's modules share: its stages, item kinds and status words."""

from django.db import models

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
