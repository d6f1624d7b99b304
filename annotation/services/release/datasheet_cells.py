"""The datasheet's tables written for people: nested manifest values become words
("key value, key value"), small tables of their own (a list of records) or a count with
where to find them in `manifest.json`; never JSON syntax, which stays the manifest's."""

from __future__ import annotations

from typing import Any

MAX_CELL = 200  # a nested value longer than this in words is summarised
MAX_ROWS = 20  # a list of records longer than this is counted, not tabled


def _scalar(value: Any) -> str:
    if value is None or value == "" or value == [] or value == {}:
        return "none"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _is_records(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _words(value: Any, *, nested: bool = False) -> str:
    """A value in words; containers inside containers in parentheses."""
    if isinstance(value, dict):
        if not value:
            return "none"
        text = ", ".join(f"{k} {_words(v, nested=True)}" for k, v in value.items())
    elif isinstance(value, list | tuple):
        if not value:
            return "none"
        if _is_records(value):
            text = "; ".join(_words(v) for v in value)
        else:
            text = ", ".join(_words(v, nested=True) for v in value)
    else:
        return _scalar(value)
    return f"({text})" if nested else text


def _summary(value: Any, *, key: str) -> str:
    if isinstance(value, dict):
        counted = f"{len(value)} entries"
    elif _is_records(value):
        counted = f"{len(value)} rows"
    elif isinstance(value, list) and all(isinstance(v, int | float) for v in value):
        counted = f"{len(value)} values from {min(value)} to {max(value)}"
    else:
        counted = f"{len(value)} values"
    return f"{counted} (see manifest.json: {key})"


def cell_text(value: Any, *, key: str) -> str:
    """One table cell: words and numbers as they are (strings whole: they are our sentences),
    a nested value in words, or summarised with its manifest key when that runs long."""
    if isinstance(value, str):
        text = value
    elif isinstance(value, dict | list | tuple) and value:
        text = _words(value)
        if len(text) > MAX_CELL:
            text = _summary(value, key=key)
    else:
        text = _scalar(value)
    return text.replace("|", "/").replace("\n", " ")


def flat(value: dict[str, Any]) -> dict[str, Any]:
    """A dict's entries one level down as `outer.inner` keys (deeper ones stay nested)."""
    out: dict[str, Any] = {}
    for key, item in value.items():
        if isinstance(item, dict) and item:
            out.update({f"{key}.{k}": v for k, v in item.items()})
        elif not isinstance(item, dict):
            out[key] = item
    return out


def table(rows: list[dict[str, Any]], *, source: str) -> list[str]:
    """Rows (dicts) as a Markdown table, one column per key any row has; `source` is where
    the rows sit in manifest.json, named in any summarised cell."""
    if not rows:
        return ["(none)"]
    flats = [flat(r) for r in rows]
    columns = list(dict.fromkeys(k for r in flats for k in r))
    return [
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
        *(
            "| " + " | ".join(cell_text(r.get(c, ""), key=f"{source}.{c}") for c in columns) + " |"
            for r in flats
        ),
    ]


def pairs(value: dict[str, Any], *, source: str = "") -> list[str]:
    """A dict as a two-column table (what, value); a short list of records gets its own
    table after it, a long one its count and manifest key."""
    rows, after = [], []
    for key, item in flat(value).items():
        if item is None:
            continue
        path = f"{source}.{key}" if source else key
        if _is_records(item) and len(item) <= MAX_ROWS:
            rows.append({"what": key, "value": f"{len(item)} rows, table `{key}` below"})
            after += ["", f"`{key}` (manifest.json: {path}):", "", *table(item, source=path)]
        else:
            rows.append({"what": key, "value": cell_text(item, key=path)})
    return [*table(rows, source=source), *after]


def listed(value: Any, *, key: str, lead: str) -> list[str]:
    """A bullet for a manifest value that may be a list of records: `lead` then the records
    as a table (a short list), or in words or counted with its manifest key."""
    if _is_records(value) and len(value) <= MAX_ROWS:
        return [f"{lead} ({len(value)}; manifest.json: {key}):", "", *table(value, source=key), ""]
    return [f"{lead}: {cell_text(value, key=key)}."]
