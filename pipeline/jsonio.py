"""Strict JSON decoding and field checks shared by the file-format parsers."""

from __future__ import annotations

import codecs
import json
import math
from collections.abc import Iterator
from itertools import chain
from typing import Any, BinaryIO

import orjson

from pipeline.errors import InputError

# What a database BIGINT holds; larger ids would fail on write.
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def decode_json(raw: bytes | str, *, file: str) -> Any:
    """Parse ``raw`` as UTF-8 JSON; errors name the file, line and column."""
    if isinstance(raw, bytes):
        try:
            # utf-8-sig so a byte-order mark written by some editors is not an error.
            raw = raw.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise InputError(
                f"not UTF-8 text (bad byte at offset {exc.start})", file=file
            ) from None
    try:
        return json.loads(raw, parse_constant=_reject_constant, parse_float=_finite_float)
    except json.JSONDecodeError as exc:
        raise InputError(
            f"malformed JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}", file=file
        ) from None
    except RecursionError:
        raise InputError("JSON nested too deeply", file=file) from None


def _reject_constant(name: str) -> Any:
    # NaN and Infinity are not JSON; Python accepts them unless told otherwise.
    raise json.JSONDecodeError(f"{name} is not valid JSON", name, 0)


def require_int(
    obj: dict[str, Any], key: str, *, file: str, record: str | int, field: str | None = None
) -> int:
    """``obj[key]`` as an int (bools rejected), or raise naming the field."""
    name = field or key
    if key not in obj:
        raise InputError("missing", file=file, record=record, field=name)
    value = obj[key]
    if isinstance(value, bool) or not isinstance(value, int):
        raise InputError(
            f"must be an integer, got {describe(value)}", file=file, record=record, field=name
        )
    if not INT64_MIN <= value <= INT64_MAX:
        raise InputError(
            "out of range (a 64-bit signed integer)", file=file, record=record, field=name
        )
    return value


def require_str(
    obj: dict[str, Any],
    key: str,
    *,
    file: str,
    record: str | int,
    field: str | None = None,
    blank_ok: bool = False,
) -> str:
    """``obj[key]`` as a string (non-blank unless ``blank_ok``), or raise naming the field."""
    name = field or key
    if key not in obj:
        raise InputError("missing", file=file, record=record, field=name)
    value = obj[key]
    if not isinstance(value, str):
        raise InputError(
            f"must be a string, got {describe(value)}", file=file, record=record, field=name
        )
    if not blank_ok and not value.strip():
        raise InputError(
            "must not be empty or whitespace only", file=file, record=record, field=name
        )
    return check_text(value, file=file, record=record, field=name)


def require_object(value: Any, *, file: str, record: str | int | None, field: str | None) -> dict:
    """``value`` if it is a JSON object, else raise naming where it was found."""
    if not isinstance(value, dict):
        raise InputError(
            f"must be an object, got {describe(value)}", file=file, record=record, field=field
        )
    return value


