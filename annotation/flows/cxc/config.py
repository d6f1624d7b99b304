"""A CxC run's settings: how many pairs of each sampling method, raters per pair, where gold
comes from and its tolerance; each checked in its range (InputError names the field)."""

from __future__ import annotations

from typing import Any

from annotation.flows.cxc.adaptive import cxc_policy_of
from annotation.flows.cxc.sampling_encoders import DIFFERENT
from annotation.flows.cxc.settings import MAX_PAIRS, SETTINGS
from annotation.run_settings import settings_check
from annotation.services.checks import check_int
from annotation.services.runs.gold import GOLD_DEFAULTS
from annotation.services.work.speed_policy import SPEED_DEFAULTS
from pipeline.cxc_bins import DEFAULT_BINS, DEFAULT_SHARES
from pipeline.cxc_sampling import check_bins
from pipeline.errors import InputError

DEFAULTS: dict[str, Any] = {
    "seed": 0,
    "sis_pairs": 200,  # i2i_csim
    "sts_pairs": 200,  # c2c_isim
    "cocaption_pairs": 50,  # c2c_cocaption
    "intrasim_pairs": 200,  # c2i_intrasim, from the highest-rated intramodal pairs
    "original_pairs": "all",  # c2i_original: every original image-caption pair, or a number
    "neighbours": 10,
    "random_per_example": 5,
    "bins": list(DEFAULT_BINS),
    "shares": list(DEFAULT_SHARES),
    "gold_tolerance": 1.0,  # a gold rating further than this from the known one is a failure
    # Gold: copies of pairs earlier batches of the stage established (at least
    # gold_min_answers raters, highest minus lowest rating at most gold_spread; the known
    # rating is their mean), or "paper": pairs of CxC's published files (`cxc_gold_import`).
    **GOLD_DEFAULTS,
    "gold_spread": 1.0,
    **SPEED_DEFAULTS,
    # CxC's rule: image and caption similarity from different encoders ("joint": a deviation).
    "sampling_encoders": DIFFERENT,
    "text_dim": 100,
    "text_epochs": 50,
}


def cxc_check_config(config: dict[str, Any]) -> dict[str, Any]:
    config = {**DEFAULTS, **config}
    settings_check(SETTINGS, config)  # each declared setting's range or choices
    original = config["original_pairs"]
    if isinstance(original, str) and original.strip().isdigit():
        config["original_pairs"] = int(original)  # a form's text field sends "20"
    if config["original_pairs"] != "all":
        check_int(config, "original_pairs", low=0, high=MAX_PAIRS)
    bins, shares = config["bins"], config["shares"]
    if not isinstance(bins, list) or not all(isinstance(b, int | float) for b in bins):
        raise InputError("must be a list of numbers", field="bins")
    if not isinstance(shares, list) or not all(isinstance(b, int | float) for b in shares):
        raise InputError("must be a list of numbers", field="shares")
    check_bins(bins, shares)
    cxc_policy_of(config)  # the `adaptive` object's own checks
    return config
