"""The DeepSeek adapter's model catalogue: each model's context window and default output
cap, as a profile's ``llm-deepseek`` row gives them (DSH_FACTS §10, §12).

Read in the runtime (``dsh-llm-deepseek``, ``lib/types/models.js``, ``resolveAdapterOptions``
and ``modelInfo``): a model's window is its catalogue entry's ``contextWindow``, else the
adapter's ``defaultContextWindow`` (1,000,000); its default ``maxTokens`` (what a request
header without one gets, and what ``compaction-basic`` reserves then) is the entry's
``maxTokens``, else the adapter's ``maxTokens`` (256,000). The config's ``models`` replaces
the whole catalogue, whose default holds ``deepseek-flash`` and ``deepseek-v4-pro``, each
with a 1,000,000 window and no ``maxTokens`` of its own. A model the catalogue does not
list still gets both fallbacks. The adapter refuses (and DSH does not start with) a
catalogue entry without an ``id``, a window or cap that is not a positive integer, or a
duplicate id; :func:`model_catalogue` then says so and falls back to the defaults.

The row is a top-level one in every shipped profile (the web app's too), so one catalogue
serves every agent preset. Only the patch layers are read: a value the web app's settings
store gives the adapter is not seen.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from dshweb.core.profile.dshyaml import JsExpr
from dshweb.core.profile.layers import layered_config
from dshweb.core.profile.schema import MAX_SAFE_INTEGER

LLM_ID = "llm-deepseek"
"""The adapter's patch row."""
DEFAULT_CONTEXT_WINDOW = 1_000_000
"""The adapter's ``DEFAULT_CONTEXT_WINDOW`` (its ``defaultContextWindow`` default)."""
DEFAULT_MAX_TOKENS = 256_000
"""The adapter's ``DEFAULT_MAX_TOKENS`` (its ``maxTokens`` default)."""

Origin = Literal["profile", "default"]
"""Where a figure came from: a visible patch layer of the profile, or the runtime."""


@dataclass(frozen=True, slots=True)
class CatalogueEntry:
    """One model as the catalogue lists it (``None``: the entry does not say)."""

    model: str
    context_window: int | None = None
    max_tokens: int | None = None


DEFAULT_ENTRIES = (
    CatalogueEntry("deepseek-flash", DEFAULT_CONTEXT_WINDOW),
    CatalogueEntry("deepseek-v4-pro", DEFAULT_CONTEXT_WINDOW),
)
"""The adapter's ``DEFAULT_MODELS``."""


@dataclass(frozen=True, slots=True)
class ModelLimits:
    """What the adapter gives one model: its window and its default output cap, each with
    where it came from."""

    model: str
    context_window: int
    max_tokens: int
    context_window_from: Origin
    max_tokens_from: Origin

    def as_json(self) -> dict[str, int | str]:
        return {
            "model": self.model,
            "contextWindow": self.context_window,
            "maxTokens": self.max_tokens,
            "contextWindowFrom": self.context_window_from,
            "maxTokensFrom": self.max_tokens_from,
        }


@dataclass(frozen=True, slots=True)
class ModelCatalogue:
    """The catalogue and the adapter's fallbacks; the defaults: the runtime's."""

    entries: tuple[CatalogueEntry, ...] = DEFAULT_ENTRIES
    entries_from: Origin = "default"
    context_window: int = DEFAULT_CONTEXT_WINDOW
    """``defaultContextWindow``: the window of a model whose entry gives none."""
    context_window_from: Origin = "default"
    max_tokens: int = DEFAULT_MAX_TOKENS
    """``maxTokens``: the cap of a model whose entry gives none."""
    max_tokens_from: Origin = "default"
    error: str | None = None
    """Why the profile's catalogue was not used (these are then the runtime's defaults)."""

    def of(self, model: str) -> ModelLimits:
        """The window and default cap the adapter gives ``model``."""
        entry = next((e for e in self.entries if e.model == model), None)
        window, window_from = self.context_window, self.context_window_from
        cap, cap_from = self.max_tokens, self.max_tokens_from
        if entry is not None and entry.context_window is not None:
            window, window_from = entry.context_window, self.entries_from
        if entry is not None and entry.max_tokens is not None:
            cap, cap_from = entry.max_tokens, self.entries_from
        return ModelLimits(model, window, cap, window_from, cap_from)


DEFAULT_CATALOGUE = ModelCatalogue()


class _Refused(Exception):
    pass


def catalogue_from_config(config: Mapping[str, object] | None) -> ModelCatalogue:
    """The catalogue an ``llm-deepseek`` row's (whole, replacing) ``config`` gives; one the
    adapter refuses, or that dshweb cannot read (a ``!!js`` value), gives the defaults
    with the reason in ``error``."""
    if not config:
        return DEFAULT_CATALOGUE
    try:
        window = _positive(config, "defaultContextWindow", "defaultContextWindow")
        cap = _positive(config, "maxTokens", "maxTokens")
        models = config.get("models")
        entries = None if models is None else _entries(models)
    except _Refused as problem:
        return ModelCatalogue(error=str(problem))
    return ModelCatalogue(
        entries=DEFAULT_ENTRIES if entries is None else entries,
        entries_from="default" if entries is None else "profile",
        context_window=DEFAULT_CONTEXT_WINDOW if window is None else window,
        context_window_from="default" if window is None else "profile",
        max_tokens=DEFAULT_MAX_TOKENS if cap is None else cap,
        max_tokens_from="default" if cap is None else "profile",
    )


def _entries(models: object) -> tuple[CatalogueEntry, ...]:
    if not isinstance(models, list):
        raise _Refused(_js("models") if isinstance(models, JsExpr) else "models must be a list")
    entries: list[CatalogueEntry] = []
    for model in models:
        if not isinstance(model, dict):
            raise _Refused(_js("a models entry") if isinstance(model, JsExpr) else _NOT_ENTRY)
        name = model.get("id")
        if not isinstance(name, str) or not name:
            raise _Refused("catalog model ids must be non-empty texts")
        if any(e.model == name for e in entries):
            raise _Refused(f"duplicate catalog model {name!r}")
        said = f"catalog model {name!r}"
        window = _positive(model, "contextWindow", f"{said} contextWindow")
        cap = _positive(model, "maxTokens", f"{said} maxTokens")
        entries.append(CatalogueEntry(name, window, cap))
    return tuple(entries)


_NOT_ENTRY = "every models entry must be a mapping with an id"


def _positive(config: Mapping[str, object], key: str, said: str) -> int | None:
    value = config.get(key)
    if value is None:
        return None
    if isinstance(value, JsExpr):
        raise _Refused(_js(said))
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 < value <= MAX_SAFE_INTEGER:
        raise _Refused(f"{said} must be a positive integer")
    return value


def _js(said: str) -> str:
    return f"{said} is a !!js expression, which dshweb does not evaluate"


def model_catalogue(home: Path, profile: str, extra_patches: Sequence[Path] = ()) -> ModelCatalogue:
    """The catalogue the visible layers of ``profile`` (then ``extra_patches``) give the
    adapter, read now. A layer DSH cannot read raises its
    :class:`~dshweb.core.profile.patch.PatchError`."""
    found = catalogue_from_config(layered_config(home, profile, LLM_ID, extra_patches))
    if found.error is not None:
        error = f"{LLM_ID} does not start with profile {profile!r}: {found.error}"
        return ModelCatalogue(error=error)
    return found
