"""One review as a person judges it (`/review/<id>/`): each question as the worker saw it and
their answer in words (the stage's task type says both: `TaskType.review_shown`,
`answer_words`), gold's expected answer beside it, why the work was held
(`selectors/reviews/review_reasons.py`) and the worker's history in the run. Flow-neutral: the core
asks the task type and never names a flow."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from django.urls import reverse

from annotation.flow_registry import flow_for_kind, item_kind_label, task_type_for
from annotation.models import GOLD_KINDS, Assignment, AssignmentState, Review, ReviewStatus
from annotation.selectors.pseudonyms import worker_pseudonym
from annotation.selectors.reviews.review_reasons import review_reason_sentences
from annotation.selectors.work.images import STAFF_LINKS
from annotation.tasktypes.base import Shown


@dataclass(frozen=True)
class ReviewRow:
    """One question: what was shown, the answer in words and, for gold, what it expects and
    whether the answer passed (None: not gold, or gold that cannot say)."""

    number: int
    shown: list[Shown]
    answer: str
    gold: str = ""  # the gold kind in words; "" for a real item
    expected: list[str] = field(default_factory=list)
    passed: bool | None = None

    @property
    def groups(self) -> list[tuple[str, list[Shown]]]:
        """The shown things in page order, consecutive images (side by side) and texts (one
        under another) together: ("images", [...]) or ("texts", [...])."""
        groups: list[tuple[str, list[Shown]]] = []
        for shown in self.shown:
            kind = "images" if shown.url else "texts"
            if not groups or groups[-1][0] != kind:
                groups.append((kind, []))
            groups[-1][1].append(shown)
        return groups


@dataclass(frozen=True)
class WorkerHistory:
    """The worker's other work in the review's run."""

    worker_id: int
    label: str  # the platform's id for those who may see it, else the export pseudonym
    states: list[tuple[str, int]]  # other assignments by state, in words
    reviews: list[Review]  # their other reviews in the run, the newest first
    decisions: list[tuple[str, int]]  # those reviews by status, in words
    gold_right: int | None  # counted gold answers so far (None: the run has no gold)
    gold_total: int | None
    workers_url: str  # the worker's row on the run's workers page


def review_rows(*, review: Review) -> list[ReviewRow]:
    """The held assignment's answers in question order, as the reviewer reads them."""
    task = task_type_for(review.assignment.hit.batch.stage)
    # A gold failure written when the work was submitted stands even if the item's gold
    # rule cannot say any more (its stored expectation is shown then).
    failed = {r["position"]: r for r in review.reasons if isinstance(r, dict) and "position" in r}
    answers = review.assignment.answers.select_related(
        "question__hit__batch",
        "question__item__run",
        "question__item__positive",
        "question__item__negative",
        "question__item__caption",
        "question__item__caption2",
        "question__item__candidate",
        "question__item__candidate2",
    ).order_by("question__position")
    rows = []
    for answer in answers:
        question = answer.question
        item = question.item
        gold, expected, passed = "", [], None
        if item.kind in GOLD_KINDS or question.position in failed:
            gold = item_kind_label(item.kind).removeprefix("Gold: ")
            labels = task.gold_expected(item=item) or list(
                failed.get(question.position, {}).get("expected", [])
            )
            expected = [task.label_words(label=str(e), question=question) for e in labels]
            passed = task.gold_passed(item=item, label=answer.label)
            if question.position in failed:
                passed = False
        rows.append(
            ReviewRow(
                number=question.position + 1,
                shown=task.review_shown(question=question, answer=answer, images=STAFF_LINKS),
                answer=task.answer_words(answer=answer),
                gold=gold,
                expected=expected,
                passed=passed,
            )
        )
    return rows


def review_reasons_in_words(*, review: Review) -> list[str]:
    """The review's reasons in sentences, gold failures worded with their questions."""
    questions = {
        q.position: q
        for q in review.assignment.hit.questions.select_related(
            "item__run", "item__caption", "item__positive"
        )
    }
    return review_reason_sentences(review=review, questions=questions)


def review_worker_history(*, review: Review, platform_ids: bool = False) -> WorkerHistory:
    """What the reviewed worker did in the run besides this assignment; the worker named by
    the platform's id with `platform_ids` (permissions.sees_platform_ids), else a pseudonym."""
    assignment = review.assignment
    run = assignment.hit.batch.run
    worker = assignment.worker
    others = Assignment.objects.filter(hit__batch__run=run, worker=worker).exclude(pk=assignment.pk)
    states = Counter(others.values_list("state", flat=True))
    reviews = list(
        Review.objects.filter(assignment__in=others)
        .select_related("assignment__hit__batch")
        .order_by("-created_at")
    )
    decisions = Counter(r.status for r in reviews)
    gold_right = gold_total = None
    flow = flow_for_kind(run.kind)
    if flow is not None and flow.worker_gold is not None:
        gold_right, gold_total = flow.worker_gold(run).get(worker.pk, (0, 0))
    return WorkerHistory(
        worker_id=worker.pk,
        label=worker.external_id
        if platform_ids
        else worker_pseudonym(provider=worker.provider, external_id=worker.external_id),
        states=[(AssignmentState(s).label, n) for s, n in sorted(states.items())],
        reviews=reviews,
        decisions=[(ReviewStatus(s).label, n) for s, n in sorted(decisions.items())],
        gold_right=gold_right,
        gold_total=gold_total,
        workers_url=f"{reverse('run-workers', args=[run.pk])}#worker-{worker.pk}",
    )
