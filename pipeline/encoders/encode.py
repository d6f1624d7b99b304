"""Images and captions into L2-normalised rows, in batches, with the model's own processor."""

from __future__ import annotations

import io
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pipeline.encoders.loading import Encoder
from pipeline.errors import InputError


@dataclass
class ImageRows:
    """Encoded images in input order (`names` of those encoded) and those skipped, by name,
    with the reason (an unreadable image is reported, never a row of zeros)."""

    names: list[str]
    rows: np.ndarray
    failed: list[tuple[str, str]] = field(default_factory=list)


@dataclass
class TextRows:
    rows: np.ndarray
    truncated: int  # captions longer than the model's context, cut to it


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Each row divided by its length (a zero row stays zero)."""
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def decode_image(data: bytes) -> Any:
    """An RGB PIL image, or ValueError saying why not."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as source:
            return source.convert("RGB")
    except (UnidentifiedImageError, OSError, Image.DecompressionBombError) as exc:
        raise ValueError(f"not a readable image ({type(exc).__name__})") from None


def _features(output: Any) -> Any:
    # transformers 4.x returns a tensor; some versions return an output object instead.
    return output if hasattr(output, "float") else output.pooler_output


def encode_images(
    encoder: Encoder,
    sources: Sequence[tuple[str, Callable[[], bytes]]],
    *,
    batch_size: int = 32,
) -> ImageRows:
    """Encode images given as (name, read bytes); one that cannot be read or decoded is
    skipped and named in `failed`. Rows are float32 and L2-normalised."""
    import torch

    names: list[str] = []
    failed: list[tuple[str, str]] = []
    out: list[np.ndarray] = []
    pending: list[Any] = []

    def flush() -> None:
        if not pending:
            return
        pixels = encoder.image_processor(images=pending, return_tensors="pt")["pixel_values"]
        with torch.inference_mode():
            feats = _features(
                encoder.model.get_image_features(pixel_values=pixels.to(encoder.device))
            )
        out.append(feats.float().cpu().numpy())
        pending.clear()

    for name, read in sources:
        try:
            picture = decode_image(read())
        except Exception as exc:  # noqa: BLE001 - any reader failure skips this image only
            failed.append((name, str(exc) or type(exc).__name__))
            continue
        names.append(name)
        pending.append(picture)
        if len(pending) >= batch_size:
            flush()
    flush()
    rows = np.concatenate(out) if out else np.zeros((0, encoder.dim), dtype=np.float32)
    return ImageRows(names=names, rows=unit_rows(rows.astype(np.float32)), failed=failed)


def tokenize(encoder: Encoder, texts: Sequence[str]) -> tuple[dict[str, Any], int]:
    """The model's tokens for `texts`, cut to its context; and how many were cut. One
    tokenization: cut one token past the context, so a caption that just fills it is told
    from one that overflows; an overflowing one then loses one more content token, which is
    what the tokenizer's own cut at the context keeps (its side and special tokens)."""
    tokenizer, limit = encoder.tokenizer, encoder.context_length
    ids = tokenizer(list(texts), truncation=True, max_length=limit + 1)["input_ids"]
    rows: list[list[int]] = []
    truncated = 0
    for row in ids:
        if len(row) > limit:
            truncated += 1
            row = _without_one_content_token(tokenizer, list(row))
        rows.append(list(row))
    width = limit if encoder.family == "siglip" else max((len(r) for r in rows), default=0)
    return _padded(tokenizer, rows, width), truncated


def _without_one_content_token(tokenizer: Any, row: list[int]) -> list[int]:
    special = tokenizer.get_special_tokens_mask(row, already_has_special_tokens=True)
    content = [i for i, flag in enumerate(special) if not flag]
    if not content:
        return row[:-1]
    drop = content[0] if tokenizer.truncation_side == "left" else content[-1]
    return row[:drop] + row[drop + 1 :]


def _padded(tokenizer: Any, rows: list[list[int]], width: int) -> dict[str, Any]:
    """`input_ids` and `attention_mask` tensors, rows padded to `width` on the tokenizer's
    padding side with its pad token (as its own padding does)."""
    import torch

    pad = tokenizer.pad_token_id
    if pad is None and any(len(row) != width for row in rows):
        raise InputError("the tokenizer has no padding token", field="checkpoint")
    # Without a pad token every row fills the width: the fill value is never kept.
    input_ids = torch.full((len(rows), width), 0 if pad is None else pad, dtype=torch.long)
    mask = torch.zeros((len(rows), width), dtype=torch.long)
    for n, row in enumerate(rows):
        if tokenizer.padding_side == "left":
            input_ids[n, width - len(row) :] = torch.tensor(row, dtype=torch.long)
            mask[n, width - len(row) :] = 1
        else:
            input_ids[n, : len(row)] = torch.tensor(row, dtype=torch.long)
            mask[n, : len(row)] = 1
    return {"input_ids": input_ids, "attention_mask": mask}


def encode_texts(encoder: Encoder, texts: Sequence[str], *, batch_size: int = 256) -> TextRows:
    """Encode captions; those longer than the context are truncated and counted."""
    import torch

    out: list[np.ndarray] = []
    truncated = 0
    for start in range(0, len(texts), batch_size):
        tokens, cut = tokenize(encoder, texts[start : start + batch_size])
        truncated += cut
        inputs = {"input_ids": tokens["input_ids"].to(encoder.device)}
        if encoder.family == "clip" and "attention_mask" in tokens:
            inputs["attention_mask"] = tokens["attention_mask"].to(encoder.device)
        with torch.inference_mode():
            feats = _features(encoder.model.get_text_features(**inputs))
        out.append(feats.float().cpu().numpy())
    rows = np.concatenate(out) if out else np.zeros((0, encoder.dim), dtype=np.float32)
    return TextRows(rows=unit_rows(rows.astype(np.float32)), truncated=truncated)


def threads_for(*, cores: int, processes: int) -> int:
    """torch threads per worker process: the cores shared out, at least one (more threads
    than cores only make the processes wait for each other)."""
    return max(1, cores // max(1, processes))
