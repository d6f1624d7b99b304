from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from gensim.models import FastText
from gensim.models.fasttext import save_facebook_model

from pipeline.embeddings import WordVectors, image_embeddings, load_word_vectors, train_word_vectors
from pipeline.errors import InputError

REPO = Path(__file__).resolve().parents[2]

SENTENCES = [
    ["a", "dog", "runs", "on", "the", "grass"],
    ["a", "cat", "sleeps", "on", "the", "sofa"],
    ["the", "dog", "chases", "a", "ball"],
    ["two", "cats", "on", "a", "bed"],
] * 5

VEC_TEXT = "3 4\ncat 1 0 0 0\ndog 0 2 0 0\nsofa 0.5 0.5 -1 3\n"


def write(path: Path, content: str | bytes) -> Path:
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


@pytest.fixture
def vec_vectors(tmp_path: Path) -> WordVectors:
    return load_word_vectors(write(tmp_path / "small.vec", VEC_TEXT))


@pytest.fixture(scope="module")
def facebook_bin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model = FastText(
        sentences=SENTENCES, vector_size=8, min_count=1, epochs=2, seed=1, workers=1, bucket=1000
    )
    path = tmp_path_factory.mktemp("ft") / "model.bin"
    save_facebook_model(model, str(path))
    return path


def test_load_vec_reads_words_and_values(vec_vectors: WordVectors) -> None:
    assert vec_vectors.dim == 4
    assert vec_vectors.vocab_size == 3
    assert not vec_vectors.has_subwords
    assert "small.vec" in vec_vectors.source
    rows = vec_vectors.vectors_for(["sofa", "unknown", "cat", "cat"])
    assert rows.dtype == np.float32
    np.testing.assert_array_equal(
        rows, np.array([[0.5, 0.5, -1, 3], [1, 0, 0, 0], [1, 0, 0, 0]], dtype=np.float32)
    )
    assert vec_vectors.vectors_for(["nope"]).shape == (0, 4)


def test_load_facebook_bin_gives_subword_vectors(facebook_bin: Path) -> None:
    vectors = load_word_vectors(facebook_bin)
    assert vectors.dim == 8 and vectors.has_subwords
    rows = vectors.vectors_for(["dog", "doggies"])
    assert rows.shape == (2, 8)
    np.testing.assert_allclose(rows[0], vectors.keyed.get_vector("dog"), rtol=1e-6)
    # An unseen word is built from its character n-grams, not dropped.
    np.testing.assert_allclose(rows[1], vectors.keyed.get_vector("doggies"), rtol=1e-6)
    assert np.abs(rows[1]).sum() > 0


@pytest.mark.parametrize(
    ("name", "content"),
    [
        ("garbage.vec", bytes(range(256)) * 4),
        ("empty.vec", b""),
        ("renamed.vec", json.dumps({"images": [], "annotations": []})),
        ("short_rows.vec", "2 3\ncat 1 2 3\ndog 1 2\n"),
        ("long_rows.vec", "2 3\ncat 1 2 3\ndog 1 2 3 4\n"),
        ("too_few_rows.vec", "3 2\ncat 1 2\ndog 3 4\n"),
        ("not_numbers.vec", "1 2\ncat one two\n"),
        ("nan.vec", "1 2\ncat nan 1\n"),
        ("zero_header.vec", "0 300\n"),
        ("three_numbers.vec", "1 2 3\ncat 1 2\n"),
        ("garbage.bin", b"\x00\x01garbage" * 100),
        ("truncated.bin", b"\xba\x16O/\x0c\x00\x00\x00" + b"\x01" * 40),
    ],
)
def test_not_a_vectors_file(tmp_path: Path, name: str, content: str | bytes) -> None:
    path = write(tmp_path / name, content)
    with pytest.raises(InputError) as info:
        load_word_vectors(path)
    assert info.value.file == str(path)


def test_truncated_real_bin(tmp_path: Path, facebook_bin: Path) -> None:
    path = write(tmp_path / "cut.bin", facebook_bin.read_bytes()[:500])
    with pytest.raises(InputError) as info:
        load_word_vectors(path)
    assert info.value.file == str(path)


def test_missing_vectors_file(tmp_path: Path) -> None:
    with pytest.raises(InputError) as info:
        load_word_vectors(tmp_path / "none.vec")
    assert info.value.file == str(tmp_path / "none.vec")


def test_training_is_deterministic_for_a_seed() -> None:
    first = train_word_vectors(SENTENCES, dim=16, epochs=3, seed=7, bucket=5000)
    second = train_word_vectors(SENTENCES, dim=16, epochs=3, seed=7, bucket=5000)
    other = train_word_vectors(SENTENCES, dim=16, epochs=3, seed=8, bucket=5000)
    assert first.dim == 16 and first.has_subwords
    assert first.source == (
        "trained on 20 captions, seed 7, dim 16, epochs 3, min_count 1, bucket 5000"
    )
    words = ["dog", "cat", "sofa", "unseenword"]
    np.testing.assert_array_equal(first.vectors_for(words), second.vectors_for(words))
    assert not np.array_equal(first.vectors_for(words), other.vectors_for(words))


