"""Issue 25's low findings: a `project=` naming a project the caller is no member of answers
as an unknown one."""

import pytest

pytestmark = pytest.mark.django_db


def test_another_projects_id_in_a_run_creation_answers_as_an_unknown_id(two_projects, dataset):
    from rest_framework.test import APIClient

    from annotation.models import Run
    from annotation.permissions import Action, require

    def create(user, project):
        client = APIClient()
        client.force_authenticate(user)
        return client.post("/api/runs/", {"dataset": dataset.pk, "project": project}, "json")

    alice, vic = two_projects["alice"], two_projects["vic"]
    hidden = create(alice, two_projects["beta"].pk)
    missing = create(alice, 10**9)
    assert hidden.status_code == missing.status_code == 404
    assert hidden.json() == missing.json() == {"error": "not found", "detail": "not found"}
    # A member whose role lacks the action: 403 that says so.
    refused = create(vic, two_projects["alpha"].pk)
    assert refused.status_code == 403 and "may not" in refused.json()["error"]
    assert create(alice, two_projects["alpha"].pk).status_code == 201
    assert create(vic, two_projects["gamma"].pk).status_code == 201
    assert not Run.objects.filter(project=two_projects["beta"]).exists()
    # The one check every page and operation calls: the same rule.
    from django.core.exceptions import PermissionDenied
    from django.http import Http404

    with pytest.raises(Http404):
        require(alice, Action.ACT, project=two_projects["beta"])
    with pytest.raises(PermissionDenied):
        require(vic, Action.ACT, project=two_projects["alpha"])
