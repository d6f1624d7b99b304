"""BISON stage 2 (caption selection) and stage 3 (verification). The flow's app registers these
at start-up, so what they call (selectors, services: numpy, pyarrow) is imported where it is
called (issue 46)."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet

from annotation.errors import AnswerError, ServiceError
from annotation.flows.bison.vocabulary import NONE, BisonItemKind, BisonStage
from annotation.models import (
    Answer,
    Assignment,
    Batch,
    Caption,
    GoldItemKind,
    Item,
    Question,
    Run,
    RunStatus,
)
from annotation.selectors.reviews.gold import Agreement
from annotation.selectors.work.images import ImageLinks
from annotation.services.checks import check_int, check_number
from annotation.services.runs.gold import GoldCopies, gold_copies_create
from annotation.tasktypes.base import RELAX_IMAGES, ParsedAnswer, Shown, TaskType

DAY = 24 * 3600
# "Bad caption selections will not be rewarded": by default a stage-2 worker with at least
# `hold_min_judged` selections judged in stage 3, more than `hold_rejected_share` of them
# rejected, is held for review before being paid. Options of a stage-2 batch.
SELECTION_POLICY = {"hold_min_judged": 10, "hold_rejected_share": 0.30, "stage3_seconds": 7 * DAY}
REJECTED_SELECTIONS = "rejected_selections"  # the policy a held review's reason names


def selection_policy(options: dict[str, Any]) -> dict[str, Any]:
    """A stage-2 batch's approval policy options, checked (InputError names the option)."""
    policy = {**SELECTION_POLICY, **{k: options[k] for k in SELECTION_POLICY if k in options}}
    check_int(policy, "hold_min_judged", low=1, high=1_000_000)
    check_number(policy, "hold_rejected_share", low=0.0, high=1.0)
    check_int(policy, "stage3_seconds", low=0, high=365 * DAY)
    return policy


# The stage-2 page's last option, as the worker read it.
NONE_WORDS = "None of the above captions are suitable"
# Stage-3 answers as the page words them (`task_bison_verification.html`).
SIDE_WORDS = {
    "left": "The left image",
    "right": "The right image",
    "both": "More than one image are suitable for the caption",
    "neither": "None of above images is suitable for the caption",
}


def caption_values(question: Question) -> dict[str, Caption]:
    """A stage-2 question's captions by the values its form sends: "c0", "c1", ... in the
    order shown, never their COCO annotation ids (public: issue 25)."""
    captions = sorted(question.item.positive.captions.all(), key=lambda c: c.coco_id)
    return {f"c{n}": caption for n, caption in enumerate(captions)}


