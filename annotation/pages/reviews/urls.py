from django.urls import path

from annotation.pages.reviews import views

urlpatterns = [
    path("review/", views.review_queue, name="review-queue"),
    path("review/<int:review_id>/", views.review_detail, name="review-detail"),
]
