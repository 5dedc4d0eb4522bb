"""The Celery app Misago's tasks bind to; settings make it run every task eagerly, in-process."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forumproject.settings")

app = Celery("forumproject")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