class SelectionTask(TaskType):
    # BISON's Table 5: 25.9 s average time per stage-2 annotation (one pair's selection).
    expected_seconds = 25.9
    seconds_source = "BISON paper, Table 5 (measured average)"
    stage = BisonStage.SELECTION
    cli_name = "selection"
    publish_status = RunStatus.COLLECTING
    title = "Pick the caption that describes the left image but not the right one"
    template_name = "annotation/task_bison_selection.html"
    default_assignments = 1
    # Not image-disjoint: a pair's two orders share images, but linking them tells nothing
    # about which caption describes the left image and not the right one (the public
    # captions already say which are the left image's).
    # Long enough for stage 3 to judge the selections before they are paid: the default
    # lifetime (7 days) plus the planned stage-3 time (7 days).
    default_auto_approval_seconds = 14 * DAY

    def items_for_batch(self, *, run: Run, options: dict[str, Any]) -> QuerySet[Item]:
        selection_policy(options)
        return (
            Item.objects.filter(run=run, kind=BisonItemKind.IMAGE_PAIR)
            .exclude(questions__hit__batch__stage=self.stage)
            .order_by("pk")
        )

    def question_view(self, *, question: Question, images: ImageLinks) -> dict[str, Any]:
        item = question.item
        return {
            "left": self.image_view(item.positive, images),
            "right": self.image_view(item.negative, images),
            "captions": [
                {"value": value, "text": c.text} for value, c in caption_values(question).items()
            ],
        }

    def worker_choices(self, *, question: Question) -> list[str]:
        return [*caption_values(question), NONE]

    def review_shown(
        self, *, question: Question, answer: Answer, images: ImageLinks
    ) -> list[Shown]:
        item = question.item
        assert item.negative is not None
        captions = list(caption_values(question).values())
        return [
            Shown("Left image", url=images.url(item.positive), note="the positive"),
            Shown("Right image", url=images.url(item.negative), note="its nearest neighbour"),
            *(
                Shown(f"Caption {n}", text=c.text, picked=answer.caption_id == c.pk)
                for n, c in enumerate(captions, start=1)
            ),
            Shown(f"Option {len(captions) + 1}", text=NONE_WORDS, picked=answer.label == NONE),
        ]

    def label_words(self, *, label: str, question: Question | None = None) -> str:
        if label == NONE:
            return NONE_WORDS
        if question is not None:
            for n, caption in enumerate(caption_values(question).values(), start=1):
                if str(caption.coco_id) == label:
                    return f"Caption {n}: “{caption.text}”"
        return f"COCO caption {label}"

    def reason_words(self, *, reason: dict[str, Any]) -> str | None:
        if reason.get("policy") != REJECTED_SELECTIONS:
            return None
        return (
            f"Stage 3 rejected {reason['rejected']} of this worker's {reason['judged']} "
            f"judged selections ({reason['rejected_share']:.0%}), over the batch's "
            f"limit of {reason['limit']:.0%} (hold_rejected_share)."
        )

    def hold_reasons(
        self, *, batch: Batch, assignments: list[Assignment]
    ) -> dict[int, list[dict[str, Any]]]:
        from annotation.flows.bison.selectors import bison_selection_outcomes

        policy = selection_policy(batch.options)
        outcomes = bison_selection_outcomes(run=batch.run)
        held: dict[int, list[dict[str, Any]]] = {}
        for assignment in assignments:
            outcome = outcomes.get(assignment.worker_id)
            if (
                outcome
                and outcome["judged"] >= policy["hold_min_judged"]
                and outcome["rejected_share"] > policy["hold_rejected_share"]
            ):
                held[assignment.pk] = [
                    {
                        "policy": REJECTED_SELECTIONS,
                        "judged": outcome["judged"],
                        "rejected": outcome["rejected"],
                        "rejected_share": outcome["rejected_share"],
                        "limit": policy["hold_rejected_share"],
                    }
                ]
        return held

    def publish_warnings(self, *, batch: Batch) -> list[str]:
        policy = selection_policy(batch.options)
        needed = batch.lifetime_seconds + policy["stage3_seconds"]
        if batch.auto_approval_delay_seconds >= needed:
            return []
        return [
            f"stage 2's auto-approval delay ({batch.auto_approval_delay_seconds / DAY:g} days) "
            f"is shorter than its lifetime plus the planned stage-3 time "
            f"({batch.lifetime_seconds / DAY:g} + {policy['stage3_seconds'] / DAY:g} days): "
            "selections may be paid before stage 3 has judged them (MTurk allows up to 30 days)"
        ]

    def parse_answer(self, *, question: Question, value: str) -> ParsedAnswer:
        if value == NONE:
            return ParsedAnswer(choice=NONE, label=NONE)
        caption = caption_values(question).get(value)
        if caption is None:
            raise AnswerError(
                f"caption {value!r} is not one of this pair's captions",
                record=f"question {question.position + 1}",
                field="caption",
            )
        # The label is the caption's COCO id, read on the server only.
        return ParsedAnswer(choice=value, label=str(caption.coco_id), caption=caption)


