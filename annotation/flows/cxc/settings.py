"""A CxC run's settings: how many pairs of each sampling method, the bins they are drawn from,
where gold comes from and its tolerance, described for the new-run form, the API and the
checks; and the typed object a CxC run's config reads as (`cxc_settings(run)`), checked in
its ranges and across settings (bins and shares, the `adaptive` object; InputError names the
field)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from annotation.flows.cxc.sampling_encoders import CHOICES, DIFFERENT
from annotation.run_settings import (
    CONSENT,
    GOLD_TOLERANCE,
    HOLD_FAST,
    SEED,
    RunSettings,
    Setting,
    declared,
    gold_settings,
)
from pipeline.cxc_bins import DEFAULT_BINS, DEFAULT_SHARES
from pipeline.errors import InputError

if TYPE_CHECKING:
    from annotation.models import Run

MAX_PAIRS = 10_000_000


def _pairs(key: str, label: str, method: str, default: int) -> Setting:
    return Setting(
        key,
        label,
        f"How many {method} pairs the sampling job draws",
        low=0,
        high=MAX_PAIRS,
        unit="pairs",
        default=default,
    )


SETTINGS = (
    _pairs("sis_pairs", "Image-image pairs", "image-image (i2i_csim, by caption similarity)", 200),
    _pairs(
        "sts_pairs", "Caption-caption pairs", "caption-caption (c2c_isim, by image similarity)", 200
    ),
    _pairs(
        "cocaption_pairs",
        "Co-caption pairs",
        "caption-caption pairs of one image (c2c_cocaption)",
        50,
    ),
    _pairs(
        "intrasim_pairs",
        "Intermodal pairs from rated ones",
        "image-caption (c2i_intrasim, from the highest-rated intramodal pairs)",
        200,
    ),
    Setting(
        "original_pairs",
        "Original image-caption pairs",
        'Image-caption pairs as COCO has them (c2i_original): a number, or "all"',
        kind="int_or_all",
        low=0,
        high=MAX_PAIRS,
        unit="pairs",
        default="all",
    ),
    Setting(
        "neighbours",
        "Neighbours per example",
        "Nearest neighbours each example's candidates are drawn from (indirect sampling)",
        low=1,
        high=1000,
        default=10,
    ),
    Setting(
        "random_per_example",
        "Random pairs per example",
        "Random candidates added per example, so low similarities are rated too",
        low=0,
        high=1000,
        default=5,
    ),
    Setting(
        "bins",
        "Similarity bins",
        # CxC's blog names no bins: it samples "biased" toward high computed similarity so that
        # "at least some" pairs are highly similar. These edges and shares are the project's.
        "Edges of the cosine bins the pairs are stratified by. The project's choice "
        "(pipeline/cxc_bins.py), not CxC's: CxC's blog gives no bins, only a sampling biased "
        "toward high model similarity that includes at least some highly similar pairs",
        kind="list",
        default=list(DEFAULT_BINS),
        advanced=True,
    ),
    Setting(
        "shares",
        "Share per bin",
        "Share of the pairs drawn from each bin, one per bin",
        kind="list",
        default=list(DEFAULT_SHARES),
        advanced=True,
    ),
    Setting(
        "adaptive",
        "Adaptive redundancy",
        'Optional: a first batch of `start` ratings per pair, then follow-up batches ("More '
        "judgments\") ask again only while a pair's 95 % interval is wider than `half_width` "
        "either side, up to `cap`; the quality sweep's setting spends 4.5 ratings per pair on "
        'the realistic population, e.g. {"start": 3, "cap": 7, "half_width": 0.5}',
        kind="object",
        advanced=True,
    ),
    GOLD_TOLERANCE,
    *gold_settings(categorical=False, ratings=True),
    Setting(
        "sampling_encoders",
        "Encoders for the two similarities",
        "different (CxC): the image similarity from the image embeddings, the caption "
        "similarity from a separate text encoder (another model's caption embeddings, or "
        "FastText trained on the dataset's captions); joint: one image-text model's embedding "
        "set gives both (a deviation from CxC, recorded in the manifest)",
        kind="choice",
        choices=CHOICES,
        default=DIFFERENT,
        advanced=True,
    ),
    Setting(
        "text_dim",
        "Caption vector size",
        "Dimensions of the FastText vectors trained on the dataset's captions",
        low=2,
        high=2048,
        default=100,
        advanced=True,
    ),
    Setting(
        "text_epochs",
        "Caption vector epochs",
        "Training epochs of those vectors",
        low=1,
        high=500,
        default=50,
        advanced=True,
    ),
    HOLD_FAST,
    SEED,
    CONSENT,
)

# Recorded, not chosen on the form.
EXPORT_NAME = Setting(
    "export_name",
    "Export split name",
    "The split name in the export's file names, as CxC's own files (default val)",
    kind="text",
    default="val",
)

# The defaults a new run stores, by setting (what `cxc_create_run --help` lists).
DEFAULTS: dict[str, Any] = {s.key: s.default for s in SETTINGS if s.default is not None}


@dataclass(frozen=True)
class CxcSettings(RunSettings):
    DECLARED = declared(SETTINGS, (EXPORT_NAME,))

    sis_pairs: int  # i2i_csim
    sts_pairs: int  # c2c_isim
    cocaption_pairs: int  # c2c_cocaption
    intrasim_pairs: int  # c2i_intrasim, from the highest-rated intramodal pairs
    original_pairs: int | str  # c2i_original: a number, or "all"
    neighbours: int
    random_per_example: int
    bins: tuple[float, ...]
    shares: tuple[float, ...]
    adaptive: Mapping[str, Any] | None
    gold_tolerance: float
    sampling_encoders: str  # CxC's rule, "different"; "joint" is a deviation
    text_dim: int
    text_epochs: int
    export_name: str

    def expectation_inputs(self) -> dict[str, Any]:
        return {"adaptive": None if self.adaptive is None else dict(self.adaptive)}

    def check(self) -> None:
        super().check()
        from annotation.flows.cxc.adaptive import cxc_policy_of
        from pipeline.cxc_sampling import check_bins

        for key, values in (("bins", self.bins), ("shares", self.shares)):
            if not all(isinstance(v, int | float) for v in values):
                raise InputError("must be a list of numbers", field=key)
        check_bins(self.bins, self.shares)
        cxc_policy_of(self)  # the `adaptive` object's own checks


def cxc_settings(run: Run) -> CxcSettings:
    """The CxC run's settings (`run_settings` of a CxC run)."""
    from annotation.run_settings import run_settings

    return run_settings(run, CxcSettings)
