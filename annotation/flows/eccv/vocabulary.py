"""Values the ECCV Caption flow's modules share: its stages, item kinds and status words."""

from django.db import models

# How a pair's judgments decide its side (the run setting `aggregation`).
AGGREGATIONS = ("majority", "weighted_majority", "dawid_skene", "posterior")
GOLD_DEPTH = 25  # gold negatives are in no model's top-25 (paper, 3.2)
# What a run of the flow builds, and the paper it follows: the new-run chooser and the
# exports' metadata say it in these words.
SUMMARY = (
    "Machine-and-human-verified image-caption associations: retrieval models propose each"
    ' query\'s top captions and images, and workers judge each pair from "100% YES" to '
    '"100% NO", with gold pairs in every HIT.'
)
PAPER = (
    "Chun, S., Kim, W., Park, S., Chang, M. and Oh, S. J. ECCV Caption: Correcting False "
    "Negatives by Collecting Machine-and-Human-verified Image-Caption Associations for "
    "MS-COCO. ECCV, 2022. arXiv:2204.03359"
)

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
