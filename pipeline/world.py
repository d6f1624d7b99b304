"""A simulated world with hidden truth, for measuring what the pipeline exports.

Every latent value is drawn once per item from a keyed hash of (world seed, item), so the
simulated workers, the export's scoring and the closed-form expectation all see the same
truth without storing it. Truth never comes from text overlap or from any embedding that a
proposer or stage 1 uses; the only thing it may depend on is an ECCV pair's best proposal
rank, and that only to reproduce the paper's answer shares by rank (Table B.2).

BISON: a nearest-neighbour image pair is *discriminable* (some caption of the positive image
does not describe the negative one) with probability `discriminable`; each caption of a
discriminable pair's positive image is *valid* for the pair (describes the positive only) with
probability `caption_valid`, at least one always is. A triple is valid when its caption is.
Defaults: stage 2 of the paper turned 91.56 % of pairs into triples, so 0.92 of pairs are taken
as discriminable; `caption_valid` = 0.6 is ours (the paper gives no per-caption figure).

ECCV Caption: each candidate pair has a latent 4-level label (0 YES, 1 Partially YES, 2 Mostly
NO, 3 NO) drawn from the label shares at its best proposal rank, calibrated so that workers of
accuracy `calibration_accuracy` (errors uniform over the other levels) answer with the shares
of Table B.2 (the five models' mean per rank). A caption written for the image is YES; a pair
no model proposed (a gold negative) is NO.

CxC: each pair has a latent similarity on the 0-5 scale drawn from `cxc_shares` (ours: CxC's
blog publishes no distribution); an imported gold pair's latent similarity is its known
rating (a gold copy of a rated pair is that pair). `cxc_latent` is the same value on a
continuous scale (the drawn point plus a jitter within half a point), for raters who round.

Caption quality: each candidate caption of an image has a latent quality in [0, 1) drawn from
the world's seed and the candidate alone (`caption_quality`), never from its words or any
metric: a human reference is drawn from the upper half (people describe what they see). So a
metric's correlation with simulated judgments says nothing about the metric; only real
judgments (Flickr8k) can.

The calibrated world (issue 48; `pipeline.calibration` fits it, `population.world` names it):
`bison_confusable` is the share of invalid captions that also fit the negative image in a way
careful workers miss (a caption "a man on a horse" for two horse riders): careful stage-2
workers pick them as if valid and careful verifiers point at the positive, together, so
verified precision falls below 100 % for a reason of the item's meaning, shared by all workers.
`eccv_own_doubtful` is the share of original COCO pairs (ECCV's gold positives) whose caption
is mostly wrong for the image, so careful workers answer "Mostly NO" on that gold together.
`cxc_kind_shares` gives each CxC task (sis, sts, sits) its own latent distribution in place of
`cxc_shares`; `cxc_kind_top` caps the points careful raters give on a task (CxC's SIS raters
almost never rated two different pictures 5: 0.1 % of pairs average 4.5 or more).
`difficulty_shift` moves the difficulty of every item of a task (the first part
of its key: "bison-triple", "eccv", ...) by a fixed amount: tasks differ in how hard they are
(pointing at the image a caption fits is easier than grading a caption on four levels). All
default to off, leaving every older figure unchanged.

Difficulty: every item has a standard normal difficulty (`difficulty`) that all workers share,
so that errors concentrate on hard items (`pipeline.simulate`); items whose truth lies close to
a decision boundary (a rating near the middle, two captions of close quality) are harder still.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from statistics import NormalDist
from typing import Any

from pipeline.errors import InputError

ECCV_LEVELS = ("yes", "partially_yes", "mostly_no", "no")

# ECCV Caption, Appendix B.3, Table B.2: percentages of "100% YES", "Partially YES",
# "Mostly NO" and "100% NO" per model and rank (ranks 1-5).
ECCV_TABLE_B2: dict[str, tuple[tuple[float, float, float, float], ...]] = {
    "PVSE": (
        (52.3, 31.7, 11.2, 4.7),
        (39.0, 36.7, 16.7, 7.5),
        (34.5, 36.9, 18.0, 10.6),
        (30.9, 39.2, 19.6, 10.4),
        (28.0, 39.2, 20.5, 12.3),
    ),
    "VSRN": (
        (54.4, 31.6, 10.0, 4.0),
        (39.9, 37.6, 15.8, 6.7),
        (36.6, 36.8, 17.6, 9.0),
        (33.2, 38.1, 17.6, 11.1),
        (30.4, 38.6, 19.0, 12.0),
    ),
    "PCME": (
        (52.3, 33.2, 10.4, 4.2),
        (39.8, 37.2, 15.1, 7.9),
        (35.6, 39.0, 17.5, 7.9),
        (31.9, 37.8, 21.1, 9.2),
        (27.8, 40.0, 21.5, 10.6),
    ),
    "ViLT": (
        (47.6, 33.7, 12.0, 6.7),
        (36.6, 33.5, 19.7, 10.2),
        (30.3, 35.6, 20.2, 13.9),
        (26.7, 35.6, 22.8, 14.9),
        (25.8, 35.6, 22.5, 16.1),
    ),
    "CLIP": (
        (50.5, 33.5, 12.0, 3.9),
        (35.3, 38.5, 18.0, 8.2),
        (33.8, 39.9, 16.1, 10.1),
        (31.0, 38.6, 18.0, 12.5),
        (28.4, 39.8, 20.2, 11.6),
    ),
}


def table_b2_shares(rank: int) -> tuple[float, ...]:
    """The five models' mean answer shares (fractions summing to 1) at `rank` (1-5; a worse
    rank reads as 5)."""
    row = min(max(rank, 1), 5) - 1
    sums = [sum(ECCV_TABLE_B2[m][row][j] for m in ECCV_TABLE_B2) for j in range(4)]
    total = sum(sums)
    return tuple(s / total for s in sums)


def deconvolve(observed: Sequence[float], accuracy: float) -> tuple[float, ...]:
    """Latent shares that workers of `accuracy` (errors uniform over the other k-1 options)
    would report as `observed`: o = a t + (1-a)/(k-1) (1-t), solved for t and clipped."""
    k = len(observed)
    off = (1 - accuracy) / (k - 1)
    if accuracy - off <= 0:
        raise InputError(f"calibration accuracy {accuracy} is at or below chance", field="accuracy")
    latent = [max(0.0, (o - off) / (accuracy - off)) for o in observed]
    total = sum(latent)
    return tuple(t / total for t in latent)


@dataclass(frozen=True)
class World:
    seed: int = 0
    discriminable: float = 0.92
    caption_valid: float = 0.6
    calibration_accuracy: float = 0.9
    cxc_shares: tuple[float, ...] = (0.25, 0.2, 0.15, 0.15, 0.13, 0.12)
    bison_confusable: float = 0.0
    eccv_own_doubtful: float = 0.0
    cxc_kind_shares: tuple[tuple[str, tuple[float, ...]], ...] = ()
    cxc_kind_top: tuple[tuple[str, int], ...] = ()
    difficulty_shift: tuple[tuple[str, float], ...] = ()
    _eccv: dict[int, tuple[float, ...]] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("discriminable", "caption_valid", "calibration_accuracy"):
            value = getattr(self, name)
            if not 0.0 < value <= 1.0:
                raise InputError(f"world {name} must be within (0, 1], got {value}", field=name)
        for name in ("bison_confusable", "eccv_own_doubtful"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise InputError(f"world {name} must be within 0..1, got {value}", field=name)
        for kind, top in self.cxc_kind_top:
            if not 0 <= top <= 5:
                raise InputError(
                    f"world cxc top ({kind}) must be within 0..5", field="cxc_kind_top"
                )
        for kind, shares in (("all", self.cxc_shares), *self.cxc_kind_shares):
            if len(shares) != 6 or abs(sum(shares) - 1) > 1e-6 or min(shares) < 0:
                raise InputError(
                    f"world cxc shares ({kind}) must be 6 shares summing to 1", field="cxc_shares"
                )

    @classmethod
    def from_settings(cls, world: Mapping[str, Any] | None, *, seed: int) -> World:
        """A run's world: its seed and the optional `world` setting of its config (every
        field but the seed; JSON lists stand for the tuple-valued ones)."""
        settings = dict(world or {})
        unknown = set(settings) - set(WORLD_SETTINGS)
        if unknown:
            raise InputError(f"unknown world setting {sorted(unknown)[0]!r}", field="world")
        for name in TABLE_SETTINGS & set(settings):
            try:
                settings[name] = tuple(
                    (str(key), tuple(value) if isinstance(value, list | tuple) else value)
                    for key, value in settings[name]
                )
            except (TypeError, ValueError):
                raise InputError(
                    f"world setting {name!r} must be a list of [name, value] pairs",
                    field=f"world.{name}",
                ) from None
        if isinstance(settings.get("cxc_shares"), list):
            settings["cxc_shares"] = tuple(settings["cxc_shares"])
        return cls(seed=seed, **settings)

    def settings(self) -> dict[str, Any]:
        """The settings that differ from the defaults, as a run config's `world` (JSON)."""
        default = World(seed=self.seed)
        return {
            name: getattr(self, name)
            for name in WORLD_SETTINGS
            if getattr(self, name) != getattr(default, name)
        }

    def unit(self, *key: object) -> float:
        """A uniform draw in [0, 1) fixed by the world's seed and `key`."""
        text = ":".join(str(k) for k in (self.seed, *key)).encode()
        return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "big") / 2**64

    def difficulty(self, *key: object) -> float:
        """The item's difficulty: a standard normal value fixed by the seed and `key`."""
        u = self.unit("difficulty", *key)
        shift = dict(self.difficulty_shift).get(str(key[0]), 0.0) if key else 0.0
        return NormalDist().inv_cdf(min(max(u, 1e-12), 1 - 1e-12)) + shift

    def _pick(self, shares: Sequence[float], *key: object) -> int:
        u, acc = self.unit(*key), 0.0
        for index, share in enumerate(shares):
            acc += share
            if u < acc:
                return index
        return len(shares) - 1

    # BISON
    def bison_discriminable(self, positive: int, negative: int) -> bool:
        a, b = sorted((positive, negative))
        return self.unit("bison-pair", a, b) < self.discriminable

    def bison_valid_captions(
        self, positive: int, negative: int, captions: Sequence[int]
    ) -> frozenset[int]:
        """The captions (COCO ids) of `positive` that describe it and not `negative`; empty
        when the pair is not discriminable."""
        if not captions or not self.bison_discriminable(positive, negative):
            return frozenset()
        draws = {c: self.unit("bison-caption", positive, negative, c) for c in captions}
        valid = {c for c, u in draws.items() if u < self.caption_valid}
        return frozenset(valid or {min(draws, key=draws.__getitem__)})

    def bison_apparent_captions(
        self, positive: int, negative: int, captions: Sequence[int]
    ) -> frozenset[int]:
        """The captions careful workers take for valid: the valid ones and the invalid ones
        that are confusable (`bison_confusable_caption`)."""
        valid = self.bison_valid_captions(positive, negative, captions)
        return valid | {
            c
            for c in captions
            if c not in valid and self.bison_confusable_caption(positive, negative, c)
        }

    def bison_confusable_caption(self, positive: int, negative: int, caption: int) -> bool:
        """Whether an invalid caption fits the negative image in a way careful workers miss
        (only meaningful for a caption not in `bison_valid_captions`)."""
        if not self.bison_confusable:
            return False
        return self.unit("bison-confusable", positive, negative, caption) < self.bison_confusable

    # ECCV Caption
    def eccv_shares(self, rank: int) -> tuple[float, ...]:
        row = min(max(rank, 1), 5)
        if row not in self._eccv:
            self._eccv[row] = deconvolve(table_b2_shares(row), self.calibration_accuracy)
        return self._eccv[row]

    def eccv_label(self, image: int, caption: int, *, rank: int | None, own: bool = False) -> int:
        """The pair's latent level (index into ECCV_LEVELS)."""
        if own:
            doubtful = self.eccv_own_doubtful and (
                self.unit("eccv-own", image, caption) < self.eccv_own_doubtful
            )
            return 2 if doubtful else 0
        if rank is None:
            return 3
        return self._pick(self.eccv_shares(rank), "eccv", image, caption)

    # CxC
    def cxc_similarity(self, kind: str, first: int, second: int) -> int:
        a, b = sorted((first, second)) if kind != "sits" else (first, second)
        shares = dict(self.cxc_kind_shares).get(kind, self.cxc_shares)
        return self._pick(shares, "cxc", kind, a, b)

    def cxc_top(self, kind: str) -> int:
        """The highest point careful raters give on `kind`'s scale (`cxc_kind_top`; 5 when
        unset): CxC's SIS raters almost never call two different pictures a 5."""
        return int(dict(self.cxc_kind_top).get(kind, 5))

    def cxc_latent(self, kind: str, first: int, second: int) -> float:
        """The pair's similarity on a continuous 0-5 scale; rounds to `cxc_similarity`."""
        point = self.cxc_similarity(kind, first, second)
        a, b = sorted((first, second)) if kind != "sits" else (first, second)
        jitter = self.unit("cxc-jitter", kind, a, b) - 0.5
        return min(5.0, max(0.0, point + 0.999 * jitter))

    # Caption quality
    def caption_quality(self, image: int, candidate: object, *, reference: bool = False) -> float:
        """A candidate caption's latent quality in [0, 1) (1 = describes the image without
        error); `candidate` is any id stable within the run."""
        u = self.unit("caption-quality", image, candidate)
        return 0.5 + u / 2 if reference else u


WORLD_SETTINGS = tuple(
    f.name for f in fields(World) if f.init and f.name != "seed" and not f.name.startswith("_")
)
TABLE_SETTINGS = {"cxc_kind_shares", "cxc_kind_top", "difficulty_shift"}