class VerificationTask(TaskType):
    # BISON's Table 5: 12.7 s average time per stage-3 annotation; a trap question takes as
    # long as a triple (the same page), so a HIT's time and pay count its traps too.
    expected_seconds = 12.7
    seconds_source = "BISON paper, Table 5 (measured average)"
    stage = BisonStage.VERIFICATION
    cli_name = "verification"
    publish_status = RunStatus.COLLECTING_2  # BISON's second crowd stage
    title = "Which image does the text describe?"
    template_name = "annotation/task_bison_verification.html"
    default_assignments = 2

    def assignments_default(self, *, run: Run, options: dict[str, Any] | None = None) -> int:
        from annotation.flows.bison.selectors import bison_required_verifiers

        return bison_required_verifiers(run)

    choices = ("left", "right", "both", "neither")
    draws_sides = True
    # Traps for workers who look the pictures up (`flows/bison/lookup.py`, issue 47): two per
    # HIT on top of its triples, questions whose people's answer is not the caption's own
    # image. Not the paper's (BISON had no gold).
    gold_kinds = (GoldItemKind.CHOICE,)
    gold_always = True
    gold_per_hit = 2
    batch_options = (RELAX_IMAGES,)
    # A triple's images are in other triples (both orders of a pair, several captions): a
    # worker seeing one image twice links the questions with the public captions.
    images_disjoint = True

    def gold_copies(self, *, run: Run, items: list[Item], options: dict[str, Any]) -> GoldCopies:
        """Trap copies of the triples every verifier of the run answered alike (at least the
        run's number of verifiers) with an answer other than the lookup's."""
        from annotation.flows.bison.lookup import TRAP_KIND, lookup_policy, pair_traps, trap_kind
        from annotation.flows.bison.selectors import bison_required_verifiers

        lookup_policy(options)
        if options.get(RELAX_IMAGES.name):
            # A batch relaxed for a trusted pool carries no traps: a worker may not be given a
            # trap they had (memory would tell them which question it is), so with traps a
            # small lab could not cover the HITs again, which is what relaxing is for.
            return GoldCopies(by_kind={}, weight={})
        established = gold_copies_create(
            run=run,
            stage=self.stage,
            agreement=Agreement(min_answers=bison_required_verifiers(run), share=1.0),
            kind_of=trap_kind,
            exclude=[item.pk for item in items],
        )
        pairs = pair_traps(run=run)
        return GoldCopies(
            by_kind={TRAP_KIND: [*established.by_kind.get(TRAP_KIND, []), *pairs]},
            weight={**established.weight, **{trap.pk: 1.0 for trap in pairs}},
        )

    def gold_passed(self, *, item: Item, label: str) -> bool | None:
        """Established traps are gold; pair traps are not (one stage-2 worker's word: careful
        verifiers often disagree with it), so no gold tally or gold hold counts them."""
        from annotation.flows.bison.lookup import PAIR_TRAP, TRAP_KIND, trap_answer

        if item.kind != TRAP_KIND or item.tag == PAIR_TRAP:
            return None
        return label == trap_answer(item.target)

    def gold_expected(self, *, item: Item) -> list[str]:
        from annotation.flows.bison.lookup import trap_answer

        return [self.label_words(label=trap_answer(item.target))]

    def hold_reasons(
        self, *, batch: Batch, assignments: list[Assignment]
    ) -> dict[int, list[dict[str, Any]]]:
        from annotation.flows.bison.lookup import lookup_hold_reasons

        return lookup_hold_reasons(batch=batch, assignments=assignments)

    def reason_words(self, *, reason: dict[str, Any]) -> str | None:
        from annotation.flows.bison.lookup import FOLLOWS_LOOKUP, lookup_reason_words

        return lookup_reason_words(reason) if reason.get("policy") == FOLLOWS_LOOKUP else None

    def publish_warnings(self, *, batch: Batch) -> list[str]:
        from annotation.flows.bison.lookup import TRAP_KIND

        if Question.objects.filter(hit__batch=batch, item__kind=TRAP_KIND).exists():
            return []
        if batch.options.get(RELAX_IMAGES.name):
            return [
                "no traps for workers who look the pictures up: this batch relaxes "
                "image-disjointness for a trusted pool, and a trusted pool is not checked for "
                "answering from the public COCO images"
            ]
        return [
            "no traps for workers who look the pictures up: stage 2 found no pair without a "
            "fitting caption and no triple has had all its verifiers agree on an answer other "
            "than the caption's own image yet, so a worker answering from the public COCO "
            "images is held only once a later stage-3 batch's traps catch them, and only "
            "while this batch's work is unpaid"
        ]

    def prepare_batch(self, *, run: Run) -> None:
        from annotation.flows.bison.services.triples import bison_triples_create

        made = bison_triples_create(run=run)
        if made.selection_answers == 0:
            raise ServiceError(
                f"run {run.pk} has no stage-2 results yet: publish stage 2 and collect "
                "its answers before asking for stage 3"
            )

    def items_for_batch(self, *, run: Run, options: dict[str, Any]) -> QuerySet[Item]:
        return (
            Item.objects.filter(run=run, kind=BisonItemKind.TRIPLE)
            .exclude(questions__hit__batch__stage=self.stage)
            .order_by("pk")
        )

    def _sides(self, question: Question) -> tuple[Any, Any]:
        item = question.item
        if question.swapped:
            return item.negative, item.positive
        return item.positive, item.negative

    def question_view(self, *, question: Question, images: ImageLinks) -> dict[str, Any]:
        left, right = self._sides(question)
        assert question.item.caption is not None
        return {
            "query": question.item.caption.text,
            "left": self.image_view(left, images),
            "right": self.image_view(right, images),
        }

    def review_shown(
        self, *, question: Question, answer: Answer, images: ImageLinks
    ) -> list[Shown]:
        left, right = self._sides(question)
        assert question.item.caption is not None
        positive = "right" if question.swapped else "left"
        return [
            Shown("Query", text=question.item.caption.text),
            *(
                Shown(
                    f"{side.title()} image",
                    url=images.url(image),
                    picked=answer.choice in (side, "both"),
                    note="the positive" if side == positive else "the negative",
                )
                for side, image in (("left", left), ("right", right))
            ),
        ]

    def label_words(self, *, label: str, question: Question | None = None) -> str:
        """The stored label says positive or negative; the worker chose a side."""
        if label in ("both", "neither"):
            return SIDE_WORDS[label]
        if label not in ("positive", "negative"):
            return label
        if question is None:
            return f"The {label} image"
        positive = "right" if question.swapped else "left"
        negative = "left" if positive == "right" else "right"
        return f"{SIDE_WORDS[positive if label == 'positive' else negative]} (the {label})"

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
