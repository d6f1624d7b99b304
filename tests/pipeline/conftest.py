"""Pipeline tests are pure: no database, no Celery, no Django settings."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
COCO_SAMPLE = REPO / "data" / "sample" / "coco_captions_val2014.subset.json"
