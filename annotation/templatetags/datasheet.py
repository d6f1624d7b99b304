"""`datasheet_html`: the Markdown our datasheets are written in (`services/release/datasheet.py`:
headings, bullets, small tables, fenced code, `code`, **bold**, *emphasis*) as HTML for the exports page.
Every character is escaped first; only these few constructs become tags."""

from __future__ import annotations

import re

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

register = template.Library()

_INLINE = [
    (re.compile(r"`([^`]+)`"), r"<code>\1</code>"),
    (re.compile(r"\*\*([^*]+)\*\*"), r"<strong>\1</strong>"),
    (re.compile(r"(?<![*\w])\*([^*\s][^*]*)\*(?!\w)"), r"<em>\1</em>"),
]


def _inline(text: str) -> str:
    out: str = escape(text)
    for pattern, replacement in _INLINE:
        out = pattern.sub(replacement, out)
    return out


@register.filter
def datasheet_html(markdown: str) -> SafeString:
    html: list[str] = []
    code: list[str] | None = None
    bullets = False
    table = False
    for line in markdown.splitlines():
        if code is not None:
            if line.startswith("```"):
                html.append("<pre><code>" + escape("\n".join(code)) + "</code></pre>")
                code = None
            else:
                code.append(line)
            continue
        if bullets and not line.startswith("- "):
            html.append("</ul>")
            bullets = False
        if table and not line.startswith("|"):
            html.append("</table></div>")
            table = False
        if line.startswith("```"):
            code = []
        elif heading := re.match(r"(#{1,4}) (.*)", line):
            level = len(heading.group(1)) + 1  # the page's own h1 is the title bar
            html.append(f"<h{level}>{_inline(heading.group(2))}</h{level}>")
        elif line.startswith("|"):
            if set(line.strip()) <= set("|-: "):
                continue  # the header's rule, "|---|---|" as our tables write it
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            tag = "td" if table else "th"
            if not table:  # in its own scrolling box: a wide table never widens the page
                html.append('<div class="scroll-x"><table class="queue">')
                table = True
            html.append("<tr>" + "".join(f"<{tag}>{_inline(c)}</{tag}>" for c in cells) + "</tr>")
        elif line.startswith("- "):
            if not bullets:
                html.append("<ul>")
                bullets = True
            html.append(f"<li>{_inline(line[2:])}</li>")
        elif line.strip():
            html.append(f"<p>{_inline(line)}</p>")
    if code is not None:
        html.append("<pre><code>" + escape("\n".join(code)) + "</code></pre>")
    if bullets:
        html.append("</ul>")
    if table:
        html.append("</table></div>")
    return mark_safe("\n".join(html))  # noqa: S308 - every piece of text escaped above
