"""Command-line tools that run without starting Django (``manage.py`` hands them over)."""
