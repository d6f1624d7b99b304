"""A worker's task page rendered once per HIT (issue 32), then filled in for each view.

The shell is the page's template rendered from the HIT's view alone, with no request: the
parts that differ per request are `{% varies %}` parts (templatetags/task_shell.py), left as
markers and rendered for each view by themselves (CSRF token, messages, an error, hidden
fields, the signed-in bar); the image URLs hold the page-key placeholder, filled in with the
assignment's signed page key (selectors/work/images.py). So nothing of one request, worker or
assignment is ever in a shell, and what a view adds never comes from another's.

Shells live in this process's memory (the "shells" cache, objects not pickled: they hold
compiled template nodes), one per HIT. A HIT's questions never change (a re-offer makes a new
HIT); what can change after it exists is the run's instructions for the stage, so a shell
built for other instructions (or another template) is built again."""

from __future__ import annotations

import secrets
from dataclasses import dataclass, replace
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.core.cache import caches
from django.http import HttpRequest
from django.template import Template as EngineTemplate
from django.template.base import NodeList
from django.template.context import make_context
from django.template.loader import get_template

from annotation.selectors.work.images import PLACEHOLDER, URL_PREFIX
from annotation.selectors.work.task_page import hit_view
from annotation.templatetags.task_shell import MARKER, SHELL_SLOTS

KEY = -1  # in `Shell.parts`: where the assignment's page key goes
# Where the page key and the CSRF token go in a plain view's page, while it is made: random
# per process, and only letters and digits (as a real token), so escaping leaves them as
# they are.
KEY_MARKER = f"pagekey{secrets.token_hex(16)}"
TOKEN_MARKER = f"csrftoken{secrets.token_hex(16)}"
SECONDS = 6 * 3600


@dataclass(frozen=True)
class Shell:
    hit_id: int
    template_name: str
    instructions: str
    template: EngineTemplate
    # Static text, or an index into `slots` (a varying part), or KEY.
    parts: tuple[str | int, ...]
    slots: tuple[NodeList, ...]
    # The whole page of a plain view (`shell_fill_plain`): its text split where the CSRF
    # token goes, each piece split where the page key goes, in UTF-8 (a view then joins
    # bytes, with no encoding of the whole page per request).
    plain: tuple[tuple[bytes, ...], ...] = ()


def shell_build(*, hit_id: int, instructions: str) -> Shell:
    """Render the HIT's task page with no request, its varying parts left out."""
    view = hit_view(hit_id=hit_id)
    template = get_template(view["template"])
    slots: list[NodeList] = []
    html = template.render({**view, "instructions": instructions, SHELL_SLOTS: slots})
    pieces = html.split(MARKER)
    if len(pieces) != len(slots) + 1:  # a marker inside a loop, or one read from the data
        raise ValueError(f"{view['template']}: {len(slots)} varying parts, {len(pieces)} pieces")
    key_url = f"{URL_PREFIX}{PLACEHOLDER}/"
    parts: list[str | int] = []
    for n, piece in enumerate(pieces):
        if n:
            parts.append(n - 1)
        for m, text in enumerate(piece.split(key_url)):
            if m:
                parts += [URL_PREFIX, KEY, "/"]
            parts.append(text)
    # Adjacent static texts joined, so a view joins as few strings as it can.
    merged: list[str | int] = []
    for part in parts:
        if isinstance(part, str) and merged and isinstance(merged[-1], str):
            merged[-1] += part
        elif part != "":
            merged.append(part)
    shell = Shell(
        hit_id=hit_id,
        template_name=view["template"],
        instructions=instructions,
        template=template.template,  # type: ignore[attr-defined]
        parts=tuple(merged),
        slots=tuple(slots),
    )
    return replace(shell, plain=_plain_parts(shell))


def _plain_parts(shell: Shell) -> tuple[tuple[bytes, ...], ...]:
    """The page of a plain view, as the worker's GET of their own open task has it: no error,
    no messages, nobody signed in, no answers in progress to restore (it saves them). Its
    varying parts are rendered once, from a request made up here (so nothing of a real one is
    in them), with the CSRF token left as a marker."""
    request = HttpRequest()
    request.user = AnonymousUser()
    slots = _slots(shell, request, {"error": None, "csrf_token": TOKEN_MARKER, "task_draft": {}})
    text = "".join(
        part if isinstance(part, str) else KEY_MARKER if part == KEY else slots[part]
        for part in shell.parts
    )
    return tuple(
        tuple(part.encode() for part in piece.split(KEY_MARKER))
        for piece in text.split(TOKEN_MARKER)
    )


def task_shell(*, hit_id: int, instructions: str) -> Shell:
    """The HIT's shell for these instructions: from this process's memory once built (always
    built afresh under DEBUG, where templates may be edited while the server runs)."""
    if settings.DEBUG:
        return shell_build(hit_id=hit_id, instructions=instructions)
    store = caches["shells"]
    cache_key = f"task-shell:v1:{hit_id}"
    shell: Shell | None = store.get(cache_key)
    if shell is None or shell.instructions != instructions:
        shell = shell_build(hit_id=hit_id, instructions=instructions)
        store.set(cache_key, shell, SECONDS)
    return shell


def _slots(shell: Shell, request: HttpRequest, context: dict[str, Any]) -> list[str]:
    rendering = make_context(context, request, autoescape=shell.template.engine.autoescape)
    with (
        rendering.render_context.push_state(shell.template),
        rendering.bind_template(shell.template),
    ):
        rendering.template_name = shell.template_name
        return [nodelist.render(rendering) for nodelist in shell.slots]


def shell_fill(shell: Shell, *, request: HttpRequest, key: str, context: dict[str, Any]) -> str:
    """The page of one view: its varying parts rendered from `context` and the request (the
    context processors' `user`, `messages`, the CSRF token), its images under `key`."""
    slots = _slots(shell, request, context)
    return "".join(
        part if isinstance(part, str) else key if part == KEY else slots[part]
        for part in shell.parts
    )


def shell_fill_plain(shell: Shell, *, token: str, key: str) -> bytes:
    """The page of a plain view (see `_plain_parts`) with the request's masked CSRF `token`
    and its images under `key`: what `shell_fill` gives such a view, in UTF-8 (the caller
    checks the response's charset is), with no template work."""
    key_bytes = key.encode()
    return token.encode().join([key_bytes.join(piece) for piece in shell.plain])
