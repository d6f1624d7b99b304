from django.contrib import admin
from django.urls import URLPattern, URLResolver, include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from annotation.providers import providers

# The researchers' pages, one package per domain (annotation/pages/<domain>/urls.py). Their
# patterns never overlap across domains, so this order only keeps the list readable.
PAGES = (
    "accounts",
    "health",
    "images",
    "dashboard",
    "projects",
    "reviews",
    "stop",
    "jobs",
    "datasets",
    "runs",
    "batches",
    "exports",
    "workers",
)

# Each registered crowd provider's pages (its worker entry, its own tools) first: the worker's
# path is the hottest, and the resolver tries patterns in order (no route of theirs overlaps
# another's, so the order changes only how soon a worker's URL is found).
urlpatterns: list[URLPattern | URLResolver] = [
    path("", include(p.urls)) for p in providers() if p.urls
]
urlpatterns += [
    path("admin/", admin.site.urls),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
    path("api/", include("annotation.api.urls")),
    *[path("", include(f"annotation.pages.{domain}.urls")) for domain in PAGES],
]

# Error pages: JSON with `error` under /api/, the HTML pages elsewhere.
handler400 = "annotation.api.errors.bad_request"
handler403 = "annotation.api.errors.permission_denied"
handler404 = "annotation.api.errors.not_found"
handler500 = "annotation.api.errors.server_error"
