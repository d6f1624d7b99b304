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


def test_each_page_resolves_to_its_domain_package():
    """One hop from a URL to its view: the page lives in `annotation/pages/<domain>/`."""
    from django.urls import resolve

    one_url_per_domain = {
        "/accounts/login/": "accounts",
        "/health/": "health",
        "/img/k/0-0": "images",
        "/staff/images/1/": "images",
        "/": "dashboard",
        "/projects/": "projects",
        "/review/": "reviews",
        "/review/1/": "reviews",
        "/stop/": "stop",
        "/jobs/1/resume/": "jobs",
        "/datasets/": "datasets",
        "/datasets/import/": "datasets",
        "/runs/new/": "runs",
        "/runs/1/": "runs",
        "/runs/1/texts/": "runs",
        "/runs/1/batches/new/": "batches",
        "/batches/1/preview/": "batches",
        "/batches/1/publish/": "batches",
        "/runs/1/exports/": "exports",
        "/exports/1/files/a.json": "exports",
        "/runs/1/workers/": "workers",
        "/runs/1/workers/notify/": "workers",
        "/runs/1/workers/2/block/": "workers",
    }
    found = {url: resolve(url).func.__module__ for url in one_url_per_domain}
    assert found == {
        url: found[url]
        for url, domain in one_url_per_domain.items()
        if found[url].startswith(f"annotation.pages.{domain}.")
    }
    assert set(one_url_per_domain.values()) == {
        p.parent.name
        for p in Path(__file__).parents[3].joinpath("annotation", "pages").glob("*/urls.py")
    }
