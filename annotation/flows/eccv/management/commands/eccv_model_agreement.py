from typing import Any

from django.core.management.base import CommandParser

from annotation.flows.eccv.services.report import eccv_model_agreement
from annotation.management.arguments import record_id, whole
from annotation.management.base import ServiceCommand
from annotation.models import RunKind


class Command(ServiceCommand):
    help = (
        "The paper's Table A.1 for a run's annotators: Kendall tau-b of each model's top-25 "
        "against another model's ranks of the same items, and where that model ranks the "
        "first item (after eccv_propose)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run", type=record_id)
        parser.add_argument(
            "--depth", type=whole(1, 10_000), default=25, help="length of each top list"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        run = self.run_of(opts["run"], kind=RunKind.ECCV)
        table = eccv_model_agreement(run=run, depth=opts["depth"])
        for direction, rows in table.items():
            names = sorted(rows)
            width = max([len(n) for n in names] + [8])
            for title, key, fmt in (
                ("Kendall tau-b (row's top list vs column's ranks)", "tau", "{:.3f}"),
                (
                    "average rank of the row's top-1 item by the column",
                    "mean_rank_of_top1",
                    "{:.2f}",
                ),
            ):
                self.stdout.write(f"{direction}: {title}")
                self.stdout.write(" " * width + "".join(n.rjust(width + 2) for n in names))
                for a in names:
                    cells = []
                    for b in names:
                        cell = rows[a].get(b)
                        if cell is None:
                            cells.append("-")
                            continue
                        value = cell[key]
                        text = "n/a" if value is None else fmt.format(value)
                        cells.append(text + ("" if cell["exact"] else "*"))
                    self.stdout.write(a.ljust(width) + "".join(c.rjust(width + 2) for c in cells))
                self.stdout.write("")
        self.stdout.write("* ranked-list model: items it does not list are left out")
