"""A text-only BISON baseline: pick the candidate whose other captions best match the query."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pipeline.bison import BisonRecord
from pipeline.simulate import STOPWORDS


def _words(tokens: Sequence[str]) -> set[str]:
    return {t for t in tokens if t not in STOPWORDS}


def caption_overlap_predictions(
    records: Sequence[BisonRecord],
    query_tokens: Mapping[int, Sequence[str]],
    captions_by_image: Mapping[int, Sequence[tuple[int, Sequence[str]]]],
) -> list[dict[str, int]]:
    """One prediction per record. An image is described by its captions other than the query
    itself (which would give the answer away); ties go to the first candidate."""
    predictions = []
    for record in records:
        query = _words(query_tokens[record.caption_id])
        best_id, best_score = record.candidates[0][0], -1.0
        for image_id, _ in record.candidates:
            score = 0.0
            for caption_id, tokens in captions_by_image.get(image_id, ()):
                if caption_id == record.caption_id:
                    continue
                words = _words(tokens)
                union = query | words
                if union:
                    score = max(score, len(query & words) / len(union))
            if score > best_score:
                best_id, best_score = image_id, score
        predictions.append({"bison_id": record.bison_id, "predicted_image_id": best_id})
    return predictions
