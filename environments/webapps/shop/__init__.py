"""The shop site: django-oscar's storefront and dashboard (WebArena's Shopping and Shopping-admin roles)."""
