from django.urls import path

from annotation.pages.datasets import views

urlpatterns = [
    path("datasets/", views.datasets_page, name="datasets"),
    path("datasets/import/", views.dataset_import_page, name="dataset-import"),
    path(
        "datasets/import/jobs/<int:job_id>/",
        views.dataset_import_job_page,
        name="dataset-import-job",
    ),
]
