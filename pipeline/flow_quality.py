"""Every flow's answer rules and aggregations on a worker population, by Monte Carlo over seeds:
the figures `quality_sweep` prints beside the Django runs of the sample (which are too small
for narrow intervals).

Each seed draws a world (`pipeline.world`) and a team of `team` workers from the population
(`pipeline.simulate`), shuffled; every judgment goes to a worker not yet on the item, at the
worker's next place in a HIT of `hit` questions (fatigue), with one gold question after every
nine others (the gold a worker passes is what a gold-only policy sees). The rules mirror the
flows' simulated answerers (annotation/flows/*/simulate.py):

- BISON: one stage-2 worker per pair picks a caption or "none"; two verifiers must both point
  at the positive image (the paper's unanimity). Precision and recall of the verified triples.
- ECCV Caption: three 4-level judgments per candidate pair at ranks 1-5; positives (YES or
  Partially YES) by majority, by majority weighted by gold accuracy, by Dawid-Skene and by
  MACE.
- CxC: five 0-5 ratings per pair (our choice); the plain mean (the export's `agg_score`) and
  the per-worker scale model (`pipeline.scales.rating_model`), error against the latent value
  and the model interval's coverage.
- Caption quality: three yes/no judgments per caption (majority), three ratings on the 4-point
  Flickr8k-Expert scale (mean and model), and preferences between every two of an image's
  eight captions, one judgment each (share of wins and Bradley-Terry): ranking accuracy is the
  share of caption pairs put in their latent order.
- Adaptive redundancy against fixed, each on the same draws (`pipeline.redundancy_scales`):
  CxC ratings (3-7 ±0.5 against five), caption ratings (3-7 ±0.5 against three) and
  preferences between two captions (rounds of 6 up to 48 against Pascal-50S's 48 and a fixed 6).

Every figure is the mean over seeds with a 95 % t interval over seeds. Cheaters (spammers and
gold-aware cheaters) are followed: their share of the answers behind what the export keeps,
and, under the agreement hold of `pipeline.worker_quality`, the share of a gold-aware cheater's
answers given before its hold, and the share of careful workers held by mistake.
"""

from __future__ import annotations

import math
import random
import statistics
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from pipeline.aggregation import dawid_skene, mace, majority, weighted_majority
from pipeline.redundancy_scales import PreferenceRedundancy, RatingRedundancy, preference_maximum
from pipeline.scales import bradley_terry, rating_model
from pipeline.simulate import Asked, Population, WorkerProfile, rate, respond, world_of
from pipeline.t_quantile import t975
from pipeline.worker_quality import others_majority_agrees, others_mean_close, worker_agreement
from pipeline.world import ECCV_LEVELS, World

SIDES = ("left", "right", "both", "neither")


@dataclass(frozen=True)
class Figure:
    flow: str
    population: str
    measure: str
    value: float
    low: float
    high: float
    seeds: int
    unit: str = "%"  # "%": a share shown in percent; "": a plain number
    note: str = ""


@dataclass
class _Crowd:
    """A seed's team, who answered what, and the gold each worker passed."""

    team: list[WorkerProfile]
    rng: random.Random
    hit: int
    done: list[int] = field(default_factory=list)
    gold_right: list[int] = field(default_factory=list)
    gold_seen: list[int] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.done = [0] * len(self.team)
        self.gold_right = [0] * len(self.team)
        self.gold_seen = [0] * len(self.team)

    def workers(self, n: int) -> list[int]:
        return self.rng.sample(range(len(self.team)), n)

    def place(self, worker: int) -> int:
        """The worker's place in its current HIT; every ninth answer it also meets gold."""
        position = self.done[worker] % self.hit
        self.done[worker] += 1
        if self.done[worker] % 9 == 0:
            profile = self.team[worker]
            right = respond(profile, {"a"}, ("a", "b", "c", "d"), self.rng, gold=True) == "a"
            self.gold_right[worker] += right
            self.gold_seen[worker] += 1
        return position

    def answer(
        self, worker: int, truth: str, choices: Sequence[str], preferred: str, hard: float
    ) -> str:
        """One answer of `worker` (the preferred answer first among its errors)."""
        return respond(
            self.team[worker],
            {truth},
            choices,
            self.rng,
            constant=preferred,
            difficulty=hard,
            position=self.place(worker),
        )

    def gold_accuracy(self) -> dict[int, float]:
        return {
            w: (self.gold_right[w] + 3.4) / (self.gold_seen[w] + 4.0) for w in range(len(self.team))
        }


