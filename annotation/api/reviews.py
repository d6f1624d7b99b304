"""Reviews in the API, as on the review queue: the held work, decisions on several at once,
and reversing a rejection."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.errors import ERRORS, ServiceAPIView
from annotation.api.paging import PAGE_PARAMETERS, filters, page_of, paginated
from annotation.models import Review, ReviewStatus
from annotation.permissions import Action
from annotation.selectors.reviews.reviews import SORTS
from annotation.selectors.runs.listing import review_list
from annotation.services.work.reviews import review_reverse, reviews_decide


class ReviewListApi(ServiceAPIView):
    required_action = Action.REVIEW

    class FilterSerializer(serializers.Serializer):
        run = serializers.IntegerField(required=False)
        batch = serializers.IntegerField(required=False)
        status = serializers.ChoiceField(choices=ReviewStatus.values, required=False)
        sort = serializers.ChoiceField(choices=list(SORTS), default="deadline")

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        run = serializers.IntegerField(source="run_id")
        batch = serializers.IntegerField(source="batch_id")
        assignment = serializers.IntegerField(source="assignment_id")
        worker = serializers.IntegerField(source="worker_id")
        status = serializers.ChoiceField(choices=ReviewStatus.values)
        reasons = serializers.JSONField()
        feedback = serializers.CharField()
        created_at = serializers.DateTimeField()
        decided_at = serializers.DateTimeField(allow_null=True)
        auto_approve_at = serializers.DateTimeField(
            allow_null=True, help_text="when the provider pays on its own"
        )

    @extend_schema(
        operation_id="reviews_list",
        parameters=[FilterSerializer, *PAGE_PARAMETERS],
        responses={200: page_of(OutputSerializer), **ERRORS},
    )
    def get(self, request: Request) -> Response:
        """Reviews in the runs where you may decide them, by deadline unless `sort` says
        otherwise."""
        wanted = filters(ReviewListApi.FilterSerializer, request)
        reviews = review_list(user=request.user, **wanted)
        return paginated(ReviewListApi.OutputSerializer, reviews, request, self)


class ReviewDecideApi(ServiceAPIView):
    """Approve or reject several reviews at once (a rejection needs feedback for the worker);
    each is decided on its own: one refused does not undo the others."""

    required_action = Action.REVIEW

    class InputSerializer(serializers.Serializer):
        reviews = serializers.ListField(
            child=serializers.IntegerField(), min_length=1, max_length=1000
        )
        decision = serializers.ChoiceField(choices=["approve", "reject"])
        feedback = serializers.CharField(required=False, default="", allow_blank=True)

    class OutputSerializer(serializers.Serializer):
        decided = serializers.ListField(child=serializers.IntegerField())
        failed = serializers.DictField(
            child=serializers.CharField(), help_text="review id -> why it was not decided"
        )

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer, **ERRORS})
    def post(self, request: Request) -> Response:
        data = ReviewDecideApi.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        result = reviews_decide(
            review_ids=sorted(set(data.validated_data["reviews"])),
            approve=data.validated_data["decision"] == "approve",
            feedback=data.validated_data["feedback"],
            user=request.user,
        )
        failed = {str(pk): why for pk, why in result["failed"].items()}
        return Response({"decided": result["decided"], "failed": failed})


class ReviewReverseApi(ServiceAPIView):
    """Reverse a rejection (a worker's appeal upheld): the work is approved and paid, within
    its provider's window from the submission (MTurk: 30 days; refused after), and counts
    again."""

    required_action = Action.REVIEW

    class InputSerializer(serializers.Serializer):
        feedback = serializers.CharField(max_length=1024)

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        status = serializers.CharField()
        feedback = serializers.CharField()
        decided_at = serializers.DateTimeField(allow_null=True)

    @extend_schema(request=InputSerializer, responses={200: OutputSerializer, **ERRORS})
    def post(self, request: Request, review_id: int) -> Response:
        review = get_object_or_404(
            Review.objects.select_related("assignment__hit__batch__run"), pk=review_id
        )
        self.require(request, run=review.assignment.hit.batch.run)
        data = ReviewReverseApi.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        review = review_reverse(review=review, feedback=data.validated_data["feedback"])
        return Response(ReviewReverseApi.OutputSerializer(review).data)
