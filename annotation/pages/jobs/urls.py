from django.urls import path

from annotation.pages.jobs import views

urlpatterns = [
    path("jobs/<int:job_id>/", views.job_page, name="job-page"),
    path("jobs/<int:job_id>/resume/", views.job_action, {"action": "resume"}, name="job-resume"),
    path("jobs/<int:job_id>/cancel/", views.job_action, {"action": "cancel"}, name="job-cancel"),
]
