"""Every URL path and name stays as it was when the providers moved into packages of their own:
live HITs, sent invitation links and API clients embed them. `url_routes.tsv` was written from
the resolver before the move (route, tab, name); a route may be added, never changed."""

from pathlib import Path

from django.urls import URLResolver, get_resolver

BEFORE = Path(__file__).with_name("url_routes.tsv")


def routes(patterns, prefix=""):
    for p in patterns:
        if isinstance(p, URLResolver):
            yield from routes(p.url_patterns, prefix + str(p.pattern))
        else:
            yield prefix + str(p.pattern), str(p.name)


def test_every_route_and_name_of_before_the_move_is_still_served():
    before = {
        tuple(line.split("\t")) for line in BEFORE.read_text().splitlines() if line.strip("\t")
    }
    now = set(routes(get_resolver().url_patterns))
    assert len(before) > 150
    assert before - now == set()


def test_provider_pages_resolve_to_their_packages():
    from django.urls import resolve

    assert resolve("/mturk/hit/1/").func.__module__ == "annotation.crowd.mturk.views"
    assert resolve("/join/abc/").func.__module__ == "annotation.crowd.local.views"
    assert resolve("/api/mturk/reconcile/").func.__module__ == "annotation.crowd.mturk.api"
