"""The docs stay whole: every setting read from the environment is documented, every link
between the docs leads somewhere, the README stays an entry page, every package named below
has its README and every decision record is short and indexed."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
# The folders whose README says what they hold, what they may import and where to start.
PACKAGES = [
    "annotation",
    "annotation/flows",
    "annotation/crowd",
    "annotation/pages",
    "annotation/api",
    "annotation/encoders",
    "pipeline",
    "benchmarks",
    "scripts",
    "tests",
]
DECISIONS = ROOT / "docs" / "decisions"
DOCS = [
    ROOT / "README.md",
    ROOT / "CONTRIBUTING.md",
    *sorted((ROOT / "docs").rglob("*.md")),
    *(ROOT / package / "README.md" for package in PACKAGES),
    # the rooms' READMEs (annotation/services/work/, ...) and any other package's
    *sorted(
        path
        for path in (ROOT / "annotation").rglob("README.md")
        if path.parent.relative_to(ROOT).as_posix() not in PACKAGES
    ),
]
FENCE = re.compile(r"^```.*?^```", re.M | re.S)
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


def environment_names() -> set[str]:
    """Every CROWDVL_* name config/settings.py reads (env, env_flag, env_renamed: old names too)."""
    source = (ROOT / "config" / "settings.py").read_text()
    names = set()
    for call in re.finditer(r"\benv(?:_flag|_renamed)?\(([^)]*)\)", source):
        names.update(re.findall(r'"(CROWDVL_[A-Z0-9_]+)"', call.group(1)))
    return names


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text())
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


def test_every_environment_setting_is_documented() -> None:
    text = "\n".join(path.read_text() for path in DOCS)
    names = environment_names()
    assert len(names) > 30  # the reader found them
    assert sorted(n for n in names if n not in text) == []


def test_every_link_between_the_docs_leads_somewhere() -> None:
    broken = []
    for path in DOCS:
        for target in LINK.findall(FENCE.sub("", path.read_text())):
            if re.match(r"[a-z]+:", target):
                continue  # http:, https:, mailto:
            file, _, anchor = target.partition("#")
            resolved = (path.parent / file).resolve() if file else path
            if not resolved.exists():
                broken.append(f"{path.relative_to(ROOT)}: {target} (no such file)")
            elif anchor and resolved.suffix == ".md" and anchor not in anchors(resolved):
                broken.append(f"{path.relative_to(ROOT)}: {target} (no such heading)")
    assert broken == []


def test_the_readme_is_an_entry_page_with_a_map_of_the_docs() -> None:
    """Every doc is in the README's map, except the decision records, which their own index
    (docs/decisions/README.md, itself in the map) lists."""
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    for doc in sorted((ROOT / "docs").rglob("*.md")):
        if doc.parent == DECISIONS and doc.name != "README.md":
            continue
        assert str(doc.relative_to(ROOT)) in readme, f"{doc.relative_to(ROOT)} is not in the map"


def test_every_package_named_has_its_readme() -> None:
    assert [p for p in PACKAGES if not (ROOT / p / "README.md").is_file()] == []


def test_every_decision_is_a_short_record_in_the_index() -> None:
    index = (DECISIONS / "README.md").read_text()
    records = sorted(DECISIONS.glob("[0-9][0-9][0-9][0-9]-*.md"))
    assert records, "no decision record found"
    numbers = [int(record.name[:4]) for record in records]
    assert numbers == list(range(1, len(records) + 1)), "decisions are numbered 0001, 0002, ..."
    for record in records:
        text = record.read_text()
        assert f"({record.name})" in index, f"{record.name} is not in docs/decisions/README.md"
        assert text.startswith(f"# {int(record.name[:4])}. "), f"{record.name}: title"
        assert re.search(r"^Status: ", text, re.M), f"{record.name}: status"
        for section in ("Context", "Decision", "Consequences"):
            assert f"\n## {section}\n" in text, f"{record.name}: no {section} section"
        assert 10 <= len(text.splitlines()) <= 25, f"{record.name}: not 10-25 lines"
