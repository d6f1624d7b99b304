"""How pages name images (issue 25). A worker's page loads each question's images from
`/img/<page key>/<position>-<slot>`: the page key is signed over the assignment, so every URL
is different per question and per assignment, carries nothing about the image, and stops
working when the assignment ends. No image pk, file name, COCO id or source URL reaches a
worker's browser. Researchers and staff load images by id (`STAFF_LINKS`)."""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, timedelta
from typing import Any

from django.conf import settings
from django.core import signing
from django.db import connection
from django.db.models import Exists, OuterRef
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from annotation.models import Assignment, AssignmentState, Hit, Image

SALT = "crowdvl.images.page"
# Stands for the assignment's page key in a HIT's view, which is built once for every
# worker of the HIT (selectors/work/task_page.py) and filled in for each page (pages/work/shell.py).
PLACEHOLDER = "{page-key}"
URL_PREFIX = "/img/"
# Renderings of each image (services/datasets/images.py): a page's first showing of an image takes
# one of the first FIRST_VARIANTS (made ahead by the caching job), a page showing it again
# the next ones, different each time up to VARIANTS showings (more than a HIT's questions).
FIRST_VARIANTS = 4
VARIANTS = 24


class ImageLinks:
    """The URLs a page loads its images from: per question place for workers, by id for staff.
    `places` records what each worker URL shows: "<position>-<slot>" -> image pk."""

    def __init__(self, *, staff: bool = False) -> None:
        self.staff = staff
        self.places: dict[str, int] = {}
        self.position = 0
        self._slot = 0

    def question(self, position: int) -> ImageLinks:
        """Start naming the images of the question at `position` (slots count from 0)."""
        self.position, self._slot = position, 0
        return self

    def url(self, image: Image) -> str:
        if self.staff:
            return reverse("staff-image", args=[image.pk])
        place = f"{self.position}-{self._slot}"
        self._slot += 1
        self.places[place] = image.pk
        return f"{URL_PREFIX}{PLACEHOLDER}/{place}"


STAFF_LINKS = ImageLinks(staff=True)


def image_places(places: dict[str, int]) -> dict[str, tuple[int, int]]:
    """Each place's image and its occurrence among the HIT's places showing that image (in
    page order), so repeated images get different renderings."""
    seen: dict[int, int] = {}
    out: dict[str, tuple[int, int]] = {}
    for place in sorted(places, key=lambda p: tuple(int(n) for n in p.split("-"))):
        image_id = places[place]
        out[place] = (image_id, seen.get(image_id, 0))
        seen[image_id] = seen.get(image_id, 0) + 1
    return out


def page_key(*, assignment_id: int | None = None, hit_id: int = 0, external: str = "") -> str:
    """The signed key of one assignment's page: ours by pk, or (a remote provider's page
    shown before the assignment is stored here) the HIT and the provider's assignment id
    (`signing.loads` reads it)."""
    payload: Any = assignment_id if assignment_id is not None else [hit_id, external]
    return signing.dumps(payload, salt=SALT)


def with_staff_images(content: bytes, places: dict[str, tuple[int, int]]) -> bytes:
    """A task page for a researcher (the batch preview): each place's image by id through the
    staff image view, which checks the viewer's projects; no assignment, no page key."""
    for place, (image_id, _) in places.items():
        worker_url = f'{URL_PREFIX}{PLACEHOLDER}/{place}"'.encode()
        content = content.replace(
            worker_url, f'{reverse("staff-image", args=[image_id])}"'.encode()
        )
    return content


@dataclass(frozen=True)
class ServedImage:
    image_id: int
    variant: int


# An image request's one statement: plain SQL, as the task page's (the ORM's compiling of it
# cost more than running it).
_OPEN_SQL = f"""
SELECT a.hit_id, a.accepted_at, b.assignment_duration_seconds
FROM annotation_assignment a
JOIN annotation_hit h ON h.id = a.hit_id
JOIN annotation_batch b ON b.id = h.batch_id
WHERE a.id = %s AND a.state = '{AssignmentState.ACCEPTED}'"""


def _open_hit(key: str, payload: Any) -> int | None:
    """The HIT of the page key's assignment while it is open (one query), else None."""
    if isinstance(payload, int):
        with connection.cursor() as cursor:
            cursor.execute(_OPEN_SQL, [payload])
            row = cursor.fetchone()
        if row is None:
            return None  # submitted, abandoned, returned or rejected
        accepted = row[1]
        if isinstance(accepted, str):
            accepted = parse_datetime(accepted)
        if timezone.is_naive(accepted):  # SQLite's raw rows: UTC without a zone
            accepted = accepted.replace(tzinfo=UTC)
        if accepted < timezone.now() - timedelta(seconds=row[2]):
            return None  # past its time
        return int(row[0])
    if not (
        isinstance(payload, list)
        and len(payload) == 2
        and isinstance(payload[0], int)
        and isinstance(payload[1], str)
    ):
        return None
    # A remote provider's page (MTurk's frame), whose assignment is stored here only when its
    # answers arrive: open for the batch's assignment duration (an hour spare) from the
    # page's signing, and until its answers are here.
    hit_id, external = payload
    row = (
        Hit.objects.filter(pk=hit_id)
        .values_list(
            "batch__assignment_duration_seconds",
            Exists(
                Assignment.objects.filter(
                    hit=OuterRef("pk"), provider_assignment_id=external
                ).exclude(state=AssignmentState.ACCEPTED)
            ),
        )
        .first()
    )
    if row is None or row[1]:
        return None
    try:
        signing.loads(key, salt=SALT, max_age=row[0] + 3600)
    except signing.BadSignature:  # expired
        return None
    return hit_id


def served_image(
    *, key: str, place: str, places: Callable[[int], dict[str, tuple[int, int]]]
) -> ServedImage | None:
    """What `/img/<key>/<place>` shows, or None: a key not signed here, an ended assignment or
    a place its HIT does not have. `places` gives a HIT's `image_places`."""
    try:
        payload = signing.loads(key, salt=SALT)
    except signing.BadSignature:
        return None
    hit_id = _open_hit(key, payload)
    if hit_id is None:
        return None
    found = places(hit_id).get(place)
    if found is None:
        return None
    image_id, occurrence = found
    return ServedImage(image_id, variant_for(key=key, image_id=image_id, occurrence=occurrence))


def variant_for(*, key: str, image_id: int, occurrence: int) -> int:
    """Which rendering a page shows an image in: drawn from a secret, so nothing in the URL
    tells which; a page's repeats of one image get the following ones."""
    digest = hmac.new(
        settings.SECRET_KEY.encode(), f"image-variant:{key}:{image_id}".encode(), hashlib.sha256
    ).digest()
    return (int.from_bytes(digest[:4], "big") % FIRST_VARIANTS + occurrence) % VARIANTS
