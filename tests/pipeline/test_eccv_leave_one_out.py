"""Built-in text annotators represent an image by the mean of its captions; a query must not
find its own image (or captions) through its own caption inside that mean."""

import numpy as np
import pytest

from pipeline.eccv_embeddings import (
    ModelEmbeddings,
    item_ranks,
    leave_one_out_replacements,
    model_ranking,
)
from pipeline.errors import InputError
from pipeline.neighbours import top_k


def co_caption_model(seed=0, images=6, per_image=3, dim=8):
    rng = np.random.default_rng(seed)
    captions = rng.standard_normal((images * per_image, dim)).astype(np.float32)
    owners = np.repeat(np.arange(images), per_image)
    means = np.stack([captions[owners == i].mean(0) for i in range(images)])
    return ModelEmbeddings(
        image_ids=np.arange(100, 100 + images, dtype=np.int64),
        image_embeddings=means.astype(np.float32),
        caption_ids=np.arange(1000, 1000 + len(captions), dtype=np.int64),
        caption_embeddings=captions,
        source="test",
        caption_owner_rows=owners.astype(np.int64),
        image_caption_counts=np.full(images, float(per_image)),
    )


def unit(x):
    return x / np.linalg.norm(x, axis=-1, keepdims=True)


def brute_force(model):
    caps = model.caption_embeddings.astype(np.float64)
    owners = model.caption_owner_rows
    t2i, i2t = {}, {}
    for q in range(len(owners)):
        loo = [
            caps[(owners == i) & (np.arange(len(caps)) != q)].mean(0)
            for i in range(len(model.image_ids))
        ]
        scores = unit(np.stack(loo)) @ unit(caps[q])
        t2i[int(model.caption_ids[q])] = [
            int(model.image_ids[i]) for i in np.argsort(-scores, kind="stable")
        ]
    for i in range(len(model.image_ids)):
        scores = []
        for c in range(len(caps)):
            keep = (owners == i) & (np.arange(len(caps)) != c)
            scores.append(float(unit(caps[keep].mean(0)) @ unit(caps[c])))
        i2t[int(model.image_ids[i])] = [
            int(model.caption_ids[c]) for c in np.argsort(-np.array(scores), kind="stable")
        ]
    return i2t, t2i


def test_rankings_leave_the_query_caption_out_of_its_image():
    model = co_caption_model()
    ranking = model_ranking(model, depth=6)
    i2t, t2i = brute_force(model)
    # The image queries' own captions are scored against the mean of the *other* captions.
    for image, ranked in ranking.i2t.items():
        assert ranked == i2t[image][:6]
    for caption, ranked in ranking.t2i.items():
        assert ranked == t2i[caption][:6]


def test_without_leaving_out_a_caption_finds_its_own_image_trivially():
    model = co_caption_model()
    plain = ModelEmbeddings(
        image_ids=model.image_ids,
        image_embeddings=model.image_embeddings,
        caption_ids=model.caption_ids,
        caption_embeddings=model.caption_embeddings,
        source="plain",
    )
    own = {
        int(c): int(model.image_ids[o])
        for c, o in zip(model.caption_ids, model.caption_owner_rows, strict=True)
    }
    plain_hits = sum(r[0] == own[c] for c, r in model_ranking(plain, depth=1).t2i.items())
    fair_hits = sum(r[0] == own[c] for c, r in model_ranking(model, depth=1).t2i.items())
    assert plain_hits > fair_hits  # random vectors: the fair model finds far fewer


def test_an_image_with_one_caption_scores_minus_one_for_it():
    model = co_caption_model(images=2, per_image=1)
    cols, values = leave_one_out_replacements(model, "t2i", np.array([0, 1]))
    assert cols.tolist() == [[0], [1]] and values.tolist() == [[-1.0], [-1.0]]


def test_top_k_replace_overrides_chosen_similarities():
    q = np.eye(2, 3, dtype=np.float32)
    g = np.eye(3, dtype=np.float32)
    index, sims = top_k(q, g, 2, replace=(np.array([[0], [-1]]), np.array([[-0.5], [0.0]])))
    assert index.tolist() == [[1, 2], [1, 0]] and sims[0].tolist() == [0.0, 0.0]
    with pytest.raises(InputError, match="replace"):
        top_k(q, g, 1, replace=(np.array([[5], [0]]), np.zeros((2, 1))))
    with pytest.raises(InputError, match="finite"):
        top_k(q, g, 1, replace=(np.array([[0], [0]]), np.array([[np.nan], [0.0]])))


def test_item_ranks_are_full_gallery_ranks_under_the_same_scoring():
    model = co_caption_model(seed=3)
    i2t, t2i = brute_force(model)
    wanted = {caption: t2i[caption][::-1][:3] for caption in list(t2i)[:5]}  # its worst items
    ranks = item_ranks(model, "t2i", wanted)
    for caption, items in wanted.items():
        assert ranks[caption] == [t2i[caption].index(item) for item in items]
    wanted = {image: i2t[image][:4] for image in i2t}
    ranks = item_ranks(model, "i2t", wanted)
    assert all(r == [0, 1, 2, 3] for r in ranks.values())
    with pytest.raises(InputError, match="no embedding"):
        item_ranks(model, "i2t", {999: [1000]})
