"""A run's data browser: the items of a stage with their answers, agreement, aggregate and
workers, filtered and paged (`selectors/datasets/data_browser.py`), with links to held reviews."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from annotation.flow_registry import stage_label
from annotation.models import Run
from annotation.permissions import Action, require
from annotation.selectors.datasets.data_browser import (
    AGREEMENT,
    GOLD,
    HELD,
    item_rows,
    run_data_stages,
    run_items,
)

PER_PAGE = 25


def _choice(request: HttpRequest, name: str, allowed: tuple[str, ...] | list[str]) -> str:
    value = request.GET.get(name, "")
    return value if value in allowed else ""


@login_required
@require_GET
def run_data_page(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    require(request.user, Action.VIEW, run=run)
    stages = run_data_stages(run)
    wanted = {
        "stage": _choice(request, "stage", stages) or (stages[0] if stages else ""),
        "agreement": _choice(request, "agreement", AGREEMENT),
        "gold": _choice(request, "gold", GOLD),
        "held": _choice(request, "held", HELD),
    }
    page = Paginator(run_items(run=run, **wanted), PER_PAGE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    context = {
        "run": run,
        "stages": [(s, stage_label(s)) for s in stages],
        "wanted": wanted,
        "choices": {"agreement": AGREEMENT, "gold": GOLD, "held": HELD},
        "page": page,
        "rows": item_rows(items=list(page.object_list), stage=wanted["stage"]),
        "query": query.urlencode(),
    }
    return render(request, "annotation/run_data.html", context)
