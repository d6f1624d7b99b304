"""BISON stage 2 (caption selection) and stage 3 (verification)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from annotation.errors import AnswerError, ServiceError
from annotation.flows.bison.services.triples import bison_triples_create
from annotation.flows.bison.vocabulary import NONE
from annotation.models import Caption, Item, ItemKind, Question, Run, RunStatus, Stage
from annotation.tasktypes.base import ParsedAnswer, TaskType


class SelectionTask(TaskType):
    stage = Stage.BISON_SELECTION
    cli_name = "selection"
    publish_status = RunStatus.SELECTING
    title = "Pick the caption that describes the left image but not the right one"
    template_name = "annotation/task_bison_selection.html"
    default_assignments = 1

    def items_for_batch(self, *, run: Run, options: dict[str, Any]) -> QuerySet[Item]:
        return (
            Item.objects.filter(run=run, kind=ItemKind.IMAGE_PAIR)
            .exclude(questions__hit__batch__stage=self.stage)
            .order_by("pk")
        )

    def _captions(self, question: Question) -> list[Caption]:
        return sorted(question.item.positive.captions.all(), key=lambda c: c.coco_id)

    def question_view(self, *, question: Question) -> dict[str, Any]:
        item = question.item
        return {
            "left": self.image_view(item.positive),
            "right": self.image_view(item.negative),
            "captions": [
                {"value": str(c.coco_id), "text": c.text} for c in self._captions(question)
            ],
        }

    def worker_choices(self, *, question: Question) -> list[str]:
        return [str(c.coco_id) for c in self._captions(question)] + [NONE]

    def parse_answer(self, *, question: Question, value: str) -> ParsedAnswer:
        if value == NONE:
            return ParsedAnswer(choice=NONE, label=NONE)
        caption = next((c for c in self._captions(question) if str(c.coco_id) == value), None)
        if caption is None:
            raise AnswerError(
                f"caption {value!r} is not one of this pair's captions",
                record=f"question {question.position + 1}",
                field="caption",
            )
        return ParsedAnswer(choice=value, label=value, caption=caption)


class VerificationTask(TaskType):
    stage = Stage.BISON_VERIFICATION
    cli_name = "verification"
    title = "Which image does the text describe?"
    template_name = "annotation/task_bison_verification.html"
    default_assignments = 2
    choices = ("left", "right", "both", "neither")
    draws_sides = True

    def prepare_batch(self, *, run: Run) -> None:
        made = bison_triples_create(run=run)
        if made.selection_answers == 0:
            raise ServiceError(
                f"run {run.pk} has no stage-2 results yet: publish stage 2 and collect "
                "its answers before asking for stage 3"
            )

    def items_for_batch(self, *, run: Run, options: dict[str, Any]) -> QuerySet[Item]:
        return (
            Item.objects.filter(run=run, kind=ItemKind.TRIPLE)
            .exclude(questions__hit__batch__stage=self.stage)
            .order_by("pk")
        )

    def _sides(self, question: Question) -> tuple[Any, Any]:
        item = question.item
        if question.swapped:
            return item.negative, item.positive
        return item.positive, item.negative

    def question_view(self, *, question: Question) -> dict[str, Any]:
        left, right = self._sides(question)
        assert question.item.caption is not None
        return {
            "query": question.item.caption.text,
            "left": self.image_view(left),
            "right": self.image_view(right),
        }

    def parse_answer(self, *, question: Question, value: str) -> ParsedAnswer:
        if value not in self.choices:
            raise AnswerError(
                f"answer {value!r} is not one of {', '.join(self.choices)}",
                record=f"question {question.position + 1}",
                field="image",
            )
        if value in ("both", "neither"):
            return ParsedAnswer(choice=value, label=value)
        positive_side = "right" if question.swapped else "left"
        return ParsedAnswer(
            choice=value, label="positive" if value == positive_side else "negative"
        )
