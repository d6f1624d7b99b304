from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pipeline.eccv_embeddings import (
    load_model_embeddings,
    load_ranked_lists,
    model_ranking,
    parse_model_embeddings,
    parse_ranked_lists,
)
from pipeline.errors import InputError
from pipeline.neighbours import normalize_rows

IMAGES = [1, 2, 3]
CAPTIONS = [10, 11, 12, 13]


def _arrays() -> dict[str, np.ndarray]:
    return {
        "image_ids": np.array([1, 2, 3]),
        "image_embeddings": np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, 0.0]]),
        "caption_ids": np.array([10, 11, 12, 13]),
        "caption_embeddings": np.array([[0.9, 0.1], [0.1, 0.9], [-1.0, 0.2], [0.5, 0.5]]),
    }


def _load(tmp_path: Path, arrays: dict[str, Any], **kwargs: Any) -> Any:
    path = tmp_path / "model.npz"
    np.savez(path, **arrays)
    return load_model_embeddings(path, known_image_ids=IMAGES, known_caption_ids=CAPTIONS, **kwargs)


def test_load_valid_npz(tmp_path: Path) -> None:
    embeddings = _load(tmp_path, _arrays())
    assert embeddings.image_ids.tolist() == IMAGES
    assert embeddings.caption_embeddings.dtype == np.float32
    assert embeddings.dim == 2
    assert "3 images, 4 captions, 2-d" in embeddings.source
    ranking = model_ranking(embeddings, depth=2)
    assert ranking.i2t == {1: [10, 13], 2: [11, 13], 3: [12, 11]}
    # Caption 13 is equally close to images 1 and 2: the earlier row wins.
    assert ranking.t2i == {10: [1, 2], 11: [2, 1], 12: [3, 2], 13: [1, 2]}
    chosen = model_ranking(embeddings, depth=1, image_queries=[3], caption_queries=[11, 10])
    assert chosen.i2t == {3: [12]}
    assert chosen.t2i == {11: [2], 10: [1]}
    with pytest.raises(InputError) as info:
        model_ranking(embeddings, depth=1, image_queries=[9])
    assert (info.value.record, info.value.field) == (9, "image_queries")


@pytest.mark.parametrize(
    ("change", "record", "field"),
    [
        ({"image_embeddings": [[1.0, 0.0], [np.nan, 1.0], [0.0, 0.0]]}, 2, "image_embeddings"),
        ({"caption_embeddings": np.full((4, 2), np.inf)}, 10, "caption_embeddings"),
        ({"caption_embeddings": np.ones((4, 3))}, None, "caption_embeddings"),
        ({"image_embeddings": np.ones(3)}, None, "image_embeddings"),
        ({"image_embeddings": np.ones((3, 2, 1))}, None, "image_embeddings"),
        ({"image_embeddings": np.ones((2, 2))}, None, "image_embeddings"),
        ({"image_ids": np.array([1, 2, 2])}, 2, "image_ids"),
        ({"caption_ids": np.array([10, 11, 12, 99])}, 99, "caption_ids"),
        ({"image_ids": np.array([1.0, 2.0, 3.0])}, None, "image_ids"),
        ({"image_ids": np.array([[1, 2, 3]])}, None, "image_ids"),
        ({"caption_embeddings": np.array([[1e39, 0.0]] * 4)}, 10, "caption_embeddings"),
    ],
)
def test_bad_npz(tmp_path: Path, change: dict, record: int | None, field: str) -> None:
    arrays = {**_arrays(), **{k: np.asarray(v) for k, v in change.items()}}
    with pytest.raises(InputError) as info:
        _load(tmp_path, arrays)
    assert info.value.file == str(tmp_path / "model.npz")
    assert (info.value.record, info.value.field) == (record, field)


def test_missing_array_and_not_an_archive(tmp_path: Path) -> None:
    arrays = _arrays()
    del arrays["caption_ids"]
    with pytest.raises(InputError) as info:
        _load(tmp_path, arrays)
    assert info.value.field == "caption_ids"
    npy = tmp_path / "single.npy"
    np.save(npy, np.ones(3))
    with pytest.raises(InputError, match="not an .npz"):
        load_model_embeddings(npy, known_image_ids=IMAGES, known_caption_ids=CAPTIONS)
    junk = tmp_path / "junk.npz"
    junk.write_bytes(b"PK\x03\x04 definitely not a zip")
    with pytest.raises(InputError) as info:
        load_model_embeddings(junk, known_image_ids=IMAGES, known_caption_ids=CAPTIONS)
    assert info.value.file == str(junk)
    with pytest.raises(InputError, match="cannot read"):
        load_model_embeddings(
            tmp_path / "absent.npz", known_image_ids=IMAGES, known_caption_ids=CAPTIONS
        )


def test_object_arrays_are_refused(tmp_path: Path) -> None:
    arrays: dict[str, Any] = _arrays()
    arrays["image_ids"] = np.array([1, 2, "x"], dtype=object)
    with pytest.raises(InputError) as info:
        _load(tmp_path, arrays)
    assert "allow_pickle" in info.value.message


