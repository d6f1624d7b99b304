from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db.models import QuerySet

from annotation.models import Assignment, Batch, Caption, Item, Question, Run, RunStatus
from annotation.selectors.images import ImageLinks


@dataclass(frozen=True)
class ParsedAnswer:
    choice: str
    label: str
    caption: Caption | None = None
    details: dict[str, Any] | None = None


class TaskType(ABC):
    stage: str
    # The stage's name on the command line (`create_batch --stage <cli_name>`).
    cli_name: str
    title: str
    template_name: str
    default_assignments: int = 1
    # The fewest workers per HIT the task's procedure allows (e.g. three for binary votes).
    min_assignments: int = 1
    default_items_per_hit: int = 10
    choices: tuple[str, ...] = ()
    # Whether each question's two images are shown in a server-drawn order (`Question.swapped`).
    draws_sides: bool = False
    # The run's status once a batch of this stage is published.
    publish_status: str = RunStatus.VERIFYING
    # The stage's own auto-approval delay (None: the batch default), e.g. long enough for a
    # later stage to check the work before it is paid.
    default_auto_approval_seconds: int | None = None
    # Expected seconds a worker spends on one item, and where the figure comes from (a
    # paper's measurement, or a documented assumption); a pilot batch's median replaces it.
    expected_seconds: float = 20.0
    seconds_source: str = "an assumption (no published time)"

    def assignments_default(self, *, run: Run) -> int:
        """Workers per HIT when the batch does not say (a run setting may decide it)."""
        return self.default_assignments

    def seconds_per_item(self, *, options: dict[str, Any]) -> float:
        return self.expected_seconds

    def default_reward(self, *, items_per_hit: int, options: dict[str, Any]) -> Decimal | None:
        """The paper's reward for a HIT of this task, if it published one (None: pay the
        minimum hourly rate at the expected time)."""
        return None

    def prepare_batch(self, *, run: Run) -> None:
        """Make this stage's items from earlier stages' results, inside `batch_create`'s
        transaction; raise ServiceError when there is nothing to make them from."""
        return None

    @abstractmethod
    def items_for_batch(self, *, run: Run, options: dict[str, Any]) -> QuerySet[Item]:
        """Items this stage asks about that no batch of this stage holds yet (`options` are
        the batch's, e.g. an ECCV round's direction); raise InputError for a bad option."""

    @abstractmethod
    def question_view(self, *, question: Question, images: ImageLinks) -> dict[str, Any]:
        """What the worker sees for one question. Never gold, never which image is positive."""

    @abstractmethod
    def parse_answer(self, *, question: Question, value: str) -> ParsedAnswer:
        """Read one submitted value; raise AnswerError if it does not fit the question."""

    def plan_hits(
        self, *, run: Run, items: list[Item], items_per_hit: int, seed: int
    ) -> list[list[Item]]:
        """The questions of each HIT in display order (items arrive in a seeded order)."""
        return [items[i : i + items_per_hit] for i in range(0, len(items), items_per_hit)]

    def form_value(self, *, data: Any, key: str) -> str:
        """The submitted value of question `key` from a posted form (a QueryDict)."""
        return str(data.get(key, ""))

    def review_reasons(
        self, *, questions: list[Question], answers: list[Any]
    ) -> list[dict[str, Any]]:
        """Why a submission needs a person to look at it (empty: it does not)."""
        return []

    def hold_reasons(
        self, *, batch: Batch, assignments: list[Assignment]
    ) -> dict[int, list[dict[str, Any]]]:
        """Submitted work the batch's approval policy holds for a person before it is paid,
        by assignment pk, with the reasons (e.g. later stages rejected the worker's answers)."""
        return {}

    def publish_warnings(self, *, batch: Batch) -> list[str]:
        """What the researcher should know before publishing `batch` (shown, not enforced)."""
        return []

    def worker_choices(self, *, question: Question) -> list[str]:
        """The values a worker may submit for `question` (used by simulated workers)."""
        return list(self.choices)

    @staticmethod
    def image_view(image: Any, images: ImageLinks) -> dict[str, Any]:
        # No width or height: the COCO file lists them, so they would identify the image.
        return {"url": images.url(image)}
