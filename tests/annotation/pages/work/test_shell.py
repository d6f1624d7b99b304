"""A worker's task page is rendered once per HIT (pages/work/shell.py, issue 32): a repeat view
renders no template and reads no more SQL, and what differs per view (the signed image URLs,
the CSRF token, an error, messages) is always the viewer's own, never another assignment's."""

import re

import pytest
from django.core import signing
from django.core.cache import caches
from django.db import connection
from django.template import Context, Engine, Template, TemplateSyntaxError
from django.test import Client
from django.test.signals import template_rendered
from django.test.utils import CaptureQueriesContext

from annotation.flows.bison.vocabulary import BisonStage
from annotation.models import Assignment
from annotation.selectors.work.images import SALT
from annotation.services.runs.batches import batch_create, batch_publish
from annotation.services.runs.run_texts import run_instructions_set
from annotation.templatetags.task_shell import MARKER
from config.memory_cache import ObjectMemoryCache
from tests.factories import join

pytestmark = pytest.mark.django_db


def local_batch(run, limit: int | None = 3):
    """HITs of three pairs (one, or more with no limit), for three workers each."""
    return batch_publish(
        batch=batch_create(
            run=run,
            stage=BisonStage.SELECTION,
            provider="local",
            items_per_hit=3,
            limit=limit,
            assignments_per_hit=3,
        )
    )


def _claim(client, batch) -> str:
    response = client.get(f"/work/{batch.pk}/next/")
    assert response.status_code == 302, response.content
    return response["Location"]


def _view(client, url, method="get", data=None):
    """(page, templates rendered, SQL statements) of one request."""
    templates = []

    def seen(sender, template, **kwargs):
        templates.append(template.name)

    template_rendered.connect(seen)
    try:
        with CaptureQueriesContext(connection) as queries:
            response = getattr(client, method)(url, data or {})
    finally:
        template_rendered.disconnect(seen)
    return response, templates, len(queries)


def _assignment(url: str) -> Assignment:
    return Assignment.objects.get(pk=int(url.rstrip("/").rsplit("/", 1)[1]))


def _image_keys(html: str) -> set[str]:
    return set(re.findall(r'<img src="/img/([^/"]+)/\d+-\d+"', html))


def _csrf(html: str) -> str:
    return re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)


def test_a_repeat_view_renders_no_template_and_no_more_sql(client, paired_run):
    batch = local_batch(paired_run)
    join(client, paired_run, "alice")
    url = _claim(client, batch)
    first, first_templates, first_queries = _view(client, url)
    again, again_templates, again_queries = _view(client, url)
    assert first.status_code == again.status_code == 200
    assert "annotation/task_bison_selection.html" in first_templates
    assert again_templates == []  # the HIT's shell, filled in
    # The assignment and invitation check, and the session (in the database here).
    assert again_queries <= 2 < first_queries

    # The same page but for what differs per view: the masked CSRF token and the page key
    # (signed with a timestamp, so only equal within one second).
    def same(html):
        html = html.replace(_csrf(html), "CSRF")
        return re.sub(r'<img src="/img/[^/"]+/', '<img src="/img/KEY/', html)

    assert same(first.content.decode()) == same(again.content.decode())
    assert MARKER not in again.content.decode()
    assert again.content.decode().count('class="question"') == 3


