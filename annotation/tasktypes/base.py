from __future__ import annotations

import random
from abc import ABC, abstractmethod
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from django.db.models import QuerySet

from annotation.models import Answer, Assignment, Batch, Caption, Item, Question, Run, RunStatus
from annotation.selectors.reviews.gold import Established
from annotation.selectors.work.images import ImageLinks
from annotation.services.runs.gold import (
    ESTABLISHED,
    GoldCopies,
    GoldKind,
    gold_agreement,
    gold_copies_create,
    gold_place,
    gold_source,
    item_images,
)
from pipeline.packing import pack_disjoint


@dataclass(frozen=True)
class ParsedAnswer:
    choice: str
    label: str
    caption: Caption | None = None
    details: dict[str, Any] | None = None


@dataclass(frozen=True)
class Shown:
    """One thing a worker saw in a question, for the review page: an image (`url`, a staff
    link) or a text, named by its place on the worker's page ("Left image", "Caption B"),
    whether the worker picked it, and a `note` only a reviewer reads (which image is the
    positive, which caption is the item's first)."""

    label: str
    url: str = ""
    text: str = ""
    picked: bool = False
    note: str = ""


def shown_image_and_caption(question: Question, images: ImageLinks) -> list[Shown]:
    """An image–caption question as its worker saw it (ECCV's judgments, CxC's image–caption
    ratings): the item's image, then its caption."""
    item = question.item
    assert item.caption is not None
    return [Shown("Image", url=images.url(item.positive)), Shown("Caption", text=item.caption.text)]


@dataclass(frozen=True)
class BatchOption:
    """A task option a batch of the stage takes (kept in `Batch.options`), as the console's
    batch form and the API offer it; `create_batch` has the same as flags. A yes/no option
    when `choices` is empty."""

    name: str
    label: str
    help: str
    default: bool | str = False
    choices: tuple[tuple[str, str], ...] = ()