def _seeded(
    key: str, population: Population, team: int, hit: int
) -> tuple[World, random.Random, _Crowd]:
    """A seed's world (its seed: `key`'s number after the colon), generator and shuffled team."""
    seed = int(key.rsplit(":", 1)[1])
    rng = random.Random(key)
    crowd = _Crowd(population.profiles(team), rng, hit=hit)
    rng.shuffle(crowd.team)
    return world_of(population, seed), rng, crowd


def _interval(values: Sequence[float]) -> tuple[float, float, float]:
    clean = [v for v in values if not math.isnan(v)]
    if not clean:
        return math.nan, math.nan, math.nan
    mean = statistics.fmean(clean)
    if len(clean) < 2:
        return mean, math.nan, math.nan
    half = float(t975(len(clean) - 1)) * statistics.stdev(clean) / len(clean) ** 0.5
    return mean, mean - half, mean + half


def _bounded(value: float, low: float, high: float, unit: str) -> tuple[float, float, float]:
    """A share's interval never leaves 0..1."""
    return (value, max(0.0, low), min(1.0, high)) if unit == "%" else (value, low, high)


def _share(hits: float, total: float) -> float:
    return hits / total if total else math.nan


class _Hold:
    """Agreement-hold bookkeeping over the seeds of one flow."""

    def __init__(self) -> None:
        self.before: list[float] = []
        self.cheaters_held: list[float] = []
        self.careful_held: list[float] = []

    def add(self, team: list[WorkerProfile], workers: list[int], agrees: np.ndarray) -> None:
        found = worker_agreement(workers, agrees)
        counts: dict[int, int] = defaultdict(int)
        for w in workers:
            counts[w] += 1
        gold_aware = [w for w in found if team[w].behaviour == "gold_aware"]
        careful = [w for w in found if not team[w].cheater]
        given = sum(counts[w] for w in gold_aware)
        # Answers given before the hold: in order, all answers up to the one that fired it.
        before = 0
        for w in gold_aware:
            held = found[w].held_after
            before += counts[w] if held is None else _answers_until(workers, agrees, w, held)
        self.before.append(_share(before, given))
        self.cheaters_held.append(
            _share(sum(found[w].held_after is not None for w in gold_aware), len(gold_aware))
        )
        self.careful_held.append(
            _share(sum(found[w].held_after is not None for w in careful), len(careful))
        )

    def figures(self, flow: str, population: str) -> list[Figure]:
        rows = (
            ("gold-aware answers before hold", self.before),
            ("gold-aware cheaters held", self.cheaters_held),
            ("careful workers held", self.careful_held),
        )
        return [_figure(flow, population, name, values) for name, values in rows]


def _answers_until(workers: list[int], agrees: np.ndarray, worker: int, compared: int) -> int:
    seen = n = 0
    for w, a in zip(workers, agrees, strict=True):
        if w != worker:
            continue
        n += 1
        if not math.isnan(a):
            seen += 1
            if seen == compared:
                return n
    return n


def _figure(
    flow: str, population: str, measure: str, values: Sequence[float], unit: str = "%"
) -> Figure:
    value, low, high = _bounded(*_interval(values), unit)
    return Figure(flow, population, measure, value, low, high, len(values), unit)


