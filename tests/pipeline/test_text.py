from pipeline.text import tokenize


def test_lowercases_and_drops_punctuation() -> None:
    assert tokenize("A Man riding a WAVE, on top of a surfboard.") == [
        "a", "man", "riding", "a", "wave", "on", "top", "of", "a", "surfboard",
    ]  # fmt: skip


def test_keeps_apostrophe_words_and_digits() -> None:
    assert tokenize("The dog's toy; don't 2 cats'  'quoted'") == [
        "the", "dog's", "toy", "don't", "2", "cats", "quoted",
    ]  # fmt: skip


def test_typographic_apostrophe_is_normalised() -> None:
    assert tokenize("A child\u2019s kite") == ["a", "child's", "kite"]


def test_hyphens_underscores_and_whitespace_split_words() -> None:
    assert tokenize("black-and-white\nphoto_of  a\ttrain ") == [
        "black", "and", "white", "photo", "of", "a", "train",
    ]  # fmt: skip


def test_non_ascii_letters_are_word_characters() -> None:
    assert tokenize("Café crème brûlée!") == ["café", "crème", "brûlée"]


def test_empty_and_punctuation_only() -> None:
    assert tokenize("") == []
    assert tokenize(" ... !? -- ") == []
