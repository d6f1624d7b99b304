"""What every export's release files must satisfy (issue 31), called from each flow's export
test on the export it made: the Parquet record sets read by pandas and by the Hub's
`datasets` loader (offline, its cache in a temporary folder), the same rows both ways, and
no server path in any of the release's text. Returns the record sets as data frames for the
flow's own comparison with its published files."""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

import pandas as pd

from annotation.croissant_vocabulary import RAI_FIELDS
from annotation.services.release.release_judgments import PROVENANCE_SET

# "/" then two or more path segments, not inside a URL ("https://…/…") or a relative path.
ABSOLUTE = re.compile(r"(?<![\w.:/~<-])/[\w.-]+/[\w./-]+")
# JSON in the datasheet's prose or cells: brackets, a quoted key, or a JSON literal as a cell.
JSON_SYNTAX = re.compile(r'[{}\[\]]|"[^"|]*"\s*:|\|\s*(?:true|false|null)\s*(?=\|)')


def release_tables(folder: Path, tmp_path: Path) -> dict[str, pd.DataFrame]:
    import datasets

    manifest = json.loads((folder / "manifest.json").read_text())
    sets = manifest["record_sets"]
    assert sets, "every export has at least one record set"
    frames = {}
    for name, entry in sets.items():
        path = folder / entry["file"]
        assert entry["file"] == f"data/{name}.parquet"
        assert hashlib.sha256(path.read_bytes()).hexdigest() == entry["sha256"]
        frame = pd.read_parquet(path)
        assert len(frame) == entry["rows"] > 0
        loaded = datasets.load_dataset(
            "parquet",
            data_files=str(path),
            split="train",
            cache_dir=str(tmp_path / "hf-cache"),
        )
        assert loaded.num_rows == len(frame) and loaded.column_names == list(frame.columns)
        assert all(_same_row(loaded[n], frame.iloc[n]) for n in range(len(frame)))
        if name == PROVENANCE_SET:  # one row per judgment: its worker, not a list
            assert all(w.startswith("w-") for w in frame["worker"])
        else:  # per-label provenance: pseudonymous workers and the number of judgments
            assert "workers" in frame.columns and {"judgments", "raters"} & set(frame.columns)
            assert all(w.startswith("w-") for ws in frame["workers"] for w in ws)
        frames[name] = frame
    croissant_check(folder, frames)
    card_check(folder, manifest, tmp_path)
    datasheet_check(folder)
    for path in folder.rglob("*"):
        if path.is_file():
            raw = path.read_bytes()
            for marker in (str(folder.parent.parent).encode(), b"/tmp/", b"/home/"):
                assert marker not in raw, (path.name, marker)
    return frames


def _same_row(hub: dict, row: pd.Series) -> bool:
    """A row compared cell by cell: NaN equals NaN (a missing interval), lists as lists."""
    for key, value in row.items():
        other = hub[key]
        if hasattr(value, "tolist"):
            value = value.tolist()
        missing = isinstance(value, float) and value != value
        if missing and (other is None or other != other):
            continue
        if value != other:
            return False
    return True


def croissant_check(folder: Path, frames: dict[str, pd.DataFrame]) -> dict:
    """croissant.json validates with MLCommons' mlcroissant, lists every file of the folder
    with its sha256, and its record sets iterate equal to the Parquet tables."""
    import mlcroissant as mlc

    path = folder / "croissant.json"
    document = json.loads(path.read_text())
    dataset = mlc.Dataset(jsonld=str(path))  # raises on any validation error
    assert not dataset.metadata.ctx.issues.errors, dataset.metadata.ctx.issues.report()
    listed = {f["contentUrl"]: f["sha256"] for f in document["distribution"]}
    on_disk = {
        p.relative_to(folder).as_posix()
        for p in folder.rglob("*")
        if p.is_file() and p.name != path.name
    }
    assert set(listed) == on_disk
    for name, sha in listed.items():
        assert hashlib.sha256((folder / name).read_bytes()).hexdigest() == sha
    # Croissant 1.1: conformance, metadata version, BibTeX citation, data-use conditions,
    # the RAI vocabulary's 20 fields, each filled (a list: every entry), and no context key
    # mlcroissant would call non-standard (a key of its 1.1 context missing from ours).
    from mlcroissant._src.core.rdf import make_context

    assert document["conformsTo"] == "http://mlcommons.org/croissant/1.1"
    assert not make_context(dataset.metadata.ctx).keys() - document["@context"].keys()
    assert document["sdVersion"] and document["citeAs"].startswith("@")
    assert document["usageInfo"]["@type"] == ["CreativeWork", "odrl:Offer"]
    for key in ("license", "creator", "version", *(f"rai:{f}" for f in RAI_FIELDS)):
        value = document[key]
        assert value and (not isinstance(value, list) or all(value)), key
    assert {r["@id"] for r in document["recordSet"]} == set(frames)
    for name in frames:  # the validator's "first record of every record set"
        assert next(iter(dataset.records(record_set=name)))
    for name, frame in frames.items():
        records = list(dataset.records(record_set=name))
        assert len(records) == len(frame)
        for record, row in zip(records, frame.to_dict("records"), strict=True):
            got = {k.split("/", 1)[1]: _plain(v) for k, v in record.items()}
            want = {k: _plain(v) for k, v in row.items()}
            assert got == want, (name, got, want)
    return document


