"""The ECCV proposal's memory at 2M captions: id lookups and leave-one-out replacements use
numpy arrays instead of dicts over every caption, and a ranking may normalise the gallery in
place instead of copying it; the results are those of the previous code, bit for bit."""

import numpy as np
import pytest

from pipeline.eccv_embeddings import (
    ModelEmbeddings,
    leave_one_out_replacements,
    model_ranking,
    rows_of_ids,
)
from pipeline.eccv_metrics import rankings_from_embeddings
from pipeline.errors import InputError
from pipeline.neighbours import normalize_rows


def dict_rows(ids, wanted):
    """The previous lookup: a dict of every id (the last row wins), -1 when absent."""
    row_of = {int(v): i for i, v in enumerate(ids.tolist())}
    return np.asarray([row_of.get(int(v), -1) for v in wanted], dtype=np.int64)


@pytest.mark.parametrize("seed", range(5))
def test_rows_of_ids_matches_a_dict_of_ids(seed):
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, 60, size=40)  # repeats and gaps on purpose
    wanted = rng.integers(-5, 70, size=30)
    assert rows_of_ids(ids, wanted).tolist() == dict_rows(ids, wanted).tolist()


def test_rows_of_ids_empty():
    assert rows_of_ids(np.zeros(0, dtype=np.int64), np.asarray([3])).tolist() == [-1]
    assert rows_of_ids(np.asarray([3]), np.zeros(0, dtype=np.int64)).tolist() == []


def test_model_ranking_names_the_first_missing_query_in_query_order():
    model = ModelEmbeddings(
        image_ids=np.asarray([5, 3, 9], dtype=np.int64),
        image_embeddings=np.eye(3, dtype=np.float32),
        caption_ids=np.asarray([11, 10], dtype=np.int64),
        caption_embeddings=np.eye(3, dtype=np.float32)[:2],
        source="test",
    )
    with pytest.raises(InputError) as err:
        model_ranking(model, depth=1, image_queries=[3, 8, 4], caption_queries=[10])
    assert err.value.record == 8 and err.value.field == "image_queries"
    ranking = model_ranking(model, depth=1, image_queries=[9, 5], caption_queries=[11])
    assert list(ranking.i2t) == [9, 5] and list(ranking.t2i) == [11]


def old_leave_one_out(embeddings, direction, query_rows):
    """The previous implementation (float64 copies of both matrices, a dict of lists)."""
    owners, counts = embeddings.caption_owner_rows, embeddings.image_caption_counts
    captions = embeddings.caption_embeddings.astype(np.float64)
    sums = embeddings.image_embeddings.astype(np.float64) * counts[:, None]

    def unit(x):
        norms = np.linalg.norm(x, axis=-1, keepdims=True)
        return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)

    def loo_cosine(image_rows, caption_rows):
        rest = counts[image_rows] - 1
        means = (sums[image_rows] - captions[caption_rows]) / np.maximum(rest, 1)[:, None]
        cos = np.einsum("ij,ij->i", unit(means), unit(captions[caption_rows]))
        return np.where(rest > 0, cos, -1.0).astype(np.float32)

    if direction == "i2t":
        per_image = {}
        for row, owner in enumerate(owners.tolist()):
            if owner >= 0:
                per_image.setdefault(owner, []).append(row)
        width = max((len(v) for v in per_image.values()), default=0)
        cols = np.full((len(query_rows), max(width, 1)), -1, dtype=np.int64)
        values = np.zeros(cols.shape, dtype=np.float32)
        for i, image in enumerate(query_rows.tolist()):
            own = np.asarray(per_image.get(image, []), dtype=np.int64)
            if own.size:
                cols[i, : own.size] = own
                values[i, : own.size] = loo_cosine(np.full(own.size, image), own)
        return cols, values
    own_images = owners[query_rows]
    cols = own_images[:, None].astype(np.int64)
    values = np.zeros(cols.shape, dtype=np.float32)
    has = own_images >= 0
    values[has, 0] = loo_cosine(own_images[has], query_rows[has])
    return cols, values


@pytest.mark.parametrize("seed", range(4))
def test_leave_one_out_matches_the_dict_version(seed):
    rng = np.random.default_rng(seed)
    images, captions, dim = 9, 30, 6
    owners = rng.integers(-1, images, size=captions)  # uneven, some orphans, maybe empty images
    counts = np.bincount(owners[owners >= 0], minlength=images).astype(np.float64)
    model = ModelEmbeddings(
        image_ids=np.arange(images, dtype=np.int64),
        image_embeddings=rng.standard_normal((images, dim)).astype(np.float32),
        caption_ids=np.arange(100, 100 + captions, dtype=np.int64),
        caption_embeddings=rng.standard_normal((captions, dim)).astype(np.float32),
        source="test",
        caption_owner_rows=owners.astype(np.int64),
        image_caption_counts=counts,
    )
    for direction, rows in (
        ("i2t", rng.permutation(images)[:5]),
        ("t2i", rng.permutation(captions)[:12]),
    ):
        new = leave_one_out_replacements(model, direction, rows)
        old = old_leave_one_out(model, direction, rows)
        assert new is not None
        assert np.array_equal(new[0], old[0])
        assert np.array_equal(new[1], old[1])  # bit for bit


