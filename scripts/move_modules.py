"""Move modules of the `annotation` package and rewrite every reference to them (issue 49, the
core's rooms). The moves are listed in scripts/module_moves.txt, one `old.module new.module`
a line; the same list rewrites code written before a move (another branch, a doc):

    python scripts/move_modules.py move old.module new.module ...   # git mv + rewrite + record
    python scripts/move_modules.py rewrite [PATH ...]                # rewrite only (all moves)

Rewritten: dotted names (`import`, `from … import`, `mock.patch("…")`, `"module:NAME"` specs),
`from package import module` lines, and file paths (`annotation/services/claim.py`, and the
short `services/claim.py` docs use). Migrations, CHANGELOG.md and docs/architecture.md are
history or edited elsewhere: left alone unless named on the command line.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
MOVES_FILE = REPO / "scripts" / "module_moves.txt"
SUFFIXES = {".py", ".md", ".toml", ".txt", ".html", ".cfg", ".ini", ".yml", ".yaml", ".sh"}
LEFT_ALONE = (
    "CHANGELOG.md",
    "docs/architecture.md",
    "scripts/module_moves.txt",
    "scripts/move_modules.py",
    "tests/annotation/import_map.py",  # names the old places on purpose
    "tests/annotation/test_layers.py",  # its samples and rules name them too
)


def moves_read() -> list[tuple[str, str]]:
    if not MOVES_FILE.exists():
        return []
    pairs = []
    for line in MOVES_FILE.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            old, new = line.split()
            pairs.append((old, new))
    return pairs


def tracked_files() -> list[Path]:
    out = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.split("\n")
    return [
        REPO / name
        for name in out
        if name
        and Path(name).suffix in SUFFIXES
        and "/migrations/" not in name
        and name not in LEFT_ALONE
        and (REPO / name).is_file()
    ]


def _from_import_lines(text: str, moves: dict[str, str]) -> str:
    """`from annotation.services import a, b as c` where a and b are moved modules: one line
    per new package."""
    pattern = re.compile(r"^([ \t]*)from ([\w.]+) import ([\w, ]+)$", re.MULTILINE)

    def replace(match: re.Match[str]) -> str:
        indent, package, names = match.groups()
        groups: dict[str, list[str]] = {}
        for item in (n.strip() for n in names.split(",")):
            if not item:
                continue
            name = item.split(" as ")[0].strip()
            target = moves.get(f"{package}.{name}")
            new_package = target.rpartition(".")[0] if target else package
            if target and target.rpartition(".")[2] != name:
                raise SystemExit(f"{package}.{name}: a renamed module needs a hand edit")
            groups.setdefault(new_package, []).append(item)
        if list(groups) == [package]:
            return match.group(0)
        return "\n".join(
            f"{indent}from {pkg} import {', '.join(items)}" for pkg, items in groups.items()
        )

    return pattern.sub(replace, text)


def _modules_of(package: str) -> str:
    """` import m` where m is a module of the folder `package` names (rewritten already): a
    lookahead that leaves such a line alone."""
    folder = REPO.joinpath(*package.split("."))
    names = sorted(p.stem for p in folder.glob("*.py") if p.stem != "__init__")
    if not names:
        return "$^"  # matches nothing
    return rf" import (?:{'|'.join(map(re.escape, names))})\b"


def rewrite_text(text: str, moves: list[tuple[str, str]]) -> str:
    table = dict(moves)
    for old, new in moves:
        # a package that keeps sub-packages (annotation.providers keeps the providers' folders):
        # their names stay as they are
        kept = sorted(p.stem for p in REPO.joinpath(*old.split(".")).glob("*") if p.stem[0] != "_")
        names = "|".join(rf"{re.escape(k)}\b" for k in kept)
        stay = rf"(?!\.(?:{names}|\{{))" if kept else ""  # `{` : an f-string's folder
        text = re.sub(rf"(?<![\w.]){re.escape(old)}(?![\w]){stay}(?!{_modules_of(old)})", new, text)
        old_path, new_path = old.replace(".", "/"), new.replace(".", "/")
        text = re.sub(rf"(?<![\w/]){re.escape(old_path)}\.py", f"{new_path}.py", text)
        # the short form docs use: services/claim.py for annotation/services/claim.py
        short_old = old_path.split("/", 1)[1]
        short_new = new_path.split("/", 1)[1]
        text = re.sub(rf"(?<![\w/.]){re.escape(short_old)}\.py", f"{short_new}.py", text)
    # after the dotted names: `from annotation.services import datasets` becomes
    # `from annotation.services.datasets import datasets`, which the rule above would read as
    # the old module `annotation.services.datasets` once more
    return _from_import_lines(text, table)


def rewrite(paths: list[Path], moves: list[tuple[str, str]]) -> int:
    changed = 0
    for path in paths:
        try:
            text = path.read_text()
        except UnicodeDecodeError:
            continue
        new = rewrite_text(text, moves)
        if new != text:
            path.write_text(new)
            changed += 1
    return changed


def module_path(name: str) -> Path:
    return REPO.joinpath(*name.split(".")).with_suffix(".py")


def move(pairs: list[tuple[str, str]]) -> None:
    for old, new in pairs:
        source, target = module_path(old), module_path(new)
        target.parent.mkdir(parents=True, exist_ok=True)
        init = target.parent / "__init__.py"
        if not init.exists():
            init.write_text(f'"""{target.parent.name}: see README.md beside this file."""\n')
        subprocess.run(["git", "mv", str(source), str(target)], cwd=REPO, check=True)
    recorded = moves_read()
    with MOVES_FILE.open("a") as out:
        for old, new in pairs:
            if (old, new) not in recorded:
                out.write(f"{old} {new}\n")
    print(f"rewrote {rewrite(tracked_files(), pairs)} files")


def main(argv: list[str]) -> None:
    if argv[:1] == ["move"]:
        names = argv[1:]
        move(list(zip(names[0::2], names[1::2], strict=True)))
    elif argv[:1] == ["rewrite"]:
        paths = [Path(p).resolve() for p in argv[1:]] or tracked_files()
        print(f"rewrote {rewrite(paths, moves_read())} files")
    else:
        raise SystemExit(__doc__)


if __name__ == "__main__":
    main(sys.argv[1:])
