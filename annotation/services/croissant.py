"""`croissant.json`: the export described in MLCommons' Croissant 1.0 (JSON-LD) with its
Responsible-AI vocabulary, the metadata the NeurIPS Datasets and Benchmarks track asks for.
Every file of the version with its sha256 (`contentUrl`s relative to the export's folder),
one record set per Parquet table with its fields pointing into the file's columns, license,
creators, citation, version, and the RAI fields that apply to crowdsourced labels."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from annotation.models import Run
from annotation.services.column_stats import column_mean, column_median
from annotation.services.files import file_write_atomic

CROISSANT_FILE = "croissant.json"

# The Croissant 1.0 JSON-LD context, as the specification gives it.
_CONTEXT: dict[str, Any] = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "dct": "http://purl.org/dc/terms/",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "parentField": "cr:parentField",
    "path": "cr:path",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "sc": "https://schema.org/",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
}

_FORMATS = {
    ".parquet": "application/x-parquet",
    ".json": "application/json",
    ".jsonl": "application/jsonlines",
    ".csv": "text/csv",
    ".md": "text/markdown",
}


def _data_type(kind: pa.DataType) -> tuple[str, bool]:
    """Croissant's type of an Arrow column, and whether each row holds a list of them."""
    if pa.types.is_dictionary(kind):  # kept encoded in memory, written as its values
        return _data_type(kind.value_type)
    if pa.types.is_list(kind):
        return _data_type(kind.value_type)[0], True
    if pa.types.is_boolean(kind):
        return "sc:Boolean", False
    if pa.types.is_integer(kind):
        return "sc:Integer", False
    if pa.types.is_floating(kind):
        return "sc:Float", False
    return "sc:Text", False


def _record_set(name: str, file: str, schema: pa.Schema) -> dict[str, Any]:
    fields = []
    for column in schema:
        data_type, repeated = _data_type(column.type)
        fields.append(
            {
                "@type": "cr:Field",
                "@id": f"{name}/{column.name}",
                "name": column.name,
                "dataType": data_type,
                **({"repeated": True} if repeated else {}),
                "source": {"fileObject": {"@id": file}, "extract": {"column": column.name}},
            }
        )
    return {"@type": "cr:RecordSet", "@id": name, "name": name, "field": fields}


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _agreement(tables: dict[str, pa.Table]) -> str:
    parts = []
    for name, table in tables.items():
        if "agreement" in table.column_names:
            column = table.column("agreement")
            if (mean := column_mean(column)) is not None:
                parts.append(
                    f"{name}: mean share of judgments agreeing with the majority "
                    f"{mean:.3f} over {len(column) - column.null_count} records"
                )
        elif "spread" in table.column_names:
            column = table.column("spread")
            if (mean := column_mean(column)) is not None:
                parts.append(
                    f"{name}: mean spread (standard deviation) of the ratings "
                    f"{mean:.3f} over {len(column) - column.null_count} records"
                )
    return "; ".join(parts)


