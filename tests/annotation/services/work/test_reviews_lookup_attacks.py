"""The lookup cheater (issue 47): a worker who identifies every served picture and answers
from the public files, measured per flow (ECCV Caption, CxC, caption quality).

The audit's cheater holds the public COCO val2014 images and captions and matches every
served picture to its original with a perceptual hash (100 % of the time in the audit). The
test gives it that knowledge from the database instead: for each question on its page, the
COCO ids of the images the question shows. This stands in for a perfect perceptual-hash match
and is the only thing it takes from outside its browser; the texts it reads from the page and
looks up in the public files (`PublicFiles`; CxC's published ratings). It never judges.

Per flow, the stage's first batch establishes gold (careful simulated raters, as in
`services/runs/test_gold_attacks.py`); in the next batch, five workers answer every HIT: the lookup cheater
and a random clicker (uniform over each question's choices, the chance baseline) over HTTP,
and three careful simulated workers (the world's answers at accuracy 0.9). After the batch's
hold policy ran (`reviews_hold_by_policy`; gold misses were already held at submit), an
answer reaches the verified set when it still counts (`counted_reviewed`). The table
(`pytest -s`) gives, per worker, the real (not gold) questions answered, how many still count,
and how many it had answered when its first assignment was held.

The answers the public files imply:
* ECCV Caption: "100% YES" iff the caption is one of the shown image's own COCO captions, else
  "100% NO" (ECCV Caption's published positives are of its own models' proposals; the original
  pairs are among them, a run's other proposals mostly are not).
* CxC: the published rating of the pair if CxC rated it; else the top rating (5) for two
  sides of one COCO image, else the lowest (0).
* Caption quality (yes/no): "Yes" iff the candidate is a human COCO caption of the shown image,
  else "No".
"""

from __future__ import annotations

import csv
import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.test import Client

from annotation.crowd.simulated.crowd import simulate_crowd
from annotation.flows.cxc.vocabulary import CxcStage
from annotation.flows.eccv.vocabulary import EccvStage
from annotation.flows.quality.vocabulary import QualityStage
from annotation.models import GOLD_KINDS, Answer, Assignment, Batch, Item, Question, Run, Worker
from annotation.selectors.counting import counted_reviewed
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.work.reviews import reviews_hold_by_policy
from annotation.tasktypes import task_type_for
from pipeline.simulate import WorkerProfile
from tests.annotation.services.runs.test_gold_attacks import (
    Cheater,
    PageQuestion,
    PublicFiles,
    _fixed_layout,  # noqa: F401  (autouse: the same batches as services/runs/test_gold_attacks.py)
    cxc_setup,
    eccv_setup,
    quality_setup,
)
from tests.factories import join

pytestmark = [pytest.mark.long, pytest.mark.django_db]

CAREFUL = 3  # careful simulated workers per HIT beside the cheater and the random clicker
# "Well below": the cheater's counted share stays under this share of the careful workers'.
HELD_FACTOR = 0.5

Pick = Callable[[Item, PageQuestion], str]  # a pattern of the label to choose


class PageWorker(Cheater):
    """A worker over HTTP who takes every HIT of a batch the server gives it and answers each
    question with `pick(item, page question)`: the item stands for what a perfect
    perceptual-hash match tells the cheater (which COCO images are shown), nothing more."""

    def __init__(self, client, run: Run, label: str, pick: Pick) -> None:  # type: ignore[no-untyped-def]
        self.client = client
        self.worker = join(client, run, label)
        self.pick = pick
        self.assignments: list[int] = []

    def work_all(self, batch: Batch) -> None:
        while (taken := self.take(batch)) is not None:
            url, shown = taken
            questions = list(
                Question.objects.filter(hit__assignments=self.assignments[-1])
                .select_related("item__positive", "item__negative")
                .order_by("position")
            )
            picks = [self.pick(q.item, s) for q, s in zip(questions, shown, strict=True)]
            self.submit(url, shown, picks)


def random_pick(seed: int) -> Pick:
    rng = random.Random(seed)

    def pick(item: Item, shown: PageQuestion) -> str:
        labels = sorted({label for _, _, label in shown.options})
        return "^" + re.escape(rng.choice(labels)) + "$"

    return pick


