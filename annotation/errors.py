"""Errors raised by services; views, APIs and commands turn them into clear messages."""

from pipeline.errors import InputError


class ServiceError(Exception):
    """A request that cannot be carried out in the current state."""


class RemoteUnclear(ServiceError):
    """A call with an effect at a provider got no clear answer: it may have taken effect, so the
    object is looked up before anything is sent again."""


class Refused(ServiceError):
    """Several refusals found at once (each says what to do), so a person fixes them together
    instead of one per attempt."""

    def __init__(self, reasons: list[str]) -> None:
        self.reasons = reasons
        super().__init__("; ".join(reasons))


class PoolConflict(ServiceError):
    """The worker belongs to another stage's pool in this run."""


class NotAssignmentHolder(ServiceError):
    """The worker does not hold the assignment they act on."""


class TooLate(ServiceError):
    """Work submitted after its claim ran out, its batch expired or its HIT filled up."""


class AlreadyPaid(ServiceError):
    """The provider approved (and paid) the work on its own before our decision reached it."""


class AnswerError(InputError):
    """A submission whose answers do not fit the HIT's questions."""


__all__ = [
    "AnswerError",
    "InputError",
    "NotAssignmentHolder",
    "PoolConflict",
    "Refused",
    "RemoteUnclear",
    "ServiceError",
    "TooLate",
]