def test_what_varies_is_each_assignments_own(paired_run):
    batch = local_batch(paired_run)
    alice, bob = Client(), Client(enforce_csrf_checks=True)
    join(alice, paired_run, "alice")
    join(bob, paired_run, "bob")
    alice_url = _claim(alice, batch)
    alice_assignment = _assignment(alice_url)
    bob_url = _claim(bob, batch)
    bob_assignment = _assignment(bob_url)
    assert bob_assignment.hit_id == alice_assignment.hit_id  # one shell for both

    # Alice builds the HIT's shell, with an error of her own (one question answered).
    refused = alice.post(alice_url, {"q0": "none"})
    assert refused.status_code == 400 and 'id="error"' in refused.content.decode()
    alice_page = alice.get(alice_url).content.decode()
    bob_page, templates, _ = _view(bob, bob_url)
    bob_page = bob_page.content.decode()
    assert templates == []  # Bob's page is Alice's HIT's shell ...
    assert 'id="error"' not in bob_page and "not answered" not in bob_page  # ... not her error
    assert "checked" not in bob_page  # nor anyone's answers

    # Each page's image URLs are signed for its own assignment, and only its own.
    alice_keys, bob_keys = _image_keys(alice_page), _image_keys(bob_page)
    assert len(alice_keys) == len(bob_keys) == 1
    assert [signing.loads(k, salt=SALT) for k in bob_keys] == [bob_assignment.pk]
    assert [signing.loads(k, salt=SALT) for k in alice_keys] == [alice_assignment.pk]
    assert all(key not in bob_page for key in alice_keys)
    image = re.search(r'<img src="(/img/[^"]+)"', bob_page).group(1)
    assert bob.get(image).status_code == 200
    # Each page's CSRF token is its session's: Bob's form posts with his own.
    assert _csrf(bob_page) != _csrf(alice_page)
    answers = {f"q{n}": "none" for n in range(3)}
    posted = bob.post(bob_url, {**answers, "csrfmiddlewaretoken": _csrf(bob_page)})
    assert posted.status_code == 302

    # Alice's thanks show on her next page only.
    assert alice.post(alice_url, answers).status_code == 302
    thanked = alice.get(alice_url, follow=True)
    assert "Thank you, your answers were saved." in thanked.content.decode()
    carol = Client()
    join(carol, paired_run, "carol")
    carol_page, templates, _ = _view(carol, _claim(carol, batch))
    carol_page = carol_page.content.decode()
    assert templates == []  # the HIT's last slot, from its shell
    assert "Thank you" not in carol_page and 'id="error"' not in carol_page
    assert _image_keys(carol_page).isdisjoint(alice_keys | bob_keys)


def test_the_shell_holds_nothing_of_a_request(client, paired_run):
    batch = local_batch(paired_run)
    join(client, paired_run, "alice")
    url = _claim(client, batch)
    page = client.get(url).content.decode()
    hit_id = _assignment(url).hit_id
    shell = caches["shells"].get(f"task-shell:v1:{hit_id}")
    static = "".join(part for part in shell.parts if isinstance(part, str))
    assert _csrf(page) not in static and "csrfmiddlewaretoken" not in static
    assert all(key not in static for key in _image_keys(page))
    assert "/img/{page-key}/" not in static  # the key's places are parts of their own
    assert static.count('class="question"') == 3


def test_new_instructions_build_the_shell_again(client, paired_run):
    batch = local_batch(paired_run)
    join(client, paired_run, "alice")
    url = _claim(client, batch)
    assert "Discriminative captions" in client.get(url).content.decode()
    run_instructions_set(run=paired_run, stage=BisonStage.SELECTION, text="Read twice.")
    page, templates, _ = _view(client, url)
    assert templates  # built again
    assert "Read twice." in page.content.decode()
    assert "Discriminative captions" not in page.content.decode()


def test_a_varying_part_renders_in_place_and_refuses_blocks():
    engine = Engine(libraries={"task_shell": "annotation.templatetags.task_shell"})
    template = Template("{% load task_shell %}a{% varies %}{{ x }}{% endvaries %}b", engine=engine)
    assert template.render(Context({"x": "<i>"})) == "a&lt;i&gt;b"
    with pytest.raises(TemplateSyntaxError, match="BlockNode"):
        Template(
            "{% load task_shell %}{% varies %}{% block b %}{% endblock %}{% endvaries %}",
            engine=engine,
        )


def test_object_memory_cache_keeps_objects_and_drops_the_least_recent():
    cache = ObjectMemoryCache("test-lru", {"OPTIONS": {"MAX_ENTRIES": 2}})
    value = object()
    cache.set("a", value)
    assert cache.get("a") is value  # not a copy
    cache.set("b", 2)
    cache.get("a")
    cache.set("c", 3)  # "b" was used least recently
    assert cache.get("b") is None and cache.get("a") is value and cache.get("c") == 3
    cache.set("d", 4, timeout=-1)
    assert cache.get("d", "gone") == "gone"
    # Another thread's cache object of the same location holds the same entries.
    assert ObjectMemoryCache("test-lru", {}).get("c") == 3
