"""The import map of the `annotation` package, read from the source (no import runs): which
room each module lives in, which modules import which at module level and inside functions,
the import circles that cross rooms, and the arrows from the core up to a provider or a flow.

`tests/annotation/test_layers.py` holds the rules to these numbers;
`python -m tests.annotation.import_map [ANNOTATION_DIR]`
prints them (the before/after of issue 49).
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "annotation"
# Folders whose modules are split into rooms one level deeper (services/work/, ...).
ROOMED = ("services", "selectors")


def module_name(path: Path, root: Path = ROOT) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = rel.parts[:-1] if rel.name == "__init__" else rel.parts
    return ".".join(parts)


def room_of(module: str) -> str:
    """`annotation.services.work.claim` → `services.work`; `annotation.models` → `core`;
    a provider's or a flow's package is its own room (`crowd.mturk`, `flows.bison`)."""
    parts = module.split(".")[1:]
    if not parts or len(parts) == 1:
        return "core"
    if parts[0] in ROOMED:
        # a room's own package (its __init__) is in the room
        inside = len(parts) > 2 or module in PACKAGES
        return ".".join(parts[:2]) if inside else parts[0]
    if parts[0] in ("crowd", "flows") and len(parts) > 2:
        return ".".join(parts[:2])
    return parts[0]


# The modules of annotation/crowd/ that are not a provider's: the registry and the interface
# (before issue 49 they lived there; now they are the core's, annotation/providers/).
CROWD_CORE = ("annotation.crowd", "annotation.crowd.base")


def is_wing(module: str) -> bool:
    """A provider's or a flow's module (annotation/crowd/<name>/, annotation/flows/): above
    the core."""
    parts = module.split(".")
    if len(parts) > 1 and parts[1] == "flows":
        return True
    return len(parts) > 1 and parts[1] == "crowd" and module not in CROWD_CORE


# The packages (folders with __init__.py) import_map last read.
PACKAGES: set[str] = set()


def python_files(under: Path = ROOT) -> list[Path]:
    return sorted(p for p in under.rglob("*.py") if "migrations" not in p.parts)


@dataclass
class Imports:
    top: set[str] = field(default_factory=set)  # at module level (outside TYPE_CHECKING)
    inner: list[str] = field(default_factory=list)  # inside a function, one per statement name


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return getattr(test, "id", "") == "TYPE_CHECKING" or getattr(test, "attr", "") == (
        "TYPE_CHECKING"
    )


def _targets(node: ast.Import | ast.ImportFrom, module: str, known: set[str]) -> list[str]:
    """The `annotation` modules one import statement loads."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = node.module or ""
        if node.level:
            package = module.split(".")[: -node.level] if node.level else []
            base = ".".join([*package, base] if base else package)
        names = [base] + [f"{base}.{alias.name}" for alias in node.names]
    found = []
    for name in names:
        # the longest known module the name starts with (a.b.c where only a.b is a module)
        while name and name not in known:
            name = name.rpartition(".")[0]
        if name.startswith("annotation") and name not in found:
            found.append(name)
    return found


def imports_of(path: Path, known: set[str], root: Path = ROOT) -> Imports:
    module = module_name(path, root)
    result = Imports()

    def walk(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _is_type_checking(child):
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                targets = [t for t in _targets(child, module, known) if t != module]
                if in_function:
                    result.inner.extend(targets)
                else:
                    result.top.update(targets)
            walk(
                child,
                in_function or isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef),
            )

    walk(ast.parse(path.read_text(), filename=str(path)), False)
    return result


def import_map(under: Path = ROOT) -> dict[str, Imports]:
    files = python_files(under)
    known = {module_name(p, under) for p in files}
    PACKAGES.clear()
    PACKAGES.update(module_name(p, under) for p in files if p.name == "__init__.py")
    return {module_name(p, under): imports_of(p, known, under) for p in files}


def _closure(graph: dict[str, set[str]], start: str) -> set[str]:
    seen, todo = {start}, [start]
    while todo:
        for nxt in graph.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def _components(graph: dict[str, set[str]]) -> list[set[str]]:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[set[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = set()
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.add(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(component)
    return found


def circles_across_rooms(imports: dict[str, Imports]) -> list[list[str]]:
    """Groups of modules that import each other round a circle (module-level imports only)
    and lie in more than one room."""
    graph = {m: set(i.top) for m, i in imports.items()}
    return sorted(sorted(c) for c in _components(graph) if len({room_of(m) for m in c}) > 1)


def circles_with_inner(imports: dict[str, Imports]) -> list[list[str]]:
    """The circles across rooms once function-level imports count too."""
    graph = {m: i.top | set(i.inner) for m, i in imports.items()}
    return sorted(sorted(c) for c in _components(graph) if len({room_of(m) for m in c}) > 1)


def inner_imports_closing_circles(imports: dict[str, Imports]) -> list[tuple[str, str]]:
    """Function-level imports between rooms whose target reaches the importer back (through
    imports at any level): each closes a circle across rooms."""
    graph = {m: i.top | set(i.inner) for m, i in imports.items()}
    return sorted(
        (m, t)
        for m, i in imports.items()
        for t in set(i.inner)
        if room_of(m) != room_of(t) and m in _closure(graph, t)
    )


def arrows_up(imports: dict[str, Imports]) -> list[tuple[str, str]]:
    """Imports (any level) from a core module to a provider's or a flow's package."""
    return sorted(
        (m, t)
        for m, i in imports.items()
        if not is_wing(m)
        for t in i.top | set(i.inner)
        if is_wing(t)
    )


def report(under: Path = ROOT) -> str:
    imports = import_map(under)
    per_room = Counter(room_of(m) for m in imports if m not in PACKAGES)
    lines = ["modules per folder (without __init__.py):"]
    for room in sorted(r for r in per_room if r.split(".")[0] in ROOMED):
        lines.append(f"  {room}: {per_room[room]}")
    circles = circles_across_rooms(imports)
    lines.append(f"import circles across rooms (module level): {len(circles)}")
    lines.extend(f"  {len(c)} modules: {', '.join(c)}" for c in circles)
    up = arrows_up(imports)
    lines.append(f"arrows from the core up to a provider or a flow: {len(up)}")
    lines.extend(f"  {m} -> {t}" for m, t in up)
    wing = sorted(
        (m, t)
        for m, i in imports.items()
        if not is_wing(m) and m not in CROWD_CORE
        for t in i.top | set(i.inner)
        if t in CROWD_CORE
    )
    lines.append(f"imports from the core of annotation/crowd/ (registry, interface): {len(wing)}")
    wider = circles_with_inner(imports)
    lines.append(f"import circles across rooms counting function-level imports: {len(wider)}")
    lines.extend(f"  {len(c)} modules in {len({room_of(m) for m in c})} rooms" for c in wider)
    inner = sum(len(i.inner) for i in imports.values())
    lines.append(f"function-level imports of annotation modules: {inner}")
    closing = inner_imports_closing_circles(imports)
    lines.append(f"  of which between rooms and closing a circle: {len(closing)}")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    # another checkout's package (the before of a change): its `annotation` folder
    print(report(Path(sys.argv[1]).resolve() if len(sys.argv) > 1 else ROOT))
