"""The one place that reads a run's stored settings (`Run.config`, JSON): each flow's frozen,
typed settings object, read as attributes everywhere else (`run_settings(run).seed`).

A flow subclasses `RunSettings` with a field per setting it declares and per value its
services record (ECCV's query sample), and names its declarations in `DECLARED`; a field's
value comes from its declaration (default, range, conversion), checked once here (InputError
names the setting). The stored JSON keeps its shape: a new run stores its settings as given,
with the declared defaults filled in (`settings_stored`), and every export's manifest shows
that JSON as stored.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from threading import Lock
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar, overload

from annotation.run_settings.setting import Setting
from annotation.run_settings.shared import SHARED
from annotation.services.checks import check_consent

if TYPE_CHECKING:
    from annotation.models import Run


def declared(*groups: Iterable[Setting]) -> Mapping[str, Setting]:
    """Declarations by key, the shared ones first: a later group's setting of the same key
    (a flow's own gold defaults) replaces an earlier one."""
    out = {setting.key: setting for setting in SHARED}
    for group in groups:
        out.update({setting.key: setting for setting in group})
    return out


S = TypeVar("S", bound="RunSettings")
D = TypeVar("D", bound="Declared")


@dataclass(frozen=True)
class Declared:
    """Settings read from a stored config, a field per declared setting (`DECLARED`)."""

    DECLARED: ClassVar[Mapping[str, Setting]] = declared()

    @classmethod
    def from_config(cls: type[D], config: Mapping[str, Any]) -> D:
        """The settings a stored config (or one about to be stored) holds, each checked and
        converted by its declaration, then the flow's own rules across settings (`check`).
        Keys no field names are left alone (they stay in the stored JSON)."""
        values = {
            name: setting.value(config[name]) if name in config else setting.default_value()
            for name, setting in _declarations(cls)
        }
        settings = cls(**values)
        settings.check()
        return settings

    def check(self) -> None:
        """Rules across settings; InputError names the setting."""


@dataclass(frozen=True)
class RunTexts(Declared):
    """What a run's workers read besides the questions, from a config read without its run
    (a task page's one query): the consent text and the stages' own instructions."""

    consent: str | None  # None: the project's default text
    instructions: Mapping[str, Any] | None  # stage -> the run's own text


@dataclass(frozen=True)
class RunSettings(Declared):
    """What every run's config holds: the shared settings (seed, consent, fast work, gold)
    and what the core's services record (release terms, own instructions, simulated world).
    Mappings are read-only; lists are tuples."""

    seed: int
    consent: str | None  # None: the project's default text
    hold_fast_seconds_per_item: float  # 0: fast work is only flagged
    gold_source: str
    gold_min_answers: int
    gold_agreement: float
    gold_spread: float
    world: Mapping[str, Any] | None
    release: Mapping[str, Any] | None
    instructions: Mapping[str, Any] | None  # stage -> the run's own text

    def check(self) -> None:
        """A flow's rules across its settings (bins and their shares, a policy's object);
        InputError names the setting. A flow's own `check` calls this one first."""
        if self.consent is not None:
            check_consent(self.consent)

    def expectation_inputs(self) -> dict[str, Any]:
        """The settings an adaptive run's expected judgments follow from (its policies, its
        rating scale), as JSON: what the expectation is cached under."""
        return {}

    @property
    def aggregation_chosen(self) -> str | None:
        """The rule turning answers into labels that the run's config names (None: the
        flow's default rule, or a flow without a choice)."""
        return None


def _declarations(cls: type[Declared]) -> tuple[tuple[str, Setting], ...]:
    """Each field of a settings class with its declaration (a field without one fails on
    the class's first read: KeyError names it)."""
    found = _fields.get(cls)
    if found is None:
        found = _fields[cls] = tuple((f.name, cls.DECLARED[f.name]) for f in fields(cls))
    return found


_fields: dict[type[Declared], tuple[tuple[str, Setting], ...]] = {}


@overload
def run_settings(run: Run) -> RunSettings: ...


@overload
def run_settings(run: Run, of: type[S]) -> S: ...


def run_settings(run: Run, of: type[S] | None = None) -> RunSettings:
    """The run's settings as its flow's typed object (`of`: the flow's class, for its own
    fields; a run of another flow reads as that class, its defaults where the config names
    nothing, as a task type's example on the texts page may ask)."""
    kind = settings_type(run.kind)
    if of is not None and not issubclass(kind, of):
        kind = of
    key = (kind, run.pk)
    found = _recent.get(key)
    if found is not None and found[0] == run.config:
        return found[1]
    settings = kind.from_config(run.config)
    if run.pk is not None:
        with _recent_lock:
            if len(_recent) >= RECENT:
                _recent.pop(next(iter(_recent)))
            _recent[key] = (_copy(run.config), settings)
    return settings


# The settings of recently read runs, by kind and id, with a copy of the config they were
# read from: a page reads a run's settings once per question (each through its own instance
# of the run), which would otherwise parse the same config each time. A config that changed
# since (saved or only edited in memory) is no longer equal to its copy and is read again.
RECENT = 64
_recent: dict[tuple[type[RunSettings], int | None], tuple[Any, RunSettings]] = {}
_recent_lock = Lock()


def _copy(value: Any) -> Any:
    """A deep copy of JSON (the copy must not change when the run's config is edited)."""
    if isinstance(value, dict):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):  # a list of ids (ECCV's gallery) is copied in one step
        nested = any(isinstance(v, dict | list) for v in value)
        return [_copy(v) for v in value] if nested else list(value)
    return value


def settings_type(kind: str) -> type[RunSettings]:
    """The settings class of a run kind's flow (the shared one for a kind without a flow)."""
    from annotation.flow_registry import flow_for_kind

    flow = flow_for_kind(kind)
    found: type[RunSettings] | None = flow.settings_type if flow is not None else None
    return found or RunSettings


def settings_stored(*, kind: str, config: Mapping[str, Any]) -> dict[str, Any]:
    """A new run's config as stored: the given settings (a number a form sent as text as the
    number) with the flow's declared defaults filled in, checked by reading it as the flow's
    settings object. Keys no setting names are kept as given."""
    from annotation.flow_registry import flow_for_kind

    flow = flow_for_kind(kind)
    shown = flow.settings if flow is not None else ()
    filled = {s.key: s.default for s in shown if s.filled and s.default is not None}
    stored = {**filled, **config}
    for setting in shown:
        if setting.key in stored:
            stored[setting.key] = setting.stored_form(stored[setting.key])
    settings_type(kind).from_config(stored)
    return stored
