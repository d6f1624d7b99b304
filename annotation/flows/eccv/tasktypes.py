"""ECCV Caption: is this caption a correct description of this image? (4 levels + rationale)
The flow's app registers this at start-up, so what it calls (selectors, services, the packing:
numpy, pyarrow) is imported where it is called (issue 46)."""

from __future__ import annotations

import json
import random
from decimal import Decimal
from typing import Any

from django.db.models import QuerySet

from annotation.errors import AnswerError
from annotation.flows.eccv.settings import eccv_settings
from annotation.flows.eccv.vocabulary import EccvItemKind, EccvStage
from annotation.models import Answer, Caption, GoldItemKind, Item, Question, Run
from annotation.selectors.id_sets import ids_in
from annotation.selectors.reviews.gold import Established
from annotation.selectors.work.images import ImageLinks
from annotation.services.runs.gold import GoldKind
from annotation.tasktypes.base import (
    BatchOption,
    ParsedAnswer,
    Shown,
    TaskType,
    shown_image_and_caption,
)
from pipeline.adaptive_cost import ExpectedJudgments, expected_binary
from pipeline.eccv_vocabulary import (
    DIRECTIONS,
    GOLD_NEGATIVE,
    GOLD_POSITIVE,
    NEGATIVE_ANSWERS,
    POSITIVE_ANSWERS,
)
from pipeline.errors import InputError

ANSWER_LABELS = {
    "yes": "100% YES",
    "partially_yes": "Partially YES, but",
    "mostly_no": "Mostly NO, because",
    "no": "100% NO",
}
UNCERTAIN = ("partially_yes", "mostly_no")
SHORTCOMINGS = {
    "extra_concepts": "The caption mentions concepts that are not in the image",
    "missing_concepts": "The caption does not describe the main concepts of the image",
    "wrong_description": "The caption describes the main concepts of the image wrongly",
    "grammar": "The caption is grammatically incorrect",
}
ERROR_TYPES = (
    "quantity",
    "color",
    "species",
    "gender",
    "age",
    "action",
    "emotion",
    "location",
    "orientation",
    "others",
)
# Keyed by the stored kind (a plain string when read from a row).
EXPECTED: dict[str, frozenset[str]] = {
    GoldItemKind.POSITIVE: POSITIVE_ANSWERS,
    GoldItemKind.NEGATIVE: NEGATIVE_ANSWERS,
}
# Which side of the paper's positive/negative line each answer is on: judges agree on a pair
# when they agree on its side (a YES and a Partially YES agree).
SIDE_OF = {
    **{answer: "positive" for answer in POSITIVE_ANSWERS},
    **{answer: "negative" for answer in NEGATIVE_ANSWERS},
}


