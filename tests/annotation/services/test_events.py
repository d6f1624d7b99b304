"""Event actions are one enum (issue 49): every `event_record(...)` in the code passes an
`EventAction` member (or a parameter typed as one, or `ASSIGNMENT_STATE_ACTIONS[...]`), no
action string is written anywhere else, and a free-form string is refused when it runs."""

import ast
from pathlib import Path

import pytest

from annotation.models import ASSIGNMENT_STATE_ACTIONS, AssignmentState, EventAction
from annotation.services.events import event_record

CODE = Path(__file__).resolve().parents[3] / "annotation"
VALUES = {a.value for a in EventAction}


def _modules() -> list[tuple[Path, ast.Module]]:
    return [
        (path, ast.parse(path.read_text(), filename=str(path)))
        for path in sorted(CODE.rglob("*.py"))
        if "migrations" not in path.parts
    ]


def _typed_params(tree: ast.Module) -> dict[ast.AST, set[str]]:
    """For each node, the names of enclosing functions' parameters annotated `EventAction`."""
    typed: dict[ast.AST, set[str]] = {}

    def visit(node: ast.AST, names: set[str]) -> None:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            args = node.args.args + node.args.kwonlyargs
            names = names | {
                a.arg
                for a in args
                if a.annotation is not None and "EventAction" in ast.unparse(a.annotation)
            }
        typed[node] = names
        for child in ast.iter_child_nodes(node):
            visit(child, names)

    visit(tree, set())
    return typed


def _allowed(value: ast.expr, params: set[str]) -> bool:
    if isinstance(value, ast.Attribute) and ast.unparse(value.value) == "EventAction":
        return value.attr in EventAction.__members__
    if isinstance(value, ast.Name):
        return value.id in params
    if isinstance(value, ast.IfExp):
        return _allowed(value.body, params) and _allowed(value.orelse, params)
    if isinstance(value, ast.Subscript):
        return ast.unparse(value.value) == "ASSIGNMENT_STATE_ACTIONS"
    return False


def test_every_event_record_call_passes_a_member():
    calls, wrong = 0, []
    for path, tree in _modules():
        typed = _typed_params(tree)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            name = getattr(node.func, "id", getattr(node.func, "attr", None))
            action = next((k.value for k in node.keywords if k.arg == "action"), None)
            if name == "event_record":
                calls += 1
                if action is None or not _allowed(action, typed[node]):
                    wrong.append(f"{path.relative_to(CODE.parent)}:{node.lineno}")
            elif isinstance(action, ast.Constant) and action.value in VALUES:
                # A helper that passes its `action` on (e.g. `_status_record`) takes a member too.
                wrong.append(f"{path.relative_to(CODE.parent)}:{node.lineno}")
    assert calls > 80  # the walk found the calls
    assert wrong == []


def test_no_action_string_is_spelled_outside_the_enum():
    """Reading or writing the log by a literal action string (a filter, raw SQL) bypasses the
    enum: only `EventAction` itself spells the values (`enum_body` marks the exempt nodes)."""
    found = []
    for path, tree in _modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name == "EventAction":
                for inner in ast.walk(node):
                    inner.enum_body = True  # type: ignore[attr-defined]
            # A serializer's `source="worker.blocked"` names a field path, not an action.
            if isinstance(node, ast.keyword) and node.arg == "source":
                node.value.enum_body = True  # type: ignore[attr-defined]
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and node.value in VALUES
                and not getattr(node, "enum_body", False)
            ):
                found.append(f"{path.relative_to(CODE.parent)}:{node.lineno} {node.value}")
    assert found == []


def test_every_assignment_state_has_its_action():
    assert set(ASSIGNMENT_STATE_ACTIONS) == set(AssignmentState)
    for state, action in ASSIGNMENT_STATE_ACTIONS.items():
        assert action.value == f"assignment.{state.value}"


@pytest.mark.django_db
def test_a_free_form_action_is_refused_when_it_runs():
    with pytest.raises(TypeError, match="EventAction"):
        event_record(action="run.made_up")  # type: ignore[arg-type]
    assert event_record(action=EventAction.RUN_CREATED).action == "run.created"


def test_no_code_reads_the_log_back():
    """The log is history: only `event_record` writes it and only the admin shows it. What a
    decision reads lives in rows (a release's instructions versions in `InstructionsChange`
    since annotation 0035), never in `Event.objects` or a row's `events`."""
    readers = []
    for path, tree in _modules():
        where = path.relative_to(CODE.parent).as_posix()
        if where in {"annotation/services/events.py", "annotation/admin.py"}:
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and (
                (node.attr == "objects" and getattr(node.value, "id", None) == "Event")
                or node.attr == "events"
            ):
                readers.append(f"{where}:{node.lineno}")
    assert readers == []
