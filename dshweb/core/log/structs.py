"""Typed records for the log's lines: msgspec when it is installed, a plain stand-in if not.

The wire schema (:mod:`dshweb.core.log.wire`) is written once against :class:`Struct` and
:class:`Raw`. With msgspec they are msgspec's own, and a line decodes straight into them
in C, skipping every field the fold never reads. Without it, :class:`Struct` is a small
class with the same keyword constructor, ``rename="camel"`` and ``tag`` options, and
:func:`convert` builds the same records from ``json.loads`` output.

:func:`convert` is also the lenient path for lines msgspec refuses (a field of the wrong
type): a value that does not fit its field's type gets the field's default, so a strange
line still folds as far as it makes sense, the same way on both paths.
"""

from __future__ import annotations

import types
import typing
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, TypeVar, Union, get_args, get_origin

__all__ = ["HAVE_MSGSPEC", "Raw", "SafeInt", "Struct", "convert", "tag_of"]

try:  # pragma: no cover - which branch runs depends on the machine
    import msgspec

    HAVE_MSGSPEC = True
except ImportError:  # pragma: no cover
    HAVE_MSGSPEC = False


class RawValue:
    """The stdlib path's stand-in for ``msgspec.Raw``: the parsed value of a field whose
    text the fold measures (``MISSING`` when the line has no such key)."""

    __slots__ = ("value",)
    MISSING: ClassVar[object] = object()

    def __init__(self, value: object = MISSING) -> None:
        self.value = value

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RawValue) and self.value == other.value

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"RawValue({self.value!r})"


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


class PlainStruct:
    """A keyword-constructed record with defaults, like ``msgspec.Struct`` (stdlib path)."""

    __struct_fields__: ClassVar[tuple[str, ...]] = ()
    __struct_encode_fields__: ClassVar[tuple[str, ...]] = ()
    __struct_defaults__: ClassVar[dict[str, Any]] = {}
    __struct_tag__: ClassVar[str | None] = None

    def __init_subclass__(
        cls, *, tag: str | None = None, rename: str | None = None, **_options: Any
    ) -> None:
        super().__init_subclass__()
        names: list[str] = []
        defaults: dict[str, Any] = {}
        for klass in reversed(cls.__mro__):
            for name, hint in vars(klass).get("__annotations__", {}).items():
                if "ClassVar" in str(hint) or name.startswith("__"):
                    continue
                if name not in names:
                    names.append(name)
                if name in vars(klass):
                    defaults[name] = vars(klass)[name]
        cls.__struct_fields__ = tuple(names)
        cls.__struct_encode_fields__ = tuple(
            _camel(n) if (rename or getattr(cls, "_rename", None)) == "camel" else n for n in names
        )
        cls.__struct_defaults__ = defaults
        cls.__struct_tag__ = tag
        if rename is not None:
            cls._rename = rename  # type: ignore[attr-defined]

    def __init__(self, **values: Any) -> None:
        for name in self.__struct_fields__:
            if name in values:
                value = values[name]
            elif name in self.__struct_defaults__:
                value = self.__struct_defaults__[name]
            else:
                raise TypeError(f"{type(self).__name__} needs {name}")
            object.__setattr__(self, name, value)

    def __eq__(self, other: object) -> bool:
        return type(other) is type(self) and all(
            getattr(self, n) == getattr(other, n) for n in self.__struct_fields__
        )

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        inner = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__struct_fields__)
        return f"{type(self).__name__}({inner})"


SAFE = 2**53
"""JavaScript's safe integers: DSH never writes a count past them; a log that does gets
the field's default instead (and no float overflow further on)."""

if TYPE_CHECKING:
    from msgspec import Raw, Struct

    SafeInt = int
elif HAVE_MSGSPEC:
    Raw = msgspec.Raw
    Struct = msgspec.Struct
    SafeInt = Annotated[int, msgspec.Meta(ge=-SAFE, le=SAFE)]
else:
    Raw = RawValue
    Struct = PlainStruct
    SafeInt = int


def tag_of(cls: type) -> str | None:
    """The tag a tagged record class is decoded by (its event type)."""
    if HAVE_MSGSPEC and issubclass(cls, msgspec.Struct):
        tag = cls.__struct_config__.tag
        return tag if isinstance(tag, str) else None
    return cls.__struct_tag__  # type: ignore[attr-defined,no-any-return]


_hints: dict[type, dict[str, Any]] = {}


def _field_hints(cls: type) -> dict[str, Any]:
    found = _hints.get(cls)
    if found is None:
        module = __import__(cls.__module__, fromlist=["*"])
        found = typing.get_type_hints(cls, vars(module))
        _hints[cls] = found
    return found


class _Unfit(Exception):
    """A value that does not fit a type (the field keeps its default)."""


def _fit(value: Any, hint: Any) -> Any:
    if hint is Any:
        return value
    if hint is Raw or hint is RawValue:
        return RawValue(value)
    origin = get_origin(hint)
    if origin is Annotated:
        return _fit(value, get_args(hint)[0])
    if origin is Union or origin is types.UnionType:
        for member in get_args(hint):
            try:
                return _fit(value, member)
            except _Unfit:
                continue
        raise _Unfit
    if origin is list:
        if not isinstance(value, list):
            raise _Unfit
        (item,) = get_args(hint)
        fitted = []
        for element in value:
            try:
                fitted.append(_fit(element, item))
            except _Unfit:
                continue
        return fitted
    if hint is type(None):
        if value is None:
            return None
        raise _Unfit
    if hint is bool:
        if isinstance(value, bool):
            return value
        raise _Unfit
    if hint is int:  # SafeInt's range, as msgspec checks it
        if isinstance(value, int) and not isinstance(value, bool) and -SAFE <= value <= SAFE:
            return value
        raise _Unfit
    if hint is float:
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
        raise _Unfit
    if hint is str:
        if isinstance(value, str):
            return value
        raise _Unfit
    if isinstance(hint, type) and issubclass(hint, Struct):
        if not isinstance(value, dict):
            raise _Unfit
        return convert(value, hint)
    raise TypeError(f"no conversion to {hint!r}")  # pragma: no cover - a schema mistake


def _default(cls: type, name: str) -> Any:
    if HAVE_MSGSPEC and issubclass(cls, msgspec.Struct):
        fields = cls.__struct_fields__
        defaults = cls.__struct_defaults__
        index = fields.index(name) - (len(fields) - len(defaults))
        default = defaults[index]
        factory = getattr(default, "factory", None)
        return factory() if factory is not None else default
    return cls.__struct_defaults__[name]  # type: ignore[attr-defined]


def _encode_names(cls: type) -> tuple[str, ...]:
    return cls.__struct_encode_fields__  # type: ignore[attr-defined,no-any-return]


T = TypeVar("T")


def convert(value: dict[str, Any], cls: type[T]) -> T:
    """A record of ``cls`` from a parsed JSON object; values that do not fit their field's
    type are left at the field's default, unknown keys are ignored."""
    hints = _field_hints(cls)
    fields: dict[str, Any] = {}
    for name, key in zip(cls.__struct_fields__, _encode_names(cls), strict=True):  # type: ignore[attr-defined]
        if key in value:
            try:
                fields[name] = _fit(value[key], hints[name])
                continue
            except _Unfit:
                pass
        fields[name] = _default(cls, name)
    return cls(**fields)
