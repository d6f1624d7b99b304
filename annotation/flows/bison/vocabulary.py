"""Values the BISON flow's modules share: its stages, item kinds and status words."""

from django.db import models

# What a run of the flow builds, and the paper it follows: the new-run chooser and the
# exports' metadata say it in these words.
SUMMARY = (
    "Binary image selection: each image is paired with its nearest neighbour by its "
    "captions' FastText vectors, workers pick a caption that describes one image but not "
    "the other, and two other workers verify each pick."
)
PAPER = (
    "Hu, H., Misra, I. and van der Maaten, L. Evaluating Text-to-Image Matching using "
    "Binary Image Selection (BISON). ICCV Workshops, 2019. arXiv:1901.06595"
)

# The stage-2 answer (and label) "None of the above captions are suitable".
NONE = "none"

# How stage-3 answers verify a triple: "unanimity" (the paper: every verifier picks the
# positive), "majority" (more than half do) or "dawid_skene" (EM over each verifier's
# confusion of positive/negative/both/neither; verified when "positive" is most likely).
AGGREGATIONS = ("unanimity", "majority", "dawid_skene")

# Stage 1's FastText epochs when trained on the captions alone: 5 epochs leave every image pair
# of the sample at cosine >= 0.99999 (neighbours decided by rounding); 50 give a median
# random-pair cosine of ~0.73.
DEFAULT_EPOCHS = 50

# The core's run statuses in BISON's words (the paper's stages: pairing, selection,
# verification), shown on its pages.
STATUS_WORDS = {
    "preparing": "pairing",
    "prepared": "paired",
    "collecting": "selecting",
    "collected": "selected",
    "collecting_2": "verifying",
    "collected_2": "verified",
}


class BisonStage(models.TextChoices):
    """BISON's crowd stages (stage 1, pairing, is the machine's)."""

    SELECTION = "bison_selection", "BISON stage 2: caption selection"
    VERIFICATION = "bison_verification", "BISON stage 3: verification"


class BisonItemKind(models.TextChoices):
    IMAGE_PAIR = "image_pair", "Image pair (positive, negative)"
    TRIPLE = "triple", "Query-positive-negative triple"


# Stage 3's answers as stored (a side is stored as the positive or the negative), in the order
# Dawid-Skene codes them and a trap's `Item.target` indexes them.
VERIFICATION_LABELS = ("positive", "negative", "both", "neither")
