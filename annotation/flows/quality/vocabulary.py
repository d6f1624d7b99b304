"""Values the caption-quality flow's modules share: its stages, item kinds and status words."""

from django.db import models

# The core's run statuses in the caption-quality flow's words: workers judge captions.
STATUS_WORDS = {
    "collecting": "judging",
    "collected": "judged",
}


class QualityStage(models.TextChoices):
    RATING = "quality_rating", "Caption quality: rating"
    BINARY = "quality_binary", "Caption quality: does it describe the image?"
    PREFERENCE = "quality_preference", "Caption quality: which of two captions"


class QualityItemKind(models.TextChoices):
    """Besides its gold items (the core's `GoldItemKind`s)."""

    CANDIDATE_CAPTION = "candidate_caption", "A candidate caption for an image"
    CANDIDATE_PAIR = "candidate_pair", "Two candidate captions for one image"
