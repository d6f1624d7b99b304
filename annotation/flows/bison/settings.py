"""A BISON run's settings, described for the new-run form, the API and the checks, and the
typed object a BISON run's config reads as (`run_settings(run, BisonSettings)`)."""

from __future__ import annotations

from dataclasses import dataclass

from annotation.flows.bison.vocabulary import AGGREGATIONS
from annotation.run_settings import CONSENT, HOLD_FAST, SEED, RunSettings, Setting, declared

DEFAULT_AGGREGATION = "unanimity"  # the paper's

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
        default=DEFAULT_AGGREGATION,
        # Left out of a new run's config unless chosen (the datasheet then says "the flow's
        # default rule"): read as None, the default rule (`aggregation_rule`).
        filled=False,
        absent=None,
    ),
    HOLD_FAST,
    SEED,
    CONSENT,
)

# Recorded, not chosen on the form.
SPLIT = Setting(
    "split",
    "COCO split",
    "The COCO split the export's info names when the dataset names none (default val2014)",
    kind="text",
)


@dataclass(frozen=True)
class BisonSettings(RunSettings):
    DECLARED = declared(SETTINGS, (SPLIT,))

    verifiers: int
    aggregation: str | None  # None: not chosen, the default rule
    split: str | None

    @property
    def aggregation_rule(self) -> str:
        """How stage-3 answers verify a triple: the chosen rule, else the default one."""
        return self.aggregation or DEFAULT_AGGREGATION

    @property
    def aggregation_chosen(self) -> str | None:
        return self.aggregation