def test_training_is_identical_across_processes() -> None:
    # Python's string hashing is randomised per process; the vectors must not depend on it.
    code = (
        "import hashlib\n"
        "from pipeline.embeddings import train_word_vectors\n"
        "from tests.pipeline.test_embeddings import SENTENCES\n"
        "v = train_word_vectors(SENTENCES, dim=8, epochs=2, seed=3, bucket=2000)\n"
        "print(hashlib.sha256(v.vectors_for(['dog', 'cat', 'zebra']).tobytes()).hexdigest())\n"
    )
    digests = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(REPO)}
        result = subprocess.run(
            [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True
        )
        assert result.returncode == 0, result.stderr
        digests.add(result.stdout.strip())
    assert len(digests) == 1


def test_min_count_drops_rare_words() -> None:
    vectors = train_word_vectors(SENTENCES[:4], dim=8, epochs=1, min_count=2, bucket=1000)
    assert "dog" in vectors.keyed.key_to_index
    assert "sofa" not in vectors.keyed.key_to_index


@pytest.mark.parametrize(
    ("sentences", "options", "field"),
    [
        ([], {}, "sentences"),
        ([[], []], {}, "sentences"),
        ([["a", "b"]], {"min_count": 2}, "sentences"),
        (["a dog"], {}, "sentences"),
        ([["a", 3]], {}, "sentences"),
        ([["a"]], {"dim": 0}, "dim"),
        ([["a"]], {"epochs": 0}, "epochs"),
        ([["a"]], {"min_count": 0}, "min_count"),
        ([["a"]], {"bucket": 0}, "bucket"),
    ],
)
def test_training_rejects_bad_input(sentences: list, options: dict, field: str) -> None:
    with pytest.raises(InputError) as info:
        train_word_vectors(sentences, **options)
    assert info.value.field == field


def naive_embeddings(groups: list[list[str]], vectors: WordVectors) -> np.ndarray:
    out = np.zeros((len(groups), vectors.dim), dtype=np.float64)
    for i, group in enumerate(groups):
        rows = [vectors.keyed.get_vector(t) for t in group if t in vectors.keyed.key_to_index]
        if rows:
            out[i] = np.mean(rows, axis=0)
    return out


GROUPS = [
    ["cat", "dog"],
    [],
    ["unknown", "words", "only"],
    ["dog", "dog", "dog", "sofa", "missing"],
    ["sofa"],
    [],
]


def test_image_embeddings_mean_of_known_words(vec_vectors: WordVectors) -> None:
    emb, mask = image_embeddings(GROUPS, vec_vectors)
    assert emb.dtype == np.float32 and emb.shape == (6, 4)
    assert mask.tolist() == [True, False, False, True, True, False]
    np.testing.assert_allclose(emb[0], [0.5, 1, 0, 0])
    # Repeated words count once per occurrence: (3 x dog + sofa) / 4.
    np.testing.assert_allclose(emb[3], [0.125, 1.625, -0.25, 0.75])
    np.testing.assert_array_equal(emb[[1, 2, 5]], 0)
    np.testing.assert_allclose(emb, naive_embeddings(GROUPS, vec_vectors), rtol=1e-6)


def test_image_embeddings_random_groups_match_naive_mean(vec_vectors: WordVectors) -> None:
    rng = np.random.default_rng(0)
    words = ["cat", "dog", "sofa", "x", "y"]
    groups = [list(rng.choice(words, size=rng.integers(0, 9))) for _ in range(500)]
    emb, mask = image_embeddings(groups, vec_vectors)
    np.testing.assert_allclose(emb, naive_embeddings(groups, vec_vectors), rtol=1e-5, atol=1e-6)
    assert mask.tolist() == [any(w in words[:3] for w in g) for g in groups]


def test_image_embeddings_empty_input(vec_vectors: WordVectors) -> None:
    emb, mask = image_embeddings([], vec_vectors)
    assert emb.shape == (0, 4) and mask.shape == (0,)


def test_image_embeddings_use_subwords_for_unseen_words(facebook_bin: Path) -> None:
    vectors = load_word_vectors(facebook_bin)
    emb, mask = image_embeddings([["dog", "doggies"], ["zzzz"], [""]], vectors)
    expected = (vectors.keyed.get_vector("dog") + vectors.keyed.get_vector("doggies")) / 2
    np.testing.assert_allclose(emb[0], expected, rtol=1e-5)
    np.testing.assert_allclose(emb[1], vectors.keyed.get_vector("zzzz"), rtol=1e-5)
    # The empty string has no character n-grams, so it is not a known word.
    assert mask.tolist() == [True, True, False]


def test_from_arrays() -> None:
    vectors = WordVectors.from_arrays(["a", "b"], np.eye(2, 3), source="test")
    assert (vectors.dim, vectors.vocab_size, vectors.source) == (3, 2, "test")
    np.testing.assert_array_equal(vectors.vectors_for(["b"]), [[0, 1, 0]])
    with pytest.raises(InputError, match="unique"):
        WordVectors.from_arrays(["a", "a"], np.eye(2), source="test")
    with pytest.raises(InputError):
        WordVectors.from_arrays(["a"], np.eye(2), source="test")
    with pytest.raises(InputError):
        WordVectors.from_arrays(["a"], np.array([[np.nan]]), source="test")


def test_trained_vectors_are_the_same_in_every_process() -> None:
    """Same seed, different PYTHONHASHSEED, separate processes: identical vectors."""
    import os
    import subprocess
    import sys

    code = (
        "from pipeline.embeddings import train_word_vectors;"
        "v = train_word_vectors([['a', 'red', 'bus'], ['a', 'blue', 'car'], ['red', 'car']] * 5,"
        " dim=8, epochs=3, seed=3);"
        "print(repr(v.vectors_for(['red', 'bus']).round(6).tolist()))"
    )
    outputs = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        result = subprocess.run(
            [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(result.stdout)
    assert len(outputs) == 1
