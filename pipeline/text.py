"""Caption tokenisation shared by every pipeline that turns captions into words."""

from __future__ import annotations

import re

# A word is a run of letters or digits, optionally joined by single apostrophes
# ("man's", "don't"); anything else (punctuation, underscores, spaces) separates words.
_WORD = re.compile(r"[^\W_]+(?:'[^\W_]+)*")
# Typographic apostrophes are common in crowd-written captions; treat them like "'".
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens of ``text``; punctuation is dropped."""
    return _WORD.findall(text.translate(_APOSTROPHES).lower())
