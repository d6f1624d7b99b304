"""The crowd-provider interface. Each provider is a package `annotation/crowd/<name>/` (a Django
app whose `ready()` calls `provider_register`); the core and the flows reach it only through
this interface and the registry in `annotation/providers/__init__.py`, never by its name.

Two kinds of methods: platform calls (approve, reject, bonus, ...) make the provider-side call
and nothing else, and services record the state change and its event; capabilities (money,
publishing, synchronisation, identity, what the console offers) answer what the core would
otherwise decide by comparing provider names.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from annotation.errors import ServiceError
from annotation.money import symbol

if TYPE_CHECKING:  # the registry is imported while apps load: no models at import time
    from annotation.models import Assignment, Batch, Hit, Job, Worker

# A job's progress callback (percent, message), as `annotation.services.jobs.jobs.Progress`.
Progress = Callable[[float, str], None]

CENT = Decimal("0.01")

# Limits every provider's batches keep (seconds): MTurk's documented ones, the tightest of the
# platforms this project has spoken to, so a batch settings check needs no provider.
LIFETIME_RANGE = (30, 31_536_000)
ASSIGNMENT_DURATION_RANGE = (30, 31_536_000)
AUTO_APPROVAL_RANGE = (0, 2_592_000)


@dataclass(frozen=True)
class CostEstimate:
    """What a batch commits: every slot's reward and the platform's fee on it."""

    hits: int
    assignments_per_hit: int
    reward: Decimal
    fee_per_assignment: Decimal
    rewards: Decimal
    fees: Decimal
    fee_note: str = ""  # the platform's fee rule, for `describe`

    @property
    def total(self) -> Decimal:
        return self.rewards + self.fees

    def describe(self) -> str:
        n = self.hits * self.assignments_per_hit
        # The fee rule names the assignments it applies to; without fees, say how many.
        fees = (
            f" + {symbol()}{self.fees} {self.fee_note}" if self.fee_note else f" ({n} assignments)"
        )
        return (
            f"{self.hits} HITs x {self.assignments_per_hit} assignments x {symbol()}{self.reward} "
            f"= {symbol()}{self.rewards} rewards{fees} = {symbol()}{self.total}"
        )


@dataclass(frozen=True)
class IdShapes:
    """The longest id of each kind a platform's reference allows (characters; 0: the provider
    makes none of that kind), and the characters they are made of: the columns holding them
    are sized for these (`models.EXTERNAL_ID_LENGTH`), and a contract test stores each."""

    worker: int = 0
    assignment: int = 0  # a submission or an assignment
    hit: int = 0
    hit_type: int = 0  # a study or a HIT type
    qualification: int = 0  # a participant group or a qualification type
    environment: int = 0  # a workspace, or sandbox / production
    alphabet: str = "0123456789abcdef"
    reference: str = ""  # where the lengths come from


@dataclass(frozen=True)
class LaunchNote:
    """A row a batch's launch page shows for its provider: something to set up at the
    platform, or one of the provider's own pages for the batch (`link`)."""

    label: str
    text: str
    link: str = ""


def cost_without_fees(*, hits: int, assignments_per_hit: int, reward: Decimal) -> CostEstimate:
    n = hits * assignments_per_hit
    return CostEstimate(
        hits=hits,
        assignments_per_hit=assignments_per_hit,
        reward=reward,
        fee_per_assignment=Decimal("0.00"),
        rewards=(reward * n).quantize(CENT),
        fees=Decimal("0.00"),
    )


