"""Django forms built from the plugins' schemas (:mod:`dshweb.core.profile.plugins`).

Field names are the config keys exactly. A form only converts what a person typed into
config values; every rule (bounds, choices, cross-field checks) is the schema's, run by
:func:`dshweb.core.profile.schema.validate`, whose messages land on the right field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import cache
from typing import Any

from django import forms
from django.utils.translation import gettext as _

from dshweb.core.profile.dshyaml import JsExpr
from dshweb.core.profile.schema import (
    MAX_SAFE_INTEGER,
    MAX_TEXT,
    NON_FIELD,
    Field,
    Kind,
    Schema,
    validate,
)
from dshweb.profiles.labels import problem_text


def _form_field(spec: Field) -> forms.Field:
    common: dict[str, Any] = {"help_text": spec.help, "label": spec.key}
    if spec.kind is Kind.BOOL:
        return forms.BooleanField(required=False, **common)
    # Bounds keep absurd input (a 400-digit number) a field error, not an overflow.
    low, high = -MAX_SAFE_INTEGER, MAX_SAFE_INTEGER
    if spec.kind is Kind.INT:
        return forms.IntegerField(
            required=not spec.nullable, min_value=low, max_value=high, **common
        )
    if spec.kind is Kind.FLOAT:
        return forms.FloatField(required=not spec.nullable, min_value=low, max_value=high, **common)
    if spec.kind is Kind.CHOICE:  # the plugin's own words, the same in every language
        widget = forms.Select(attrs={"translate": "no"})
        return forms.ChoiceField(choices=[(c, c) for c in spec.choices], widget=widget, **common)
    if spec.kind is Kind.STRINGS:
        return forms.CharField(
            required=False,
            widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false", "translate": "no"}),
            strip=False,
            max_length=MAX_TEXT,
            **common,
        )
    return forms.CharField(required=False, max_length=MAX_TEXT, **common)


_SHA256 = re.compile(r"[0-9a-f]{64}")


class ConfigForm(forms.Form):
    """A plugin row's config; ``schema`` is set on each generated subclass."""

    schema: Schema
    sha256 = forms.CharField(widget=forms.HiddenInput, required=False, max_length=64)
    """The patch file's hash when the form was shown: a save checks it has not changed."""
    base_text = forms.CharField(
        widget=forms.HiddenInput, required=False, strip=False, max_length=2_000_000
    )
    """The file as shown, so a refused save can show what changed on disk since."""

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if not _SHA256.fullmatch(str(cleaned.get("sha256") or "")):
            # A hidden field: its error is shown with the form's own errors.
            self.add_error(
                None, _("The form lost the file's version; reload the page and save again.")
            )
        raw = {
            spec.key: _config_value(spec, cleaned[spec.key])
            for spec in self.schema.fields
            if spec.key in cleaned and not self.has_error(spec.key)
        }
        checked = validate(self.schema, raw)
        for key, message in checked.errors.items():
            self.add_error(None if key == NON_FIELD else key, problem_text(message))
        cleaned["config"] = {k: checked.config[k] for k in raw}
        return cleaned


def _config_value(spec: Field, value: object) -> object:
    if spec.kind is Kind.STRINGS:
        return [line.strip() for line in str(value or "").splitlines() if line.strip()]
    if spec.kind is Kind.STRING:
        return str(value or "") or None
    if isinstance(value, float) and value.is_integer():
        return int(value)  # YAML and JavaScript numbers: write 10, not 10.0
    return value


@cache
def config_form(schema: Schema) -> type[ConfigForm]:
    """The form class for one schema (built once)."""
    fields = {spec.key: _form_field(spec) for spec in schema.fields}
    return type(
        f"{schema.plugin_id.title().replace('-', '')}Form",
        (ConfigForm,),
        {
            "schema": schema,
            **fields,
        },
    )


def initial_values(schema: Schema, current: Mapping[str, object] | None) -> dict[str, object]:
    """What the form shows: the row's current config over the defaults (lists as lines)."""
    values: dict[str, object] = {}
    for spec in schema.fields:
        value = (current or {}).get(spec.key, spec.default)
        if isinstance(value, JsExpr):
            value = spec.default
        if spec.kind is Kind.STRINGS and isinstance(value, list | tuple):
            value = "\n".join(str(v) for v in value)
        values[spec.key] = value
    return values


def fixed_values(schema: Schema, current: Mapping[str, object] | None) -> dict[str, object]:
    """Values the form cannot edit and a save keeps as they are: keys the schema does not
    know, and ``!!js`` expressions."""
    return {
        key: value
        for key, value in (current or {}).items()
        if key not in schema.keys or isinstance(value, JsExpr)
    }
