"""Word vectors (FastText / word2vec text) and mean-of-words image embeddings."""

from __future__ import annotations

import struct
import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import chain, repeat
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pipeline.errors import InputError

if TYPE_CHECKING:  # gensim (and the scipy it pulls in) loads when vectors are used, not at start
    from gensim.models.keyedvectors import KeyedVectors

# First four bytes of every facebook fastText .bin model (int32 little-endian 793712314).
_FASTTEXT_MAGIC = struct.pack("<i", 793712314)
# gensim and numpy report a broken model file through any of these.
_LOAD_ERRORS = (
    ValueError,
    EOFError,
    UnicodeError,
    struct.error,
    OSError,
    KeyError,
    IndexError,
    AssertionError,
    NotImplementedError,
    MemoryError,
)


class WordVectors:
    """Word vectors behind one interface, whether loaded from a file or trained here."""

    def __init__(self, keyed: KeyedVectors, *, source: str) -> None:
        """Wrap gensim ``keyed`` vectors; ``source`` says where they came from."""
        self.keyed = keyed
        self.source = source
        self.dim = int(keyed.vector_size)
        self._table = np.ascontiguousarray(keyed.vectors, dtype=np.float32)

    @classmethod
    def from_arrays(cls, words: Sequence[str], vectors: np.ndarray, *, source: str) -> WordVectors:
        """Word vectors from a word list and a matching ``len(words) x dim`` matrix."""
        matrix = np.asarray(vectors, dtype=np.float32)
        if matrix.ndim != 2 or matrix.shape[0] != len(words) or matrix.shape[1] < 1:
            raise InputError(
                f"need a {len(words)} x dim matrix, got shape {matrix.shape}", field="vectors"
            )
        if len(set(words)) != len(words):
            raise InputError("words must be unique", field="words")
        if not np.isfinite(matrix).all():
            raise InputError("vectors contain NaN or infinity", field="vectors")
        from gensim.models.keyedvectors import KeyedVectors

        keyed = KeyedVectors(vector_size=matrix.shape[1], count=0, dtype=np.float32)
        keyed.add_vectors(list(words), matrix)
        return cls(keyed, source=source)

    @property
    def vocab_size(self) -> int:
        """Number of words with a stored vector."""
        return len(self.keyed.key_to_index)

    @property
    def has_subwords(self) -> bool:
        """True when unseen words get vectors from character n-grams (FastText)."""
        from gensim.models.fasttext import FastTextKeyedVectors

        return isinstance(self.keyed, FastTextKeyedVectors) and self.keyed.bucket > 0

    def vectors_for(self, tokens: Sequence[str]) -> np.ndarray:
        """Vectors (``m x dim`` float32) of the known tokens, in order; unknown ones are dropped."""
        ids, extra = self._token_ids(list(tokens))
        return self._gather(ids[ids >= 0], extra)

    def _token_ids(self, tokens: list[str]) -> tuple[np.ndarray, np.ndarray]:
        """Row index per token (-1 if unknown) and the extra rows for subword-only words.

        Indices >= vocab_size point into the returned extra matrix.
        """
        lookup = self.keyed.key_to_index.get
        ids = np.fromiter(map(lookup, tokens, repeat(-1)), dtype=np.int64, count=len(tokens))
        extra = np.zeros((0, self.dim), dtype=np.float32)
        if not self.has_subwords:
            return ids, extra
        missing = np.flatnonzero(ids < 0)
        if missing.size == 0:
            return ids, extra
        # Each distinct unseen word is built from its n-grams once, however often it occurs.
        new_index: dict[str, int] = {}
        rows: list[np.ndarray] = []
        base = self.vocab_size
        for position in missing.tolist():
            word = tokens[position]
            index = new_index.get(word)
            if index is None:
                vector = self._subword_vector(word)
                if vector is None:
                    index = -1
                else:
                    index = base + len(rows)
                    rows.append(vector)
                new_index[word] = index
            ids[position] = index
        if rows:
            extra = np.vstack(rows).astype(np.float32, copy=False)
        return ids, extra

    def _subword_vector(self, word: str) -> np.ndarray | None:
        from gensim.models.fasttext import FastTextKeyedVectors, ft_ngram_hashes

        keyed = self.keyed
        assert isinstance(keyed, FastTextKeyedVectors)
        if len(ft_ngram_hashes(word, keyed.min_n, keyed.max_n, keyed.bucket)) == 0:
            # gensim would return the zero vector; counting it would drag the mean to 0.
            return None
        return np.asarray(keyed.get_vector(word), dtype=np.float32)

    def _gather(self, ids: np.ndarray, extra: np.ndarray) -> np.ndarray:
        """Rows for non-negative ``ids`` from the vocabulary table or the extra rows."""
        base = self.vocab_size
        if extra.shape[0] == 0:
            return self._table[ids]
        out = np.empty((ids.size, self.dim), dtype=np.float32)
        in_vocab = ids < base
        out[in_vocab] = self._table[ids[in_vocab]]
        out[~in_vocab] = extra[ids[~in_vocab] - base]
        return out