def bison(population: Population, seeds: Sequence[int], *, pairs: int, team: int) -> list[Figure]:
    columns: dict[str, list[float]] = defaultdict(list)
    hold = _Hold()
    for seed in seeds:
        world, rng, crowd = _seeded(f"bison:{seed}", population, team, hit=10)
        made = valid_made = verified = verified_valid = answers = cheat = 0
        v_workers: list[int] = []
        v_labels: list[int] = []
        v_items: list[int] = []
        for i in range(pairs):
            captions = [10 * i + k for k in range(5)]
            valid = world.bison_valid_captions(i, i + 10**6, captions)
            # Invalid captions that careful workers take for valid (the calibrated world only).
            seems = world.bison_apparent_captions(i, i + 10**6, captions)
            (w2,) = crowd.workers(1)
            answer = respond(
                crowd.team[w2],
                {str(c) for c in seems} or {"none"},
                [str(c) for c in captions] + ["none"],
                rng,
                difficulty=world.difficulty("bison-pair", i, i + 10**6),
                position=crowd.place(w2),
            )
            if answer == "none":
                continue
            made += 1
            ok = int(answer) in valid
            valid_made += ok
            side = rng.choice(("left", "right"))
            hard = world.difficulty("bison-triple", i, i + 10**6, int(answer))
            votes = []
            for w in crowd.workers(2):
                vote = respond(
                    crowd.team[w],
                    {side} if int(answer) in seems else {"both"},
                    SIDES,
                    rng,
                    constant="left",
                    difficulty=hard,
                    position=crowd.place(w),
                )
                votes.append((w, vote))
                # The hold reads sides as "the positive" or not, as the verification does.
                v_items.append(i)
                v_workers.append(w)
                v_labels.append(
                    0 if vote == side else SIDES.index(vote) if vote in SIDES[2:] else 1
                )
            if all(v == side for _, v in votes):
                verified += 1
                verified_valid += ok
                behind = [w2] + [w for w, _ in votes]
                answers += len(behind)
                cheat += sum(crowd.team[w].cheater for w in behind)
        columns["verified precision"].append(_share(verified_valid, verified))
        columns["stage-3 recall"].append(_share(verified_valid, valid_made))
        columns["pairs -> triples"].append(_share(made, pairs))
        columns["triples -> verified"].append(_share(verified, made))
        columns["judgments per verified triple"].append(_share(pairs + 2 * made, verified))
        columns["cheaters' share of kept answers"].append(_share(cheat, answers))
        agrees = others_majority_agrees(np.array(v_items), np.array(v_labels), k=4)
        hold.add(crowd.team, v_workers, agrees)
    name = population.name
    return [
        _figure("bison", name, m, v, "" if m.startswith("judgments") else "%")
        for m, v in columns.items()
    ] + hold.figures("bison", name)


