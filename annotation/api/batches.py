"""Batches in the API: creating a draft, the list and one batch, its live status (counts by
state and the newest assignments) and a preview of its task pages. What changes a batch's
state is in `batch_actions.py`."""

from __future__ import annotations

from dataclasses import asdict

from django.conf import settings
from django.http import Http404
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema, extend_schema_field
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.errors import ERRORS, ServiceAPIView
from annotation.api.paging import PAGE_PARAMETERS, filters, page_of, paginated
from annotation.flow_registry import stage_names
from annotation.models import Batch, BatchStatus, Run
from annotation.permissions import Action
from annotation.providers import web_provider_check
from annotation.selectors.datasets.image_availability import batch_images_check
from annotation.selectors.money.adaptive_cost import batch_adaptive_cost
from annotation.selectors.runs.batch_live import LIVE_STATES, batch_live_status
from annotation.selectors.runs.listing import batch_list, batches_counted
from annotation.selectors.work.preview import batch_preview, preview_record
from annotation.services.runs.batches import batch_create, batch_publish, batch_warnings


def batch_visible(view: ServiceAPIView, request: Request, batch_id: int) -> Batch:
    """The batch, if the request's user may act on its run (404 / 403 otherwise)."""
    batch = get_object_or_404(Batch.objects.select_related("run"), pk=batch_id)
    view.require(request, run=batch.run)
    return batch


def batch_output(batch: Batch) -> dict:
    """The batch as the list shows it, with its counts."""
    return dict(BatchOutput(batches_counted().get(pk=batch.pk)).data)


class BatchCreateApi(ServiceAPIView):
    required_action = Action.ACT

    class InputSerializer(serializers.Serializer):
        stage = serializers.ChoiceField(choices=stage_names())
        provider = serializers.CharField(default=settings.CROWDVL_DEFAULT_PROVIDER)
        items_per_hit = serializers.IntegerField(min_value=1, required=False)
        assignments_per_hit = serializers.IntegerField(min_value=1, required=False)
        # At most this many waiting items (e.g. a stage's first, calibration batch).
        limit = serializers.IntegerField(min_value=1, required=False)
        reward = serializers.CharField(required=False)
        lifetime_seconds = serializers.IntegerField(default=7 * 24 * 3600)
        assignment_duration_seconds = serializers.IntegerField(default=3600)
        auto_approval_delay_seconds = serializers.IntegerField(required=False)
        first_claim_seconds = serializers.IntegerField(required=False)
        skip_pilot = serializers.BooleanField(required=False)
        allow_low_pay = serializers.BooleanField(required=False)
        qualifications = serializers.DictField(required=False, default=dict)
        seed = serializers.IntegerField(default=0)
        publish = serializers.BooleanField(default=True)
        # Task options: ECCV rounds take a direction and may skip the rationale questions.
        direction = serializers.ChoiceField(choices=["i2t", "t2i"], required=False)
        follow_ups = serializers.BooleanField(default=True)
        # Adaptive runs (ECCV, CxC, caption quality): a follow-up batch of the judged items
        # still too uncertain.
        more_judgments = serializers.BooleanField(required=False)
        relax_image_disjointness = serializers.BooleanField(
            required=False,
            help_text="BISON stage 3, a trusted pool only: a worker may see an image again in "
            "another HIT (a cheating risk; recorded in the datasheet)",
        )

    class OutputSerializer(serializers.ModelSerializer):
        hits = serializers.IntegerField(source="hits.count")
        warnings = serializers.SerializerMethodField()
        adaptive_cost = serializers.SerializerMethodField(
            help_text="an adaptive run's first batch: judgments and cost over all rounds "
            "(minimum, expected from the simulation named in `source`, maximum); else null"
        )

        class Meta:
            model = Batch
            fields = [
                "id",
                "run",
                "stage",
                "provider",
                "status",
                "items_per_hit",
                "assignments_per_hit",
                "reward",
                "lifetime_seconds",
                "assignment_duration_seconds",
                "auto_approval_delay_seconds",
                "options",
                "qualifications",
                "hits",
                "warnings",
                "adaptive_cost",
            ]

        def get_warnings(self, batch: Batch) -> list[str]:
            return batch_warnings(batch=batch)

        @extend_schema_field(serializers.DictField(allow_null=True))
        def get_adaptive_cost(self, batch: Batch) -> dict | None:
            found = batch_adaptive_cost(batch=batch)
            return None if found is None else found.as_dict()

    @extend_schema(request=InputSerializer, responses={201: OutputSerializer, **ERRORS})
    def post(self, request: Request, run_id: int) -> Response:
        """Create a batch of HITs for a stage of the run and, unless `publish` is false,
        publish it (a draft can be published later: `POST /api/batches/<id>/publish/`).
        The simulated crowd is offered only with DJANGO_DEBUG=1."""
        run = get_object_or_404(Run, pk=run_id)
        self.require(request, run=run)
        data = BatchCreateApi.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        web_provider_check(data.validated_data["provider"])
        publish = data.validated_data.pop("publish")
        options = {"follow_ups": data.validated_data.pop("follow_ups")}
        for key in (
            "direction",
            "more_judgments",
            "first_claim_seconds",
            "skip_pilot",
            "allow_low_pay",
            "relax_image_disjointness",
        ):
            if key in data.validated_data:
                options[key] = data.validated_data.pop(key)
        batch = batch_create(run=run, options=options, **data.validated_data)
        if publish:
            batch_images_check(batch=batch)
            batch = batch_publish(batch=batch)
        return Response(BatchCreateApi.OutputSerializer(batch).data, status=status.HTTP_201_CREATED)


