from django.urls import path

from annotation.pages.stop import views

urlpatterns = [path("stop/", views.stop_hits, name="stop-hits")]
