"""The docs stay whole: every setting read from the environment is documented, every link
between the docs leads somewhere, and the README stays an entry page."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
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
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    for doc in sorted((ROOT / "docs").rglob("*.md")):
        assert str(doc.relative_to(ROOT)) in readme, f"{doc.relative_to(ROOT)} is not in the map"
