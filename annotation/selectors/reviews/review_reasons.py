"""Why work is held for review, one sentence per reason: the one wording the review page and
the review queue both show. A reason is what a service wrote into `Review.reasons`: a failed
gold question (it names the question's `position`), or a policy's hold (it names its
`policy`): the run's speed rule, disagreement with the other workers, a gold record below
the rule, or a flow's own, which the flow's task type words (`TaskType.reason_words`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from annotation.flow_registry import item_kind_label, task_type_for
from annotation.models import Question, Review
from annotation.selectors.reviews.gold_record import POLICY as GOLD_RECORD_POLICY
from annotation.services.work.speed_policy import POLICY as SPEED_POLICY
from annotation.services.work.speed_policy import SETTING as SPEED_SETTING
from annotation.tasktypes.base import TaskType


def reason_sentence(reason: Any, *, task: TaskType | None, question: Question | None = None) -> str:
    """One reason in a sentence; `question` (a gold failure's) words its answers as that
    worker saw them (which side). A reason of an unknown shape still reads as words."""
    if not isinstance(reason, dict):
        return str(reason)
    own = task.reason_words(reason=reason) if task is not None else None
    if own:
        return own
    # The agreement hold's module reads numpy: imported here, not when commands start.
    from annotation.selectors.reviews.worker_agreement import POLICY as AGREEMENT_POLICY

    policy = reason.get("policy")
    if "position" in reason:
        return _gold(reason, task=task, question=question)
    if policy == SPEED_POLICY:
        return (
            f"{reason['seconds_per_item']:g} s per item ({reason['items']} items in "
            f"{reason['seconds']:g} s), faster than the run's rule: work under "
            f"{reason['limit']:g} s per item is held ({SPEED_SETTING})."
        )
    if policy == AGREEMENT_POLICY:
        seen = reason.get("gold_seen") or 0
        gold = (
            f"while passing gold ({reason.get('gold_right', 0)} of {seen} right)"
            if seen
            else "with no gold answered"
        )
        return (
            f"Agreed with the other workers on {reason['agreed']} of {reason['compared']} "
            f"compared answers: at best {reason['upper95']:.0%} (95% upper bound), under the "
            f"rule's {reason['limit']:.0%}, {gold}."
        )
    if policy == GOLD_RECORD_POLICY:
        return (
            f"Passed {reason['gold_right']} of {reason['gold_seen']} gold questions of this "
            f"stage: at best {reason['upper95']:.0%} (95% upper bound), under the rule's "
            f"{reason['limit']:.0%}; all of the worker's waiting work is held."
        )
    rest = "; ".join(f"{k.replace('_', ' ')} {v}" for k, v in reason.items() if k != "policy")
    if policy:
        return f"Held by the {str(policy).replace('_', ' ')} policy" + (
            f": {rest}." if rest else "."
        )
    return f"Held: {rest}." if rest else "Held for review."


def _gold(reason: dict[str, Any], *, task: TaskType | None, question: Question | None) -> str:
    def words(label: Any) -> str:
        text = str(label)
        if task is not None:
            text = task.label_words(label=text, question=question)
        return f"“{text}”"

    expected = " or ".join(words(e) for e in reason.get("expected") or [])
    # The gold kind's label without its "Gold: " (the sentence says gold).
    kind = item_kind_label(str(reason.get("gold", ""))).removeprefix("Gold: ")
    return (
        f"Question {int(reason['position']) + 1} failed gold — {kind}: answered "
        f"{words(reason.get('answer', ''))}; gold expects {expected or 'another answer'}."
    )


def _task(stage: str) -> TaskType | None:
    try:
        return task_type_for(stage)
    except KeyError:  # a stage no flow registers any more: the core's words only
        return None


def review_reason_sentences(
    *, review: Review, questions: Mapping[int, Question] | None = None
) -> list[str]:
    """The review's reasons, one sentence each; `questions` by position (the HIT's)."""
    task = _task(review.assignment.hit.batch.stage)
    found = questions or {}
    return [
        reason_sentence(
            reason,
            task=task,
            question=found.get(reason["position"])
            if isinstance(reason, dict) and "position" in reason
            else None,
        )
        for reason in review.reasons
    ]


def reviews_reason_sentences(reviews: Iterable[Review]) -> dict[int, list[str]]:
    """Sentences for many reviews (by Review pk), their gold questions read in one query."""
    reviews = list(reviews)
    wanted = {
        (review.assignment.hit_id, reason["position"])
        for review in reviews
        for reason in review.reasons
        if isinstance(reason, dict) and "position" in reason
    }
    by_hit: dict[int, dict[int, Question]] = {}
    if wanted:
        for question in Question.objects.filter(
            hit_id__in={hit for hit, _ in wanted}
        ).select_related("item__run", "item__caption", "item__positive"):
            if (question.hit_id, question.position) in wanted:
                by_hit.setdefault(question.hit_id, {})[question.position] = question
    return {
        review.pk: review_reason_sentences(
            review=review, questions=by_hit.get(review.assignment.hit_id)
        )
        for review in reviews
    }