# --- the measure ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reach:
    """One worker's real (not gold) answers in a batch: answered, still counted after the
    holds, and answered before its first held assignment (None: never held); its gold passed
    and answered; its held assignments by the rule that held them."""

    answered: int
    counted: int
    before_held: int | None
    gold_right: int
    gold_seen: int
    held_by: dict[str, int]

    @property
    def share(self) -> float:
        return self.counted / self.answered if self.answered else 0.0

    def row(self, name: str) -> str:
        return (
            f"{name} | {self.answered} | {self.counted} | {self.share:.1%} | {self.before_held} | "
            f"{self.gold_right}/{self.gold_seen} | {self.held_by}"
        )


def reach(batch: Batch, worker: Worker) -> Reach:
    answers = Answer.objects.filter(assignment__hit__batch=batch, assignment__worker=worker)
    real = answers.exclude(question__item__kind__in=GOLD_KINDS)
    before, held_at = 0, None
    for assignment in Assignment.objects.filter(hit__batch=batch, worker=worker).order_by("pk"):
        if not answers.filter(counted_reviewed(), assignment=assignment).exists():
            held_at = before
            break
        before += real.filter(assignment=assignment).count()
    task = task_type_for(batch.stage)
    gold = answers.filter(question__item__kind__in=GOLD_KINDS).select_related("question__item")
    passed = sum(bool(task.gold_passed(item=a.question.item, label=a.label)) for a in gold)
    rules: Counter[str] = Counter()
    for assignment in Assignment.objects.filter(
        hit__batch=batch, worker=worker, review__isnull=False
    ).select_related("review"):
        rules.update({r.get("policy", "gold_miss") for r in assignment.review.reasons})
    return Reach(
        answered=real.count(),
        counted=real.filter(counted_reviewed()).count(),
        before_held=held_at,
        gold_right=passed,
        gold_seen=len(gold),
        held_by=dict(sorted(rules.items())),
    )


def total(parts: list[Reach]) -> Reach:
    """Several workers' reach as one (held first: the earliest of theirs)."""
    rules: Counter[str] = Counter()
    for part in parts:
        rules.update(part.held_by)
    held = [r.before_held for r in parts if r.before_held is not None]
    return Reach(
        answered=sum(r.answered for r in parts),
        counted=sum(r.counted for r in parts),
        before_held=min(held, default=None),
        gold_right=sum(r.gold_right for r in parts),
        gold_seen=sum(r.gold_seen for r in parts),
        held_by=dict(sorted(rules.items())),
    )


def measure(  # type: ignore[no-untyped-def]
    client, run: Run, stage: str, lookup: Pick, *, first: dict, second: dict, raters: int, flow: str
) -> dict[str, Reach]:
    """Calibrate `stage` (its first batch), then let the lookup cheater, a random clicker and
    `CAREFUL` careful workers answer every HIT of the next batch; run its hold policy and
    return what reached the verified set per worker (the careful workers' summed)."""
    calibration = batch_publish(
        batch=batch_create(run=run, stage=stage, provider="local", seed=1, **first)
    )
    simulate_crowd(batch=calibration, workers=raters, profile=WorkerProfile(accuracy=0.9), seed=2)
    later = batch_publish(
        batch=batch_create(
            run=run,
            stage=stage,
            provider="local",
            seed=3,
            assignments_per_hit=2 + CAREFUL,
            **second,
        )
    )
    cheater = PageWorker(client, run, "lookup", lookup)
    clicker = PageWorker(Client(), run, "random", random_pick(11))
    cheater.work_all(later)
    clicker.work_all(later)
    simulate_crowd(
        batch=later, workers=CAREFUL, profile=WorkerProfile(accuracy=0.9), seed=4, id_prefix="care"
    )
    reviews_hold_by_policy(batch=later)
    careful = Worker.objects.filter(external_id__startswith="care-").order_by("pk")
    found = {
        "lookup": reach(later, cheater.worker),
        "random": reach(later, clicker.worker),
        "careful": total([reach(later, w) for w in careful]),
    }
    # The figures for docs/security.md (pytest -s).
    print(f"\n{flow}: worker | real answered | counted | share | answered before held | gold")
    for name, r in found.items():
        print(f"{flow}: {r.row(name)}")
    return found


