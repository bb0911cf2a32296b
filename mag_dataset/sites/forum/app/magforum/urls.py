"""Spirit at the root; static files served by Django itself (no separate web server, nothing external)."""
from django.conf import settings
from django.urls import include, path, re_path
from django.views.static import serve

import spirit.urls

urlpatterns = [
    path("", include(spirit.urls)),
    re_path(r"^static/(?P<path>.*)$", serve, {"document_root": settings.STATIC_ROOT}),
    re_path(r"^media/(?P<path>.*)$", serve, {"document_root": settings.MEDIA_ROOT}),
]