class EccvJudgmentTask(TaskType):
    stage = EccvStage.JUDGMENT
    cli_name = "eccv"
    title = "Does the caption describe the image?"
    template_name = "annotation/task_eccv_judgment.html"
    default_assignments = 1

    def assignments_default(self, *, run: Run, options: dict[str, Any] | None = None) -> int:
        return eccv_settings(run).judgments_per_pair

    def adaptive_expected(self, *, run: Run) -> ExpectedJudgments | None:
        """With `adaptive`: judgments per pair expected from the benchmark's simulation."""
        if eccv_settings(run).adaptive is None:
            return None
        from annotation.flows.eccv.selectors import eccv_policy

        return expected_binary(eccv_policy(run))

    default_items_per_hit = 20
    choices = tuple(ANSWER_LABELS)
    # As `create_batch --direction / --no-follow-ups / --more-judgments`.
    batch_options = (
        BatchOption(
            name="direction",
            label="Direction",
            help="one round's pairs: the paper's round 1 is image to caption, round 2 caption "
            "to image (empty: both)",
            default="",
            choices=(("", "both"), ("i2t", "image to caption"), ("t2i", "caption to image")),
        ),
        BatchOption(
            name="follow_ups",
            label="Rationale questions",
            help='ask why after "Partially YES" and "Mostly NO" (the paper\'s round 1; its '
            "round 2 skips them, with a lower reward)",
            default=True,
        ),
        BatchOption(
            name="more_judgments",
            label="More judgments",
            help="adaptive runs: a follow-up batch of the judged pairs still uncertain",
        ),
    )
    seconds_source = (
        "ECCV Caption's measured average (9.5 min per round-1 HIT, 13.8 min per round-2 HIT)"
    )

    @staticmethod
    def _round_one(options: dict[str, Any]) -> bool:
        return bool(options.get("follow_ups", True))

    def seconds_per_item(self, *, options: dict[str, Any]) -> float:
        # Per item of the paper's 20-pair HITs.
        return (9.5 if self._round_one(options) else 13.8) * 60 / 20

    def default_reward(self, *, items_per_hit: int, options: dict[str, Any]) -> Decimal | None:
        """The paper: $1.40 per 20-pair HIT in round 1 (with the rationale questions), $0.65
        in round 2; scaled when a HIT holds another number of pairs."""
        per_hit = Decimal("1.40") if self._round_one(options) else Decimal("0.65")
        if items_per_hit == 20:
            return per_hit
        return (per_hit * items_per_hit / 20).quantize(Decimal("0.01"))

    def items_for_batch(self, *, run: Run, options: dict[str, Any]) -> QuerySet[Item]:
        """Candidates not judged yet; a round may take one direction (the paper: round 1
        image-to-caption pairs, round 2 caption-to-image pairs). With `more_judgments`, a
        follow-up batch of an adaptive run: the judged candidates whose answers so far leave
        them uncertain (`eccv_follow_up_items`), packed with gold items like any batch."""
        if options.get("more_judgments"):
            from annotation.flows.eccv.selectors import eccv_follow_up_items

            follow_ups = eccv_follow_up_items(run=run)
            if not follow_ups:  # said next to the option, not as "nothing waiting"
                raise InputError(
                    "no judged pair is still uncertain (the run's adaptive policy, "
                    "`adaptive` runs only)",
                    field="more_judgments",
                )
            items = Item.objects.filter(ids_in("pk", follow_ups))
        else:
            items = Item.objects.filter(run=run, kind=EccvItemKind.CANDIDATE).exclude(
                questions__hit__batch__stage=self.stage
            )
        direction = options.get("direction")
        if direction is not None:
            if direction not in DIRECTIONS:
                raise InputError(
                    f"must be one of {', '.join(DIRECTIONS)}, got {direction!r}", field="direction"
                )
            either = items
            items = items.filter(proposals__direction=direction).distinct()
            if either.exists() and not items.exists():
                raise InputError(
                    f"no pair of direction {direction} is waiting for a batch (the other "
                    "direction's are)",
                    field="direction",
                )
        return items.order_by("pk")

    gold_kinds = (GoldItemKind.POSITIVE, GoldItemKind.NEGATIVE)
    # Two gold per HIT as in the paper, but drawn in the proportions of YES and NO the
    # round's judged pairs show (the paper's one of each would make the answer of a gold
    # question easier to guess than another's).
    gold_per_hit = 2
    gold_within_hit = True
    gold_classes = SIDE_OF

    def gold_kind(self, *, found: Established) -> GoldKind | None:
        positive = found.label == "positive"
        return GoldKind(GoldItemKind.POSITIVE if positive else GoldItemKind.NEGATIVE)

    def gold_among(self, *, run: Run, options: dict[str, Any]) -> QuerySet[Item] | None:
        """A round's gold come from candidates of its own direction."""
        among = Item.objects.filter(run=run, kind=EccvItemKind.CANDIDATE)
        direction = options.get("direction")
        return among if direction is None else among.filter(proposals__direction=direction)

    def gold_passed(self, *, item: Item, label: str) -> bool | None:
        expected = EXPECTED.get(item.kind)
        return None if expected is None else label in expected

    def gold_expected(self, *, item: Item) -> list[str]:
        return sorted(EXPECTED.get(item.kind, ()))

    def plan_paper(
        self, *, run: Run, items: list[Item], items_per_hit: int, seed: int
    ) -> list[list[Item]]:
        """ECCV Caption's gold, created here: per HIT an original COCO pair (gold positive)
        and a random pair in no model's top-25 (gold negative), 18 candidates + 2 gold (sizes
        from items_per_hit), shuffled. (By default, `gold_source` "established", the core
        deals 2 copies per HIT of candidates of the batch's direction that earlier batches
        judged alike.)"""
        from annotation.flows.eccv.services.gold_pools import eccv_gold_pools
        from pipeline.eccv_candidates import hits_needed, pack_hits, sample_gold_negatives

        n_hits = hits_needed(len(items), pairs_per_hit=items_per_hit)
        originals, excluded, image_ids, caption_ids = eccv_gold_pools(run=run)
        candidate_pairs = {(i.positive.coco_id, i.caption.coco_id) for i in items if i.caption}
        rng = random.Random(f"{seed}:gold-positives")
        pool = sorted(p for p in originals if p not in candidate_pairs)
        gold_pos = rng.sample(pool, min(n_hits, len(pool)))
        gold_neg = sample_gold_negatives(
            image_ids, caption_ids, excluded, n_hits, seed, original_pairs=originals
        )
        by_pair = {(i.positive.coco_id, i.caption.coco_id): i for i in items if i.caption}
        plans = pack_hits(
            [(i.positive.coco_id, i.caption.coco_id) for i in items if i.caption],
            gold_pos,
            gold_neg,
            pairs_per_hit=items_per_hit,
            seed=seed,
        )
        images = dict(run.dataset.images.values_list("coco_id", "pk"))
        captions = dict(Caption.objects.filter(dataset=run.dataset).values_list("coco_id", "pk"))
        golds: dict[tuple[str, int, int], Item] = {}
        for plan in plans:
            for hi in plan.items:
                if hi.is_gold:
                    golds[(hi.kind, hi.image_id, hi.caption_id)] = Item(
                        run=run,
                        kind=hi.kind,
                        positive_id=images[hi.image_id],
                        caption_id=captions[hi.caption_id],
                    )
        Item.objects.bulk_create(list(golds.values()))
        return [
            [
                golds[(hi.kind, hi.image_id, hi.caption_id)]
                if hi.is_gold
                else by_pair[(hi.image_id, hi.caption_id)]
                for hi in plan.items
            ]
            for plan in plans
        ]

    def question_view(self, *, question: Question, images: ImageLinks) -> dict[str, Any]:
        item = question.item
        assert item.caption is not None
        return {
            "image": self.image_view(item.positive, images),
            "caption": item.caption.text,
            "answers": ANSWER_LABELS,
            "follow_ups": self._follow_ups(question),
            "shortcomings": SHORTCOMINGS,
            "error_types": ERROR_TYPES,
        }

    @staticmethod
    def _follow_ups(question: Question) -> bool:
        return bool(question.hit.batch.options.get("follow_ups", True))

    def form_value(self, *, data: Any, key: str) -> str:
        answer = str(data.get(key, ""))
        getlist = getattr(data, "getlist", None)
        reasons = getlist(f"{key}_reason") if getlist else []
        errors = getlist(f"{key}_error") if getlist else []
        if answer in UNCERTAIN and (reasons or errors):
            return json.dumps({"answer": answer, "reasons": reasons, "errors": errors})
        return answer

    def parse_answer(self, *, question: Question, value: str) -> ParsedAnswer:
        where = {"record": f"question {question.position + 1}"}
        details: dict[str, Any] = {}
        if value.startswith("{"):
            try:
                data = json.loads(value)
                answer = str(data["answer"])
                reasons = [str(r) for r in data.get("reasons", [])]
                errors = [str(e) for e in data.get("errors", [])]
            except (ValueError, KeyError, TypeError):
                raise AnswerError("the answer is not readable", field="answer", **where) from None
        else:
            answer, reasons, errors = value, [], []
        if answer not in ANSWER_LABELS:
            raise AnswerError(
                f"answer {answer!r} is not one of {', '.join(ANSWER_LABELS)}",
                field="answer",
                **where,
            )
        if reasons or errors:
            if answer not in UNCERTAIN:
                raise AnswerError(
                    "follow-ups are only asked for uncertain answers", field="reasons", **where
                )
            unknown = [r for r in reasons if r not in SHORTCOMINGS] + [
                e for e in errors if e not in ERROR_TYPES
            ]
            if unknown:
                raise AnswerError(
                    f"unknown follow-up answer {unknown[0]!r}", field="reasons", **where
                )
            if errors and "wrong_description" not in reasons:
                raise AnswerError(
                    "error types go with 'described wrongly'", field="errors", **where
                )
            details = {"reasons": reasons, "errors": errors}
        if answer in UNCERTAIN and self._follow_ups(question):
            if not reasons:
                raise AnswerError("say which shortcoming the caption has", field="reasons", **where)
            if "wrong_description" in reasons and not errors:
                raise AnswerError(
                    "say how the caption describes the image wrongly", field="errors", **where
                )
        return ParsedAnswer(choice=answer, label=answer, details=details)

    def review_reasons(
        self, *, questions: list[Question], answers: list[Answer]
    ) -> list[dict[str, Any]]:
        return self.gold_failures(questions=questions, answers=answers)

    def review_shown(
        self, *, question: Question, answer: Answer, images: ImageLinks
    ) -> list[Shown]:
        return shown_image_and_caption(question, images)

    def label_words(self, *, label: str, question: Question | None = None) -> str:
        return ANSWER_LABELS.get(label, label)

    def answer_words(self, *, answer: Answer) -> str:
        """The level, then the rationale follow-ups as the worker ticked them."""
        words = self.label_words(label=answer.label)
        reasons = [SHORTCOMINGS.get(r, r) for r in answer.details.get("reasons", [])]
        errors = answer.details.get("errors", [])
        if reasons:
            words += ": " + "; ".join(reasons)
        if errors:
            words += f" (wrong: {', '.join(errors)})"
        return words


__all__ = ["GOLD_NEGATIVE", "GOLD_POSITIVE", "EccvJudgmentTask"]
