from typing import Any

from django.core.management.base import CommandParser

from annotation.flows.bison.services.pairing import pairing_start
from annotation.flows.bison.vocabulary import DEFAULT_EPOCHS
from annotation.management.arguments import record_id, seed, whole
from annotation.management.base import ServiceCommand
from annotation.models import RunKind


class Command(ServiceCommand):
    help = "BISON stage 1: pair each image with its FastText nearest neighbour (a Celery job)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("run", type=record_id)
        parser.add_argument(
            "--vectors", help="FastText .vec or .bin file; default: train on the captions"
        )
        parser.add_argument(
            "--dim", type=whole(2, 2048), default=100, help="dimension when training"
        )
        parser.add_argument(
            "--epochs", type=whole(1, 500), default=DEFAULT_EPOCHS, help="epochs when training"
        )
        parser.add_argument("--seed", type=seed, default=0, help="seed when training")
        parser.add_argument(
            "--block-size", type=whole(1, 1_000_000), help="query images per subtask"
        )
        parser.add_argument(
            "--new-embedding-space",
            action="store_true",
            help="allow a dimension different from earlier runs on the dataset",
        )
        parser.add_argument("--no-wait", action="store_true", help="enqueue and return")

    def handle(self, *args: Any, **opts: Any) -> None:
        run = self.run_of(opts["run"], kind=RunKind.BISON)
        job = pairing_start(
            run=run,
            vectors_path=opts["vectors"],
            dim=opts["dim"],
            epochs=opts["epochs"],
            seed=opts["seed"],
            block_size=opts["block_size"],
            allow_new_dim=opts["new_embedding_space"],
        )
        if opts["no_wait"]:
            self.stdout.write(f"job {job.pk} enqueued")
            return
        job = self.wait_for_job(job)
        self.stdout.write(f"stage 1 done: {job.result}")
