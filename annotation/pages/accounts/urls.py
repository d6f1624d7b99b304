from django.contrib.auth import views as auth_views
from django.urls import path

from annotation.pages.accounts import views

urlpatterns = [
    path("accounts/login/", views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
]