def test_require_all(tmp_path: Path) -> None:
    arrays = _arrays()
    with pytest.raises(InputError) as info:
        parse_model_embeddings(
            arrays,
            file="m.npz",
            known_image_ids=[1, 2, 3, 4],
            known_caption_ids=CAPTIONS,
            require_all=True,
        )
    assert (info.value.file, info.value.record, info.value.field) == ("m.npz", 4, "image_ids")
    # Without require_all a partial cover of the dataset is fine.
    parse_model_embeddings(
        arrays, file="m.npz", known_image_ids=[1, 2, 3, 4], known_caption_ids=CAPTIONS
    )


# ----------------------------------------------------------------------- ranked lists

GOOD = {"i2t": {"1": [10, 11], "2": [12, 10]}, "t2i": {"13": [3, 1]}}


def _parse(doc: Any, **kwargs: Any) -> Any:
    return parse_ranked_lists(
        json.dumps(doc),
        file="r.json",
        known_image_ids=IMAGES,
        known_caption_ids=CAPTIONS,
        **kwargs,
    )


def test_parse_ranked_lists(tmp_path: Path) -> None:
    ranking = _parse(GOOD)
    assert ranking.i2t == {1: [10, 11], 2: [12, 10]}
    assert ranking.t2i == {13: [3, 1]}
    path = tmp_path / "r.json"
    path.write_text(json.dumps(GOOD))
    loaded = load_ranked_lists(path, known_image_ids=IMAGES, known_caption_ids=CAPTIONS)
    assert loaded == ranking


@pytest.mark.parametrize(
    ("doc", "record", "field"),
    [
        ({"i2t": GOOD["i2t"]}, None, "t2i"),
        ({**GOOD, "i2t": []}, None, "i2t"),
        ({**GOOD, "i2t": {"one": [10]}}, "one", "i2t"),
        ({**GOOD, "i2t": {"9": [10]}}, 9, "i2t"),
        ({**GOOD, "i2t": {"1": [10, 99]}}, 1, "i2t"),
        ({**GOOD, "i2t": {"1": [10, 10]}}, 1, "i2t"),
        ({**GOOD, "i2t": {"1": [10, True]}}, 1, "i2t"),
        ({**GOOD, "i2t": {"1": "10"}}, 1, "i2t"),
        ({**GOOD, "t2i": {"13": [1, 10]}}, 13, "t2i"),
        ({**GOOD, "t2i": {"1": [1]}}, 1, "t2i"),
    ],
)
def test_bad_ranked_lists(doc: Any, record: Any, field: str) -> None:
    with pytest.raises(InputError) as info:
        _parse(doc)
    assert (info.value.file, info.value.record, info.value.field) == ("r.json", record, field)


def test_ranked_lists_min_length() -> None:
    with pytest.raises(InputError) as info:
        _parse(GOOD, min_length=3)
    assert (info.value.record, info.value.field) == (1, "i2t")
    assert "fewer than the 3 required" in info.value.message


def test_ranked_lists_malformed_json() -> None:
    with pytest.raises(InputError) as info:
        parse_ranked_lists("{", file="r.json", known_image_ids=IMAGES, known_caption_ids=CAPTIONS)
    assert info.value.file == "r.json"


@pytest.mark.parametrize(("depth", "block_size"), [(1, 7), (25, 2048), (60, 16)])
def test_model_ranking_matches_a_full_sort(depth: int, block_size: int) -> None:
    # Enough captions that top_k's threshold groups columns; duplicated embeddings and zero
    # rows give exact ties, which must go to the earlier row. depth 60 = every image.
    rng = np.random.default_rng(depth)
    images = rng.standard_normal((60, 8)).astype(np.float32)
    captions = rng.standard_normal((3300, 8)).astype(np.float32)
    captions[1000:1100] = captions[:100]
    captions[::50] = 0
    images[30:40] = images[:10]
    image_ids = np.arange(60) * 3 + 1
    caption_ids = np.arange(3300) + 1000
    embeddings = parse_model_embeddings(
        {
            "image_ids": image_ids,
            "image_embeddings": images,
            "caption_ids": caption_ids,
            "caption_embeddings": captions,
        },
        file="model.npz",
        known_image_ids=image_ids.tolist(),
        known_caption_ids=caption_ids.tolist(),
    )
    ranking = model_ranking(embeddings, depth=depth, block_size=block_size)
    unit_images, unit_captions = normalize_rows(images), normalize_rows(captions)
    for found, queries, gallery, gallery_ids in (
        (ranking.i2t, unit_images, unit_captions, caption_ids),
        (ranking.t2i, unit_captions, unit_images, image_ids),
    ):
        expected = []
        for first in range(0, queries.shape[0], block_size):
            # The same product blocks as top_k: sgemm rounding depends on the block's shape.
            part = queries[first : first + block_size]
            sims = np.empty((part.shape[0], gallery.shape[0]), dtype=np.float32)
            np.matmul(part, gallery.T, out=sims)
            order = np.argsort(-sims, axis=1, kind="stable")[:, :depth]
            expected.extend(gallery_ids[order].tolist())
        assert list(found.values()) == expected
