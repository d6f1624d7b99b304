from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.shortcuts import get_object_or_404

from annotation.management.arguments import record_id, whole
from annotation.management.base import ServiceCommand
from annotation.models import Assignment, Batch, Hit, Worker
from annotation.money import symbol
from annotation.providers.base import LIFETIME_RANGE
from annotation.services.checks import MAX_PER_HIT
from annotation.services.money import batch_extension
from annotation.services.runs.batches import batch_expire
from annotation.services.work import worker_actions
from annotation.services.work.decisions import (
    assignment_approve,
    assignment_reject,
    assignment_reverse_rejection,
)
from annotation.services.work.reoffer import hits_reoffer


def _assignment(key: str) -> Assignment:
    query = Assignment.objects.select_related("hit__batch", "worker")
    found = query.filter(pk=int(key)).first() if key.isdigit() else None
    found = found or query.filter(provider_assignment_id=key).first()
    if found is None:
        raise CommandError(f"no assignment {key!r} (local id or provider id)")
    return found


def _worker(key: str) -> Worker:
    found = Worker.objects.filter(external_id=key).first()
    if found is None:
        raise CommandError(f"no worker {key!r}")
    return found


class Command(ServiceCommand):
    help = "Review and pay: approve, reject, reverse-rejection, bonus, block, unblock, notify, expire, extend, add-assignments."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        p = sub.add_parser("approve")
        p.add_argument("assignment")
        p = sub.add_parser("reject")
        p.add_argument("assignment")
        p.add_argument("--feedback", required=True)
        p = sub.add_parser(
            "reverse-rejection",
            help="approve and pay rejected work (MTurk: 30 days from submission)",
        )
        p.add_argument("assignment")
        p.add_argument("--feedback", required=True)
        p = sub.add_parser("bonus")
        p.add_argument("assignment")
        p.add_argument("--amount", required=True)
        p.add_argument("--reason", required=True)
        for name in ("block", "unblock"):
            p = sub.add_parser(name)
            p.add_argument("worker")
            p.add_argument("--reason", required=name == "block", default="")
            if name == "block":
                p.add_argument(
                    "--scope",
                    choices=["account", "project"],
                    default="account",
                    help="project: only this installation's HITs (MTurk: a qualification)",
                )
        p = sub.add_parser("notify")
        p.add_argument("workers", nargs="+")
        p.add_argument("--subject", required=True)
        p.add_argument("--message", required=True)
        p = sub.add_parser("expire")
        p.add_argument("batch", type=record_id)
        p = sub.add_parser("extend")
        p.add_argument("batch", type=record_id)
        p.add_argument("--seconds", type=whole(1, LIFETIME_RANGE[1]), required=True)
        p = sub.add_parser("top-up", help="bonus workers paid below the minimum hourly rate")
        p.add_argument("batch", type=record_id)
        p.add_argument("--hourly", help="target dollars per hour (default CROWDVL_MIN_HOURLY_PAY)")
        p = sub.add_parser("add-assignments")
        p.add_argument("hit", type=record_id)
        p.add_argument("--count", type=whole(1, MAX_PER_HIT), required=True)

    def handle(self, *args: Any, **opts: Any) -> None:
        action = opts["action"]
        if action == "approve":
            a = assignment_approve(assignment=_assignment(opts["assignment"]))
            self.stdout.write(f"assignment {a.pk}: {a.state}")
        elif action == "reject":
            a = assignment_reject(
                assignment=_assignment(opts["assignment"]), feedback=opts["feedback"]
            )
            self.stdout.write(f"assignment {a.pk}: {a.state}")
            for hit in hits_reoffer(batch=a.hit.batch):
                self.stdout.write(f"its items are re-offered in HIT {hit.pk}")
        elif action == "top-up":
            from decimal import Decimal

            from annotation.services.money.pay import batch_pay_top_up

            paid = batch_pay_top_up(
                batch=get_object_or_404(Batch, pk=opts["batch"]),
                hourly=Decimal(opts["hourly"]) if opts["hourly"] else None,
            )
            for worker, amount in paid.items():
                self.stdout.write(f"{worker}: {symbol()}{amount}")
            self.stdout.write(f"{len(paid)} workers topped up")
        elif action == "reverse-rejection":
            a = assignment_reverse_rejection(
                assignment=_assignment(opts["assignment"]), feedback=opts["feedback"]
            )
            self.stdout.write(f"assignment {a.pk}: {a.state} (rejection reversed)")
        elif action == "bonus":
            bonus = worker_actions.worker_bonus(
                assignment=_assignment(opts["assignment"]),
                amount=opts["amount"],
                reason=opts["reason"],
            )
            sent = f"{bonus.sent_at:%Y-%m-%d %H:%M:%S}"
            self.stdout.write(f"bonus {symbol()}{bonus.amount} sent at {sent}")
        elif action == "block":
            w = worker_actions.worker_block(
                worker=_worker(opts["worker"]), reason=opts["reason"], scope=opts["scope"]
            )
            self.stdout.write(f"worker {w.external_id}: blocked ({w.block_scope})")
        elif action == "unblock":
            w = worker_actions.worker_unblock(worker=_worker(opts["worker"]), reason=opts["reason"])
            self.stdout.write(
                f"worker {w.external_id}: {'blocked' if w.blocked else 'not blocked'}"
            )
        elif action == "notify":
            n = worker_actions.workers_notify(
                workers=[_worker(k) for k in opts["workers"]],
                subject=opts["subject"],
                message=opts["message"],
            )
            self.stdout.write(f"{n} workers notified")
        elif action == "expire":
            b = batch_expire(batch=get_object_or_404(Batch, pk=opts["batch"]))
            self.stdout.write(f"batch {b.pk}: {b.status}")
        elif action == "extend":
            b = batch_extension.batch_extend(
                batch=get_object_or_404(Batch, pk=opts["batch"]), seconds=opts["seconds"]
            )
            self.stdout.write(f"batch {b.pk}: {b.status}")
        elif action == "add-assignments":
            h = batch_extension.hit_add_assignments(
                hit=get_object_or_404(Hit.objects.select_related("batch"), pk=opts["hit"]),
                count=opts["count"],
            )
            self.stdout.write(f"HIT {h.pk}: capacity {h.capacity}")
