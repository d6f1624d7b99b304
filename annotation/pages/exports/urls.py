from django.urls import path

from annotation.pages.exports import views

urlpatterns = [
    path("runs/<int:run_id>/exports/", views.run_exports_page, name="run-exports"),
    path("runs/<int:run_id>/exports/new/", views.export_new, name="run-export-new"),
    path("exports/<int:export_id>/files/<str:name>", views.export_file, name="export-file"),
    # Any file of the version by its path in the folder (`data/<set>.parquet`); the route
    # above stays for links already handed out.
    path("exports/<int:export_id>/files/<path:name>", views.export_file, name="export-file-path"),
    path("exports/<int:export_id>/bundle/", views.export_bundle_file, name="export-bundle"),
    path("exports/<int:export_id>/bundle/new/", views.export_bundle_new, name="export-bundle-new"),
]
