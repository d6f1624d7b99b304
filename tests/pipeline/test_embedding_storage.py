"""float16 storage of ECCV embeddings (pipeline.embedding_storage) and the float32 path
it must leave as it was."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pipeline.neighbours as neighbours
from pipeline.eccv_candidates import ModelRanking, propose, top_pairs
from pipeline.eccv_embeddings import load_model_embeddings, model_ranking, parse_model_embeddings
from pipeline.errors import InputError
from pipeline.neighbours import top_k


def _model(seed: int, n_images: int = 60, dim: int = 24) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    concept = rng.standard_normal((n_images, dim)).astype(np.float32)
    captions = np.repeat(concept, 5, axis=0) + rng.standard_normal((n_images * 5, dim))
    return {
        "image_ids": np.arange(n_images) * 2 + 1,
        "image_embeddings": concept + 0.8 * rng.standard_normal(concept.shape),
        "caption_ids": np.arange(n_images * 5) + 1000,
        "caption_embeddings": captions.astype(np.float32),
    }


def _load(tmp_path: Path, arrays: dict[str, np.ndarray], storage: str, name: str = "m") -> object:
    path = tmp_path / f"{name}.npz"
    np.savez(path, **arrays)
    return load_model_embeddings(
        path,
        known_image_ids=arrays["image_ids"],
        known_caption_ids=arrays["caption_ids"],
        storage=storage,
    )


def test_float32_storage_is_the_default_and_unchanged(tmp_path: Path) -> None:
    arrays = _model(0)
    default = _load(tmp_path, arrays, "float32")
    path = tmp_path / "m.npz"
    plain = load_model_embeddings(
        path, known_image_ids=arrays["image_ids"], known_caption_ids=arrays["caption_ids"]
    )
    for name in ("image_embeddings", "caption_embeddings"):
        got = getattr(default, name)
        assert got.dtype == np.float32
        assert got.tobytes() == getattr(plain, name).tobytes()
        assert got.tobytes() == arrays[name].astype(np.float32).tobytes()


def test_float32_proposals_from_the_ranked_matrix_equal_the_list_path(tmp_path: Path) -> None:
    rankings = {
        name: model_ranking(_load(tmp_path, _model(seed), "float32", name), depth=10)
        for seed, name in enumerate(("A", "B", "C"))
    }
    # Plain dicts take _top_matrix's list-by-list path, the one every proposal took before.
    plain = {name: ModelRanking(i2t=dict(r.i2t), t2i=dict(r.t2i)) for name, r in rankings.items()}
    merged = propose(rankings, k=5)
    assert merged == propose(plain, k=5)
    assert len(merged) > 300
    assert top_pairs(rankings, depth=10).keys.tobytes() == top_pairs(plain, depth=10).keys.tobytes()


def test_float32_top_k_matches_one_full_product_with_ties() -> None:
    rng = np.random.default_rng(3)
    q = rng.integers(-2, 3, size=(40, 5)).astype(np.float32)
    g = rng.integers(-2, 3, size=(70, 5)).astype(np.float32)
    index, sims = top_k(q, g, 7)
    full = q @ g.T
    expected = np.argsort(-full, axis=1, kind="stable")[:, :7]  # ties: lower index first
    assert (index == expected).all()
    assert sims.tobytes() == np.take_along_axis(full, expected, axis=1).tobytes()


@pytest.mark.parametrize("k", [1, 4, 9])
def test_float16_top_k_merges_gallery_chunks_exactly(monkeypatch, k: int) -> None:
    # Small integers: every product is exact in float32 whatever the blocks, so the float16
    # path (gallery in chunks of 7 rows) must give float32's answer, ties included.
    monkeypatch.setattr(neighbours, "_HALF_GALLERY_ROWS", 7)
    rng = np.random.default_rng(k)
    q = rng.integers(-3, 4, size=(300, 6)).astype(np.float16)
    g = rng.integers(-3, 4, size=(50, 6)).astype(np.float16)
    exclude = rng.integers(-1, 50, size=300)
    cols = rng.integers(-1, 50, size=(300, 2))
    values = rng.integers(-20, 20, size=(300, 2)).astype(np.float32)
    for extra in ({}, {"exclude": exclude}, {"replace": (cols, values)}):
        half = top_k(q, g, k, **extra)
        single = top_k(q.astype(np.float32), g.astype(np.float32), k, **extra)
        assert (half[0] == single[0]).all() and half[1].tobytes() == single[1].tobytes()


def test_float16_storage_halves_memory_and_ranks_close_to_float32(tmp_path: Path) -> None:
    arrays = _model(1, n_images=120, dim=32)
    arrays["caption_embeddings"][7] *= 1e6  # past float16's range: rows are scaled first
    full = _load(tmp_path, arrays, "float32", "full")
    half = _load(tmp_path, arrays, "float16", "half")
    assert half.caption_embeddings.dtype == np.float16
    assert half.caption_embeddings.nbytes * 2 == full.caption_embeddings.nbytes
    norms = np.linalg.norm(half.caption_embeddings.astype(np.float64), axis=1)
    assert np.allclose(norms, 1.0, atol=1e-3)
    a, b = model_ranking(full, depth=10), model_ranking(half, depth=10)
    for direction in ("i2t", "t2i"):
        x, y = getattr(a, direction).ranked, getattr(b, direction).ranked
        shared = sum(np.intersect1d(x[i], y[i]).size for i in range(x.shape[0]))
        assert shared >= 0.97 * x.size, (direction, shared, x.size)
        assert (x[:, 0] == y[:, 0]).mean() >= 0.95


def test_float16_storage_names_a_bad_row_and_an_unknown_storage(tmp_path: Path) -> None:
    arrays = _model(2, n_images=10, dim=4)
    arrays["caption_embeddings"][3, 1] = np.inf
    with pytest.raises(InputError) as info:
        _load(tmp_path, arrays, "float16")
    assert (info.value.record, info.value.field) == (1003, "caption_embeddings")
    assert info.value.file and info.value.file.endswith("m.npz")
    with pytest.raises(InputError) as info:
        parse_model_embeddings(
            _model(2, n_images=10, dim=4),
            file="x.npz",
            known_image_ids=np.arange(10) * 2 + 1,
            known_caption_ids=np.arange(50) + 1000,
            storage="float8",
        )
    assert info.value.field == "storage" and "float16" in str(info.value)
