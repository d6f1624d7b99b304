"""A BISON run's settings, described for the new-run form, the API and the checks."""

from annotation.flows.bison.vocabulary import AGGREGATIONS
from annotation.run_settings import CONSENT, HOLD_FAST, SEED, Setting

SETTINGS = (
    Setting(
        "verifiers",
        "Verifiers per triple",
        "Stage 3: how many different workers verify each triple (the paper: 2, from a pool "
        "disjoint from stage 2's)",
        low=1,
        high=10,
        unit="workers",
        default=2,
    ),
    Setting(
        "aggregation",
        "Verification rule",
        "How stage-3 answers verify a triple: unanimity (the paper: every verifier picks the "
        "true image), majority (more than half do) or dawid_skene (EM over each verifier's "
        "confusion). Use unanimity: on the calibrated simulated crowd it verifies at 94.8 % "
        "precision, the rest are captions that also fit the other image, an error verifiers "
        "share (docs/quality.md, 'The calibrated world')."
        " Dawid-Skene is no better than majority on the realistic crowd and 8-10 points worse"
        " with workers 60 % accurate (issue 48): prefer majority unless a calibration batch"
        " says otherwise.",
        kind="choice",
        choices=AGGREGATIONS,
        default="unanimity",
    ),
    HOLD_FAST,
    SEED,
    CONSENT,
)
