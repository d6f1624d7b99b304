from django.urls import path

from annotation.crowd.prolific import api

urlpatterns = [
    path(
        "batches/<int:batch_id>/prolific/pay/",
        api.ProlificPayApi.as_view(),
        name="api-prolific-pay",
    ),
]
