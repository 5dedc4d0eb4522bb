"""The forge site: Trac with a git repository browser (the GitLab role of WebArena)."""
