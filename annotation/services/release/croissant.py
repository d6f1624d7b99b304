"""`croissant.json`: the export described in MLCommons' Croissant 1.1 (JSON-LD) with its
Responsible-AI vocabulary, the metadata the NeurIPS Evaluations & Datasets track asks for.
Every file of the version with its sha256 (`contentUrl`s relative to the export's folder),
one record set per Parquet table with its fields pointing into the file's columns (the
per-label provenance table described with PROV-O, `croissant_provenance.py`), license and
its data-use conditions (DUO/ODRL), creators, a BibTeX citation, version and metadata
version, and the 20 RAI fields (`croissant_rai.py`)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pyarrow as pa

from annotation.croissant_vocabulary import CONFORMS_TO
from annotation.models import Run
from annotation.money import symbol
from annotation.services.files import file_write_atomic
from annotation.services.release.croissant_provenance import (
    dataset_provenance,
    field_provenance,
    record_set_provenance,
)
from annotation.services.release.croissant_rai import rai_fields
from annotation.services.release.croissant_terms import cite_as, license_url, usage_info
from annotation.services.release.datasheet import DatasheetRun, datasheet_run

CROISSANT_FILE = "croissant.json"

# The Croissant 1.1 JSON-LD context: the specification's (its Appendix 1, with the terms
# mlcroissant 1.1 reads: `name`/`description` language maps, `path`, `repeated`, `replace`,
# `samplingRate`), plus the prefixes of the vocabularies the 1.1 specification's Responsible
# AI section uses (PROV-O, DUO, ODRL), declared as it says they must be.
CONTEXT: dict[str, Any] = {
    "@language": "en",
    "@vocab": "https://schema.org/",
    "sc": "https://schema.org/",
    "cr": "http://mlcommons.org/croissant/",
    "rai": "http://mlcommons.org/croissant/RAI/",
    "dct": "http://purl.org/dc/terms/",
    "prov": "http://www.w3.org/ns/prov#",
    "duo": "http://purl.obolibrary.org/obo/DUO_",
    "odrl": "http://www.w3.org/ns/odrl/2/",
    "annotation": "cr:annotation",
    "arrayShape": "cr:arrayShape",
    "citeAs": "cr:citeAs",
    "column": "cr:column",
    "conformsTo": "dct:conformsTo",
    "containedIn": "cr:containedIn",
    "data": {"@id": "cr:data", "@type": "@json"},
    "dataType": {"@id": "cr:dataType", "@type": "@vocab"},
    "description": {"@container": "@language"},
    "equivalentProperty": "cr:equivalentProperty",
    "examples": {"@id": "cr:examples", "@type": "@json"},
    "excludes": "cr:excludes",
    "extract": "cr:extract",
    "field": "cr:field",
    "fileProperty": "cr:fileProperty",
    "fileObject": "cr:fileObject",
    "fileSet": "cr:fileSet",
    "format": "cr:format",
    "includes": "cr:includes",
    "isArray": "cr:isArray",
    "isLiveDataset": "cr:isLiveDataset",
    "jsonPath": "cr:jsonPath",
    "key": "cr:key",
    "md5": "cr:md5",
    "name": {"@container": "@language"},
    "parentField": "cr:parentField",
    "path": "cr:path",
    "readLines": "cr:readLines",
    "recordSet": "cr:recordSet",
    "references": "cr:references",
    "regex": "cr:regex",
    "repeated": "cr:repeated",
    "replace": "cr:replace",
    "samplingRate": "cr:samplingRate",
    "sdVersion": "cr:sdVersion",
    "separator": "cr:separator",
    "source": "cr:source",
    "subField": "cr:subField",
    "transform": "cr:transform",
    "unArchive": "cr:unArchive",
    "value": "cr:value",
}
# The version of this file's layout (Croissant's `sdVersion`): 2 since Croissant 1.1, RAI's 20
# fields and the per-label provenance record set (issue 50).
SD_VERSION = "2.0.0"

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
    if pa.types.is_timestamp(kind):
        return "sc:DateTime", False
    return "sc:Text", False


def _record_set(name: str, file: str, schema: pa.Schema, *, run_id: int) -> dict[str, Any]:
    fields = []
    for column in schema:
        data_type, repeated = _data_type(column.type)
        fields.append(
            {
                "@type": "cr:Field",
                "@id": f"{name}/{column.name}",
                "name": column.name,
                **field_provenance(name, column.name),
                "dataType": data_type,
                **({"repeated": True} if repeated else {}),
                "source": {"fileObject": {"@id": file}, "extract": {"column": column.name}},
            }
        )
    return {
        "@type": "cr:RecordSet",
        "@id": name,
        "name": name,
        **record_set_provenance(name, run_id=run_id),
        "field": fields,
    }


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


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
    of_run: DatasheetRun | None = None,
) -> dict[str, Any]:
    """The Croissant document of the version in `folder` (every file already written);
    `of_run`: the datasheet's facts about the run (read now if not given)."""
    of_run = of_run or datasheet_run(run_id=run.pk)
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
    license_id = terms["license"]
    creators = [{"@type": "sc:Person", "name": c} for c in terms["creators"]] or [
        {"@type": "sc:Organization", "name": "crowdvl run owner (not given)"}
    ]
    name = f"{manifest.get('format', 'export')}-run{run.pk}"
    published = str(manifest.get("created_at", ""))[:10]
    dataset = manifest.get("dataset") or {}
    return {
        "@context": CONTEXT,
        "@type": "sc:Dataset",
        "conformsTo": CONFORMS_TO,
        "name": name,
        "description": (
            f"{title} labels collected with crowdvl for run {run.pk}"
            + (f" ({run.name})" if run.name else "")
            + f", reproducing the procedure of: {paper}"
        ),
        "license": license_url(license_id),
        "usageInfo": usage_info(license_id),
        "url": "README.md",
        "version": f"{version}.0.0",
        "sdVersion": SD_VERSION,
        "datePublished": published,
        "citeAs": cite_as(
            terms=terms,
            key=f"crowdvl_{name}_v{version}",
            title=f"{title} labels, crowdvl run {run.pk}" + (f" ({run.name})" if run.name else ""),
            year=published[:4],
            version=version,
            paper=paper,
        ),
        "creator": creators,
        "isBasedOn": [s["name"] + " (" + s["license"] + ")" for s in terms["source_licenses"]],
        **dataset_provenance(
            run_id=run.pk,
            source={
                "name": str(dataset.get("name", run.dataset.name)),
                "sha256": str(dataset.get("sha256", run.dataset.checksum)),
            },
            providers=of_run.providers,
            timeframe=of_run.timeframe,
        ),
        "distribution": distribution,
        "recordSet": [
            _record_set(name, entry["file"], tables[name].schema, run_id=run.pk)
            for name, entry in sets.items()
            if name in tables
        ],
        **rai_fields(
            run=run,
            manifest=manifest,
            tables=tables,
            of_run=of_run,
            terms=terms,
            people=people,
            paper=paper,
            title=title,
            version=version,
            currency=symbol(),
        ),
    }


def croissant_write(*, folder: Path, **document: Any) -> str:
    """Write croissant.json into `folder` (after every other file); returns its sha256."""
    data = json.dumps(croissant_document(folder=folder, **document), indent=2).encode()
    return file_write_atomic(path=folder / CROISSANT_FILE, data=data)
