"""A run's own pages: the new-run form, the run page with its status and job buttons, its
texts, its data and its inputs. A run's batches, exports and workers have packages of their
own (`pages/batches`, `pages/exports`, `pages/workers`)."""

from django.urls import path

from annotation.pages.runs import data, inputs, new, texts, views

urlpatterns = [
    path("runs/new/", new.run_new_page, name="run-new"),
    path("runs/new/<str:kind>/", new.run_new_page, name="run-new-kind"),
    path("runs/<int:run_id>/", views.run_page, name="run-page"),
    path("runs/<int:run_id>/status.json", views.run_status, name="run-status"),
    path("runs/<int:run_id>/jobs/<str:name>/", views.run_job_start, name="run-job-start"),
    path("runs/<int:run_id>/texts/", texts.run_texts_page, name="run-texts"),
    path("runs/<int:run_id>/data/", data.run_data_page, name="run-data"),
    path("runs/<int:run_id>/inputs/<slug:name>/", inputs.run_input_page, name="run-input"),
]
