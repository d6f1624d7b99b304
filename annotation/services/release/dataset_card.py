"""`README.md`: the export's dataset card, as the Hugging Face Hub reads it. The YAML header
(`dataset_card_header.py`), then the sections of the Hub's dataset card template filled from
the run: uses and out-of-scope uses, the record sets, how the data was collected and annotated,
who the annotators were and how they were paid, personal and sensitive information, bias, risks
and limitations, citation. Its facts are the datasheet's (`DatasheetRun`, the manifest's
tables through `datasheet_cells`), never computed a second time. Nothing in it names a server
path."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from annotation.models import Run
from annotation.paths import paths_hidden
from annotation.services.files import file_write_atomic
from annotation.services.release.dataset_card_header import SPLIT, card_header
from annotation.services.release.datasheet import (
    DatasheetRun,
    consent_lines,
    datasheet_run,
    exclusion_lines,
)
from annotation.services.release.datasheet_cells import pairs, table
from annotation.services.release.release_terms import release_people

CARD_FILE = "README.md"

# The batch columns a reader of the card needs (the datasheet has every column).
_BATCH_COLUMNS = ("batch", "stage", "provider", "items_per_hit", "workers_per_hit", "reward",
                  "workers", "assignments")  # fmt: skip


def _slug(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", text.lower()).strip("-") or "source"


def _annotators(of_run: DatasheetRun, people: dict[str, Any]) -> list[str]:
    if of_run.simulated:
        return [
            "**The answers come from SIMULATED workers** (crowdvl's stand-in crowd, seeded): "
            "this release is not a human-annotated dataset and must not be used as human "
            "judgments."
        ]
    where = "; ".join(of_run.providers) or "no published batch"
    return [
        f"{people['workers']} distinct worker(s) whose work counted, recruited through: {where}. "
        "Their demographics were not collected, so this card cannot describe them."
    ]


def _uses(title: str, simulated: bool) -> list[str]:
    return [
        "## Uses",
        "",
        "### Direct Use",
        "",
        f"Evaluating vision-and-language models (image-text retrieval, caption scoring) with "
        f"the {title} protocol, as the source paper intended: the split is `{SPLIT}`.",
        "",
        "### Out-of-Scope Use",
        "",
        "- Training on these labels and then reporting results on them (the split is "
        "evaluation data).",
        "- Identifying, profiling or judging the workers: their ids are pseudonyms; linking "
        "them to people is not allowed.",
        "- Drawing conclusions about images or captions outside COCO's domain and English.",
        *(["- Any use as human judgments: the workers were simulated."] if simulated else []),
        "",
    ]


def _structure(sets: dict[str, Any], tables: dict[str, Any], files: list[str]) -> list[str]:
    return [
        "## Dataset Structure",
        "",
        f"One config per record set, each a single `{SPLIT}` split in `data/`:",
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
        "The paper's own files, unchanged: "
        + (", ".join(f"`{f}`" for f in files) or "none")
        + ". Machine-readable metadata: `croissant.json`; how the data was made: "
        "`DATASHEET.md`; every figure: `manifest.json`; what changed since the previous "
        "version: `CHANGES.md`.",
        "",
        "```python",
        "from datasets import load_dataset",
        *(
            [f'ds = load_dataset("<this folder or repo>", "{next(iter(sets))}", split="{SPLIT}")']
            if sets
            else ["# no record sets"]
        ),
        "```",
        "",
    ]


def _creation(run: Run, manifest: dict[str, Any], paper: str, of_run: DatasheetRun,
              people: dict[str, Any]) -> list[str]:  # fmt: skip
    dataset = run.dataset
    counts: dict[str, Any] = {
        k: manifest[k] for k in ("counts", "judged", "records", "ratings") if k in manifest
    }
    batches = [{k: b[k] for k in _BATCH_COLUMNS if k in b} for b in of_run.batches]
    pay = manifest.get("pay", [])
    return [
        "## Dataset Creation",
        "",
        "### Curation Rationale",
        "",
        f"Labels collected with crowdvl following the procedure of {paper}.",
        "",
        "### Source Data",
        "",
        "#### Data Collection and Processing",
        "",
        f"Images and captions from dataset `{dataset.name}`, imported from "
        f"`{Path(dataset.source_file).name}` (sha256 `{dataset.checksum}`); the release holds "
        "their ids and file names, not the images.",
        "",
        *(pairs(counts) if counts else ["(no counts in the manifest)"]),
        "",
        "#### Who are the source data producers?",
        "",
        "The captions were written by the source dataset's annotators; the images are "
        "photographs by Flickr users under their own licenses.",
        "",
        "### Annotations",
        "",
        "#### Annotation process",
        "",
        "Batches of HITs (items per HIT, workers per HIT, reward):",
        "",
        *table(batches, source="batches"),
        "",
        "Gold items check each worker; work failing one was held for a person, and only counted "
        "work (submitted or approved, confirmed by its provider) enters the release.",
        "",
        *exclusion_lines(manifest),
        consent_lines(manifest.get("consent", {})),
        *of_run.images_rule,
        *(
            ["", "Agreement:", "", *pairs(manifest["agreement"], source="agreement")]
            if manifest.get("agreement")
            else []
        ),  # fmt: skip
        "",
        "#### Who are the annotators?",
        "",
        *_annotators(of_run, people),
        "",
        "How they were paid, per batch: the reward, the expected hourly pay (from the papers' "
        "times, documented assumptions or a pilot) and the effective hourly pay (active time, "
        "capped at the expected time per HIT):",
        "",
        *table(pay if isinstance(pay, list) else [pay], source="pay"),
        "",
        "#### Personal and Sensitive Information",
        "",
        "Workers appear only as pseudonyms (a keyed hash); no name, email, platform id or "
        "free-text answer that could name them is released. The images (not included) are "
        "public photographs that may show people; captions may describe them.",
        "",
    ]


def _risks(of_run: DatasheetRun) -> list[str]:
    who = (
        "- The workers were simulated: their answers follow crowdvl's worker models, not "
        "people's reading of the images."
        if of_run.simulated
        else "- Workers were recruited on the platforms listed above under the batches' "
        "qualifications; they are not a sample of any population."
    )
    return [
        "## Bias, Risks, and Limitations",
        "",
        "- Captions and images inherit COCO's known biases (who is pictured, how people are "
        "described, e.g. by gender), and the workers' own reading of them.",
        who,
        "- Measured quality of this release:",
        "",
        *of_run.quality,
        "",
        "### Recommendations",
        "",
        "Report results with the agreement and the number of judgments per label; treat "
        "low-agreement labels as uncertain rather than as errors of a model.",
        "",
    ]


def _citation(terms: dict[str, Any], paper: str) -> list[str]:
    own = terms["citation"]
    return [
        "## Citation",
        "",
        "Cite the source paper:",
        "",
        f"> {paper}",
        "",
        *(
            [
                "and this dataset:",
                "",
                *(["```bibtex", own, "```"] if own.startswith("@") else [f"> {own}"]),
                "",
            ]  # fmt: skip
            if own
            else ["This release gives no citation of its own."]
        ),
        "",
    ]


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
    of_run: DatasheetRun | None = None,
    people: dict[str, Any] | None = None,
) -> str:
    """Write README.md into `folder` (its Parquet files written already: the header reads
    their schemas); returns its sha256. `of_run` and `people`: the datasheet's and
    Croissant's reading of the run, read here when not given."""
    of_run = of_run or datasheet_run(run_id=run.pk)
    people = people or release_people(run=run)
    sets = manifest.get("record_sets", {})
    pretty = f"{title} (crowdvl run {run.pk}, v{version})"
    header = card_header(
        folder=folder,
        terms=terms,
        sets=sets,
        task_categories=task_categories,
        pretty_name=pretty,
        simulated=of_run.simulated,
        source=_slug(run.dataset.name),
    )
    creators = ", ".join(terms["creators"]) or "no creators were given for this release"
    lines = [
        *header,
        "",
        f"# Dataset Card for {pretty}",
        "",
        f"{title} labels of run {run.pk}"
        + (f" ({run.name})" if run.name else "")
        + f", version {version}, collected with crowdvl following {paper}.",
        "",
        "## Dataset Details",
        "",
        "### Dataset Description",
        "",
        f"- **Curated by:** {creators}",
        "- **Language(s) (NLP):** English",
        "- **License:** "
        + (
            "none given: this export is UNLICENSED and may not be published as is; "
            "set a license for the run or the export and export again."
            if terms["unlicensed"]
            else f"`{terms['license']}`."
        ),
        *(f"- **Source, {s['name']}:** {s['license']}" for s in terms["source_licenses"]),
        "",
        "### Dataset Sources",
        "",
        f"- **Paper:** {paper}",
        "",
        *_uses(title, of_run.simulated),
        *_structure(sets, tables, sorted(manifest.get("files", {}))),
        *_creation(run, manifest, paper, of_run, people),
        *_risks(of_run),
        *_citation(terms, paper),
        "## More Information",
        "",
        f"Publish this folder with `manage.py export_release {run.pk} --export-version "
        f"{version} --to huggingface <you>/<name>` (or `--to zenodo`), tokens from the "
        "environment; `--dry-run` lists what would be uploaded.",
        "",
        "## Dataset Card Authors",
        "",
        f"Written by crowdvl from run {run.pk}'s records; curated by {creators}.",
        "",
        "## Dataset Card Contact",
        "",
        creators,
        "",
    ]
    text = paths_hidden("\n".join(lines))  # a file for the public: no server paths
    return file_write_atomic(path=folder / CARD_FILE, data=text.encode())
