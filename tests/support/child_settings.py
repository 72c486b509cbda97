"""The settings of the dshweb servers the tests start (:class:`~tests.support.server.DshwebServer`,
and the ``manage.py`` commands run beside them): dshweb's own, imported whole (every
setting it reads, and every one it refuses), with passwords hashed by Django's MD5 hasher,
as Django advises for tests.

Django's default, PBKDF2 at 1,000,000 iterations, costs about 0.23 s of CPU for each
password made or checked, and the servers of a run make and check them by the hundred
(every sign-in, every failed one the throttle counts, every user made): 33 of them, 7.7 s
of CPU, in 40 tests of three folders alone. The sign-in itself runs as it does for a
person: the form, its CSRF token, the throttle, the session. ``tests/site/test_config.py``
holds dshweb's own settings to Django's default hashers, and the servers started from
another tree (a benchmark's baseline), ``scripts/start`` and the installed wheel's tests
use them.
"""

from dshweb.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