@pytest.mark.parametrize("width", [1, 7, 64, 513])
def test_normalize_rows_in_place_is_a_copy_bit_for_bit(width):
    rng = np.random.default_rng(width)
    matrix = (rng.standard_normal((3000, width)) * 10.0 ** rng.integers(-3, 4, (3000, 1))).astype(
        np.float32
    )
    matrix[5] = 0.0  # zero rows stay zero
    expected = normalize_rows(matrix)
    assert normalize_rows(matrix, in_place=True) is matrix
    assert np.array_equal(matrix.view(np.uint32), expected.view(np.uint32))


def random_model(seed, *, co_caption=False, images=40, per_image=5, dim=16):
    rng = np.random.default_rng(seed)
    captions = rng.standard_normal((images * per_image, dim)).astype(np.float32)
    owners = np.repeat(np.arange(images), per_image).astype(np.int64)
    means = np.stack([captions[owners == i].mean(0) for i in range(images)]).astype(np.float32)
    return ModelEmbeddings(
        image_ids=rng.permutation(np.arange(1, images + 1, dtype=np.int64) * 7),
        image_embeddings=means if co_caption else rng.standard_normal((images, dim), np.float32),
        caption_ids=np.arange(1000, 1000 + len(captions), dtype=np.int64),
        caption_embeddings=captions,
        source="test",
        caption_owner_rows=owners if co_caption else None,
        image_caption_counts=np.full(images, float(per_image)) if co_caption else None,
    )


@pytest.mark.parametrize("co_caption", [False, True])
@pytest.mark.parametrize("queries", ["some", "all captions", "all"])
def test_overwrite_ranks_as_before(co_caption, queries):
    model = random_model(3, co_caption=co_caption)
    image_queries = None if queries == "all" else model.image_ids[::3].tolist()
    caption_queries = None if queries != "some" else model.caption_ids[::7].tolist()
    kwargs = dict(depth=6, image_queries=image_queries, caption_queries=caption_queries)
    before = model_ranking(model, **kwargs)
    raw_captions = model.caption_embeddings.copy()
    after = model_ranking(model, overwrite=True, **kwargs)
    assert after.i2t == before.i2t and after.t2i == before.t2i
    assert list(after.i2t) == list(before.i2t) and list(after.t2i) == list(before.t2i)
    # The galleries were normalised in place (not when the captions are all queries).
    assert np.allclose(np.linalg.norm(model.image_embeddings, axis=1), 1, atol=1e-5)
    if queries == "some":
        assert np.array_equal(model.caption_embeddings, normalize_rows(raw_captions))
    else:
        assert np.array_equal(model.caption_embeddings, raw_captions)


def test_overwrite_matches_rankings_from_embeddings_and_its_errors():
    model = random_model(4)
    ids, vecs = model.image_ids[:5], model.image_embeddings[:5].copy()
    expected = rankings_from_embeddings(
        ids, vecs, model.caption_ids, model.caption_embeddings, 4, block_size=3
    )
    ranking = model_ranking(
        model,
        depth=4,
        image_queries=ids.tolist(),
        caption_queries=[1000],
        block_size=3,
        overwrite=True,
    )
    assert ranking.i2t == expected
    with pytest.raises(InputError, match="id appears twice"):
        model_ranking(model, depth=4, image_queries=[7, 7], caption_queries=[1000], overwrite=True)
    with pytest.raises(InputError, match="gallery size"):
        model_ranking(
            model, depth=10_000, image_queries=[7], caption_queries=[1000], overwrite=True
        )


def test_overwrite_leaves_read_only_or_non_float32_matrices_alone():
    model = random_model(5)
    frozen = model.caption_embeddings.copy()
    frozen.flags.writeable = False
    wide = model.image_embeddings.astype(np.float64)
    other = ModelEmbeddings(
        image_ids=model.image_ids,
        image_embeddings=wide,
        caption_ids=model.caption_ids,
        caption_embeddings=frozen,
        source="test",
    )
    kwargs = dict(depth=3, image_queries=[7, 14], caption_queries=[1000, 1001])
    assert model_ranking(other, overwrite=True, **kwargs) == model_ranking(other, **kwargs)
    assert np.array_equal(other.image_embeddings, model.image_embeddings.astype(np.float64))
