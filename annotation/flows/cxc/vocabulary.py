"""Values the Crisscrossed Captions flow's modules share: its stages, item kinds and status words."""

from django.db import models

# The core's run statuses in CxC's words: pairs are sampled, workers rate them.
STATUS_WORDS = {
    "preparing": "sampling",
    "prepared": "sampled",
    "collecting": "rating",
    "collected": "rated",
}


class CxcStage(models.TextChoices):
    SIS = "cxc_sis", "CxC: image-image similarity"
    STS = "cxc_sts", "CxC: caption-caption similarity"
    SITS = "cxc_sits", "CxC: image-caption similarity"


class CxcItemKind(models.TextChoices):
    """Besides its gold items (the core's `GoldItemKind.RATING`)."""

    RATING_PAIR = (
        "rating_pair",
        "A pair to rate (CxC: image-image, caption-caption, image-caption)",
    )
