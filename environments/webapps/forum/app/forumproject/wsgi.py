"""The WSGI application gunicorn serves: Misago behind WhiteNoise (static files, no database hit)."""

import os

from django.conf import settings
from django.core.wsgi import get_wsgi_application
from whitenoise import WhiteNoise

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forumproject.settings")
application = WhiteNoise(get_wsgi_application(), root=settings.STATIC_ROOT, prefix=settings.STATIC_URL)
