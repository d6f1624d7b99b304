from django.urls import path

from annotation.pages.health import views

urlpatterns = [path("health/", views.health, name="health")]
