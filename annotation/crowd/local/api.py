"""The local provider's API: a run's invitation links (list, create) and revoking one."""

from __future__ import annotations

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from annotation.api.errors import ERRORS, ServiceAPIView
from annotation.api.paging import PAGE_PARAMETERS, page_of, paginated
from annotation.crowd.local.invitations import invitation_revoke, invitations_create
from annotation.models import Invitation, Run
from annotation.permissions import Action
from annotation.selectors.links import invitation_link


class InvitationOutput(serializers.Serializer):
    id = serializers.IntegerField()
    # DRF's metaclass moves declared fields off the class; the stubs see Field.label.
    label = serializers.CharField()  # type: ignore[assignment]
    link = serializers.SerializerMethodField()
    revoked_at = serializers.DateTimeField(allow_null=True)
    consented_at = serializers.DateTimeField(allow_null=True)

    def get_link(self, invitation: Invitation) -> str:
        return invitation_link(self.context.get("request"), invitation)


class InvitationListApi(ServiceAPIView):
    required_action = Action.DOWNLOAD  # a link lets anyone work as the invited worker

    @extend_schema(
        operation_id="runs_invitations_list",
        parameters=PAGE_PARAMETERS,
        responses={200: page_of(InvitationOutput), **ERRORS},
    )
    def get(self, request: Request, run_id: int) -> Response:
        """The run's invitation links for local workers, oldest first (researchers only)."""
        run = get_object_or_404(Run, pk=run_id)
        self.require(request, run=run)
        invitations = run.invitations.order_by("pk")
        return paginated(InvitationOutput, invitations, request, self)


class InvitationCreateApi(ServiceAPIView):
    required_action = Action.ACT

    class InputSerializer(serializers.Serializer):
        labels = serializers.ListField(
            child=serializers.CharField(max_length=200),
            min_length=1,
            max_length=5000,
            help_text="one email or worker id per person",
        )

    @extend_schema(request=InputSerializer, responses={201: InvitationOutput(many=True), **ERRORS})
    def post(self, request: Request, run_id: int) -> Response:
        """Invite local workers to the run: one link each (existing ones come back
        unchanged). Send each person their own link."""
        run = get_object_or_404(Run, pk=run_id)
        self.require(request, run=run)
        data = InvitationCreateApi.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        made = invitations_create(run=run, labels=data.validated_data["labels"])
        body = InvitationOutput(made, many=True, context={"request": request}).data
        return Response(body, status=status.HTTP_201_CREATED)


class InvitationRevokeApi(ServiceAPIView):
    """A local worker's link stops working at once; their submitted work stays."""

    required_action = Action.ACT

    class OutputSerializer(serializers.Serializer):
        id = serializers.IntegerField()
        # DRF's metaclass moves declared fields off the class; the stubs see Field.label.
        label = serializers.CharField()  # type: ignore[assignment]
        revoked_at = serializers.DateTimeField(allow_null=True)

    @extend_schema(request=None, responses={200: OutputSerializer, **ERRORS})
    def post(self, request: Request, invitation_id: int) -> Response:
        invitation = get_object_or_404(Invitation.objects.select_related("run"), pk=invitation_id)
        self.require(request, run=invitation.run)
        invitation = invitation_revoke(invitation=invitation)
        return Response(InvitationRevokeApi.OutputSerializer(invitation).data)
