"""A HIT's cached view (annotation/selectors/work/hit_cache.py): built once for every server
process, through the shared cache."""

import pytest

pytestmark = pytest.mark.django_db


def test_hit_cache_builds_once_for_every_process(settings):
    from django.core.cache import caches

    from annotation.selectors.work.hit_cache import hit_cached

    settings.CROWDVL_CACHE_SHARED = True
    built = []

    def build():
        built.append(1)
        return {"questions": len(built)}

    assert hit_cached("hit-view:test", build) == {"questions": 1}
    caches["local"].clear()  # another server process: its memory is empty, the shared cache not
    assert hit_cached("hit-view:test", build) == {"questions": 1} and len(built) == 1
