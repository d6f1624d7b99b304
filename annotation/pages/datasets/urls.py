from django.urls import path

from annotation.pages.datasets import embeddings, views

urlpatterns = [
    path("datasets/", views.datasets_page, name="datasets"),
    path("datasets/import/", views.dataset_import_page, name="dataset-import"),
    path(
        "datasets/import/jobs/<int:job_id>/",
        views.dataset_import_job_page,
        name="dataset-import-job",
    ),
    path(
        "datasets/<int:dataset_id>/embeddings/",
        embeddings.dataset_embeddings_page,
        name="dataset-embeddings",
    ),
    path(
        "datasets/<int:dataset_id>/embeddings/<int:set_id>/delete/",
        embeddings.embedding_set_delete_page,
        name="dataset-embedding-delete",
    ),
]