def assert_lookup_held(found: dict[str, Reach]) -> None:
    """The design's promise: the lookup cheater's answers mostly do not reach the verified
    set, where the careful workers' do."""
    lookup, careful = found["lookup"], found["careful"]
    assert lookup.answered and careful.answered
    assert lookup.before_held is not None, f"the lookup cheater is never held: {found}"
    assert lookup.share < HELD_FACTOR * careful.share, f"the lookup cheater counts: {found}"


# --- ECCV Caption -----------------------------------------------------------------------------


@pytest.mark.parametrize("direction", ["i2t", "t2i"])
def test_eccv_lookup_cheater_is_held(client, tmp_path, run_on_commit, direction):
    run, document, _world, _i2c, _c2i = eccv_setup(tmp_path, run_on_commit)
    public = PublicFiles(document)
    options = {"direction": direction, "follow_ups": False}

    def lookup(item: Item, shown: PageQuestion) -> str:
        own = public.owner[public.caption_id[shown.texts[0]]] == item.positive.coco_id
        return re.escape("100% YES" if own else "100% NO")

    found = measure(
        client,
        run,
        EccvStage.JUDGMENT,
        lookup,
        first={"limit": 200, "assignments_per_hit": 3, "options": options},
        second={"options": options},
        raters=9,
        flow=f"ECCV {direction}",
    )
    assert_lookup_held(found)


# --- CxC --------------------------------------------------------------------------------------


def published_ratings(path, kind: str) -> dict[tuple[int, int], float]:  # type: ignore[no-untyped-def]
    """CxC's published file as the cheater indexes it: STS (caption, caption) both orders,
    SITS (image, caption), by COCO ids."""
    table: dict[tuple[int, int], float] = {}
    with open(path) as handle:
        for row in csv.DictReader(handle):
            score = float(row["agg_score"])
            if kind == "sts":
                a = int(row["caption1"].rsplit(":", 1)[1])
                b = int(row["caption2"].rsplit(":", 1)[1])
                table[(a, b)] = table[(b, a)] = score
            else:
                image = int(row["image"].rsplit("_", 1)[1].split(".")[0])
                table[(image, int(row["caption"].rsplit(":", 1)[1]))] = score
    return table


@pytest.mark.parametrize("stage", [CxcStage.STS, CxcStage.SITS])
def test_cxc_lookup_cheater_is_held(client, tmp_path, stage):
    run, document, _world, path = cxc_setup(tmp_path, stage)
    kind = "sts" if stage == CxcStage.STS else "sits"
    public, published = PublicFiles(document), published_ratings(path, kind)

    def lookup(item: Item, shown: PageQuestion) -> str:
        ids = [public.caption_id[t] for t in shown.texts]
        if kind == "sts":
            key, same = (ids[0], ids[1]), public.owner[ids[0]] == public.owner[ids[1]]
        else:
            image = item.positive.coco_id
            key, same = (image, ids[0]), public.owner[ids[0]] == image
        rating = round(published[key]) if key in published else 5 if same else 0
        return rf"^{rating}\b"

    found = measure(
        client,
        run,
        stage,
        lookup,
        first={"limit": 150, "assignments_per_hit": 5},
        second={"items_per_hit": 5},
        raters=10,
        flow=f"CxC {kind}",
    )
    assert_lookup_held(found)


# --- caption quality --------------------------------------------------------------------------


def test_caption_quality_lookup_cheater_is_held(client, tmp_path):
    run, document = quality_setup(tmp_path)
    public = PublicFiles(document)

    def lookup(item: Item, shown: PageQuestion) -> str:
        caption = public.caption_id.get(shown.texts[0])
        human = caption is not None and public.owner[caption] == item.positive.coco_id
        return r"\bYes\b" if human else r"\bNo\b"

    found = measure(
        client,
        run,
        QualityStage.BINARY,
        lookup,
        first={"limit": 200, "items_per_hit": 10, "assignments_per_hit": 3},
        second={"items_per_hit": 10},
        raters=9,
        flow="quality yes/no",
    )
    assert_lookup_held(found)
