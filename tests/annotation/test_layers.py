"""The layering rules of docs/architecture.md, read from the source: the provider registry and
interface (`annotation/providers/`, the core's) and the platform clients never import services
or flows; no import circle joins modules of different rooms and the core never imports up into
a provider's or a flow's package (`tests/annotation/import_map.py`); the core never imports a flow or a crowd
provider's package, nor names a provider; flows never import each other or a provider; and
providers never import each other."""

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


PROVIDER_DIRS = sorted(
    p for p in (ROOT / "crowd").iterdir() if p.is_dir() and (p / "apps.py").exists()
)
PROVIDER_PACKAGES = tuple(f"annotation.crowd.{p.name}" for p in PROVIDER_DIRS)


def core_modules() -> list[Path]:
    """Everything outside the flows' and the providers' folders."""
    return [
        p
        for p in modules(ROOT)
        if "flows" not in p.relative_to(ROOT).parts
        and not any(p.is_relative_to(d) for d in PROVIDER_DIRS)
    ]


def test_every_provider_is_a_package_of_its_own():
    assert {p.name for p in PROVIDER_DIRS} >= {"local", "simulated", "mturk"}
    assert not [p.name for p in (ROOT / "crowd").glob("*.py") if p.stem in ("mturk", "local")]


def test_the_registry_and_platform_clients_import_no_service_flow_or_task():
    shared = [ROOT / "providers" / "__init__.py", ROOT / "providers" / "base.py"]
    clients = [p for d in PROVIDER_DIRS for p in (d / "client.py", d / "fees.py") if p.exists()]
    assert clients, "no platform client found"
    bad = offending(
        shared + clients,
        ("annotation.services", "annotation.flows", "annotation.tasks", *PROVIDER_PACKAGES),
    )
    assert bad == []


def test_the_core_and_the_flows_import_no_provider_package():
    assert offending(core_modules(), PROVIDER_PACKAGES) == []
    assert offending(modules(ROOT / "flows"), PROVIDER_PACKAGES) == []


def test_providers_do_not_import_each_other_or_a_flow():
    for provider in PROVIDER_DIRS:
        others = tuple(f"annotation.crowd.{p.name}" for p in PROVIDER_DIRS if p != provider)
        assert offending(modules(provider), (*others, "annotation.flows.")) == []


def provider_names_in(path: Path, names: set[str]) -> list[str]:
    """String constants equal to a provider's name, except where the same word means
    something else (a cache alias, a simulated population's label)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    allowed: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "population":
            allowed.add(id(node.value))
        if isinstance(node, ast.Subscript) and getattr(node.value, "id", "") == "caches":
            allowed.add(id(node.slice))
    return [
        f"{path.relative_to(ROOT.parent)}:{node.lineno} names {node.value!r}"
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and node.value in names
        and id(node) not in allowed
    ]


def test_the_core_and_the_flows_never_name_a_provider():
    from annotation.providers import PROVIDERS

    names = set(PROVIDERS)
    assert names >= {"local", "simulated", "mturk"}
    found = [
        hit
        for path in core_modules() + modules(ROOT / "flows")
        for hit in provider_names_in(path, names)
    ]
    assert found == []


def test_the_core_imports_no_flow():
    core = [p for p in modules(ROOT) if "flows" not in p.relative_to(ROOT).parts]
    assert core, "no core modules found"
    assert offending(core, ("annotation.flows.",)) == []


def test_only_the_flows_import_the_flows_package():
    """The registry is the core's (`annotation.flow_registry`): no module outside
    `annotation/flows/` imports the plug-in folder itself, and the core none of its flows."""
    outside = [
        p
        for under in (
            ROOT,
            ROOT.parent / "tests",
            ROOT.parent / "benchmarks",
            ROOT.parent / "scripts",
        )
        for p in modules(under)
        if not p.is_relative_to(ROOT / "flows")
    ]
    assert len(outside) > 100
    bare = [
        hit
        for hit in offending(outside, ("annotation.flows",))
        if hit.endswith(" annotation.flows")
    ]
    assert bare == []
    assert offending(core_modules(), ("annotation.flows",)) == []


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


def test_the_name_checker_sees_a_provider_name(tmp_path):
    sample = tmp_path / "annotation" / "bad.py"
    sample.parent.mkdir()
    sample.write_text(
        'if batch.provider == "mturk":\n    pass\n'
        'Batch.objects.filter(provider="local")\n'
        'quality(population="simulated")\n'
        'caches["local"].get("x")\n'
    )
    global ROOT
    saved, ROOT = ROOT, sample.parent  # relative paths for the message
    try:
        found = provider_names_in(sample, {"mturk", "local", "simulated"})
    finally:
        ROOT = saved
    assert [line.rsplit(" ", 1)[-1] for line in found] == ["'mturk'", "'local'"]


def test_the_providers_wing_holds_only_providers():
    """The registry and the interface are the core's (`annotation/providers/`): the core asks
    them and never reaches into `annotation/crowd/`, which holds the providers' folders."""
    loose = sorted(p.name for p in (ROOT / "crowd").glob("*.py"))
    assert loose == ["__init__.py"]  # the test doubles live in tests/annotation/crowd/
    assert offending(core_modules(), ("annotation.crowd",)) == []


def test_no_import_circle_joins_two_rooms():
    from tests.annotation.import_map import circles_across_rooms, import_map

    imports = import_map(ROOT)
    assert len(imports) > 400
    assert circles_across_rooms(imports) == []


def test_no_arrow_from_the_core_up_to_a_provider_or_a_flow():
    from tests.annotation.import_map import arrows_up, import_map

    assert arrows_up(import_map(ROOT)) == []


def test_the_map_sees_a_circle_and_an_arrow_up(tmp_path):
    from tests.annotation import import_map as m

    root = tmp_path / "annotation"
    for name, text in {
        "__init__.py": "",
        "services/__init__.py": "",
        "services/work/__init__.py": "",
        "services/work/a.py": "from annotation.services.runs import b\n",
        "services/runs/__init__.py": "",
        "services/runs/b.py": "import annotation.services.work.a\n"
        "def f():\n    from annotation.flows.x import y\n",
        "flows/__init__.py": "",
        "flows/x.py": "",
    }.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    imports = m.import_map(root)
    assert m.circles_across_rooms(imports) == [
        ["annotation.services.runs.b", "annotation.services.work.a"]
    ]
    assert m.arrows_up(imports) == [("annotation.services.runs.b", "annotation.flows.x")]
