"""CxC rating tasks: how similar are the two sides of a pair, on the STS-style 0-5 scale.
One task type (and page) per modality: image-image (SIS), caption-caption (STS) and
image-caption (SITS). The flow's app registers these at start-up, so what they call (the
sampling services, the follow-ups: numpy) is imported where it is called (issue 46)."""

from __future__ import annotations

import secrets
from typing import Any

from django.db.models import QuerySet

from annotation.errors import AnswerError
from annotation.flows.cxc.adaptive import HIGH, LOW, cxc_policy
from annotation.flows.cxc.settings import cxc_settings
from annotation.flows.cxc.vocabulary import CxcItemKind, CxcStage
from annotation.models import Answer, GoldItemKind, Item, Question, Run, RunStatus
from annotation.selectors.reviews.gold import Established
from annotation.selectors.work.images import ImageLinks
from annotation.services.runs.gold import GoldKind
from annotation.tasktypes.adaptive import (
    MORE_JUDGMENTS,
    follow_up_batch_items,
    no_policy,
    round_assignments,
)
from annotation.tasktypes.base import ParsedAnswer, Shown, TaskType, shown_image_and_caption
from pipeline.adaptive_cost import ExpectedJudgments, expected_ratings

# The STS guidelines' points, worded for each modality ("the two sides").
RUBRIC = (
    ("5", "Same meaning: they show or say the same thing (the same scene)"),
    ("4", "Mostly the same: only unimportant details differ"),
    ("3", "Roughly the same: some important details differ or are missing"),
    ("2", "Not the same, but they share some important details"),
    ("1", "Not the same, but on the same topic"),
    ("0", "Completely dissimilar: different topics"),
)
SCALE = tuple(value for value, _ in RUBRIC)


def _tolerance(item: Item) -> float:
    """How far from a gold pair's known rating a rating may be and pass (`gold_tolerance`)."""
    return cxc_settings(item.run).gold_tolerance


class CxcRatingTask(TaskType):
    expected_seconds = 8.0  # CxC states no time per rating: assumed
    default_assignments = 5  # CxC collected about five ratings per pair
    default_items_per_hit = 10
    choices = SCALE
    publish_status = RunStatus.COLLECTING

    batch_options = (MORE_JUDGMENTS,)

    def assignments_default(self, *, run: Run, options: dict[str, Any] | None = None) -> int:
        return round_assignments(cxc_policy(run), options, self.default_assignments)

    def adaptive_expected(self, *, run: Run) -> ExpectedJudgments | None:
        policy = cxc_policy(run)
        if policy is None:
            return None
        return expected_ratings(policy, tuple(range(LOW, HIGH + 1)), latent="cxc")

    def items_for_batch(self, *, run: Run, options: dict[str, Any]) -> QuerySet[Item]:
        """Pairs not rated yet; with `more_judgments`, an adaptive run's follow-up batch: the
        rated pairs whose interval is still wider than the run's `adaptive` setting."""
        from annotation.flows.cxc.services.sampling import METHODS_OF
        from annotation.selectors.reviews.follow_ups import rating_follow_ups

        pairs = Item.objects.filter(
            run=run, kind=CxcItemKind.RATING_PAIR, tag__in=METHODS_OF[self.stage]
        )
        if options.get("more_judgments"):
            policy = cxc_policy(run)
            if policy is None:
                raise no_policy("adaptive")
            ids = rating_follow_ups(
                run=run, stage=self.stage, items=pairs, policy=policy, low=LOW, high=HIGH
            )
            return follow_up_batch_items(ids, what="pair", setting="adaptive")
        return pairs.exclude(questions__hit__batch__stage=self.stage).order_by("pk")

    gold_kinds = (GoldItemKind.RATING,)
    gold_ratings = True

    def plan_paper(
        self, *, run: Run, items: list[Item], items_per_hit: int, seed: int
    ) -> list[list[Item]]:
        """Each HIT gets one gold pair of CxC's published files (`cxc_gold_import`) when the
        run has one for this modality, at a position drawn from a secret source. (By default,
        `gold_source` "established", the core deals copies of pairs of this stage that
        earlier batches' raters agreed on, their known rating the raters' mean.)"""
        from annotation.flows.cxc.services.sampling import METHODS_OF

        plans = super().plan_paper(run=run, items=items, items_per_hit=items_per_hit, seed=seed)
        golds = list(
            Item.objects.filter(
                run=run, kind=GoldItemKind.RATING, tag__in=METHODS_OF[self.stage]
            ).order_by("pk")
        )
        if not golds:
            return plans
        draw = secrets.SystemRandom()
        for plan in plans:
            plan.insert(draw.randint(0, len(plan)), draw.choice(golds))
        return plans

    def parse_answer(self, *, question: Question, value: str) -> ParsedAnswer:
        if value not in SCALE:
            raise AnswerError(
                f"rating {value!r} is not one of 0-5",
                record=f"question {question.position + 1}",
                field="rating",
            )
        return ParsedAnswer(choice=value, label=value)

    def gold_kind(self, *, found: Established) -> GoldKind | None:
        return GoldKind(GoldItemKind.RATING, target=found.mean)

    def gold_passed(self, *, item: Item, label: str) -> bool | None:
        """Within the run's `gold_tolerance` of the known rating."""
        if item.kind != GoldItemKind.RATING or item.target is None:
            return None
        return abs(float(label) - item.target) <= _tolerance(item)

    def gold_expected(self, *, item: Item) -> list[str]:
        if item.kind != GoldItemKind.RATING or item.target is None:
            return []
        return [f"{item.target:.2f} ± {_tolerance(item):g}"]

    def review_reasons(
        self, *, questions: list[Question], answers: list[Answer]
    ) -> list[dict[str, Any]]:
        """A gold rating further than the run's `gold_tolerance` from the known one."""
        return self.gold_failures(questions=questions, answers=answers)

    def label_words(self, *, label: str, question: Question | None = None) -> str:
        """A point of the scale with its words, as the rubric showed it."""
        words = dict(RUBRIC).get(label)
        return f"{label}: {words}" if words else label

    def rubric(self) -> list[dict[str, str]]:
        return [{"value": v, "label": label} for v, label in RUBRIC]

    def instructions_example(self, *, run: Run) -> dict[str, Any]:
        return {"scale": self.rubric()}


