"""Web apps: WebArena-style tasks on real self-hosted web applications (shop, forum, wiki, forge, mail).

See docs/webapps.md. The sites and template modules are listed in ``sites.yaml``.
"""
