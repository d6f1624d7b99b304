"""No code reads a run's settings by key outside the one place that parses `Run.config`
(`annotation/run_settings/`): everything else reads the typed settings object's attributes
(issue 49). The walk looks for `config["k"]` (read or written), `config.get("k")` /
`.pop` / `.setdefault`, and `"k" in config` on any name or attribute called `config`."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
WALKED = ("annotation", "pipeline", "benchmarks", "scripts", "config")
# The one place; migrations change stored JSON as it was when they were written.
ALLOWED = ("annotation/run_settings/", "/migrations/")
METHODS = ("get", "pop", "setdefault")


def _is_config(node: ast.AST) -> bool:
    return (isinstance(node, ast.Name) and node.id == "config") or (
        isinstance(node, ast.Attribute) and node.attr == "config"
    )


def _is_key(node: ast.AST) -> bool:
    return isinstance(node, ast.Constant) and isinstance(node.value, str)


def key_reads(source: str) -> list[int]:
    """Lines of `source` that read or write a config by a string key."""
    lines = []
    for node in ast.walk(ast.parse(source)):
        if (
            isinstance(node, ast.Subscript)
            and _is_config(node.value)
            and _is_key(node.slice)
            or (
                isinstance(node, ast.Call)
                and isinstance(node.func, ast.Attribute)
                and node.func.attr in METHODS
                and _is_config(node.func.value)
                and node.args
                and _is_key(node.args[0])
            )
            or (
                isinstance(node, ast.Compare)
                and _is_key(node.left)
                and any(isinstance(op, ast.In | ast.NotIn) for op in node.ops)
                and any(_is_config(c) for c in node.comparators)
            )
        ):
            lines.append(node.lineno)
    return sorted(lines)


def test_the_walk_finds_each_way_of_reading_by_key():
    source = (
        'a = run.config["seed"]\n'
        'b = config.get("k", 1)\n'
        'config["x"] = 1\n'
        'c = "gallery" not in batch.run.config\n'
        "d = run.config\n"
        "e = settings.seed\n"
        'f = options.get("k")\n'
    )
    assert key_reads(source) == [1, 2, 3, 4]


def test_no_run_config_is_read_by_key_outside_the_settings_package():
    found = []
    for top in WALKED:
        for path in sorted((ROOT / top).rglob("*.py")):
            name = path.relative_to(ROOT).as_posix()
            if any(part in f"/{name}" for part in ALLOWED):
                continue
            found += [f"{name}:{line}" for line in key_reads(path.read_text())]
    assert not found, "read the typed settings (run_settings(run).<name>) instead: " + ", ".join(
        found
    )
