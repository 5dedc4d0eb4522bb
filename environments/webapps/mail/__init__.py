"""The mail site: Roundcube webmail over Dovecot, with generated company mailboxes (see docs/webapps.md)."""
