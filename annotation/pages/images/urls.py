from django.urls import path

from annotation.pages.images import views

urlpatterns = [
    path("img/<str:key>/<str:place>", views.question_image, name="question-image"),
    path("staff/images/<int:image_id>/", views.staff_image, name="staff-image"),
]
