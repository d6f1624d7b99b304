"""The default similarity bins of this project's CxC sampling: cosine bin edges and the share
of pairs each bin gives (the high bins most). They are this project's choice (chosen when the
sampling was written, commit e0b886c), not CxC's: CxC's blog names no bins, edges or shares;
it says only that pairs were chosen by a sampling biased toward high computed similarity
("we select two captions with high computed similarities"), so that the rated pairs "include
at least some new pairs with high expected similarity" (random pairs being likely dissimilar).
Five bins with 60 % of the pairs above cosine 0.6 and 20 % below 0.4 follow that aim; a run
may set its own (`bins`, `shares`). Apart from `pipeline.cxc_sampling` (numpy) so a run's
settings read them without loading numpy at start-up (issue 46)."""

from __future__ import annotations

DEFAULT_BINS = (-1.0, 0.2, 0.4, 0.6, 0.8, 1.0001)
DEFAULT_SHARES = (0.1, 0.1, 0.2, 0.3, 0.3)
