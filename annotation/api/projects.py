"""The projects a user may see, with their role and whether they may create runs there."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.errors import ERRORS, ServiceAPIView
from annotation.api.paging import PAGE_PARAMETERS, page_of, paginated
from annotation.models import Project, ProjectRole
from annotation.permissions import Action
from annotation.selectors.runs.listing import project_list
from annotation.services.runs.projects import DEFAULT_PROJECT, project_default


class ProjectListApi(ServiceAPIView):
    required_action = Action.VIEW

    class OutputSerializer(serializers.ModelSerializer):
        default = serializers.BooleanField(source="is_default")
        role = serializers.ChoiceField(choices=ProjectRole.choices, allow_null=True)
        may_create_runs = serializers.BooleanField()

        class Meta:
            model = Project
            fields = ["id", "name", "description", "default", "role", "may_create_runs"]

    @extend_schema(
        operation_id="projects_list",
        parameters=PAGE_PARAMETERS,
        responses={200: page_of(OutputSerializer), **ERRORS},
    )
    def get(self, request: Request) -> Response:
        """Your projects and the Default project (where `POST /api/runs/` puts a run made
        without `project`), by name, each with your role (null where you are no member) and
        `may_create_runs`: a script checks its project here before it imports anything."""
        project_default()  # a fresh install lists it too, as the projects page does
        projects = project_list(user=request.user, default=DEFAULT_PROJECT)
        return paginated(ProjectListApi.OutputSerializer, projects, request, self)
