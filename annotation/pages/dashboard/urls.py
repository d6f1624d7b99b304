from django.urls import path

from annotation.pages.dashboard import views

urlpatterns = [path("", views.dashboard, name="dashboard")]
