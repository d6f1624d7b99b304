"""Issue 30's comparison of stopping decisions on the same answers: for each round of an
adaptive CxC run, the pairs its next follow-up batch asked for, against the simulation's rule
(`adaptive_ratings_seed`: the scale model on the pairs' own ratings, `needs_more`) and the same
rule with the rated gold copies fitted in (the app's fit before the fix), all on the answers
recorded up to that round. Runs against an installation the quality sweep left:

    CROWDVL_VAR_DIR=/tmp/x python manage.py quality_sweep --populations realistic \\
        --flows cxc --model-seeds 0 --seed 3
    CROWDVL_VAR_DIR=/tmp/x python benchmarks/cxc_adaptive_rounds.py 2   # the adaptive run's id
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def main() -> None:
    import django

    django.setup()
    import numpy as np

    from annotation.flows.cxc.adaptive import cxc_policy
    from annotation.flows.cxc.vocabulary import CxcItemKind, CxcStage
    from annotation.models import Answer, Batch, Item, Question, Run
    from annotation.selectors.counting import counted_reviewed
    from pipeline.scales import rating_model

    for run in Run.objects.filter(pk__in=[int(a) for a in sys.argv[1:]]).order_by("pk"):
        policy = cxc_policy(run)
        assert policy is not None, f"run {run.pk} has no `adaptive` setting"
        batches = list(Batch.objects.filter(run=run, stage=CxcStage.STS).order_by("pk"))
        pairs = set(
            Item.objects.filter(run=run, kind=CxcItemKind.RATING_PAIR).values_list("pk", flat=True)
        )
        for done in range(1, len(batches)):
            answers = Answer.objects.filter(question__hit__batch__in=batches[:done])
            rows = list(
                answers.filter(counted_reviewed())
                .order_by("pk")
                .values_list("question__item_id", "assignment__worker_id", "label")
            )
            spent = Counter(answers.values_list("question__item_id", flat=True))

            def wide(chosen, pairs=pairs, spent=spent, policy=policy):  # type: ignore[no-untyped-def]
                items, workers, labels = (np.array(c) for c in zip(*chosen, strict=True))
                est = rating_model(items, workers, labels.astype(float), low=0, high=5)
                half = (est.high - est.low) / 2
                return {
                    int(i)
                    for i, h in zip(est.items, half, strict=True)
                    if int(i) in pairs and policy.needs_more(spent[int(i)], float(h))
                }

            asked = set(
                Question.objects.filter(hit__batch=batches[done], item__in=pairs).values_list(
                    "item", flat=True
                )
            )
            own, with_gold = wide([r for r in rows if r[0] in pairs]), wide(rows)
            print(
                f"run {run.pk} after batch {done}: gold ratings {len(rows) - sum(r[0] in pairs for r in rows)}, "
                f"asked next {len(asked)}; pairs' own fit {len(own)} (= asked: {own == asked}); "
                f"with gold copies {len(with_gold)} (= asked: {with_gold == asked})"
            )


if __name__ == "__main__":
    main()
