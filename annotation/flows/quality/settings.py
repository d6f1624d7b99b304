"""A caption-quality run's settings, described for the new-run form, the API and the checks."""

from annotation.flows.quality.services.candidates import SCALES
from annotation.run_settings import CONSENT, GOLD_TOLERANCE, HOLD_FAST, SEED, Setting, gold_settings

SETTINGS = (
    Setting(
        "scale",
        "Rating scale",
        "The rating stage's scale: expert (Flickr8k-Expert's four points, Hodosh et al. 2013) "
        "or composite (Composite's five points of correspondence, Aditya et al.)",
        kind="choice",
        choices=tuple(SCALES),
        default="expert",
    ),
    Setting(
        "pairs_per_image",
        "Preference pairs per image",
        "Caption pairs per image for the preference stage, spread over the four categories",
        low=0,
        high=1000,
        unit="pairs",
        default=4,
    ),
    Setting(
        "adaptive",
        "Adaptive ratings",
        "Optional, the rating stage: a first batch of `start` ratings per caption, then "
        'follow-up batches ("More judgments") ask again only while a caption\'s 95 % interval '
        'is wider than `half_width` scale points either side, up to `cap`, e.g. {"start": 3, '
        '"cap": 7, "half_width": 0.5}',
        kind="object",
        advanced=True,
    ),
    Setting(
        "adaptive_preference",
        "Adaptive preferences",
        "Optional, the preference stage: a first batch of `start` judgments per pair, then "
        "follow-up rounds of `start` more only while the 95 % interval of the share preferring "
        "one caption contains one half and is wider than `half_width` either side, up to `cap`, "
        'e.g. {"start": 6, "cap": 48, "half_width": 0.15}',
        kind="object",
        advanced=True,
    ),
    GOLD_TOLERANCE,
    *gold_settings(categorical=True, ratings=True, agreement=0.8),
    HOLD_FAST,
    SEED,
    CONSENT,
)
