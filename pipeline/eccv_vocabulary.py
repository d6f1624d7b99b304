"""ECCV Caption's words: retrieval directions, worker answers and item kinds. Apart from
`pipeline.eccv_candidates` (numpy) so a task type reads them without loading numpy at start-up
(issue 46)."""

from __future__ import annotations

I2T = "i2t"
T2I = "t2i"
DIRECTIONS = (I2T, T2I)

# Worker answers, strongest yes first; the first two make a pair positive (paper, 3.3).
ANSWERS = ("yes", "partially_yes", "mostly_no", "no")
POSITIVE_ANSWERS = frozenset({"yes", "partially_yes"})
NEGATIVE_ANSWERS = frozenset({"mostly_no", "no"})

CANDIDATE = "candidate"
GOLD_POSITIVE = "gold_positive"
GOLD_NEGATIVE = "gold_negative"
