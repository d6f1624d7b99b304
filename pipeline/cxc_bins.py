"""Crisscrossed Captions' default similarity bins: cosine bin edges and the share of pairs each
bin gives (the high bins most). Apart from `pipeline.cxc_sampling` (numpy) so a run's settings
read them without loading numpy at start-up (issue 46)."""

from __future__ import annotations

DEFAULT_BINS = (-1.0, 0.2, 0.4, 0.6, 0.8, 1.0001)
DEFAULT_SHARES = (0.1, 0.1, 0.2, 0.3, 0.3)