def load_word_vectors(path: str | Path) -> WordVectors:
    """Load a word2vec text ``.vec`` (with header line) or a facebook FastText ``.bin``."""
    from gensim.models.fasttext import load_facebook_vectors
    from gensim.models.keyedvectors import KeyedVectors

    name = str(path)
    try:
        with open(path, "rb") as handle:
            head = handle.read(4)
            handle.seek(0)
            first_line = handle.readline(4096)
    except OSError as exc:
        raise InputError(f"cannot read file: {exc.strerror or exc}", file=name) from None
    if head == _FASTTEXT_MAGIC:
        try:
            keyed: KeyedVectors = load_facebook_vectors(name)
        except _LOAD_ERRORS as exc:
            raise InputError(
                f"not a valid facebook FastText .bin model: {exc}", file=name
            ) from None
        kind = "facebook FastText .bin"
    elif Path(path).suffix.lower() == ".bin":
        raise InputError(
            "not a facebook FastText .bin model (wrong magic number); "
            "word2vec binary files are not supported",
            file=name,
        )
    else:
        _check_text_header(first_line, file=name)
        try:
            keyed = KeyedVectors.load_word2vec_format(name, binary=False)
        except _LOAD_ERRORS as exc:
            raise InputError(f"not a valid word2vec text (.vec) file: {exc}", file=name) from None
        kind = "word2vec text"
    if keyed.vector_size < 1 or len(keyed.key_to_index) == 0:
        raise InputError("the file holds no word vectors", file=name)
    if not np.isfinite(keyed.vectors).all():
        raise InputError("vectors contain NaN or infinity", file=name)
    return WordVectors(keyed, source=f"{name} ({kind}, {len(keyed.key_to_index)} words)")


def _check_text_header(line: bytes, *, file: str) -> None:
    # gensim's own failures here ("invalid literal for int()") do not tell users what is wrong.
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("not a word2vec text file: header line is not UTF-8", file=file) from None
    parts = text.split()
    if len(parts) != 2 or not all(part.isdigit() for part in parts):
        raise InputError(
            "not a word2vec text file: first line must be '<word count> <dimension>', "
            f"got {text.strip()[:60]!r}",
            file=file,
            record="line 1",
        )
    if int(parts[0]) < 1 or int(parts[1]) < 1:
        raise InputError("header declares no words or zero dimensions", file=file, record="line 1")


