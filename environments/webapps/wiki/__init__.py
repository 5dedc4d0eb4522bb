"""The wiki site: MediaWiki 1.39 on SQLite with generated encyclopedia articles (see site.py, docs/webapps.md)."""