def eccv_judgments(
    world: World, rng: random.Random, crowd: _Crowd, pairs: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Three 4-level judgments per candidate pair at ranks 1-5: (items, workers, labels as
    level indices, each pair's truth: YES or Partially YES)."""
    items, workers, labels, truth = [], [], [], []
    for i in range(pairs):
        level = world.eccv_label(i, i + 10**6, rank=1 + i % 5)
        truth.append(level <= 1)
        hard = world.difficulty("eccv", i, i + 10**6)
        for w in crowd.workers(3):
            answer = respond(
                crowd.team[w],
                {ECCV_LEVELS[level]},
                ECCV_LEVELS,
                rng,
                constant="yes",
                difficulty=hard,
                position=crowd.place(w),
            )
            items.append(i)
            workers.append(w)
            labels.append(ECCV_LEVELS.index(answer))
    return np.array(items), np.array(workers), np.array(labels), np.array(truth)


def eccv(population: Population, seeds: Sequence[int], *, pairs: int, team: int) -> list[Figure]:
    columns: dict[str, list[float]] = defaultdict(list)
    hold = _Hold()
    for seed in seeds:
        world, rng, crowd = _seeded(f"eccv:{seed}", population, team, hit=20)
        it, wk, lb, positive = eccv_judgments(world, rng, crowd, pairs)
        binary = (lb >= 2).astype(np.int64)  # 0: YES or Partially YES
        aggregates: dict[str, np.ndarray] = {
            "majority": majority(it, wk, binary, k=2).labels == 0,
            "weighted": weighted_majority(
                it, wk, binary, k=2, accuracy=crowd.gold_accuracy()
            ).labels
            == 0,
            "Dawid-Skene": dawid_skene(it, wk, lb, k=4).labels <= 1,
            "MACE": mace(it, wk, lb, k=4).labels <= 1,
        }
        for name, called in aggregates.items():
            hits = int((called & positive).sum())
            columns[f"{name} precision"].append(_share(hits, int(called.sum())))
            columns[f"{name} recall"].append(_share(hits, int(positive.sum())))
        called = aggregates["majority"]
        kept = called[it]
        cheats = np.array([crowd.team[w].cheater for w in wk.tolist()])
        columns["cheaters' share of kept answers"].append(
            _share(int((kept & cheats).sum()), int(kept.sum()))
        )
        hold.add(crowd.team, wk.tolist(), others_majority_agrees(it, lb, k=4))
    return [_figure("eccv", population.name, m, v) for m, v in columns.items()] + hold.figures(
        "eccv", population.name
    )


def _ratings_figures(
    flow: str,
    population: Population,
    seeds: Sequence[int],
    *,
    items: int,
    raters: int,
    team: int,
    points: tuple[int, ...],
    latent: Callable[[World, int], float],
) -> list[Figure]:
    columns: dict[str, list[float]] = defaultdict(list)
    hold = _Hold()
    for seed in seeds:
        world, rng, crowd = _seeded(f"{flow}:{seed}", population, team, hit=10)
        it, wk, ys, truth = [], [], [], []
        for i in range(items):
            value = latent(world, i)
            truth.append(value)
            hard = world.difficulty(flow, i)
            for w in crowd.workers(raters):
                it.append(i)
                wk.append(w)
                asked = Asked(difficulty=hard, position=crowd.place(w))
                ys.append(rate(crowd.team[w], value, points, rng, asked))
        est = rating_model(np.array(it), np.array(wk), np.array(ys), low=points[0], high=points[-1])
        exact = np.array(truth)[est.items]
        columns["mean: error vs latent"].append(float(np.abs(est.mean - exact).mean()))
        columns["model: error vs latent"].append(float(np.abs(est.value - exact).mean()))
        columns["model: 95% interval covers"].append(
            float(((est.low <= exact) & (exact <= est.high)).mean())
        )
        hold.add(crowd.team, wk, others_mean_close(np.array(it), np.array(ys), tolerance=1.0))
    out = [
        _figure(flow, population.name, m, v, "" if "error" in m else "%")
        for m, v in columns.items()
    ]
    return out + hold.figures(flow, population.name)


def cxc_adaptive(
    population: Population,
    seeds: Sequence[int],
    *,
    pairs: int,
    team: int,
    start: int = 3,
    cap: int = 7,
    width: float = 0.5,
) -> list[Figure]:
    """Ratings asked for in rounds: `start` per pair, then one more for every pair whose scale
    model interval is wider than `width` either side, up to `cap` (the idea of adaptive
    redundancy for ratings); against CxC's five per pair."""
    columns: dict[str, list[float]] = defaultdict(list)
    policy = RatingRedundancy(start=start, cap=cap, half_width=width)
    fixed = RatingRedundancy(start=5, cap=5)  # CxC's five, on the same draws
    for seed in seeds:
        spent, error = adaptive_ratings_seed(population, seed, pairs, team, policy)
        columns["adaptive: ratings per pair"].append(spent)
        columns["adaptive: model error vs latent"].append(error)
        columns["fixed 5, same draws: model error"].append(
            adaptive_ratings_seed(population, seed, pairs, team, fixed)[1]
        )
    return [_figure("cxc", population.name, m, v, "") for m, v in columns.items()]


def _quality_latent(world: World, i: int) -> float:
    return 1 + 3 * world.caption_quality(i, "rating")


def quality_ratings_adaptive(
    population: Population, seeds: Sequence[int], *, captions: int, team: int
) -> list[Figure]:
    """Caption ratings on Flickr8k-Expert's 1-4 scale asked for by the flow's default
    adaptive setting (3, then one more while the interval is wider than ±0.5, up to 7) against
    its three fixed ratings, on the same draws."""
    columns: dict[str, list[float]] = defaultdict(list)
    rules = (
        ("adaptive 3-7 ±0.5", RatingRedundancy()),
        ("fixed 3", RatingRedundancy(start=3, cap=3)),
    )
    for seed in seeds:
        for name, policy in rules:
            spent, error = adaptive_ratings_seed(
                population,
                seed,
                captions,
                team,
                policy,
                points=(1, 2, 3, 4),
                latent=_quality_latent,
                key="quality-rating",
            )
            columns[f"{name}: ratings per caption"].append(spent)
            columns[f"{name}: model error"].append(error)
    return [_figure("quality-rating", population.name, m, v, "") for m, v in columns.items()]


def quality_preferences_adaptive(
    population: Population, seeds: Sequence[int], *, pairs: int, team: int
) -> list[Figure]:
    """Preferences between two captions asked for by the flow's default adaptive setting
    (rounds of 6 until the share's interval excludes one half or is within ±0.15, up to 48)
    against Pascal-50S's fixed 48 and a fixed 6, on the same draws: judgments per pair and
    the share of pairs whose majority names the caption of higher latent quality."""
    columns: dict[str, list[float]] = defaultdict(list)
    rules = (
        ("adaptive 6-48 ±0.15", PreferenceRedundancy()),
        ("fixed 48", PreferenceRedundancy(start=48, cap=48)),
        ("fixed 6", PreferenceRedundancy(start=6, cap=6)),
    )
    size = max(team, *(preference_maximum(policy) for _, policy in rules))  # one team for all
    for seed in seeds:
        for name, policy in rules:
            spent, right = adaptive_preferences_seed(population, seed, pairs, size, policy)
            columns[f"{name}: judgments per pair"].append(spent)
            columns[f"{name}: pairs right"].append(right)
    return [
        _figure("quality-pref", population.name, m, v, "%" if "right" in m else "")
        for m, v in columns.items()
    ]


def _cxc_latent(world: World, i: int) -> float:
    return world.cxc_latent("sts", i, i + 10**6)


def adaptive_ratings_seed(
    population: Population,
    seed: int,
    pairs: int,
    team: int,
    policy: RatingRedundancy,
    *,
    points: tuple[int, ...] = (0, 1, 2, 3, 4, 5),
    latent: Callable[[World, int], float] = _cxc_latent,
    key: str = "cxc",
) -> tuple[float, float]:
    """(ratings per item, the model's mean error against the latent value) of one seed of
    ratings asked for in rounds by `policy` (the rule the flows' follow-up batches apply)."""
    world, rng, crowd = _seeded(f"{key}-adaptive:{seed}", population, team, hit=10)
    truth = [latent(world, i) for i in range(pairs)]
    hard = [world.difficulty(key, i) for i in range(pairs)]
    raters: list[set[int]] = [set() for _ in range(pairs)]
    it: list[int] = []
    wk: list[int] = []
    ys: list[int] = []

    def ask(i: int) -> None:
        (w,) = rng.sample([w for w in range(len(crowd.team)) if w not in raters[i]], 1)
        raters[i].add(w)
        asked = Asked(difficulty=hard[i], position=crowd.place(w))
        it.append(i)
        wk.append(w)
        ys.append(rate(crowd.team[w], truth[i], points, rng, asked))

    for i in range(pairs):
        for _ in range(policy.start):
            ask(i)
    while True:
        est = rating_model(np.array(it), np.array(wk), np.array(ys), low=points[0], high=points[-1])
        half = (est.high - est.low) / 2
        more = [
            int(item)
            for item, h in zip(est.items, half, strict=True)
            if policy.needs_more(len(raters[int(item)]), float(h))
        ]
        if not more:
            break
        for i in more:
            ask(i)
    exact = np.array(truth)[est.items]
    return len(ys) / pairs, float(np.abs(est.value - exact).mean())


def adaptive_preferences_seed(
    population: Population, seed: int, pairs: int, team: int, policy: PreferenceRedundancy
) -> tuple[float, float]:
    """(judgments per pair, share of pairs whose majority names the better caption; ties
    count half) of one seed of preference judgments asked for in rounds of `policy.start` (as
    the flow's follow-up batches ask), with the latent qualities and difficulty of the sweep's
    caption-quality preferences. `team` must hold at least `preference_maximum(policy)`."""
    world, rng, crowd = _seeded(f"quality-pref-adaptive:{seed}", population, team, hit=10)
    spent = 0
    right = 0.0
    for pair in range(pairs):
        qa = world.caption_quality(pair, "pref-adaptive:a")
        qb = world.caption_quality(pair, "pref-adaptive:b")
        better = "a" if qa >= qb else "b"
        hard = world.difficulty("quality-pref-adaptive", pair) + 1 - 3 * abs(qa - qb)
        workers = iter(crowd.workers(preference_maximum(policy)))
        first = total = 0
        while policy.needs_more(first, total):
            for _ in range(policy.start):
                first += crowd.answer(next(workers), better, ("a", "b"), "a", hard) == "a"
                total += 1
        spent += total
        says = 0.5 if 2 * first == total else float((2 * first > total) == (better == "a"))
        right += says
    return spent / pairs, right / pairs


def cxc(population: Population, seeds: Sequence[int], *, pairs: int, team: int) -> list[Figure]:
    return _ratings_figures(
        "cxc",
        population,
        seeds,
        items=pairs,
        raters=5,
        team=team,
        points=(0, 1, 2, 3, 4, 5),
        latent=lambda world, i: world.cxc_latent("sts", i, i + 10**6),
    )


def caption_quality(
    population: Population, seeds: Sequence[int], *, captions: int, team: int
) -> list[Figure]:
    name = population.name
    columns: dict[str, list[float]] = defaultdict(list)
    for seed in seeds:
        world, rng, crowd = _seeded(f"quality:{seed}", population, team, hit=10)
        # Yes/no: does the caption describe the image? Truth: latent quality >= 1/2.
        said = right = 0
        good = 0
        for i in range(captions):
            q = world.caption_quality(i, "binary")
            truth = "yes" if q >= 0.5 else "no"
            good += truth == "yes"
            hard = world.difficulty("quality-binary", i) + 1 - 4 * abs(q - 0.5)
            votes = [crowd.answer(w, truth, ("yes", "no"), "yes", hard) for w in crowd.workers(3)]
            if votes.count("yes") >= 2:
                said += 1
                right += truth == "yes"
        columns["yes/no precision"].append(_share(right, said))
        columns["yes/no recall"].append(_share(right, good))
        # Preferences: every two of an image's eight captions, one judgment each.
        ranked_bt: list[float] = []
        ranked_share: list[float] = []
        single: list[float] = []
        for image in range(captions // 8):
            latent = [world.caption_quality(image, f"pref:{c}") for c in range(8)]
            winners, losers = [], []
            for a in range(8):
                for b in range(a + 1, 8):
                    better = "a" if latent[a] >= latent[b] else "b"
                    (w,) = crowd.workers(1)
                    hard = (
                        world.difficulty("quality-pref", image, a, b)
                        + 1
                        - 3 * abs(latent[a] - latent[b])
                    )
                    pick = crowd.answer(w, better, ("a", "b"), "a", hard)
                    single.append(pick == better)
                    winners.append(a if pick == "a" else b)
                    losers.append(b if pick == "a" else a)
            est = bradley_terry(np.array(winners), np.array(losers))
            strength = dict(zip(est.items.tolist(), est.strength, strict=True))
            share = dict(zip(est.items.tolist(), est.share, strict=True))
            for order, into in ((strength, ranked_bt), (share, ranked_share)):
                pairs = [(a, b) for a in range(8) for b in range(a + 1, 8)]
                agree = [
                    (order.get(a, 0.0) - order.get(b, 0.0)) * (latent[a] - latent[b]) > 0
                    for a, b in pairs
                ]
                into.append(statistics.fmean(agree))
        columns["one preference right"].append(statistics.fmean(single))
        columns["share of wins: ranking accuracy"].append(statistics.fmean(ranked_share))
        columns["Bradley-Terry: ranking accuracy"].append(statistics.fmean(ranked_bt))
    figures = [_figure("quality", name, m, v) for m, v in columns.items()]
    return figures + _ratings_figures(
        "quality-rating",
        population,
        seeds,
        items=captions,
        raters=3,
        team=team,
        points=(1, 2, 3, 4),
        latent=lambda world, i: 1 + 3 * world.caption_quality(i, "rating"),
    )


def flow_figures(
    population: Population,
    *,
    seeds: int = 10,
    first_seed: int = 0,
    items: int = 1500,
    team: int = 40,
    kinds: Sequence[str] = ("bison", "eccv", "cxc", "caption_quality"),
) -> list[Figure]:
    """The figures of each flow of `kinds` (run kinds) on `population` over `seeds` seeds of
    `items` items each (CxC pairs and captions: a third as many)."""
    chosen = range(first_seed, first_seed + seeds)
    runs: dict[str, Callable[[], list[Figure]]] = {
        "bison": lambda: bison(population, chosen, pairs=items, team=team),
        "eccv": lambda: eccv(population, chosen, pairs=items, team=team),
        "cxc": lambda: (
            cxc(population, chosen, pairs=items // 3, team=team)
            + cxc_adaptive(population, chosen, pairs=items // 3, team=team)
        ),
        "caption_quality": lambda: (
            caption_quality(population, chosen, captions=items // 3, team=team)
            + quality_ratings_adaptive(population, chosen, captions=items // 3, team=team)
            + quality_preferences_adaptive(population, chosen, pairs=items // 3, team=team)
        ),
    }
    return [figure for kind in kinds for figure in runs[kind]()]


def figure_lines(figures: Sequence[Figure]) -> list[str]:
    lines = [
        f"{'flow':<15} {'population':<11} {'measure':<34} {'mean':>8} {'95% interval':>17}  seeds"
    ]
    for f in figures:
        if f.unit == "%":
            value = f"{100 * f.value:.2f}%"
            span = f"{100 * f.low:.2f}-{100 * f.high:.2f}%"
        else:
            value, span = f"{f.value:.3f}", f"{f.low:.3f}-{f.high:.3f}"
        lines.append(
            f"{f.flow:<15} {f.population:<11} {f.measure:<34} {value:>8} {span:>17}  {f.seeds}"
        )
    return lines
