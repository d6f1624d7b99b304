from django.urls import path

from annotation.crowd.mturk import api

urlpatterns = [
    path(
        "batches/<int:batch_id>/mturk/publish/",
        api.MTurkPublishApi.as_view(),
        name="api-mturk-publish",
    ),
    path("mturk/reconcile/", api.MTurkReconcileApi.as_view(), name="api-mturk-reconcile"),
]
