"""A release's terms as Croissant 1.1 says them: the license as a URL where it is a known
SPDX license, data-use conditions from it in the DUO and ODRL vocabularies (`usageInfo`, the
1.1 specification's "Data Use Conditions"), and `citeAs` as BibTeX."""

from __future__ import annotations

import re
from typing import Any

from annotation.services.release.release_terms import UNLICENSED

# Hub / SPDX-style ids (lower case) -> SPDX ids, for the licenses a dataset is usually under.
_SPDX = {
    spdx.lower(): spdx
    for spdx in (
        "CC-BY-4.0",
        "CC-BY-SA-4.0",
        "CC-BY-NC-4.0",
        "CC-BY-NC-SA-4.0",
        "CC-BY-ND-4.0",
        "CC-BY-NC-ND-4.0",
        "CC-BY-3.0",
        "CC0-1.0",
        "ODC-By-1.0",
        "ODbL-1.0",
        "PDDL-1.0",
        "CDLA-Permissive-2.0",
        "CDLA-Sharing-1.0",
        "MIT",
        "Apache-2.0",
    )
}
# DUO terms (http://purl.obolibrary.org/obo/DUO_...) the conditions use.
GENERAL_RESEARCH_USE = ("duo:0000042", "General research use")
NON_COMMERCIAL = ("duo:0000018", "Not-for-profit, non-commercial use only")


def license_url(license_id: str) -> str:
    """The license as Croissant recommends it, a URL (SPDX's page) where the id is a known
    SPDX license; otherwise the id as given ("unlicensed" included)."""
    spdx = _SPDX.get(license_id.strip().lower())
    return f"https://spdx.org/licenses/{spdx}.html" if spdx else license_id


def usage_info(license_id: str) -> dict[str, Any]:
    """The data-use conditions the license implies, as an ODRL offer of DUO terms: an
    unlicensed release permits nothing (a prohibition of any use until a license is given);
    a licensed one permits general research use, non-commercial only under an NC license,
    with attribution as a duty under a BY license."""
    offer: dict[str, Any] = {
        "@type": ["CreativeWork", "odrl:Offer"],
        "name": f"Data use conditions of the license {license_id}",
    }
    if license_id == UNLICENSED:
        offer["odrl:prohibition"] = {
            "@type": "odrl:Prohibition",
            "odrl:action": {"@id": "odrl:use"},
            "description": "No license was given for this release: no use is permitted "
            "until the run's owner gives one.",
        }
        return offer
    lowered = license_id.lower()
    permission: dict[str, Any] = {
        "@type": "odrl:Permission",
        "odrl:action": {"@id": GENERAL_RESEARCH_USE[0], "name": GENERAL_RESEARCH_USE[1]},
    }
    if re.search(r"(^|-)nc(-|$)", lowered):
        permission["odrl:constraint"] = [
            {
                "@type": "odrl:Constraint",
                "name": NON_COMMERCIAL[1],
                "odrl:operator": {"@id": "odrl:eq"},
                "odrl:rightOperand": {"@id": NON_COMMERCIAL[0]},
            }
        ]
    if re.search(r"(^|-)by(-|$)", lowered) or lowered.startswith("odc-by"):
        permission["odrl:duty"] = [{"@type": "odrl:Duty", "odrl:action": {"@id": "odrl:attribute"}}]
    offer["odrl:permission"] = permission
    return offer


def _bibtex_text(value: str) -> str:
    """A value inside BibTeX braces: braces it could unbalance removed."""
    return value.replace("{", "").replace("}", "").replace("\n", " ").strip()


def bibtex(
    *,
    key: str,
    title: str,
    creators: list[str],
    year: str,
    version: int,
    note: str,
) -> str:
    """A `@misc` BibTeX entry for the release (the researcher's own citation, when it is
    BibTeX already, is used as it is by the caller)."""
    authors = " and ".join(_bibtex_text(c) for c in creators) or "{crowdvl run owner}"
    return (
        f"@misc{{{re.sub(r'[^A-Za-z0-9_-]', '_', key)},\n"
        f"  title = {{{_bibtex_text(title)}}},\n"
        f"  author = {{{authors}}},\n"
        f"  year = {{{year}}},\n"
        f"  version = {{{version}.0.0}},\n"
        f"  note = {{{_bibtex_text(note)}}}\n"
        "}"
    )


def cite_as(
    *, terms: dict[str, Any], key: str, title: str, year: str, version: int, paper: str
) -> str:
    """`citeAs`: the researcher's citation when it is BibTeX; otherwise a BibTeX entry built
    from the release's title, creators and version, its note the researcher's citation text
    (or the paper whose procedure the labels reproduce)."""
    given = str(terms.get("citation") or "").strip()
    if given.startswith("@"):
        return given
    note = given or f"Reproduces the procedure of: {paper}"
    return bibtex(
        key=key, title=title, creators=terms["creators"], year=year, version=version, note=note
    )
