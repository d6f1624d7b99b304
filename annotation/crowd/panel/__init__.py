"""Panels without an API (CloudResearch Connect, SONA, university participant pools): a study
link per batch, consent, work on this server that counts once the researcher uploads the
panel's list of approved participants."""
