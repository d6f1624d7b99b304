"""Amazon Mechanical Turk, the legacy paid crowd (closed for good on 2026-09-30)."""
