"""`README.md`: the export's dataset card, as the Hugging Face Hub reads it. A YAML header
(license, task categories, size category, one config per Parquet record set) and a short text
for people: what the records are, how to load them, their terms and citation, and the
one-line upload with the researcher's own token. Nothing in it names a server path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from annotation.models import Run
from annotation.paths import paths_hidden
from annotation.services.files import file_write_atomic

CARD_FILE = "README.md"

# Licenses the Hub knows by these ids; any other text is `other` with its name.
_HUB_LICENSES = {
    "cc-by-4.0", "cc-by-sa-4.0", "cc-by-nc-4.0", "cc-by-nc-sa-4.0", "cc0-1.0", "odc-by",
    "odbl", "pddl", "mit", "apache-2.0", "cdla-permissive-2.0", "cdla-sharing-1.0", "other",
}  # fmt: skip


def _size_category(rows: int) -> str:
    for limit, name in ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K")):
        if rows < limit:
            return name
    return "100K<n<1M" if rows < 1_000_000 else "1M<n<10M"


def _yaml(value: Any) -> str:
    """A scalar for the YAML header: JSON's quoted strings are YAML's too."""
    return json.dumps(value)


def card_header(*, terms: dict[str, Any], tables: dict[str, Any], sets: dict[str, Any],
                task_categories: tuple[str, ...], pretty_name: str) -> list[str]:  # fmt: skip
    """The card's YAML front matter, as lines (between the two `---`)."""
    license_id = str(terms["license"]).lower()
    lines = ["---"]
    if license_id in _HUB_LICENSES:
        lines.append(f"license: {_yaml(license_id)}")
    else:
        lines += ["license: other", f"license_name: {_yaml(terms['license'])}"]
    lines += ["task_categories:", *(f"- {_yaml(t)}" for t in task_categories)]
    rows = max((entry["rows"] for entry in sets.values()), default=0)
    lines += ["size_categories:", f"- {_yaml(_size_category(rows))}"]
    lines += [f"pretty_name: {_yaml(pretty_name)}", "tags:", "- crowdsourced", "- croissant"]
    lines.append("configs:")
    for n, (name, entry) in enumerate(sets.items()):
        lines += [
            f"- config_name: {_yaml(name)}",
            *(["  default: true"] if n == 0 else []),
            "  data_files:",
            "  - split: test",
            f"    path: {_yaml(entry['file'])}",
        ]
    lines.append("---")
    return lines


def card_write(
    *,
    folder: Path,
    run: Run,
    manifest: dict[str, Any],
    tables: dict[str, Any],
    title: str,
    paper: str,
    version: int,
    terms: dict[str, Any],
    task_categories: tuple[str, ...],
) -> str:
    """Write README.md into `folder`; returns its sha256."""
    sets = manifest.get("record_sets", {})
    name = f"{manifest.get('format', 'export')}-run{run.pk}"
    files = sorted(manifest.get("files", {}))
    lines = card_header(
        terms=terms,
        tables=tables,
        sets=sets,
        task_categories=task_categories,
        pretty_name=f"{title} (crowdvl run {run.pk}, v{version})",
    )
    lines += [
        "",
        f"# {title}: run {run.pk}" + (f" ({run.name})" if run.name else "") + f", v{version}",
        "",
        f"Crowdsourced labels collected with crowdvl following the procedure of {paper}.",
        "",
        "**License:** "
        + (
            "none given: this export is UNLICENSED and may not be published as is; "
            "set a license for the run or the export and export again."
            if terms["unlicensed"]
            else f"`{terms['license']}`."
        ),
        "",
        "## Record sets",
        "",
        "| config | file | rows | columns |",
        "|---|---|---|---|",
        *(
            f"| {s} | `{e['file']}` | {e['rows']} | "
            + ", ".join(tables[s].column_names if s in tables else [])
            + " |"
            for s, e in sets.items()
        ),
        "",
        "Each row carries its label's provenance: the number of judgments, their agreement, "
        "the aggregate (and its interval where the run fitted one) and pseudonymous worker "
        "ids (a keyed hash, stable across this installation's exports; never a platform's "
        "own id).",
        "",
        "The paper's own files, unchanged: " + ", ".join(f"`{f}`" for f in files) + ".",
        "Machine-readable metadata: `croissant.json` (Croissant 1.0 with its Responsible-AI "
        "fields); how the data was made: `DATASHEET.md`; every figure: `manifest.json`.",
        "",
        "## Load",
        "",
        "```python",
        "from datasets import load_dataset",
        f'ds = load_dataset("parquet", data_files="{next(iter(sets.values()))["file"]}")'
        if sets
        else "# no record sets",
        "```",
        "",
        "Upload with your own token (`HF_TOKEN`), from this folder:",
        f"`huggingface-cli upload <you>/{name} . --repo-type dataset`",
        "",
        "## Terms and citation",
        "",
        "- Creators: " + (", ".join(terms["creators"]) or "not given"),
        *(f"- {s['name']}: {s['license']}" for s in terms["source_licenses"]),
        "",
        "Cite the source paper:",
        "",
        f"> {paper}",
        *(["", "and this dataset:", "", f"> {terms['citation']}"] if terms["citation"] else []),
        "",
    ]
    text = paths_hidden("\n".join(lines))  # a file for the public: no server paths
    return file_write_atomic(path=folder / CARD_FILE, data=text.encode())
