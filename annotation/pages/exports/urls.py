from django.urls import path

from annotation.pages.exports import views

urlpatterns = [
    path("runs/<int:run_id>/exports/", views.run_exports_page, name="run-exports"),
    path("runs/<int:run_id>/exports/new/", views.export_new, name="run-export-new"),
    path("exports/<int:export_id>/files/<str:name>", views.export_file, name="export-file"),
]
