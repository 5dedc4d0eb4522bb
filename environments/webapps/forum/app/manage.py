"""Django's command line for the forum project (run from the forum's own venv)."""

import os
import sys

if __name__ == "__main__":
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "forumproject.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