def _plain(value: object) -> object:
    """A cell as plain Python: bytes decoded, arrays as lists, NaN as None."""
    if hasattr(value, "tolist"):
        value = value.tolist()
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if isinstance(value, float) and value != value:
        return None
    return value


# The sections of the Hub's dataset card template (huggingface_hub/templates/) a card fills.
CARD_SECTIONS = ("## Uses", "### Direct Use", "### Out-of-Scope Use", "## Dataset Structure",
                 "#### Annotation process", "#### Who are the annotators?",
                 "#### Personal and Sensitive Information", "## Bias, Risks, and Limitations",
                 "## Citation")  # fmt: skip

# Loads every config of an export folder the way a user of the Hub does, with no network.
_LOAD_ALL = """
import json, sys
from datasets import load_dataset
folder, names = sys.argv[1], json.loads(sys.argv[2])
out = {}
for name in names:
    ds = load_dataset(folder, name, split="test")
    out[name] = {"rows": ds.num_rows, "columns": ds.column_names,
                 "features": ds.features._to_yaml_list()}
print(json.dumps(out))
"""


def card_check(folder: Path, manifest: dict, tmp_path: Path) -> None:
    """README.md's YAML header validates as the Hub's dataset card metadata (DatasetCard,
    DatasetCardData), names a config per record set pointing at its Parquet file with the
    file's own features (as `datasets` reads the schema) and row count, states the license,
    fills the template's sections, and `datasets.load_dataset` on the folder, offline, loads
    every config."""
    import datasets
    import pyarrow.parquet as pq
    from huggingface_hub import DatasetCard, DatasetCardData

    text = (folder / "README.md").read_text()
    card = DatasetCard(text)
    data = card.data.to_dict()
    assert isinstance(card.data, DatasetCardData)
    configs = {c["config_name"]: c["data_files"][0]["path"] for c in data["configs"]}
    sets = manifest["record_sets"]
    assert configs == {name: e["file"] for name, e in sets.items()}
    assert all((folder / path).is_file() for path in configs.values())
    assert data["task_categories"] and data["size_categories"] and data["language"] == ["en"]
    assert data["annotations_creators"] in (["crowdsourced"], ["machine-generated"])
    assert data["source_datasets"][0].startswith("extended|")
    license_id = manifest["release"]["license"]
    assert data["license"] == license_id or data.get("license_name") == license_id
    infos = {i["config_name"]: i for i in data["dataset_info"]}
    assert set(infos) == set(sets)
    for name, entry in sets.items():
        path = folder / entry["file"]
        want = datasets.Features.from_arrow_schema(pq.read_schema(path))._to_yaml_list()
        assert infos[name]["features"] == want, name
        [split] = infos[name]["splits"]
        assert (split["name"], split["num_examples"]) == ("test", entry["rows"])
        assert infos[name]["download_size"] == path.stat().st_size
    for heading in CARD_SECTIONS:
        assert f"\n{heading}\n" in text, heading
    assert "More Information Needed" not in text
    loaded = hub_load(folder, list(sets), tmp_path)
    for name, entry in sets.items():
        assert loaded[name]["rows"] == entry["rows"], name
        assert loaded[name]["features"] == infos[name]["features"], name


