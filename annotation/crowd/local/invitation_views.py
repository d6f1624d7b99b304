"""Pages for inviting local workers: create links in bulk, download them, revoke. A run's
researchers only: a link lets anyone work as the invited worker."""

from __future__ import annotations

import csv

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from annotation.crowd.local.invitations import invitation_revoke, invitations_create, labels_from
from annotation.errors import ServiceError
from annotation.models import Invitation, Run
from annotation.permissions import Action, require
from annotation.selectors.links import invitation_link, loopback_warning, public_base_url
from annotation.selectors.work.invitations import run_consent
from annotation.spreadsheet import spreadsheet_cell


class InvitationsForm(forms.Form):
    labels = forms.CharField(
        label="Emails or ids, one per line (or a CSV's first column)",
        help_text="each person gets their own link; someone invited before keeps theirs, and "
        "a header row (email, worker_id) is skipped",
        widget=forms.Textarea(attrs={"rows": 6, "cols": 50, "id": "labels"}),
    )


@login_required
def invitations_page(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    require(request.user, Action.ACT, run=run)
    form = InvitationsForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            made = invitations_create(run=run, labels=labels_from(form.cleaned_data["labels"]))
        except ServiceError as exc:
            form.add_error("labels", str(exc))
        else:
            messages.success(request, f"{len(made)} invitation links ready.")
            return redirect("invitations", run_id=run.pk)
    invitations = run.invitations.select_related("worker").order_by("pk")
    rows = [{"invitation": i, "link": invitation_link(request, i)} for i in invitations]
    context = {
        "run": run,
        "rows": rows,
        "form": form,
        "consent": run_consent(run),
        "loopback": loopback_warning(public_base_url(request)),
    }
    return render(
        request, "annotation/invitations.html", context, status=400 if form.errors else 200
    )


@login_required
def invitations_csv(request: HttpRequest, run_id: int) -> HttpResponse:
    run = get_object_or_404(Run, pk=run_id)
    require(request.user, Action.DOWNLOAD, run=run)
    response = HttpResponse(content_type="text/csv")
    response["Content-Disposition"] = f'attachment; filename="run-{run.pk}-invitations.csv"'
    writer = csv.writer(response)
    writer.writerow(["label", "link", "revoked", "consented_at"])
    for invitation in run.invitations.order_by("pk"):
        writer.writerow(
            [
                spreadsheet_cell(invitation.label),
                invitation_link(request, invitation),
                "yes" if invitation.revoked_at else "",
                invitation.consented_at.isoformat() if invitation.consented_at else "",
            ]
        )
    return response


@login_required
@require_POST
def invitation_revoke_view(request: HttpRequest, invitation_id: int) -> HttpResponse:
    invitation = get_object_or_404(Invitation.objects.select_related("run"), pk=invitation_id)
    require(request.user, Action.ACT, run=invitation.run)
    invitation_revoke(invitation=invitation)
    messages.success(request, f"Invitation of {invitation.label} revoked.")
    return redirect("invitations", run_id=invitation.run_id)
