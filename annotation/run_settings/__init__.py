"""Run settings: what each means (`setting.py`, declared by the flow that reads it; the shared
ones in `shared.py`) and a run's stored config read as its flow's frozen, typed settings
object (`typed.py`, the one place that reads `Run.config` by key)."""

from annotation.run_settings.setting import KINDS, Setting, settings_check
from annotation.run_settings.shared import (
    CONSENT,
    ESTABLISHED,
    GOLD_SOURCES,
    GOLD_TOLERANCE,
    HOLD_FAST,
    INSTRUCTIONS,
    PAPER,
    RELEASE,
    SEED,
    SHARED,
    WORLD,
    gold_settings,
)
from annotation.run_settings.typed import (
    RunSettings,
    RunTexts,
    declared,
    run_settings,
    settings_stored,
    settings_type,
)

__all__ = [
    "CONSENT",
    "ESTABLISHED",
    "GOLD_SOURCES",
    "GOLD_TOLERANCE",
    "HOLD_FAST",
    "INSTRUCTIONS",
    "KINDS",
    "PAPER",
    "RELEASE",
    "SEED",
    "SHARED",
    "WORLD",
    "RunSettings",
    "RunTexts",
    "Setting",
    "declared",
    "gold_settings",
    "run_settings",
    "settings_check",
    "settings_stored",
    "settings_type",
]
