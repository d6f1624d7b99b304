"""Caption-quality tasks as the metric papers collected them: a rating of one caption
(Flickr8k-Expert 1-4, or Composite 1-5), a yes/no judgment by at least three workers
(Flickr8k-CF), and a preference between two captions (Pascal-50S: 48 workers per pair). The
flow's app registers these at start-up, so the follow-ups (numpy) are imported where they are
called (issue 46)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from annotation.errors import AnswerError
from annotation.flows.quality.adaptive import quality_preference_policy, quality_rating_policy
from annotation.flows.quality.services.candidates import quality_items_create
from annotation.flows.quality.settings import quality_settings
from annotation.flows.quality.vocabulary import SCALES, QualityItemKind, QualityStage
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
from annotation.tasktypes.base import ParsedAnswer, Shown, TaskType
from pipeline.adaptive_cost import ExpectedJudgments, expected_preferences, expected_ratings

BINARY = (("yes", "Yes, the caption describes the image"), ("no", "No, it does not"))


def _tolerance(item: Item) -> float:
    return quality_settings(item.run).gold_tolerance


class QualityTask(TaskType):
    publish_status = RunStatus.COLLECTING
    kind = QualityItemKind.CANDIDATE_CAPTION

    def review_reasons(
        self, *, questions: list[Question], answers: list[Any]
    ) -> list[dict[str, Any]]:
        return self.gold_failures(questions=questions, answers=answers)

    def prepare_batch(self, *, run: Run) -> None:
        kinds = (QualityItemKind.CANDIDATE_CAPTION, QualityItemKind.CANDIDATE_PAIR)
        if not Item.objects.filter(run=run, kind__in=kinds).exists():
            quality_items_create(run=run)

    def items_for_batch(self, *, run: Run, options: dict[str, Any]) -> QuerySet[Item]:
        return (
            Item.objects.filter(run=run, kind=self.kind)
            .exclude(questions__hit__batch__stage=self.stage)
            .order_by("pk")
        )

    def _options(self, question: Question) -> tuple[tuple[str, str], ...]:
        return tuple((v, v) for v in self.choices)

    def worker_choices(self, *, question: Question) -> list[str]:
        return [v for v, _ in self._options(question)]

    def review_shown(
        self, *, question: Question, answer: Answer, images: ImageLinks
    ) -> list[Shown]:
        """One caption judged for the image (the preference task shows two)."""
        item = question.item
        assert item.candidate is not None
        return [
            Shown("Image", url=images.url(item.positive)),
            Shown("Caption", text=item.candidate.text),
        ]

    def label_words(self, *, label: str, question: Question | None = None) -> str:
        """The option's words on the worker's page (a rating scale is the run's)."""
        if question is None:
            return label
        words = dict(self._options(question)).get(label)
        return f"{label}: {words}" if words and words != label else label

    def parse_answer(self, *, question: Question, value: str) -> ParsedAnswer:
        allowed = self.worker_choices(question=question)
        if value not in allowed:
            raise AnswerError(
                f"answer {value!r} is not one of {', '.join(allowed)}",
                record=f"question {question.position + 1}",
                field="answer",
            )
        return ParsedAnswer(choice=value, label=value)


class QualityRatingTask(QualityTask):
    expected_seconds = 10.0  # assumed (the metric papers state no time)
    stage = QualityStage.RATING
    cli_name = "quality-rating"
    title = "How well does the caption describe the image?"
    template_name = "annotation/task_quality_rating.html"
    default_assignments = 3  # Flickr8k-Expert: three experts per caption
    default_items_per_hit = 10

    gold_ratings = True
    gold_kinds = (GoldItemKind.RATING,)

    def gold_kind(self, *, found: Established) -> GoldKind | None:
        return GoldKind(GoldItemKind.RATING, target=found.mean)

    def gold_passed(self, *, item: Item, label: str) -> bool | None:
        if item.kind != GoldItemKind.RATING or item.target is None:
            return None
        return abs(float(label) - item.target) <= _tolerance(item)

    def gold_expected(self, *, item: Item) -> list[str]:
        return [f"{item.target:.2f} ± {_tolerance(item):g}"]

    def _options(self, question: Question) -> tuple[tuple[str, str], ...]:
        return SCALES[quality_settings(question.item.run).scale]

    def instructions_example(self, *, run: Run) -> dict[str, Any]:
        scale = SCALES[quality_settings(run).scale]
        return {"options": [{"value": v, "label": label} for v, label in scale]}

    batch_options = (MORE_JUDGMENTS,)

    def assignments_default(self, *, run: Run, options: dict[str, Any] | None = None) -> int:
        return round_assignments(quality_rating_policy(run), options, self.default_assignments)

    def adaptive_expected(self, *, run: Run) -> ExpectedJudgments | None:
        policy = quality_rating_policy(run)
        if policy is None:
            return None
        low, high = quality_settings(run).scale_bounds
        return expected_ratings(policy, tuple(range(low, high + 1)))

    def items_for_batch(self, *, run: Run, options: dict[str, Any]) -> QuerySet[Item]:
        """With `more_judgments`: the rated captions whose interval is still wider than the
        run's `adaptive` setting."""
        if not options.get("more_judgments"):
            return super().items_for_batch(run=run, options=options)
        policy = quality_rating_policy(run)
        if policy is None:
            raise no_policy("adaptive")
        low, high = quality_settings(run).scale_bounds
        from annotation.selectors.reviews.follow_ups import rating_follow_ups

        captions = Item.objects.filter(run=run, kind=self.kind)
        ids = rating_follow_ups(
            run=run, stage=self.stage, items=captions, policy=policy, low=low, high=high
        )
        return follow_up_batch_items(ids, what="caption", setting="adaptive")

    def question_view(self, *, question: Question, images: ImageLinks) -> dict[str, Any]:
        item = question.item
        assert item.candidate is not None
        return {
            "image": self.image_view(item.positive, images),
            "caption": item.candidate.text,
            "options": [{"value": v, "label": label} for v, label in self._options(question)],
        }


class QualityBinaryTask(QualityTask):
    expected_seconds = 6.0  # assumed
    stage = QualityStage.BINARY
    cli_name = "quality-binary"
    title = "Does the caption describe the image?"
    template_name = "annotation/task_quality_binary.html"
    default_assignments = 3
    min_assignments = 3  # Flickr8k-CF: at least three judgments per pair
    default_items_per_hit = 20
    choices = ("yes", "no")
    gold_kinds = (GoldItemKind.POSITIVE, GoldItemKind.NEGATIVE)
    GOLD_ANSWER: dict[str, str] = {GoldItemKind.POSITIVE: "yes", GoldItemKind.NEGATIVE: "no"}

    def gold_kind(self, *, found: Established) -> GoldKind | None:
        kind = {"yes": GoldItemKind.POSITIVE, "no": GoldItemKind.NEGATIVE}.get(found.label)
        return None if kind is None else GoldKind(kind)

    def gold_passed(self, *, item: Item, label: str) -> bool | None:
        expected = self.GOLD_ANSWER.get(item.kind)
        return None if expected is None else label == expected

    def gold_expected(self, *, item: Item) -> list[str]:
        return [self.GOLD_ANSWER[item.kind]]

    def _options(self, question: Question) -> tuple[tuple[str, str], ...]:
        return BINARY

    def label_words(self, *, label: str, question: Question | None = None) -> str:
        return dict(BINARY).get(label, label)

    def question_view(self, *, question: Question, images: ImageLinks) -> dict[str, Any]:
        item = question.item
        assert item.candidate is not None
        return {
            "image": self.image_view(item.positive, images),
            "caption": item.candidate.text,
            "options": [{"value": v, "label": label} for v, label in BINARY],
        }


class QualityPreferenceTask(QualityTask):
    expected_seconds = 8.0  # assumed
    stage = QualityStage.PREFERENCE
    cli_name = "quality-preference"
    title = "Which caption describes the image better?"
    template_name = "annotation/task_quality_preference.html"
    default_assignments = 48  # Pascal-50S collected 48 judgments per pair
    default_items_per_hit = 10
    draws_sides = True  # which caption is shown as A is drawn on the server
    kind = QualityItemKind.CANDIDATE_PAIR
    choices = ("a", "b")
    gold_kinds = (GoldItemKind.PREFERENCE,)
    batch_options = (MORE_JUDGMENTS,)

    def assignments_default(self, *, run: Run, options: dict[str, Any] | None = None) -> int:
        policy = quality_preference_policy(run)
        return round_assignments(policy, options, self.default_assignments)

    def adaptive_expected(self, *, run: Run) -> ExpectedJudgments | None:
        policy = quality_preference_policy(run)
        return None if policy is None else expected_preferences(policy)

    def items_for_batch(self, *, run: Run, options: dict[str, Any]) -> QuerySet[Item]:
        """With `more_judgments`: the judged pairs whose preference the run's
        `adaptive_preference` setting finds neither decided nor pinned down."""
        if not options.get("more_judgments"):
            return super().items_for_batch(run=run, options=options)
        policy = quality_preference_policy(run)
        if policy is None:
            raise no_policy("adaptive_preference")
        from annotation.selectors.reviews.follow_ups import preference_follow_ups

        pairs = Item.objects.filter(run=run, kind=self.kind)
        ids = preference_follow_ups(run=run, stage=self.stage, items=pairs, policy=policy)
        return follow_up_batch_items(ids, what="pair", setting="adaptive_preference")

    def gold_kind(self, *, found: Established) -> GoldKind | None:
        # The item's own order, whatever side each caption was shown on: 1 = the first.
        if found.label not in ("first", "second"):
            return None
        return GoldKind(GoldItemKind.PREFERENCE, target=1.0 if found.label == "first" else 0.0)

    def gold_passed(self, *, item: Item, label: str) -> bool | None:
        if item.kind != GoldItemKind.PREFERENCE or item.target is None:
            return None
        return label == ("first" if item.target >= 0.5 else "second")

    def gold_expected(self, *, item: Item) -> list[str]:
        return ["first" if (item.target or 0.0) >= 0.5 else "second"]

    def question_view(self, *, question: Question, images: ImageLinks) -> dict[str, Any]:
        item = question.item
        assert item.candidate is not None and item.candidate2 is not None
        first, second = item.candidate.text, item.candidate2.text
        a, b = (second, first) if question.swapped else (first, second)
        return {"image": self.image_view(item.positive, images), "a": a, "b": b}

    def review_shown(
        self, *, question: Question, answer: Answer, images: ImageLinks
    ) -> list[Shown]:
        item = question.item
        assert item.candidate is not None and item.candidate2 is not None
        # As question_view: the item's first caption is A unless the sides were swapped.
        own = [("first", item.candidate.text), ("second", item.candidate2.text)]
        if question.swapped:
            own.reverse()
        return [
            Shown("Image", url=images.url(item.positive)),
            *(
                Shown(
                    f"Caption {value.upper()}",
                    text=text,
                    picked=answer.choice == value,
                    note=f"the item's {which} caption",
                )
                for value, (which, text) in zip(("a", "b"), own, strict=True)
            ),
        ]

    def label_words(self, *, label: str, question: Question | None = None) -> str:
        """The stored label names the item's own caption (first, second); the worker chose a
        side (A, B)."""
        if label not in ("first", "second"):
            return label
        if question is None:
            return f"The {label} caption"
        side = "A" if (label == "first") != question.swapped else "B"
        return f"Caption {side} (the item's {label})"

    def parse_answer(self, *, question: Question, value: str) -> ParsedAnswer:
        parsed = super().parse_answer(question=question, value=value)
        # The label names the item's own caption, whatever side it was shown on.
        first = (value == "a") != question.swapped
        return ParsedAnswer(choice=parsed.choice, label="first" if first else "second")
