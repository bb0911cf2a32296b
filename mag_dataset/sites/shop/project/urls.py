"""URLs of the benchmark shop: Oscar's storefront and dashboard, plus the product images."""

from django.apps import apps
from django.conf import settings
from django.urls import include, path, re_path
from django.views.static import serve

urlpatterns = [
    path("i18n/", include("django.conf.urls.i18n")),
    path("", include(apps.get_app_config("oscar").urls[0])),
    # runserver --insecure serves /static/; the media (product images) are served here
    re_path(r"^media/(?P<path>.*)$", serve, {"document_root": settings.MEDIA_ROOT}),
]
