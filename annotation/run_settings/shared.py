"""The settings every flow shares (the seed, gold, fast work, consent), and what the core's
services record in any run's config (release terms, own instructions, a simulated world)."""

from __future__ import annotations

from annotation.run_settings.setting import Setting
from annotation.services.checks import SEED_RANGE

ESTABLISHED = "established"  # gold copied from the run's own high-agreement items
PAPER = "paper"  # the flow's paper's gold (published labels, original pairs), or none
GOLD_SOURCES = (ESTABLISHED, PAPER)

SEED = Setting(
    "seed",
    "Seed",
    "Seeds every random choice of the run (samples, HIT order, shuffles): the same seed and "
    "inputs give the same run",
    low=SEED_RANGE[0],
    high=SEED_RANGE[1],
    default=0,
    advanced=True,
)


def gold_settings(
    *, categorical: bool, ratings: bool, agreement: float = 1.0, spread: float = 1.0
) -> tuple[Setting, ...]:
    """The gold settings of a flow (see annotation/services/runs/gold.py). A stored config without
    them predates gold copied from the run's own items: its gold is the paper's, established
    by 3 workers in full agreement."""
    out = [
        Setting(
            "gold_source",
            "Gold source",
            '"established": gold questions are copies of items earlier batches of the stage '
            'answered alike (no public file gives them away); "paper": the paper\'s own gold',
            kind="choice",
            choices=GOLD_SOURCES,
            default=ESTABLISHED,
            absent=PAPER,
        ),
        Setting(
            "gold_min_answers",
            "Gold: answers needed",
            "An item becomes gold once at least this many different workers answered it and agree",
            low=2,
            high=1000,
            unit="workers",
            default=3,
        ),
    ]
    if categorical:
        out.append(
            Setting(
                "gold_agreement",
                "Gold: agreement needed",
                "Share of those workers who must give the same answer",
                kind="number",
                low=0.5,
                high=1.0,
                unit="share",
                default=agreement,
                absent=1.0,
            )
        )
    if ratings:
        out.append(
            Setting(
                "gold_spread",
                "Gold: rating spread allowed",
                "Highest minus lowest rating of an item that becomes gold; its known rating is "
                "their mean",
                kind="number",
                low=0.0,
                high=10.0,
                unit="rating points",
                default=spread,
                absent=1.0,
            )
        )
    return tuple(out)


GOLD_TOLERANCE = Setting(
    "gold_tolerance",
    "Gold tolerance",
    "A gold rating further than this from the known rating is a failed check",
    kind="number",
    low=0.0,
    high=5.0,
    unit="rating points",
    default=1.0,
)

HOLD_FAST = Setting(
    "hold_fast_seconds_per_item",
    "Hold work faster than",
    "A submitted assignment whose active time per item is under this is held for review before "
    "it is paid (before the platform's own auto-approval); 0: fast work is only flagged",
    kind="number",
    low=0.0,
    high=3600.0,
    unit="seconds per item",
    default=0.0,
)

CONSENT = Setting(
    "consent",
    "Information and consent text",
    "Shown to invited and panel workers before their first task; changing it asks them again. "
    "Empty: the project's default text",
    kind="text",
    advanced=True,
)

# Recorded by the core's services or a sweep, not chosen on the new-run form.
WORLD = Setting(
    "world",
    "Simulated world",
    "The latent world simulated workers answer from, where it differs from the default "
    "(pipeline.world.World's settings; the quality sweep sets it)",
    kind="object",
)
RELEASE = Setting(
    "release",
    "Release terms",
    "The run's license, creators and citation, written into every export "
    "(annotation/services/release/release_terms.py)",
    kind="object",
)
INSTRUCTIONS = Setting(
    "instructions",
    "Own instructions",
    "The run's own instructions text per stage, where it replaces the task type's "
    "(annotation/services/runs/run_texts.py)",
    kind="object",
)

# What every flow's settings object reads: a flow's own declaration of one of these (its
# gold defaults, say) replaces the one here.
SHARED = (
    SEED,
    CONSENT,
    HOLD_FAST,
    *gold_settings(categorical=True, ratings=True),
    WORLD,
    RELEASE,
    INSTRUCTIONS,
)