def describe(value: Any) -> str:
    """Short human description of a JSON value for error messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return f"number {value!r}"
    if isinstance(value, str):
        return f"string {value[:40]!r}"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


# --- Streaming: one top-level object read key by key, big arrays element by element. ---

# Sentinel index: the streamed key's array starts (its elements follow).
LIST_START = -1
# A single value (an element, or a non-streamed value) larger than this is refused rather
# than buffered: it bounds memory on malformed input such as an unterminated string.
MAX_VALUE_CHARS = 64 * 1024 * 1024
# Deeper nesting is refused (the decoder would otherwise recurse towards a RecursionError).
MAX_DEPTH = 64
CHUNK_BYTES = 1 << 20
_WHITESPACE = " \t\n\r"
# Cuts `Reader.elements` tries (each in half the text of the last) before giving up on a window; after `_BATCH_GIVE_UP` windows
# in a row without one, an array is read element by element to its end (nested elements).
_CUT_TRIES = 6
_BATCH_GIVE_UP = 3


class _Reader:
    """A sliding window of decoded text over a binary file, with line/column bookkeeping."""

    def __init__(self, fh: BinaryIO, *, file: str, chunk_bytes: int) -> None:
        self.fh, self.file, self.chunk_bytes = fh, file, chunk_bytes
        self.utf8 = codecs.getincrementaldecoder("utf-8")()
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.bytes_read = 0
        self.lines_before = 0  # newlines in text already dropped from the window
        self.col_before = 0  # characters after the last dropped newline
        self.started = False
        # The types of the top-level field values of the elements `elements` last returned,
        # when orjson decoded them (None: not known).
        self.field_types: set[type] | None = None
        self.scan = json.JSONDecoder(
            parse_constant=_reject_constant, parse_float=_finite_float
        ).raw_decode

    def fill(self) -> bool:
        """Append the next chunk (dropping consumed text); False at end of file."""
        if self.eof:
            return False
        dropped = self.buf[: self.pos]
        newlines = dropped.count("\n")
        if newlines:
            self.lines_before += newlines
            self.col_before = len(dropped) - dropped.rfind("\n") - 1
        else:
            self.col_before += len(dropped)
        self.buf, self.pos = self.buf[self.pos :], 0
        chunk = self.fh.read(self.chunk_bytes)
        try:
            text = self.utf8.decode(chunk, final=not chunk)
        except UnicodeDecodeError as exc:
            raise InputError(
                f"not UTF-8 text (bad byte at offset {self.bytes_read + exc.start})",
                file=self.file,
            ) from None
        self.bytes_read += len(chunk)
        if not self.started and text:
            self.started = True
            # A byte-order mark written by some editors is not an error.
            text = text.removeprefix("\ufeff")
        if not chunk:
            self.eof = True
        self.buf += text
        return bool(chunk)

    def where(self, pos: int) -> str:
        line_start = self.buf.rfind("\n", 0, pos)
        column = pos - line_start if line_start >= 0 else self.col_before + pos + 1
        line = self.lines_before + self.buf.count("\n", 0, pos) + 1
        return f"line {line}, column {column}"

    def error(self, message: str, pos: int | None = None) -> InputError:
        at = self.where(self.pos if pos is None else pos)
        return InputError(f"malformed JSON at {at}: {message}", file=self.file)

    def peek(self) -> str | None:
        """The next non-whitespace character (not consumed), or None at end of file."""
        while True:
            buf, pos = self.buf, self.pos
            while pos < len(buf) and buf[pos] in _WHITESPACE:
                pos += 1
            self.pos = pos
            if pos < len(buf):
                return buf[pos]
            if not self.fill():
                return None

    def expect(self, chars: str, what: str) -> str:
        char = self.peek()
        if char is None or char not in chars:
            raise self.error(f"expecting {what}")
        self.pos += 1
        return char

    def elements(self) -> list[Any] | None:
        """Several whole elements of the array being read, decoded by one C call: the window's
        text up to its last `}` before a `,` or `]`, decoded as `[` + text + `]`. A cut inside
        a string leaves that string open and one inside an element leaves a bracket open, so
        the text decodes only when the cut is an element boundary; None when no cut decodes
        (the caller reads element by element, which reports errors where they are)."""
        self.field_types = None
        if self.peek() != "{":
            return None
        while len(self.buf) - self.pos < self.chunk_bytes and self.fill():
            pass
        buf, start = self.buf, self.pos
        limit = len(buf)
        for _ in range(_CUT_TRIES):
            # Near the array's end the window runs into what follows it: each miss halves it.
            cut = buf.rfind("}", start, limit)
            limit = start + (limit - start) // 2
            if cut < 0:
                continue
            after = cut + 1
            while after < len(buf) and buf[after] in _WHITESPACE:
                after += 1
            if after == len(buf) or buf[after] not in ",]":
                continue
            values = self._many(buf[start : cut + 1])
            if values is not None:
                self.pos = cut + 1
                return values
        return None

    def _many(self, text: str) -> list[Any] | None:
        """`text` (elements and the commas between them) decoded as a JSON array, or None.
        orjson decodes it several times faster than the standard library. The two differ
        only in integers past 64 bits, which orjson reads as floats: a batch of objects with a
        float field, or anything else than objects, or text orjson refuses, is decoded by the
        standard library as before (whose errors and values the checks were written for)."""
        array = f"[{text}]"
        try:
            values = orjson.loads(array)
        except orjson.JSONDecodeError:
            values = None
        if isinstance(values, list) and set(map(type, values)) == {dict}:
            fields = set(map(type, chain.from_iterable(map(dict.values, values))))
            if float not in fields:
                self.field_types = fields
                return values
        try:
            values, end = self.scan(array)
        except (json.JSONDecodeError, RecursionError):
            return None
        return values if end == len(array) and isinstance(values, list) else None

    def value(self, *, record: str) -> Any:
        """Decode the JSON value at the current position."""
        self.peek()
        while True:
            buf = self.buf
            try:
                value, end = self.scan(buf, self.pos)
            except json.JSONDecodeError as exc:
                # Running off the end of the window is not an error until end of file.
                cut = exc.pos >= len(buf) - 6 or exc.msg.startswith("Unterminated string")
                if cut and not self.eof and len(buf) - self.pos < MAX_VALUE_CHARS:
                    self.fill()
                    continue
                if cut and not self.eof:
                    raise InputError(
                        f"value larger than {MAX_VALUE_CHARS} characters",
                        file=self.file,
                        record=record,
                    ) from None
                raise self.error(exc.msg, exc.pos) from None
            except RecursionError:
                raise InputError("JSON nested too deeply", file=self.file, record=record) from None
            # A number at the window's end may continue in the next chunk.
            if end == len(buf) and not self.eof:
                self.fill()
                continue
            self.pos = end
            if _depth(value) > MAX_DEPTH:
                raise InputError(
                    f"JSON nested more than {MAX_DEPTH} levels deep", file=self.file, record=record
                )
            return value


def iter_object(
    fh: BinaryIO,
    *,
    file: str,
    streamed: frozenset[str],
    chunk_bytes: int = CHUNK_BYTES,
    batched: bool = False,
) -> Iterator[tuple[str, int | None, Any]]:
    """Read a file holding one JSON object without loading it whole.

    Yields ``(key, None, value)`` for each top-level key, except that a key in ``streamed``
    whose value is an array yields ``(key, LIST_START, None)`` and then ``(key, i, element)``
    for each element. Duplicate top-level keys are an error. With ``batched``, a streamed
    array's elements come as ``(key, i, [element i, element i + 1, ...])``, many decoded by
    one call where the elements are objects (see `_Reader.elements`), each checked for depth.
    """
    reader = _Reader(fh, file=file, chunk_bytes=chunk_bytes)
    first = reader.peek()
    if first != "{":
        got = "an empty file" if first is None else repr(first)
        raise InputError(f"top level must be a JSON object, got {got}", file=file)
    reader.pos += 1
    seen: set[str] = set()
    if reader.peek() == "}":
        reader.pos += 1
    else:
        while True:
            if reader.peek() != '"':
                raise reader.error("expecting property name enclosed in double quotes")
            key = reader.value(record="top level")
            if key in seen:
                raise InputError("duplicate key in the top-level object", file=file, field=key)
            seen.add(key)
            reader.expect(":", "':' delimiter")
            if key in streamed and reader.peek() == "[":
                reader.pos += 1
                yield key, LIST_START, None
                if reader.peek() == "]":
                    reader.pos += 1
                elif batched:
                    yield from _batches(reader, key)
                else:
                    index = 0
                    while True:
                        yield key, index, reader.value(record=f"{key}[{index}]")
                        index += 1
                        if reader.expect(",]", "',' delimiter") == "]":
                            break
            else:
                yield key, None, reader.value(record=key)
            if reader.expect(",}", "',' delimiter") == "}":
                break
    if reader.peek() is not None:
        raise reader.error("extra data")


def _batches(reader: _Reader, key: str) -> Iterator[tuple[str, int, list[Any]]]:
    """A streamed array's elements in lists (`iter_object`'s `batched`), up to its `]`."""
    index = 0
    misses = 0
    while True:
        values = reader.elements() if misses < _BATCH_GIVE_UP else None
        if values:
            misses = 0
            fields = reader.field_types
            if fields is None and set(map(type, values)) == {dict}:
                fields = set(map(type, chain.from_iterable(map(dict.values, values))))
            flat = fields is not None and _CONTAINERS.isdisjoint(fields)
            for offset, value in enumerate([] if flat else values):
                if _depth(value) > MAX_DEPTH:
                    raise InputError(
                        f"JSON nested more than {MAX_DEPTH} levels deep",
                        file=reader.file,
                        record=f"{key}[{index + offset}]",
                    )
        else:
            misses += 1
            values = [reader.value(record=f"{key}[{index}]")]
        yield key, index, values
        index += len(values)
        if reader.expect(",]", "',' delimiter") == "]":
            return


_CONTAINERS = frozenset((dict, list))


def _depth(value: Any) -> int:
    # Iterative, so a deep value cannot exhaust the stack while being measured.
    deepest = 0
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            deepest = max(deepest, depth)
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            deepest = max(deepest, depth)
            stack.extend((v, depth + 1) for v in item)
    return deepest


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise json.JSONDecodeError(f"number {text} is out of range", text, 0)
    return value


def check_text(value: str, *, file: str, record: str | int | None, field: str | None) -> str:
    """Refuse text a database cannot store: NUL characters and lone surrogates."""
    if "\x00" in value:
        raise InputError(
            "contains a NUL character (\\u0000)", file=file, record=record, field=field
        )
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise InputError(
                f"contains a lone surrogate (\\u{ord(value[exc.start]):04x}) at character "
                f"{exc.start}",
                file=file,
                record=record,
                field=field,
            ) from None
    return value


def check_json_text(value: Any, *, file: str, record: str | int | None, field: str) -> None:
    """``check_text`` on every string (keys too) inside a JSON value."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            check_text(item, file=file, record=record, field=field)
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
