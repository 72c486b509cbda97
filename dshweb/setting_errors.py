"""A setting dshweb cannot use: one line naming it, exit status 2, a row in ``dshweb doctor``.

Every reader of a setting (an environment variable, ``DSHWEB[...]``, the data folder and
its files, a command-line option) raises :class:`ConfigurationError` naming the setting a
person changes (``DATABASE_URL``, ``DSHWEB_DATA_DIR``, ``--port``), what is wrong and the
fix. ``settings.py`` reads every setting through one :class:`Reading`, so each mistake is
found, not only the first, and raises :class:`ConfigurationErrors` holding them all at the
end of the import (a kind of :class:`ConfigurationError`); the entry points (``dshweb``,
``manage.py``, ``dshweb.asgi``) catch that once and print :func:`lines`, one per mistake,
before Django prints anything, and exit with :data:`EXIT_STATUS`. Never a traceback.

``dshweb doctor`` is the one process that runs on settings it refuses: its entry point
calls :func:`look_only` first, and ``settings.py`` then takes a safe stand-in for each
refused setting (no database at all where the database is in question, a random key of
its own, the defaults) and lists the mistakes in ``CONFIGURATION_PROBLEMS`` for the
doctor to show as problem rows. Read without Django.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from typing import TextIO, TypeVar

T = TypeVar("T")

EXIT_STATUS = 2
"""A refused setting, as for a command line the program cannot use."""


class ConfigurationError(ValueError):
    """``setting`` holds a value dshweb cannot use: ``problem`` says what, ``fix`` how to
    put it right (may be empty). The message is one line: ``SETTING: problem; fix``."""

    def __init__(self, setting: str, problem: str, fix: str = "") -> None:
        super().__init__(f"{setting}: {problem}" + (f"; {fix}" if fix else ""))
        self.setting = setting
        self.problem = problem
        self.fix = fix

    @property
    def errors(self) -> tuple[ConfigurationError, ...]:
        """Each setting refused: this one."""
        return (self,)


class ConfigurationErrors(ConfigurationError):
    """Several settings dshweb cannot use at once (``errors``); caught as one."""

    def __init__(self, errors: Iterable[ConfigurationError]) -> None:
        self._errors = tuple(e for error in errors for e in error.errors)
        first = self._errors[0]
        super().__init__(first.setting, first.problem, first.fix)
        self.args = ("\n".join(str(error) for error in self._errors),)

    @property
    def errors(self) -> tuple[ConfigurationError, ...]:
        return self._errors


class Reading:
    """Reads settings one by one, keeping every :class:`ConfigurationError` instead of
    stopping at the first; a setting refused takes the ``fallback`` given."""

    def __init__(self) -> None:
        self.problems: list[ConfigurationError] = []

    def __call__(self, read: Callable[[], T], fallback: T) -> T:
        try:
            return read()
        except ConfigurationError as error:
            self.problems.extend(error.errors)
        return fallback

    def refused(self, setting: str) -> bool:
        return any(problem.setting == setting for problem in self.problems)

    def done(self) -> None:
        """Raise what was refused: the one :class:`ConfigurationError`, or
        :class:`ConfigurationErrors` holding each."""
        if len(self.problems) == 1:
            raise self.problems[0]
        if self.problems:
            raise ConfigurationErrors(self.problems)


_looking_only = False
LOOKING_COMMAND = "dshweb_doctor"
"""The one command that runs on settings it refuses, to show them."""


def prepare_for(command: str) -> None:
    """Before Django reads the settings, for the management command ``command`` about
    to run: :func:`look_only` for :data:`LOOKING_COMMAND`."""
    if command == LOOKING_COMMAND:
        look_only()


def look_only() -> None:
    """This process only looks and reports (``dshweb doctor``): the settings take safe
    stand-ins for what they refuse and list it, instead of refusing to load. Call it
    before Django reads the settings."""
    global _looking_only
    _looking_only = True


def looking_only() -> bool:
    return _looking_only


def lines(refusal: ConfigurationError) -> list[str]:
    """What a person reads: one line per refused setting (a line break a message quotes,
    from a database driver say, becomes a space)."""
    return [f"dshweb: {' '.join(str(error).split())}" for error in refusal.errors]


def refuse(refusal: ConfigurationError, stream: TextIO | None = None) -> int:
    """Print :func:`lines` on ``stream`` (standard error); the exit status to end with."""
    stream = sys.stderr if stream is None else stream
    for line in lines(refusal):
        print(line, file=stream)
    stream.flush()
    return EXIT_STATUS
