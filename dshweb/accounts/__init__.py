"""Signing in and out: Django's login and logout views, with failed sign-ins throttled.

No password reset or change by e-mail (dshweb sends no mail): an administrator runs
``dshweb user passwd`` (``management/commands/dshweb_user.py``).
"""