class BatchOutput(BatchCreateApi.OutputSerializer):
    """A batch as `POST /api/runs/<id>/batches/` answers it, with its dates. `warnings` (what
    to know before publishing: a cost estimate, several queries) and `adaptive_cost` are computed
    for drafts only;
    a published batch's are in its `batch.published` event."""

    hits = serializers.IntegerField(source="n_hits")
    warnings = serializers.SerializerMethodField()

    def get_warnings(self, batch: Batch) -> list[str]:
        return batch_warnings(batch=batch) if batch.status == BatchStatus.DRAFT else []

    @extend_schema_field(serializers.DictField(allow_null=True))
    def get_adaptive_cost(self, batch: Batch) -> dict | None:
        if batch.status != BatchStatus.DRAFT:
            return None  # as `warnings`: what to know before publishing
        found = batch_adaptive_cost(batch=batch)
        return None if found is None else found.as_dict()

    class Meta(BatchCreateApi.OutputSerializer.Meta):
        fields = [*BatchCreateApi.OutputSerializer.Meta.fields, "created_at", "published_at"]


class BatchListApi(ServiceAPIView):
    required_action = Action.VIEW

    class FilterSerializer(serializers.Serializer):
        stage = serializers.ChoiceField(choices=stage_names(), required=False)
        status = serializers.ChoiceField(choices=BatchStatus.values, required=False)
        provider = serializers.CharField(required=False)

    @extend_schema(
        operation_id="runs_batches_list",
        parameters=[FilterSerializer, *PAGE_PARAMETERS],
        responses={200: page_of(BatchOutput), **ERRORS},
    )
    def get(self, request: Request, run_id: int) -> Response:
        """The run's batches, newest first."""
        run = get_object_or_404(Run, pk=run_id)
        self.require(request, run=run)
        wanted = filters(BatchListApi.FilterSerializer, request)
        batches = batch_list(user=request.user, run=run.pk, **wanted)
        return paginated(BatchOutput, batches, request, self)


class BatchDetailApi(ServiceAPIView):
    required_action = Action.VIEW

    @extend_schema(responses={200: BatchOutput, **ERRORS})
    def get(self, request: Request, batch_id: int) -> Response:
        batch = get_object_or_404(batch_list(user=request.user), pk=batch_id)
        return Response(BatchOutput(batch).data)


class BatchStatusApi(ServiceAPIView):
    """A batch's assignments now: counts by live state (working, timed_out, returned,
    submitted, approved, rejected) and the newest 200 with the worker's pseudonym."""

    required_action = Action.VIEW

    class RowSerializer(serializers.Serializer):
        assignment = serializers.IntegerField()
        hit = serializers.IntegerField(help_text="the HIT's number in the batch (1-based)")
        worker = serializers.CharField(help_text="the worker's pseudonym, as in exports")
        state = serializers.ChoiceField(choices=LIVE_STATES)
        confirmed = serializers.BooleanField()
        accepted_at = serializers.DateTimeField()
        started_at = serializers.DateTimeField(allow_null=True)
        submitted_at = serializers.DateTimeField(allow_null=True)
        elapsed_seconds = serializers.IntegerField()

    class OutputSerializer(serializers.Serializer):
        batch = serializers.IntegerField()
        status = serializers.CharField()
        now = serializers.DateTimeField()
        counts = serializers.DictField(child=serializers.IntegerField())
        rows = serializers.ListField(child=serializers.DictField())

    @extend_schema(
        operation_id="batches_status",
        responses={200: OutputSerializer, **ERRORS},
    )
    def get(self, request: Request, batch_id: int) -> Response:
        live = batch_live_status(batch=batch_visible(self, request, batch_id))
        rows = BatchStatusApi.RowSerializer([asdict(r) for r in live.rows], many=True).data
        data = {**asdict(live), "rows": rows}
        return Response(BatchStatusApi.OutputSerializer(data).data)


class BatchPreviewApi(ServiceAPIView):
    """One task page of a batch (draft or published) as its workers get it: the questions'
    view, the run's instructions for the stage ("" : the task page's own) and the console's
    preview page."""

    required_action = Action.VIEW

    class OutputSerializer(serializers.Serializer):
        number = serializers.IntegerField()
        total = serializers.IntegerField()
        title = serializers.CharField()
        instructions = serializers.CharField(allow_blank=True)
        questions = serializers.ListField(child=serializers.DictField())
        url = serializers.CharField(help_text="the console's preview of this page")

    @extend_schema(operation_id="batches_preview", responses={200: OutputSerializer, **ERRORS})
    def get(self, request: Request, batch_id: int, number: int) -> Response:
        batch = batch_visible(self, request, batch_id)
        page = batch_preview(batch=batch, number=number)
        if page is None:
            raise Http404("no such task in this batch")
        data = preview_record(batch=batch, page=page)
        return Response(BatchPreviewApi.OutputSerializer(data).data)
