"""WSGI entry point (served by waitress on 127.0.0.1)."""
import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "magforum.settings")
application = get_wsgi_application()
