import json
from typing import Any

from django.core.management.base import CommandParser

from annotation.flows.cxc.services.evaluate import cxc_evaluate
from annotation.management.arguments import seed, whole
from annotation.management.base import ServiceCommand


class Command(ServiceCommand):
    help = (
        "Correlate a model's similarities with CxC ratings (Spearman, Kendall tau-b, bootstrap "
        "95% interval drawing one pair per example) and retrieval with CxC positives."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--cxc", required=True, help="folder with sis_*, sts_*, sits_*.csv")
        parser.add_argument("--embeddings", required=True, help="model .npz (COCO ids)")
        parser.add_argument("--split", help="which files of the folder: sis_<split>*.csv, ...")
        parser.add_argument("--draws", type=whole(1, 100_000), default=1000)
        parser.add_argument("--seed", type=seed, default=0)
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        report = cxc_evaluate(
            folder=opts["cxc"],
            embeddings=opts["embeddings"],
            draws=opts["draws"],
            seed=opts["seed"],
        )
        if opts["json"]:
            self.stdout.write(json.dumps(report, indent=2))
            return
        for task, v in report["tasks"].items():
            low, high = v["spearman_95ci"]
            self.stdout.write(
                f"{task:<5} rho {v['spearman']:+.4f} [{low:+.4f}, {high:+.4f}]  "
                f"tau-b {v['kendall_tau_b']:+.4f}  {v['pairs']} pairs"
                + (
                    f" ({v['skipped_without_embedding']} without embedding)"
                    if v["skipped_without_embedding"]
                    else ""
                )
            )
        for task, v in report["retrieval"].items():
            self.stdout.write(f"{task:<5} " + "  ".join(f"{k} {x}" for k, x in v.items()))
