"""Stored embeddings in the API: a dataset's sets (list, start encoding with a model) and one
set (detail with its job's progress, delete). Datasets are shared, but a set belongs to the
project it was encoded for (issue 47): listing shows your projects' sets, viewing needs a role
in the set's project, encoding and deleting the researcher role there. Another project's set
answers 404, as an unknown id."""

from __future__ import annotations

from typing import Any

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers, status
from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.errors import ERRORS, ServiceAPIView
from annotation.api.jobs import JobOutput
from annotation.api.paging import PAGE_PARAMETERS, page_of, paginated
from annotation.encoders.models import EmbeddingSet
from annotation.encoders.names import model_name_check
from annotation.encoders.selectors import embedding_set_estimate, embedding_sets_of
from annotation.encoders.services import DEVICES, DTYPES, embedding_set_delete, embedding_set_start
from annotation.models import Dataset, Project
from annotation.permissions import Action, can, is_staff, visible_projects
from annotation.services.runs.projects import project_default
from pipeline.errors import InputError


class EmbeddingSetOutput(serializers.ModelSerializer):
    """A stored set with its provenance, size, counts (with the estimate made at its start)
    and its encoding job (progress, images/s in the message)."""

    label = serializers.CharField(  # type: ignore[assignment]  # a field named "label": DRF's metaclass moves it to _declared_fields
        help_text="<model>@<checkpoint sha256, 12 digits>"
    )
    job = JobOutput(allow_null=True)

    class Meta:
        model = EmbeddingSet
        fields = [
            "id",
            "dataset",
            "project",
            "label",
            "library",
            "family",
            "model_name",
            "checkpoint",
            "checkpoint_sha256",
            "checkpoint_format",
            "preprocessing",
            "preprocessing_sha256",
            "license",
            "source",
            "dtype",
            "dim",
            "device",
            "state",
            "size_bytes",
            "counts",
            "job",
            "created_at",
        ]


class EmbeddingSetListApi(ServiceAPIView):
    required_action = Action.VIEW

    @extend_schema(
        operation_id="dataset_embeddings_list",
        parameters=PAGE_PARAMETERS,
        responses={200: page_of(EmbeddingSetOutput), **ERRORS},
    )
    def get(self, request: Request, dataset_id: int) -> Response:
        """The dataset's stored embeddings, newest first."""
        dataset = get_object_or_404(Dataset, pk=dataset_id)
        sets = embedding_sets_of(dataset=dataset, projects=visible_projects(request.user))
        return paginated(EmbeddingSetOutput, sets, request, self)


class EmbeddingSetStartApi(ServiceAPIView):
    """Encode the dataset's images and captions with the model in `checkpoint` (a
    transformers CLIP or SigLIP folder inside CROWDVL_IMPORT_DIR). Answers 202 with the set
    (the stored one when the same model, weights and preprocessing were encoded before);
    `estimate_only` answers 200 with the estimate and starts nothing. The set is for
    `project`'s runs (by id; default: your only project where you are a researcher, else the
    Default project), where you must be a researcher."""

    required_action = Action.ACT

    class InputSerializer(serializers.Serializer):
        library = serializers.ChoiceField(choices=["transformers"], default="transformers")
        model_name = serializers.CharField(
            required=False, default="", allow_blank=True, max_length=200
        )
        checkpoint = serializers.CharField(
            max_length=500, help_text="a model folder, relative to CROWDVL_IMPORT_DIR"
        )
        device = serializers.ChoiceField(choices=DEVICES, default="auto")
        dtype = serializers.ChoiceField(choices=DTYPES, default="float16")
        license = serializers.CharField(required=False, default="", allow_blank=True)
        source = serializers.CharField(  # type: ignore[assignment]  # as "label" above
            required=False, default="", allow_blank=True, help_text="where the weights came from"
        )
        estimate_only = serializers.BooleanField(default=False)
        # An id, looked up after validation: another project's answers 404 as an unknown one.
        project = serializers.IntegerField(required=False, allow_null=True, default=None)

        def validate_model_name(self, value: str) -> str:
            # A label that also names files (as a slug): refused here when it reads as a path.
            try:
                return model_name_check(value)
            except InputError as exc:
                raise serializers.ValidationError(exc.message) from None

    class EstimateSerializer(serializers.Serializer):
        images = serializers.IntegerField()
        captions = serializers.IntegerField()
        images_per_s = serializers.FloatField()
        captions_per_s = serializers.FloatField()
        seconds = serializers.FloatField()

    @extend_schema(
        operation_id="dataset_embeddings_create",
        request=InputSerializer,
        responses={202: EmbeddingSetOutput, 200: EstimateSerializer, **ERRORS},
    )
    def post(self, request: Request, dataset_id: int) -> Response:
        dataset = get_object_or_404(Dataset, pk=dataset_id)
        data = EmbeddingSetStartApi.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        options: dict[str, Any] = dict(data.validated_data)
        options.pop("library")
        options["project"] = _project_to_act_in(self, request, options["project"])
        if options.pop("estimate_only"):
            estimate = embedding_set_estimate(dataset=dataset, checkpoint=options["checkpoint"])
            return Response(EmbeddingSetStartApi.EstimateSerializer(estimate).data)
        embedding_set = embedding_set_start(dataset=dataset, **options)
        embedding_set.refresh_from_db()
        return Response(EmbeddingSetOutput(embedding_set).data, status=status.HTTP_202_ACCEPTED)


class EmbeddingSetDetailApi(ServiceAPIView):
    required_action = Action.VIEW

    @extend_schema(
        operation_id="embeddings_retrieve", responses={200: EmbeddingSetOutput, **ERRORS}
    )
    def get(self, request: Request, set_id: int) -> Response:
        embedding_set = get_object_or_404(EmbeddingSet.objects.select_related("job"), pk=set_id)
        self.require(request, project=embedding_set.project)
        return Response(EmbeddingSetOutput(embedding_set).data)


class EmbeddingSetDeleteApi(ServiceAPIView):
    required_action = Action.ACT

    @extend_schema(
        operation_id="embeddings_destroy",
        parameters=[
            OpenApiParameter(
                "force",
                bool,
                description="delete even when runs used the set (they read its file)",
            )
        ],
        responses={204: None, **ERRORS},
    )
    def delete(self, request: Request, set_id: int) -> Response:
        """Remove the set and its file: refused with 400 while its job runs, and while runs
        that used it exist (the refusal names them) unless `force=true`."""
        embedding_set = get_object_or_404(EmbeddingSet.objects.select_related("project"), pk=set_id)
        self.require(request, project=embedding_set.project)
        force = request.query_params.get("force", "").lower() in {"1", "true", "yes"}
        embedding_set_delete(embedding_set=embedding_set, force=force)
        return Response(status=status.HTTP_204_NO_CONTENT)


def _project_to_act_in(view: ServiceAPIView, request: Request, project_id: int | None) -> Project:
    """The project a new set is for: the one named (a researcher's there, else 404/403), or
    without one the only project where the user is a researcher, else the Default project
    (as runs made without one)."""
    if project_id is None:
        mine = list(visible_projects(request.user, Action.ACT)[:2])
        if len(mine) == 1 and not is_staff(request.user):
            return mine[0]
        project = project_default()
        # Everyone may know the Default project: a 403 that says what to do.
        if not can(request.user, Action.ACT, project=project):
            raise PermissionDenied(
                "you may not encode for the Default project: name a project of yours"
            )
        return project
    project = get_object_or_404(Project, pk=project_id)
    view.require(request, project=project)
    return project
