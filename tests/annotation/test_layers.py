"""The layering rules of docs/architecture.md, read from the source's import statements:
crowd adapters never import services or flows, the core never imports a flow, and flows
never import each other."""

import ast
from pathlib import Path

import annotation

ROOT = Path(annotation.__file__).parent


def is_module(name: str) -> bool:
    base = ROOT.parent.joinpath(*name.split("."))
    return base.with_suffix(".py").exists() or (base / "__init__.py").exists()


def imports_of(path: Path) -> set[str]:
    """Every module an `import` or `from … import` in `path` names, at any depth
    (`from a import b` counts `a.b` when b is a module)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(
                f"{node.module}.{alias.name}"
                for alias in node.names
                if is_module(f"{node.module}.{alias.name}")
            )
    return found


def modules(under: Path) -> list[Path]:
    return sorted(p for p in under.rglob("*.py") if "migrations" not in p.parts)


def offending(paths: list[Path], prefixes: tuple[str, ...]) -> list[str]:
    return [
        f"{path.name if not path.is_relative_to(ROOT.parent) else path.relative_to(ROOT.parent)} imports {name}"
        for path in paths
        for name in sorted(imports_of(path))
        if name.startswith(prefixes)
    ]


def test_crowd_adapters_import_no_service_flow_or_simulation():
    bad = offending(
        modules(ROOT / "crowd"),
        ("annotation.services", "annotation.flows", "annotation.simulation", "annotation.tasks"),
    )
    assert bad == []


def test_the_core_imports_no_flow():
    core = [p for p in modules(ROOT) if "flows" not in p.relative_to(ROOT).parts]
    assert core, "no core modules found"
    assert offending(core, ("annotation.flows.",)) == []


def test_flows_do_not_import_each_other():
    flows = [p for p in (ROOT / "flows").iterdir() if p.is_dir() and (p / "apps.py").exists()]
    assert {p.name for p in flows} >= {"bison", "eccv"}
    for flow in flows:
        others = tuple(f"annotation.flows.{p.name}" for p in flows if p != flow)
        assert offending(modules(flow), others) == []


def test_the_checker_sees_a_violation(tmp_path):
    """The rules above would catch an import if there were one."""
    sample = tmp_path / "bad.py"
    sample.write_text(
        "from annotation.flows import flows\n"
        "def f():\n    from annotation.flows import bison\n"
        "    from annotation.services.assignments import pool_join\n"
    )
    found = imports_of(sample)
    assert {"annotation.services.assignments", "annotation.flows.bison"} <= found
    assert "annotation.flows.flows" not in found  # a name, not a module
    assert offending([sample], ("annotation.flows.",)) != []
