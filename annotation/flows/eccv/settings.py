"""An ECCV Caption run's settings, described for the new-run form, the API and the checks."""

from annotation.flows.eccv.vocabulary import AGGREGATIONS, GOLD_DEPTH
from annotation.run_settings import CONSENT, HOLD_FAST, SEED, Setting, gold_settings

SETTINGS = (
    Setting(
        "image_queries",
        "Image queries",
        "Images drawn as queries; each gets candidate captions from every model (the paper: "
        "1,261 of COCO's 5k test images)",
        low=1,
        high=1_000_000,
        unit="images",
        default=100,
    ),
    Setting(
        "caption_queries",
        "Caption queries",
        "Captions drawn as queries; each gets candidate images from every model",
        low=1,
        high=5_000_000,
        unit="captions",
        default=100,
    ),
    Setting(
        "k",
        "Candidates per model",
        "Top-k candidates each model proposes per query (the paper: 5)",
        low=1,
        high=GOLD_DEPTH,
        default=5,
    ),
    Setting(
        "models",
        "Models",
        "How many annotator models propose candidates (the paper: 5)",
        low=1,
        high=50,
        default=2,
    ),
    Setting(
        "judgments_per_pair",
        "Judgments per pair",
        "Workers who judge each candidate pair (the paper: 1); more are majority-voted",
        low=1,
        high=25,
        unit="workers",
        default=1,
    ),
    Setting(
        "aggregation",
        "Aggregation",
        "How judgments make a positive: majority (the paper's reading, ties positive), "
        "weighted_majority (by each worker's gold accuracy), dawid_skene (EM), posterior (with "
        "adaptive redundancy). Use majority: on the calibrated simulated crowd weighted "
        "majority equals it and dawid_skene gains 0.1 point of precision for 0.4 of recall "
        "(and does worse on weak crowds); docs/quality.md, 'The calibrated world'."
        " Dawid-Skene is no better than majority on the realistic crowd and 8-10 points worse"
        " with workers 60 % accurate (issue 48): prefer majority unless a calibration batch"
        " says otherwise.",
        kind="choice",
        choices=AGGREGATIONS,
        default="majority",
    ),
    Setting(
        "cxc_threshold",
        "CxC positive threshold",
        "CxC similarity at or above which a CxC pair counts as a positive (ECCV Caption: 3)",
        kind="number",
        low=0.0,
        high=5.0,
        unit="rating points",
        default=3.0,
    ),
    Setting(
        "image_query_set",
        "Image queries from a model's images",
        "Optional: the id of a stored embedding set of this dataset; image queries are drawn "
        "only from the images it encoded (every image-text model ranks every query, so an "
        "image it could not read cannot be a query)",
        low=1,
        high=2_147_483_647,
        advanced=True,
    ),
    Setting(
        "adaptive",
        "Adaptive redundancy",
        "Optional: ask for more judgments only where the posterior is unsure, e.g. "
        '{"start": 1, "cap": 3, "confidence": 0.9}',
        kind="object",
        advanced=True,
    ),
    *gold_settings(categorical=True, ratings=False),
    HOLD_FAST,
    SEED,
    CONSENT,
)