def hub_load(folder: Path, names: list[str], tmp_path: Path) -> dict:
    """`datasets.load_dataset(folder, name)` for each config, in a fresh interpreter with the
    Hub switched off (HF_HUB_OFFLINE, HF_DATASETS_OFFLINE: read at import) and an empty
    HF_HOME: what it reads comes from the folder alone."""
    import os
    import subprocess
    import sys

    home = tmp_path / "hf-home"
    env = {**os.environ, "HF_HOME": str(home), "HF_HUB_OFFLINE": "1",
           "HF_DATASETS_OFFLINE": "1", "HF_DATASETS_CACHE": str(home / "datasets")}  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", _LOAD_ALL, str(folder), json.dumps(names)],
        env=env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def json_outside_blocks(sheet: str) -> list[str]:
    """Lines of the datasheet's prose and tables (fenced blocks left out) with JSON syntax."""
    prose = "".join(sheet.split("```")[0::2])
    return [line for line in prose.splitlines() if JSON_SYNTAX.search(line)]


def datasheet_check(folder: Path) -> None:
    """The datasheet is for people: no JSON block longer than 10 lines (raw JSON is the
    manifest's), no JSON syntax in its sentences or table cells (nested values in words,
    small tables or counted with their manifest key), tables for counts, batches and pay."""
    sheet = (folder / "DATASHEET.md").read_text()
    assert not json_outside_blocks(sheet), json_outside_blocks(sheet)[:3]
    blocks = sheet.split("```")[1::2]
    for block in blocks:
        body = block.split("\n", 1)[1] if "\n" in block else block
        if block.startswith("json") or body.lstrip().startswith(("{", "[")):
            assert body.count("\n") <= 10, block[:200]
    assert "| batch | stage |" in sheet and "## Pay" in sheet
    # No absolute path at all (a server's or anyone's), beyond the markers checked above.
    assert not ABSOLUTE.findall(sheet), ABSOLUTE.findall(sheet)[:3]


def provenance_check(folder: Path, run) -> pd.DataFrame:  # type: ignore[no-untyped-def]
    """The `label_provenance` table holds one row per counted judgment of the run (gold
    answers left out), each row as the database has it: worker pseudonym, provider, batch,
    stage, HIT, consent version, label, and the gold of its HIT by the stage's rule."""
    from annotation.models import GOLD_KINDS, Answer
    from annotation.selectors.counting import counted_reviewed
    from annotation.selectors.pseudonyms import worker_pseudonym
    from annotation.tasktypes import task_type_for

    frame = pd.read_parquet(folder / f"data/{PROVENANCE_SET}.parquet")
    answers = (
        Answer.objects.filter(counted_reviewed(""), question__item__run=run)
        .exclude(question__item__kind__in=GOLD_KINDS)
        .select_related("assignment__worker", "question__hit__batch", "question__item")
        .order_by("pk")
    )
    assert len(frame) == answers.count() > 0
    gold = Answer.objects.filter(
        counted_reviewed(""), question__item__run=run, question__item__kind__in=GOLD_KINDS
    ).select_related("question__item", "question__hit__batch")
    for row, answer in zip(frame.to_dict("records"), answers, strict=True):
        worker, batch = answer.assignment.worker, answer.question.hit.batch
        assert row["judgment"] == answer.pk and row["item"] == answer.question.item_id
        assert row["worker"] == worker_pseudonym(
            provider=worker.provider, external_id=worker.external_id
        )
        assert (row["provider"], row["batch"], row["stage"], row["hit"]) == (
            batch.provider,
            batch.pk,
            batch.stage,
            answer.question.hit_id,
        )
        assert row["label"] == answer.label
        assert row["consent_version"] == answer.assignment.consent_version
        verdicts = {
            g.question.item_id: task_type_for(batch.stage).gold_passed(
                item=g.question.item, label=g.label
            )
            for g in gold
            if g.assignment_id == answer.assignment_id
        }
        assert sorted(row["gold_passed"]) == sorted(i for i, v in verdicts.items() if v is True)
        assert sorted(row["gold_failed"]) == sorted(i for i, v in verdicts.items() if v is False)
    return frame
