"""The shop's WSGI application (gunicorn serves it)."""

import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "shopapp.settings")
application = get_wsgi_application()
