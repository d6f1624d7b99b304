"""Values the Crisscrossed Captions flow's modules share: its stages, item kinds and status words."""

from django.db import models

# What a run of the flow builds, and the paper it follows: the new-run chooser and the
# exports' metadata say it in these words.
SUMMARY = (
    "Graded 0-5 similarity ratings of image-image, caption-caption and image-caption "
    "pairs, the pairs chosen by indirect sampling across the two modalities."
)
PAPER = (
    "Parekh, Z., Baldridge, J., Cer, D., Waters, A. and Yang, Y. Crisscrossed Captions: "
    "Extended Intramodal and Intermodal Semantic Similarity Judgments for MS-COCO. EACL, "
    "2021. arXiv:2004.15020"
)

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
