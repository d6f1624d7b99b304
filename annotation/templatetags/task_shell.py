"""`{% varies %}…{% endvaries %}`: a part of a worker's task page that differs from one request
to the next (the CSRF token, messages, an error, the signed-in bar, a provider's hidden
fields). An ordinary render renders it in place. When the page's static part is built once per
HIT (`pages/work/shell.py`), it leaves a marker instead and records its nodes, which are then
rendered alone for each request: nothing of one request or assignment is ever in the shell."""

from __future__ import annotations

import secrets

from django import template
from django.template.base import Node, NodeList, Parser, Token
from django.template.context import Context
from django.template.loader_tags import BlockNode

register = template.Library()

# The context key of a shell render: the list the varying parts append their nodes to.
SHELL_SLOTS = "crowdvl_shell_slots"
# What a varying part leaves in the shell: random per process, so no rendered text (a caption,
# a title) can forge one.
MARKER = f"\x00varies-{secrets.token_hex(8)}\x00"


class VariesNode(Node):
    def __init__(self, nodelist: NodeList) -> None:
        self.nodelist = nodelist

    def render(self, context: Context) -> str:
        slots = context.get(SHELL_SLOTS)
        if slots is None:
            return self.nodelist.render(context)
        slots.append(self.nodelist)
        return MARKER


@register.tag
def varies(parser: Parser, token: Token) -> VariesNode:
    if len(token.split_contents()) != 1:
        raise template.TemplateSyntaxError("{% varies %} takes no arguments")
    nodelist = parser.parse(("endvaries",))
    where = parser.origin.name if parser.origin else "a template"
    parser.delete_first_token()
    # Rendered alone, a part sees neither the page's other blocks nor an enclosing part.
    for kind in (BlockNode, VariesNode):
        if nodelist.get_nodes_by_type(kind):
            raise template.TemplateSyntaxError(
                f"{where}, line {token.lineno}: a {{% varies %}} part may not "
                f"hold a {kind.__name__} (it is rendered alone, per request)"
            )
    return VariesNode(nodelist)
