from __future__ import annotations

from django.urls import reverse

from annotation.models import Image, ImageSource


def image_url(image: Image) -> str:
    """Where a worker's browser loads `image` from, by the dataset's image source."""
    dataset = image.dataset
    if dataset.image_source == ImageSource.COCO_URL:
        return image.coco_url
    if dataset.image_source == ImageSource.URL_PREFIX:
        return dataset.image_location.rstrip("/") + "/" + image.file_name
    return reverse("image-file", args=[image.pk])
