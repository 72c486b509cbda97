"""The API's documentation page, ``/api/v1/docs``: the OpenAPI document of
:mod:`dshweb.api.v1` laid out as a page of this site (its header, its languages, keyboard
and screen reader friendly), with how to get a token and call it. The operations' own
texts are the document's, in English like its keys; the page around them is translated.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.http import require_safe

from dshweb.api.v1 import api


@dataclass(frozen=True, slots=True)
class Field:
    name: str
    kind: str
    required: bool
    where: str = ""
    default: str = ""


@dataclass(frozen=True, slots=True)
class Operation:
    method: str
    path: str
    summary: str
    description: str
    parameters: tuple[Field, ...]
    statuses: tuple[tuple[str, str], ...]
    answer: str
    """The name of the 200 answer's schema."""


@dataclass(frozen=True, slots=True)
class Shape:
    name: str
    fields: tuple[Field, ...]
    values: tuple[str, ...] = ()


def kind_of(schema: dict[str, Any]) -> str:
    """A JSON schema as a short type: ``integer``, ``string | null``, ``list of SessionRow``."""
    if "$ref" in schema:
        return str(schema["$ref"]).rsplit("/", 1)[-1]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return " | ".join(kind_of(part) for part in schema[key])
    if "allOf" in schema:
        return " & ".join(kind_of(part) for part in schema["allOf"])
    if "enum" in schema:
        return " | ".join(f'"{value}"' for value in schema["enum"])
    if schema.get("type") == "array":
        return f"list of {kind_of(schema.get('items', {}))}"
    return str(schema.get("type", "any"))


def operations(document: dict[str, Any]) -> list[Operation]:
    found = []
    for path, methods in document["paths"].items():
        for method, op in methods.items():
            answer: dict[str, Any] = op["responses"].get("200", {}).get("content", {})
            first: dict[str, Any] = next(iter(answer.values()), {})
            schema: dict[str, Any] = first.get("schema", {})
            found.append(
                Operation(
                    method=method.upper(),
                    path=path,
                    summary=op.get("summary", ""),
                    description=" ".join(op.get("description", "").split()),
                    parameters=tuple(
                        Field(
                            p["name"],
                            kind_of(p.get("schema", {})),
                            bool(p.get("required")),
                            p.get("in", ""),
                            _default(p.get("schema", {})),
                        )
                        for p in op.get("parameters", [])
                    ),
                    statuses=tuple(
                        (code, r.get("description", "")) for code, r in op["responses"].items()
                    ),
                    answer=kind_of(schema) if schema else "",
                )
            )
    return sorted(found, key=lambda o: o.path)


def _default(schema: dict[str, Any]) -> str:
    return "" if "default" not in schema else repr(schema["default"]).replace("'", '"')


def shapes(document: dict[str, Any]) -> list[Shape]:
    found = []
    for name, schema in document.get("components", {}).get("schemas", {}).items():
        required = set(schema.get("required", ()))
        fields = tuple(
            Field(key, kind_of(value), key in required)
            for key, value in schema.get("properties", {}).items()
        )
        values = tuple(str(v) for v in schema.get("enum", ()))
        found.append(Shape(name, fields, values))
    return found


@cache
def laid_out() -> tuple[list[Operation], list[Shape]]:
    """The API's calls and answers, laid out once (the document is the code's: it does not
    change while the process runs)."""
    document = api.get_openapi_schema()
    return operations(document), shapes(document)


@require_safe
def api_docs(request: HttpRequest) -> HttpResponse:
    calls, answers = laid_out()
    return render(
        request,
        "api/docs.html",
        {
            "operations": calls,
            "shapes": answers,
            "origin": request.build_absolute_uri("/").rstrip("/"),
        },
    )