class CxcSisTask(CxcRatingTask):
    stage = CxcStage.SIS
    cli_name = "cxc-sis"
    title = "How similar are the two images?"
    template_name = "annotation/task_cxc_sis.html"

    def question_view(self, *, question: Question, images: ImageLinks) -> dict[str, Any]:
        item = question.item
        return {
            "left": self.image_view(item.positive, images),
            "right": self.image_view(item.negative, images),
            "scale": self.rubric(),
        }

    def review_shown(
        self, *, question: Question, answer: Answer, images: ImageLinks
    ) -> list[Shown]:
        item = question.item
        assert item.negative is not None
        return [
            Shown("First image", url=images.url(item.positive)),
            Shown("Second image", url=images.url(item.negative)),
        ]


class CxcStsTask(CxcRatingTask):
    stage = CxcStage.STS
    cli_name = "cxc-sts"
    title = "How similar are the two captions?"
    template_name = "annotation/task_cxc_sts.html"

    def question_view(self, *, question: Question, images: ImageLinks) -> dict[str, Any]:
        item = question.item
        assert item.caption is not None and item.caption2 is not None
        return {"first": item.caption.text, "second": item.caption2.text, "scale": self.rubric()}

    def review_shown(
        self, *, question: Question, answer: Answer, images: ImageLinks
    ) -> list[Shown]:
        item = question.item
        assert item.caption is not None and item.caption2 is not None
        return [
            Shown("First caption", text=item.caption.text),
            Shown("Second caption", text=item.caption2.text),
        ]


class CxcSitsTask(CxcRatingTask):
    stage = CxcStage.SITS
    cli_name = "cxc-sits"
    title = "How well does the caption match the image?"
    template_name = "annotation/task_cxc_sits.html"

    def prepare_batch(self, *, run: Run) -> None:
        """Intermodal pairs come from the intramodal ratings: made on the first SITS batch."""
        from annotation.flows.cxc.services.sampling import cxc_intermodal_create

        cxc_intermodal_create(run=run)

    def question_view(self, *, question: Question, images: ImageLinks) -> dict[str, Any]:
        item = question.item
        assert item.caption is not None
        return {
            "image": self.image_view(item.positive, images),
            "caption": item.caption.text,
            "scale": self.rubric(),
        }

    def review_shown(
        self, *, question: Question, answer: Answer, images: ImageLinks
    ) -> list[Shown]:
        return shown_image_and_caption(question, images)
