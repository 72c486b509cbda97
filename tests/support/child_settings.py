"""The settings of the dshweb servers the tests start (:class:`~tests.support.server.DshwebServer`,
and the ``manage.py`` commands run beside them): dshweb's own, imported whole (every
setting it reads, and every one it refuses), with passwords hashed by Django's MD5 hasher,
as Django advises for tests.

Django's default, PBKDF2 at 1,000,000 iterations, costs about 0.23 s of CPU for each
password made or checked; the servers of one run of the suite make and check hundreds of
them (every sign-in, every failed one the throttle counts, every user made), the
seconds of a whole core. The sign-in itself runs as it does for a person: the form, its
CSRF token, the throttle, the session. ``tests/site/test_config.py`` holds dshweb's own
settings to Django's default hashers, and the servers started from another tree (a
benchmark's baseline), ``scripts/start`` and the installed wheel's tests use them.
"""

from dshweb.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
