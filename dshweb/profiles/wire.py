"""The settings protocol on the channel layer: the one place its records become JSON-like
values and are read back.

A worker asks a collector with a :data:`Question` (:func:`question_message`: the verb and
its arguments, a :class:`~dshweb.live.protocol.SettingsQuestion`); the collector reads it
(:func:`read_question`), asks its own home (:func:`asked`) and answers ``{"data": …}``
(:func:`answer_data`), ``{"not_found": reason}`` or ``{"failed": reason}``. The worker
reads the data back into the record the method returns (:func:`read_answer`).

Both ends check what they read against the records' types: a question or an answer of
another shape (a hostile sender, or a collector of another version of dshweb) is a
:class:`Malformed` naming the first thing wrong, never a record holding the wrong thing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Generic, TypeVar

import msgspec

from dshweb.core.errors import DshError
from dshweb.live.protocol import SettingsQuestion
from dshweb.profiles.pages import Config, HomeSettings, Record, Which

T = TypeVar("T")


class Malformed(DshError):
    """A question or an answer not in the shape of the settings protocol; the message
    says what and where (``$.data.row.sha256``, say)."""


class _Verb(Record, frozen=True, tag_field="verb"):
    """A question; its tag is the verb (the :class:`HomeSettings` method it calls)."""


class ProfilesQuestion(_Verb, frozen=True, tag="profiles"):
    pass


class IndexQuestion(_Verb, frozen=True, tag="index"):
    pass


class RowQuestion(_Verb, frozen=True, tag="row"):
    profile: str
    section: str


class SaveQuestion(_Verb, frozen=True, tag="save"):
    profile: str
    section: str
    config: Config
    sha256: str
    base_text: str
    user_id: int | None


class PreviewQuestion(_Verb, frozen=True, tag="preview"):
    profile: str
    config: Config
    session_id: str


class ReplayQuestion(_Verb, frozen=True, tag="replay"):
    profile: str
    section: str
    config: Config
    session_id: str
    pruner: bool | None


class RestoreQuestion(_Verb, frozen=True, tag="restore"):
    revision_id: int
    which: Which
    user_id: int | None


Question = (
    ProfilesQuestion
    | IndexQuestion
    | RowQuestion
    | SaveQuestion
    | PreviewQuestion
    | ReplayQuestion
    | RestoreQuestion
)


def question_message(question: Question) -> SettingsQuestion:
    """``question`` as the collector is sent it: its verb, and its arguments by name."""
    arguments = msgspec.to_builtins(question)
    verb = arguments.pop("verb")
    return {"type": "settings.request", "verb": verb, "arguments": arguments}


def read_question(message: Mapping[str, object]) -> Question:
    """The question a settings request asks, or :class:`Malformed`."""
    arguments = message.get("arguments")
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        raise Malformed("the arguments are not an object")
    question = {**arguments, "verb": message.get("verb")}
    try:
        return msgspec.convert({"question": question}, _Question).question
    except msgspec.ValidationError as problem:
        said = str(problem).replace("`$.question.verb`", "`$.verb`")
        raise Malformed(said.replace("`$.question", "`$.arguments")) from None


class _Question(msgspec.Struct, frozen=True):
    question: Question


def asked(home: HomeSettings, question: Question) -> Record | tuple[str, ...]:
    """What ``home`` answers to ``question``."""
    match question:
        case ProfilesQuestion():
            return home.profiles()
        case IndexQuestion():
            return home.index()
        case RowQuestion(profile=profile, section=section):
            return home.row(profile, section)
        case SaveQuestion():
            return home.save(
                profile=question.profile,
                section=question.section,
                config=question.config,
                sha256=question.sha256,
                base_text=question.base_text,
                user_id=question.user_id,
            )
        case PreviewQuestion():
            return home.preview(
                profile=question.profile, config=question.config, session_id=question.session_id
            )
        case ReplayQuestion():
            return home.replay(
                profile=question.profile,
                section=question.section,
                config=question.config,
                session_id=question.session_id,
                pruner=question.pruner,
            )
        case RestoreQuestion():
            return home.restore(
                revision_id=question.revision_id, which=question.which, user_id=question.user_id
            )


def answer_data(answer: Record | tuple[str, ...]) -> object:
    """``answer`` as JSON-like values (the ``data`` of a collector's reply)."""
    return msgspec.to_builtins(answer)


class Answer(msgspec.Struct, Generic[T], frozen=True):
    """The ``data`` of a collector's reply, as the method asked returns it: ``Answer[T]``."""

    data: T


def read_answer(data: object, shape: type[Answer[T]]) -> T:
    """``data`` (a collector's reply's) read as ``shape``'s record, or :class:`Malformed`."""
    try:
        return msgspec.convert({"data": data}, shape).data
    except msgspec.ValidationError as problem:
        raise Malformed(str(problem)) from None
