"""Who a worker is: one spelling of an id per person, and the Worker row for it."""

from __future__ import annotations

import unicodedata

from annotation.errors import ServiceError
from annotation.models import Worker
from annotation.providers import PROVIDERS


def worker_id_normalise(external_id: str, *, provider: str) -> str:
    """One spelling per person before any comparison: Unicode NFKC, invisible and format
    characters (zero-width space, BOM, soft hyphen, ...) removed, spaces collapsed; ids of
    server-side providers case-folded (a platform's own ids are kept as it spells them: they
    are sent back to it; `CrowdProvider.case_sensitive_ids`)."""
    text = unicodedata.normalize("NFKC", str(external_id))
    text = "".join(c for c in text if unicodedata.category(c) not in ("Cf", "Cc", "Cs", "Co", "Cn"))
    text = " ".join(text.split())
    crowd = PROVIDERS.get(provider)
    return text if crowd is not None and crowd.case_sensitive_ids else text.casefold()


def worker_get_or_create(*, provider: str, external_id: str) -> Worker:
    """The worker `provider` knows as `external_id` (normalised first), made on first sight."""
    external_id = worker_id_normalise(external_id, provider=provider)
    if not external_id or len(external_id) > 100:
        raise ServiceError("a worker id must be 1 to 100 characters")
    worker, _ = Worker.objects.get_or_create(provider=provider, external_id=external_id)
    return worker