def croissant_document(
    *,
    folder: Path,
    run: Run,
    manifest: dict[str, Any],
    tables: dict[str, pa.Table],
    title: str,
    paper: str,
    version: int,
    terms: dict[str, Any],
    people: dict[str, Any],
) -> dict[str, Any]:
    """The Croissant document of the version in `folder` (every file already written)."""
    files = sorted(
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and p.name != CROISSANT_FILE
    )
    # The manifest holds the sha256 of the files it lists, taken as they were written: not
    # read again (CxC's ratings.jsonl is 168 MB).
    known: dict[str, str] = {
        **{name: sha for name, sha in manifest.get("files", {}).items() if isinstance(sha, str)},
        **{
            entry["file"]: entry["sha256"]
            for entry in manifest.get("record_sets", {}).values()
            if isinstance(entry, dict) and "file" in entry and "sha256" in entry
        },
    }
    distribution = [
        {
            "@type": "cr:FileObject",
            "@id": name,
            "name": name,
            "contentUrl": name,
            "encodingFormat": _FORMATS.get(Path(name).suffix, "application/octet-stream"),
            "sha256": known.get(name) or _sha256(folder / name),
        }
        for name in files
    ]
    sets = manifest.get("record_sets", {})
    pay = "; ".join(
        f"{p.get('stage')}: expected {p.get('expected', {}).get('hourly')}, "
        f"effective {p.get('effective', {}).get('hourly')} per hour"
        for p in manifest.get("pay", [])
        if isinstance(p, dict)
    )
    stand_in = people["stand_in"]
    license_id = terms["license"]
    creators = [{"@type": "sc:Person", "name": c} for c in terms["creators"]] or [
        {"@type": "sc:Organization", "name": "crowdvl run owner (not given)"}
    ]
    return {
        "@context": _CONTEXT,
        "@type": "sc:Dataset",
        "conformsTo": "http://mlcommons.org/croissant/1.0",
        "name": f"{manifest.get('format', 'export')}-run{run.pk}",
        "description": (
            f"{title} labels collected with crowdvl for run {run.pk}"
            + (f" ({run.name})" if run.name else "")
            + f", reproducing the procedure of: {paper}"
        ),
        "license": license_id,
        "url": "README.md",
        "version": f"{version}.0.0",
        "datePublished": str(manifest.get("created_at", ""))[:10],
        "citeAs": terms["citation"] or paper,
        "creator": creators,
        "isBasedOn": [s["name"] + " (" + s["license"] + ")" for s in terms["source_licenses"]],
        "distribution": distribution,
        "recordSet": [
            _record_set(name, entry["file"], tables[name].schema)
            for name, entry in sets.items()
            if name in tables
        ],
        "rai:dataCollection": (
            "Crowdsourced judgments on candidate items the run sampled from the source "
            "dataset, following the paper's procedure; each item shown to several workers "
            "in HITs with gold checks; only counted work (submitted or approved, confirmed "
            "by its provider, not excluded) enters the export."
        ),
        "rai:dataCollectionType": ["Crowdsourcing"] + (["Simulation"] if stand_in else []),
        "rai:dataAnnotationProtocol": (
            "Task pages with the paper's instructions (versions in manifest.json "
            "`instructions`); workers gave informed consent (text version "
            f"{manifest.get('consent', {}).get('version', '')}); gold items held failing "
            "work for review."
        ),
        "rai:dataAnnotationPlatform": (
            ", ".join(people["providers"]) + (f". Pay: {pay}" if pay else "")
        ),
        "rai:annotationsPerItem": ", ".join(
            f"{name}: median {column_median(tables[name].column(col))}"
            for name in tables
            for col in ("judgments", "raters")
            if col in tables[name].column_names and tables[name].num_rows
        ),
        "rai:annotatorDemographics": (
            f"{people['workers']} distinct workers, named by pseudonyms only; no demographic "
            "data was collected."
        ),
        "rai:dataAnnotationAnalysis": _agreement(tables),
        "rai:dataLimitations": (
            (
                "SIMULATED workers answered some or all items: not a human-annotated dataset. "
                if stand_in
                else ""
            )
            + "Labels reflect the sampled candidates only (items never shown are not "
            "negatives); agreement and gold accuracy bound the labels' reliability; see "
            "DATASHEET.md."
        ),  # fmt: skip
        "rai:dataBiases": (
            "Candidates come from the models and samplers the run used (listed in "
            "manifest.json), so items they never proposed are missing."
        ),
        "rai:personalSensitiveInformation": (
            "Worker ids are keyed pseudonyms (never a platform's id); no names, emails or "
            "demographics. Images may show people (source dataset's terms apply)."
        ),
        "rai:dataUseCases": "Evaluation of vision-and-language models, as the paper intended.",
        "rai:dataReleaseMaintenancePlan": (
            "Versioned exports; each version's CHANGES and manifest name its predecessor."
        ),
    }


def croissant_write(*, folder: Path, **document: Any) -> str:
    """Write croissant.json into `folder` (after every other file); returns its sha256."""
    data = json.dumps(croissant_document(folder=folder, **document), indent=2).encode()
    return file_write_atomic(path=folder / CROISSANT_FILE, data=data)
