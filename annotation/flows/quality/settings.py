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
    GOLD_TOLERANCE,
    *gold_settings(categorical=True, ratings=True, agreement=0.8),
    HOLD_FAST,
    SEED,
    CONSENT,
)
