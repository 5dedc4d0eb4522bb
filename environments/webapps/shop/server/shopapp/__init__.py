"""The Django project of agentgym's shop: django-oscar, one database per tenant (runs in the site's own venv)."""
