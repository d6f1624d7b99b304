"""Values the caption-quality flow's modules share: its stages, item kinds and status words."""

from django.db import models

# What a run of the flow builds, and the paper it follows: the new-run chooser and the
# exports' metadata say it in these words.
SUMMARY = (
    "People's judgments of candidate captions (ratings, yes/no answers and pairwise "
    "preferences), against which caption metrics such as CLIP-S and PAC-S are correlated."
)
PAPER = (
    "Hodosh, M., Young, P. and Hockenmaier, J. Framing Image Description as a Ranking "
    "Task: Data, Models and Evaluation Metrics. JAIR 47, 2013 (Flickr8k-Expert, "
    "Flickr8k-CF)"
)

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


SCALES = {
    # Flickr8k-Expert's four points (Hodosh et al. 2013), best first.
    "expert": (
        ("4", "Describes the image without any errors"),
        ("3", "Describes the image with minor errors"),
        ("2", "Is somewhat related to the image"),
        ("1", "Is unrelated to the image"),
    ),
    # Composite's 1-5 correspondence (Aditya et al.): 5 = fully consistent with the image.
    "composite": (
        ("5", "Fully matches the image"),
        ("4", "Matches the image with small errors"),
        ("3", "Partly matches the image"),
        ("2", "Barely matches the image"),
        ("1", "Does not match the image at all"),
    ),
}
