from django.urls import path

from annotation.pages.projects import views

urlpatterns = [path("projects/", views.projects_page, name="projects")]
