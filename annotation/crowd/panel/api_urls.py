from django.urls import path

from annotation.api.paging import by_method
from annotation.crowd.panel import api

urlpatterns = [
    path(
        "batches/<int:batch_id>/panel/",
        by_method(get=api.PanelSettingsApi, post=api.PanelSettingsUpdateApi),
        name="api-panel-batch",
    ),
    path(
        "batches/<int:batch_id>/panel/confirm/",
        api.PanelConfirmApi.as_view(),
        name="api-panel-confirm",
    ),
    path(
        "batches/<int:batch_id>/panel/bonuses.csv",
        api.PanelBonusesApi.as_view(),
        name="api-panel-bonuses",
    ),
]
