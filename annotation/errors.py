"""Errors raised by services; views, APIs and commands turn them into clear messages."""

from __future__ import annotations

from pipeline.errors import InputError


class ServiceError(Exception):
    """A request that cannot be carried out in the current state. `page`: the same said for a
    console page, where the message names a command-line option (`page_message`)."""

    def __init__(self, *args: object, page: str | None = None) -> None:
        super().__init__(*args)
        self.page = page


class Reason(str):
    """One reason of several (`Refused`) in the command line's words, with the console's
    beside it (`page`) where they differ."""

    page: str

    def __new__(cls, text: str, *, page: str | None = None) -> Reason:
        reason = super().__new__(cls, text)
        reason.page = page or text
        return reason


def page_message(error: Exception | str) -> str:
    """What a console page says of a refusal: its page words where it has them (an option of
    the command line means nothing there; the command line keeps its own), else its text."""
    page = getattr(error, "page", None)
    if not page:
        return str(error)
    if isinstance(error, InputError):
        return str(InputError(page, file=error.file, record=error.record, field=error.field))
    return str(page)


class RemoteUnclear(ServiceError):
    """A call with an effect at a provider got no clear answer: it may have taken effect, so the
    object is looked up before anything is sent again."""


class Refused(ServiceError):
    """Several refusals found at once (each says what to do), so a person fixes them together
    instead of one per attempt."""

    def __init__(self, reasons: list[str]) -> None:
        self.reasons = reasons
        super().__init__("; ".join(reasons))

    @property
    def page_reasons(self) -> list[str]:
        """The reasons in a console page's words (`Reason.page`)."""
        return [page_message(r) for r in self.reasons]


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
    "Reason",
    "Refused",
    "RemoteUnclear",
    "ServiceError",
    "TooLate",
    "page_message",
]