# Image-disjoint stages (`TaskType.images_disjoint`) may relax the claim's image rule for one
# batch: a small lab's few trusted people could not cover the HITs otherwise (issue 46).
RELAX_IMAGES = BatchOption(
    name="relax_image_disjointness",
    label="Relax image-disjointness (trusted pool only)",
    help="let a worker take a HIT showing an image they saw in another HIT. By default "
    "nobody does: one image seen in two questions lets a worker compare them with the "
    "public captions and answer from memory instead of looking, so a cheater could pass "
    "without judging. A small lab's pool cannot cover every HIT under that rule (the batch "
    "page says how many people it needs); relax it only for people you trust. The "
    "datasheet records the choice",
)


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
    # The run's status once a batch of this stage is published: COLLECTING for a flow's
    # first (or only) crowd stage, COLLECTING_2 for a second one.
    publish_status: str = RunStatus.COLLECTING
    # The stage's own auto-approval delay (None: the batch default), e.g. long enough for a
    # later stage to check the work before it is paid.
    default_auto_approval_seconds: int | None = None
    # Expected seconds a worker spends on one item, and where the figure comes from (a
    # paper's measurement, or a documented assumption); a pilot batch's median replaces it.
    expected_seconds: float = 20.0
    seconds_source: str = "an assumption (no published time)"
    # The options a batch of this stage takes beyond the core's (e.g. an ECCV round's direction).
    batch_options: tuple[BatchOption, ...] = ()

    def assignments_default(self, *, run: Run, options: dict[str, Any] | None = None) -> int:
        """Workers per HIT when the batch does not say (a run setting or, for an adaptive
        run's follow-up batch, the batch's options may decide it)."""
        return self.default_assignments

    def adaptive_expected(self, *, run: Run) -> Any:
        """An adaptive run's expected judgments per item (`pipeline.adaptive_cost`'s
        ExpectedJudgments), shown before launch; None: the stage has no such setting."""
        return None

    def instructions_example(self, *, run: Run) -> dict[str, Any]:
        """What the stage's own instructions read from a question (a rating scale's points),
        so they are written out as text without a HIT (`selectors/work/run_texts.py`)."""
        return {}

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

    # --- The review page (`annotation/selectors/reviews/review_page.py`): each task type says what its
    # workers saw and what their answers mean, so the core page stays flow-neutral.

    @abstractmethod
    def review_shown(
        self, *, question: Question, answer: Answer, images: ImageLinks
    ) -> list[Shown]:
        """Every image and text the worker saw in `question`, in their page's order and
        words, what `answer` picked marked. For reviewers: notes may say what a worker must
        never see (which image is the positive)."""

    def label_words(self, *, label: str, question: Question | None = None) -> str:
        """An answer's stored label (or one a gold item expects) in the words of the worker's
        page; with `question`, as that worker saw it (which side). The label itself where the
        task has no words for it."""
        return label

    def answer_words(self, *, answer: Answer) -> str:
        """A worker's answer in words, with any follow-up answers."""
        return self.label_words(label=answer.label, question=answer.question)

    def reason_words(self, *, reason: dict[str, Any]) -> str | None:
        """One sentence for a hold reason this task type's `hold_reasons` wrote (None: not one
        of its own; the core words the core's reasons)."""
        return None

    def plan_hits(
        self,
        *,
        run: Run,
        items: list[Item],
        items_per_hit: int,
        seed: int,
        options: dict[str, Any] | None = None,
    ) -> list[list[Item]]:
        """The questions of each HIT in display order (items arrive in a seeded order; `seed`
        is secret, `options` the batch's). A stage with gold kinds, in a run whose
        `gold_source` is "established", gets gold copies of the items its earlier batches
        established (`services/runs/gold.py`), one of each pool per HIT at a secret position."""
        if self.gold_kinds and not self.gold_always and gold_source(run) != ESTABLISHED:
            return self.plan_paper(run=run, items=items, items_per_hit=items_per_hit, seed=seed)
        copies = GoldCopies(by_kind={}, weight={})
        if self.gold_kinds:
            copies = self.gold_copies(run=run, items=items, options=options or {})
        groups = self.gold_pool_kinds or (self.gold_kinds,)
        pools = [[c for kind in group for c in copies.by_kind.get(kind, [])] for group in groups]
        per_hit = [min(self.gold_per_hit, len(pool)) for pool in pools]
        size = items_per_hit
        if self.gold_within_hit:  # gold takes places of the HIT's items_per_hit
            size = max(1, items_per_hit - sum(per_hit))
        plans = self.pack(items, size)
        if not any(per_hit):
            return plans
        draw = random.Random(f"{seed}:gold")
        return gold_place(
            plans=plans,
            pools=pools,
            draw=draw,
            per_hit=per_hit,
            weight=copies.weight,
            images=item_images if self.images_disjoint else None,
        )

    def plan_paper(
        self, *, run: Run, items: list[Item], items_per_hit: int, seed: int
    ) -> list[list[Item]]:
        """The HITs of a run whose `gold_source` is "paper": the paper's gold, if it had any."""
        return self.pack(items, items_per_hit)

    # Whether no worker may see one image in two questions (issue 25): HITs are packed
    # image-disjoint and the claim gives nobody a HIT showing an image they had before
    # (`HitImage`, `image_seen_before`). For stages where an image appears in several items.
    images_disjoint = False

    def pack(self, items: list[Item], size: int) -> list[list[Item]]:
        """Items in HITs of at most `size`, in their order; image-disjoint if the stage is."""
        if not self.images_disjoint:
            return [items[i : i + size] for i in range(0, len(items), size)]
        packed = pack_disjoint([item_images(item) for item in items], size)
        return [[items[i] for i in hit] for hit in packed.hits]

    # The gold kinds this stage's batches may hold (empty: the stage has no gold). With the
    # run's `gold_source` "established", a batch of the stage with no gold question gets a
    # publish warning (`services/runs/gold.py`, `gold_warnings`).
    gold_kinds: tuple[str, ...] = ()
    # Whether the stage's gold is its own defence rather than a paper's choice, dealt whatever
    # the run's `gold_source` (BISON stage 3's traps for workers who look pictures up).
    gold_always = False
    # How gold is dealt: each group of kinds is one pool, and every HIT gets `gold_per_hit`
    # items of each non-empty pool (None: one pool of all `gold_kinds`).
    gold_pool_kinds: tuple[tuple[str, ...], ...] | None = None
    gold_per_hit = 1
    # Whether gold takes places of a HIT's `items_per_hit` (ECCV Caption: 18 + 2 = 20) or
    # comes on top of them (CxC: 10 + 1).
    gold_within_hit = False
    # Established by the spread of ratings (True) or by a share of workers in one class;
    # `gold_classes` maps answers to classes (unmapped answers are their own).
    gold_ratings = False
    gold_classes: dict[str, str] | None = None

    def gold_kind(self, *, found: Established) -> GoldKind | None:
        """What a copy of an established item is (kind and target); None: not gold."""
        return None

    def gold_among(self, *, run: Run, options: dict[str, Any]) -> QuerySet[Item] | None:
        """The items whose copies may serve a batch with `options` (None: any of the stage)."""
        return None

    def gold_copies(self, *, run: Run, items: list[Item], options: dict[str, Any]) -> GoldCopies:
        """Gold copies of the items the stage's earlier batches established."""
        return gold_copies_create(
            run=run,
            stage=self.stage,
            agreement=gold_agreement(run, classes=self.gold_classes, ratings=self.gold_ratings),
            kind_of=lambda found: self.gold_kind(found=found),
            among=self.gold_among(run=run, options=options),
            exclude=[item.pk for item in items],
        )

    def gold_passed(self, *, item: Item, label: str) -> bool | None:
        """Whether the answer `label` passes the gold item `item` (None: not gold here)."""
        return None

    def gold_expected(self, *, item: Item) -> list[str]:
        """What the gold item `item` expects, as the reviewer reads it."""
        return []

    def gold_failures(
        self, *, questions: list[Question], answers: list[Any]
    ) -> list[dict[str, Any]]:
        """Review reasons for the gold questions answered wrongly (`gold_passed` False)."""
        return [
            {
                "position": question.position,
                "gold": question.item.kind,
                "expected": self.gold_expected(item=question.item),
                "answer": answer.label,
            }
            for question, answer in zip(questions, answers, strict=True)
            if self.gold_passed(item=question.item, label=answer.label) is False
        ]

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