class CrowdProvider(ABC):
    """Where a batch's HITs are offered to workers and how their work is reviewed and paid.

    Work always reaches the database through `assignment_submit`, whatever the provider.
    A `remote` provider keeps its own copy of the HITs: `publish_remote` creates them there
    and `sync` brings its workers' results back, both services of its own package.
    """

    name: str
    label: str = ""  # what the console calls it
    # The platform's id lengths (see IdShapes).
    id_shapes: IdShapes = IdShapes()
    notice: str = ""  # what the console says wherever the provider is offered or used
    # The platform keeps its own copy of the HITs (publish and synchronise through it).
    remote: bool = False
    # Answers come from the simulated crowd: never offered as real workers, marked in exports.
    simulated: bool = False
    # Work counts once the platform confirms it (synchronisation), and the platform keeps the
    # clock: its assignment deadlines and approvals, not ours.
    confirms_remotely: bool = False
    # Work claimed on this server starts unconfirmed and counts only once the provider's
    # confirmation arrives (`assignment_confirm`, e.g. a panel's list of approved
    # participants); until then it holds its HIT's slot under our clock like any claim, so
    # capacity, claim times and pools apply as for confirmed claims.
    claims_unconfirmed: bool = False
    # The platform approves submitted work on its own schedule (our auto-approval stays out).
    approves_itself: bool = False
    # Worker ids are sent back to the platform as it spells them (not case-folded).
    case_sensitive_ids: bool = False
    # Batches take the platform's qualification rules (approval rate, locales, ...).
    takes_qualifications: bool = False
    # The platform charges fees on top of rewards (shown on the launch page).
    charges_fees: bool = False
    # How long after submission a rejection may still be reversed (None: any time).
    reversal_window: timedelta | None = None
    # Block scopes a researcher may choose: "account" (the platform's own block) and
    # "project" (only this installation's tasks).
    block_scopes: tuple[str, ...] = ("account", "project")
    # What a rejection must carry at the platform: one of these categories (the review page
    # offers them; the feedback is sent as "CATEGORY: message") and a message this long.
    rejection_categories: tuple[str, ...] = ()
    rejection_min_length: int = 0
    # Staff pages of the provider the dashboard links to: (URL name, label).
    staff_pages: tuple[tuple[str, str], ...] = ()
    # The provider's own pages and API operations (URL modules), if any.
    urls: str | None = None
    api_urls: str | None = None

    # --- money ---------------------------------------------------------------------------

    def cost_estimate(self, *, batch: Batch, unpublished_only: bool = False) -> CostEstimate:
        """Rewards and fees of the batch's HITs (only those not yet at the platform)."""
        hits = batch.hits.all()
        if unpublished_only:
            hits = hits.filter(provider_hit_id="")
        return self.estimate(
            hits=hits.count(), assignments_per_hit=batch.assignments_per_hit, reward=batch.reward
        )

    def estimate(self, *, hits: int, assignments_per_hit: int, reward: Decimal) -> CostEstimate:
        return cost_without_fees(hits=hits, assignments_per_hit=assignments_per_hit, reward=reward)

    def slot_cost(self, *, batch: Batch) -> Decimal:
        """What one more assignment of `batch` commits (reward and fee)."""
        return batch.reward

    def bonus_cost(self, *, amount: Decimal) -> Decimal:
        """What a bonus of `amount` commits (with the platform's fee)."""
        return amount

    def spend_refusal(self, *, amount: Decimal, what: str) -> str | None:
        """Why `what` (committing `amount`) would break a spend limit (the daily cap), or None."""
        return None

    def spend_check(self, *, amount: Decimal, what: str) -> None:
        """Refuse `what` (committing `amount`) if it would break a spend limit (daily cap)."""
        reason = self.spend_refusal(amount=amount, what=what)
        if reason:
            raise ServiceError(reason)

    def committed_since(self, *, since: datetime) -> Decimal:
        """Money committed at this provider since `since` (counts against the daily cap)."""
        return Decimal("0.00")

    def publish_check(self, *, batch: Batch) -> CostEstimate:
        """Everything that would refuse publishing `batch` now (limits, budget, balance, pay,
        pilot), raising ServiceError or InputError; the cost it would commit otherwise."""
        return self.cost_estimate(batch=batch, unpublished_only=True)

    # --- publishing and synchronisation ----------------------------------------------------

    def publish_start(self, *, batch: Batch) -> Job | None:
        """Publish in the background where the platform needs remote calls (the job), or
        None: the core publishes the batch at once."""
        return None

    def publish_remote(self, *, batch: Batch, progress: Progress | None = None) -> None:
        """Create the batch's HITs at the platform (remote providers; safe to run again)."""
        return None

    def pause(self, *, batch: Batch) -> None:
        """Stop sending new workers to the batch at the platform (its own pause, where it has
        one); work in progress may finish. Server-side: nothing to call."""
        return None

    def resume(self, *, batch: Batch) -> None:
        """Send workers again after `pause`."""
        return None

    def sync(self, *, batch: Batch) -> int:
        """Bring the platform's results for `batch` in; how many assignments changed."""
        return 0

    def sync_open(self) -> None:
        """The periodic synchronisation of every batch whose work is not final yet."""
        return None

    def declared_seconds(self, *, seconds: float) -> float:
        """The time a HIT is declared to take at the platform, from the expected `seconds` (a
        platform taking whole minutes rounds up); the platform judges pay on it."""
        return seconds

    def requirements(self, *, batch: Batch) -> list[str]:
        """Who may take the batch's work at the platform, in words (the launch page)."""
        return []

    def batch_options(self, *, options: dict[str, Any]) -> dict[str, Any]:
        """A new batch's options with the provider's own checked and completed (InputError
        naming the option), e.g. a panel's study-link settings; the others are the task's."""
        return options

    def launch_hint(self, *, batch: Batch) -> str | None:
        """What to do next after creating `batch` (the CLI prints it)."""
        return None

    def published_options(self, *, options: dict[str, Any]) -> dict[str, Any]:
        """A batch's options as a published datasheet may show them (a provider hides what
        must not be published, e.g. a panel's completion codes)."""
        return options

    def launch_notes(self, *, batch: Batch, base: str) -> list[LaunchNote]:
        """What the batch's launch page adds for this provider (`base`: the site's address):
        what to set up at the platform, links to the provider's own pages for the batch."""
        return []

    def simulate(self, **options: Any) -> Any:
        """Answer `options["batch"]` with simulated workers (the simulated crowd only)."""
        raise ServiceError(f"batch workers of {self.name} are real people, not simulated")

    @abstractmethod
    def expire(self, *, batch: Batch) -> None:
        """Stop offering the batch's HITs now."""

    @abstractmethod
    def extend(self, *, batch: Batch, seconds: int) -> None:
        """Keep the batch's HITs on offer for `seconds` from now."""

    @abstractmethod
    def add_assignments(self, *, hit: Hit, count: int, token: str) -> None:
        """Let `count` more workers do `hit`; `token` makes a retry harmless."""

    @abstractmethod
    def approve(self, *, assignment: Assignment) -> None:
        """Accept the work (and pay it, where the provider pays)."""

    @abstractmethod
    def reject(self, *, assignment: Assignment, feedback: str, redo: bool = True) -> bool:
        """Reject the work, with feedback for the worker; False when the HIT cannot take
        another worker in its place, or `redo` is off and none was asked for (the rejection
        stands either way)."""

    def approve_rejected(self, *, assignment: Assignment, feedback: str) -> None:
        """Reverse a rejection: the work is accepted (and paid, where the provider pays)."""
        return None

    def redo(self, *, assignment: Assignment) -> bool:
        """Let one more worker take `assignment`'s HIT because its work stopped counting;
        False when the HIT cannot take another (its items must go to a new HIT)."""
        return True  # server-side HITs reopen by themselves: excluded work holds no slot

    @abstractmethod
    def bonus(
        self,
        *,
        assignment: Assignment,
        amount: Decimal,
        reason: str,
        token: str,
        look_first: bool = False,
    ) -> None:
        """Pay a bonus once per `token`; `look_first`: an earlier attempt may have paid it."""

    @abstractmethod
    def block(self, *, worker: Worker, reason: str) -> None: ...

    @abstractmethod
    def unblock(self, *, worker: Worker, reason: str) -> None: ...

    def block_in_project(self, *, worker: Worker, reason: str) -> None:
        """Keep the worker out of this installation's tasks only, at the platform (where the
        platform offers such a mark; our own `blocked` flag covers server-side work)."""
        return None

    def unblock_in_project(self, *, worker: Worker, reason: str) -> None:
        return None

    def unmark(self, *, qualification_id: str, worker: Worker, reason: str) -> None:
        """Take a provider-side mark (a pool, a project block) away from a worker."""
        return None

    @abstractmethod
    def notify(self, *, workers: list[Worker], subject: str, message: str) -> None: ...

    def grant_pool(self, *, qualification_id: str, worker: Worker) -> None:
        """Mark a worker as a member of a stage's pool at the provider (if it has such marks)."""
        return None

    def worker_url(self, *, batch: Batch, base: str | None = None) -> str | None:
        """A link workers open to take part, if the provider has one (`base`: the site's
        address, default CROWDVL_PUBLIC_URL)."""
        return None


class ServerSideProvider(CrowdProvider):
    """Workers act on this server: HITs are rows here, so no call leaves the server."""

    def expire(self, *, batch: Batch) -> None:
        return None

    def extend(self, *, batch: Batch, seconds: int) -> None:
        return None

    def add_assignments(self, *, hit: Hit, count: int, token: str) -> None:
        return None

    def approve(self, *, assignment: Assignment) -> None:
        return None

    def reject(self, *, assignment: Assignment, feedback: str, redo: bool = True) -> bool:
        return True  # the HIT reopens here by itself: rejected work holds no slot

    def bonus(
        self,
        *,
        assignment: Assignment,
        amount: Decimal,
        reason: str,
        token: str,
        look_first: bool = False,
    ) -> None:
        return None

    def block(self, *, worker: Worker, reason: str) -> None:
        return None

    def unblock(self, *, worker: Worker, reason: str) -> None:
        return None

    def notify(self, *, workers: list[Worker], subject: str, message: str) -> None:
        return None