def train_word_vectors(
    sentences: Sequence[Sequence[str]],
    *,
    dim: int = 100,
    epochs: int = 5,
    seed: int = 0,
    min_count: int = 1,
    bucket: int = 200_000,
) -> WordVectors:
    """Train FastText (CBOW) on tokenised sentences; the same seed gives identical vectors.

    ``bucket`` is the number of hashed n-gram rows; gensim's default (2,000,000) costs
    ``bucket x dim`` floats (2.4 GB at dim 300), far more than a caption vocabulary needs.
    """
    from gensim.models import FastText

    for name, value in (("dim", dim), ("epochs", epochs), ("min_count", min_count)):
        if value < 1:
            raise InputError(f"must be at least 1, got {value}", field=name)
    if bucket < 1:
        raise InputError(f"must be at least 1, got {bucket}", field="bucket")
    corpus = [_sentence(sentence, index) for index, sentence in enumerate(sentences)]
    counts = Counter(chain.from_iterable(corpus))
    if not any(count >= min_count for count in counts.values()):
        raise InputError(f"no word occurs at least {min_count} time(s)", field="sentences")
    # One worker thread: with more, gensim's training order (and so the vectors) varies by run.
    model = FastText(
        sentences=corpus,
        vector_size=dim,
        epochs=epochs,
        seed=seed,
        min_count=min_count,
        bucket=bucket,
        workers=1,
        hashfxn=stable_hash,
    )
    source = (
        f"trained on {len(corpus)} captions, seed {seed}, dim {dim}, epochs {epochs}, "
        f"min_count {min_count}, bucket {bucket}"
    )
    return WordVectors(model.wv, source=source)


def stable_hash(text: str) -> int:
    """A hash that is the same in every process, for gensim's `hashfxn` (its default, Python's
    `hash`, changes with PYTHONHASHSEED; gensim's reproducibility notes ask for a fixed one)."""
    return zlib.crc32(text.encode("utf-8"))


def _sentence(sentence: Iterable[str], index: int) -> list[str]:
    # A bare string would be read as a list of characters and train silently on letters.
    if isinstance(sentence, str):
        raise InputError("must be a list of tokens, got a string", record=index, field="sentences")
    words = list(sentence)
    for word in words:
        if not isinstance(word, str):
            raise InputError(
                f"tokens must be strings, got {type(word).__name__}",
                record=index,
                field="sentences",
            )
    return words


def image_embeddings(
    token_groups: Sequence[Sequence[str]], vectors: WordVectors
) -> tuple[np.ndarray, np.ndarray]:
    """Mean vector of every known token per group (image), and which groups had one.

    Returns a float32 ``n x dim`` matrix (rows without a known token are zero) and a
    boolean mask of the rows that had at least one known token. Repeated tokens count
    once per occurrence.
    """
    n = len(token_groups)
    lengths = np.fromiter((len(group) for group in token_groups), dtype=np.int64, count=n)
    ids, extra = vectors._token_ids(list(chain.from_iterable(token_groups)))
    owner = np.repeat(np.arange(n, dtype=np.int64), lengths)
    known = ids >= 0
    owner, ids = owner[known], ids[known]
    counts = np.bincount(owner, minlength=n)

    in_vocab = ids < vectors.vocab_size
    sums = _sum_rows(owner[in_vocab], ids[in_vocab], vectors._table, n)
    if extra.shape[0]:
        sums += _sum_rows(owner[~in_vocab], ids[~in_vocab] - vectors.vocab_size, extra, n)
    has_word = counts > 0
    out = np.zeros((n, vectors.dim), dtype=np.float32)
    out[has_word] = sums[has_word] / counts[has_word, None].astype(np.float32)
    return out, has_word


def _sum_rows(owner: np.ndarray, rows: np.ndarray, table: np.ndarray, n: int) -> np.ndarray:
    """``out[i] = sum of table[rows[j]] for j with owner[j] == i`` (owner non-decreasing).

    A sparse count matrix times the table: unlike gathering every token's row first
    (tokens x dim floats), this reads each table row in place and needs no big buffer.
    """
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=n), out=indptr[1:])
    ones = np.ones(rows.size, dtype=np.float32)
    from scipy.sparse import csr_array

    counts = csr_array((ones, rows, indptr), shape=(n, table.shape[0]))
    return np.asarray(counts @ table, dtype=np.float32)
