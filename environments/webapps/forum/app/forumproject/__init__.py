"""agentgym's forum project: Misago served for many tenants (see settings.py and tenancy.py)."""

from .celery import app as celery_app

__all__ = ["celery_app"]
