"""The exports page's form: the terms of one export (license, creators, citation), pre-filled
with the run's own, which an export takes when it gives none (`services/release/release_terms.py`)."""

from __future__ import annotations

from typing import Any

from django import forms

from annotation.models import Run
from annotation.run_settings import run_settings
from annotation.services.release.release_terms import UNLICENSED


class ExportForm(forms.Form):
    license = forms.CharField(
        max_length=100,
        required=False,
        label="License",
        widget=forms.TextInput(attrs={"placeholder": "cc-by-4.0"}),
    )
    creators = forms.CharField(
        max_length=2000,
        required=False,
        label="Creators",
        widget=forms.TextInput(attrs={"placeholder": "Ada Lovelace; Alan Turing", "size": 40}),
    )
    citation = forms.CharField(
        max_length=4000,
        required=False,
        label="Citation",
        widget=forms.Textarea(attrs={"rows": 2, "cols": 60}),
    )

    def __init__(self, *args: Any, run: Run, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        terms = run_settings(run).release or {}
        creators = terms.get("creators") or []
        self.initial = {
            "license": terms.get("license", ""),
            "creators": "; ".join(creators) if isinstance(creators, list) else creators,
            "citation": terms.get("citation", ""),
        }
        self.fields["license"].help_text = (
            "an SPDX or Hugging Face Hub id, written into every file of the export. Default: "
            + (f"the run's, {terms['license']}." if terms.get("license") else f"{UNLICENSED}.")
        )
        self.fields["creators"].help_text = (
            "who made the dataset, separated by semicolons. Default: "
            + ("the run's." if creators else "none given.")
        )
        self.fields["citation"].help_text = "how to cite the dataset (BibTeX or a sentence). " + (
            "Default: the run's." if terms.get("citation") else "Default: none given."
        )

    def release(self) -> dict[str, str] | None:
        """The terms entered, None when all are empty (the run's then apply)."""
        given = {k: self.cleaned_data[k] for k in ("license", "creators", "citation")}
        return given if any(given.values()) else None
