"""Agreement between workers as the run page and the workers page both show it (issue 46: the
two disagreed): over the run's counted answers not held by review, each ordered pair of two
workers' answers on one item, agreeing when the labels are equal. A stage's share is its
agreeing pairs over its pairs; a worker's, the same over the pairs they are in, so the run
page's share is the workers' pooled share. Held work is left out of both until a person
approves it; `held_answers` says how much."""

from __future__ import annotations

from collections import defaultdict

from annotation.models import Answer, Run
from annotation.selectors.counting import counted, counted_reviewed


def agreement_pairs(run: Run) -> dict[tuple[str, int], tuple[int, int]]:
    """(stage, worker pk) -> (agreeing ordered pairs, ordered pairs) of their answers with
    another worker's on the same item."""
    labels: dict[tuple[str, int], list[tuple[int, str]]] = defaultdict(list)
    for stage, item, worker, label in Answer.objects.filter(
        counted_reviewed(""), question__item__run=run
    ).values_list(
        "question__hit__batch__stage", "question__item_id", "assignment__worker_id", "label"
    ):
        labels[(stage, item)].append((worker, label))
    pairs: dict[tuple[str, int], list[int]] = defaultdict(lambda: [0, 0])
    for (stage, _item), answers in labels.items():
        for i, (worker, label) in enumerate(answers):
            for j, (_other, other_label) in enumerate(answers):
                if i != j:
                    pairs[(stage, worker)][0] += label == other_label
                    pairs[(stage, worker)][1] += 1
    return {key: (ok, n) for key, (ok, n) in pairs.items()}


def held_answers(run: Run) -> int:
    """Counted answers held by an open (or rejected) review: left out of agreement."""
    return (
        Answer.objects.filter(counted("assignment__"), question__item__run=run)
        .exclude(counted_reviewed(""))
        .count()
    )
