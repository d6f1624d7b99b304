"""A CxC run's settings: how many pairs of each sampling method, raters per pair, where gold
comes from and its tolerance; each checked in its range (InputError names the field)."""

from __future__ import annotations

from typing import Any

from annotation.services.checks import SEED_RANGE, check_int, check_number
from annotation.services.gold import GOLD_DEFAULTS, gold_check_config
from annotation.services.speed_policy import SPEED_DEFAULTS, speed_check_config
from pipeline.cxc_sampling import DEFAULT_BINS, DEFAULT_SHARES, check_bins
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
    "text_dim": 100,
    "text_epochs": 50,
}


def cxc_check_config(config: dict[str, Any]) -> dict[str, Any]:
    config = {**DEFAULTS, **config}
    check_int(config, "seed", low=SEED_RANGE[0], high=SEED_RANGE[1])
    for key in ("sis_pairs", "sts_pairs", "cocaption_pairs", "intrasim_pairs"):
        check_int(config, key, low=0, high=10_000_000)
    original = config["original_pairs"]
    if isinstance(original, str) and original.strip().isdigit():
        config["original_pairs"] = int(original)  # a form's text field sends "20"
    if config["original_pairs"] != "all":
        check_int(config, "original_pairs", low=0, high=10_000_000)
    check_int(config, "neighbours", low=1, high=1000)
    check_int(config, "random_per_example", low=0, high=1000)
    check_number(config, "gold_tolerance", low=0.0, high=5.0)
    gold_check_config(config, categorical=False, ratings=True)
    speed_check_config(config)
    check_int(config, "text_dim", low=2, high=2048)
    check_int(config, "text_epochs", low=1, high=500)
    bins, shares = config["bins"], config["shares"]
    if not isinstance(bins, list) or not all(isinstance(b, int | float) for b in bins):
        raise InputError("must be a list of numbers", field="bins")
    if not isinstance(shares, list) or not all(isinstance(b, int | float) for b in shares):
        raise InputError("must be a list of numbers", field="shares")
    check_bins(bins, shares)
    return config
