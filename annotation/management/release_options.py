"""The export commands' options for a release's terms (license, creators, citation)."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser


def release_arguments(parser: CommandParser) -> None:
    """Add --license, --creator (repeatable) and --citation to an export command."""
    parser.add_argument("--license", default="", help='e.g. cc-by-4.0; none: "unlicensed"')
    parser.add_argument("--creator", action="append", default=[], help="a creator's name")
    parser.add_argument("--citation", default="", help="how to cite this dataset")


def release_options(opts: dict[str, Any]) -> dict[str, Any] | None:
    """The terms given on the command line, or None (the run's own apply)."""
    release = {
        "license": opts.get("license") or "",
        "creators": opts.get("creator") or [],
        "citation": opts.get("citation") or "",
    }
    return release if any(release.values()) else None
