"""Every name the OpenTelemetry export sends: its metrics (the OpenTelemetry GenAI semantic
conventions' where they fit, ``dshweb.*`` for what they lack), their attributes, and the
attributes of a compaction's span. docs/opentelemetry.md lists the same table
(``tests/otlp/test_docs.py`` checks it does).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["histogram", "sum", "gauge"]

# Attributes of the GenAI conventions.
OPERATION = "gen_ai.operation.name"
PROVIDER = "gen_ai.provider.name"
MODEL = "gen_ai.request.model"
TOKEN_TYPE = "gen_ai.token.type"
CONVERSATION = "gen_ai.conversation.id"
USAGE_INPUT = "gen_ai.usage.input_tokens"
USAGE_OUTPUT = "gen_ai.usage.output_tokens"
CACHE_READ = "gen_ai.usage.cache_read.input_tokens"
CACHE_CREATION = "gen_ai.usage.cache_creation.input_tokens"

# dshweb's own.
HOME = "dshweb.home"
KIND = "dshweb.compaction.kind"
NEXT = "dshweb.forecast.next"

CHAT = "chat"
"""``gen_ai.operation.name`` of a DSH request: a chat completion."""

WELL_KNOWN_PROVIDERS = frozenset(
    {
        "anthropic",
        "aws.bedrock",
        "azure.ai.inference",
        "azure.ai.openai",
        "cohere",
        "deepseek",
        "gcp.gemini",
        "gcp.gen_ai",
        "gcp.vertex_ai",
        "groq",
        "ibm.watsonx.ai",
        "mistral_ai",
        "moonshot_ai",
        "openai",
        "perplexity",
        "x_ai",
    }
)
"""``gen_ai.provider.name``'s well-known values: one that applies must be used."""


def provider_name(provider: str) -> str:
    """``gen_ai.provider.name`` of a DSH provider id: the well-known value it is, or that
    its first word is (``deepseek-official`` is ``deepseek``); else the id itself
    (``unknown`` when the log names none)."""
    if provider in WELL_KNOWN_PROVIDERS:
        return provider
    first = provider.replace("_", "-").split("-", 1)[0]
    return first if first in WELL_KNOWN_PROVIDERS else provider or "unknown"


@dataclass(frozen=True, slots=True)
class Metric:
    kind: Kind
    unit: str
    description: str
    attributes: tuple[str, ...]


SESSION = (HOME, CONVERSATION)
"""What every metric carries: the home's name and the session's id."""
ROUTE = (OPERATION, PROVIDER, MODEL, *SESSION)

TOKEN_USAGE = "gen_ai.client.token.usage"
COST = "dshweb.cost.usd"
USED = "dshweb.context.used"
WINDOW = "dshweb.context.window"
POINT = "dshweb.context.compaction_point"
FORECAST = "dshweb.forecast.steps"
COMPACTIONS = "dshweb.compactions"
FAILED = "dshweb.compactions.failed"
SHADOWED = "dshweb.compaction.shadowed"
FREED = "dshweb.compaction.freed"
PRUNES = "dshweb.compaction.prunes"

METRICS: dict[str, Metric] = {
    TOKEN_USAGE: Metric(
        "histogram",
        "{token}",
        "Tokens of each request: its input (cache reads and writes included) and its output.",
        (*ROUTE, TOKEN_TYPE),
    ),
    CACHE_READ: Metric(
        "sum",
        "{token}",
        "Input tokens the provider read from its cache (part of the input).",
        ROUTE,
    ),
    CACHE_CREATION: Metric(
        "sum", "{token}", "Input tokens the provider wrote to its cache (part of the input).", ROUTE
    ),
    COST: Metric(
        "sum",
        "{USD}",
        "What the requests and summaries cost, by the dsh-llm-cost registry (models it rates).",
        (PROVIDER, MODEL, *SESSION),
    ),
    USED: Metric(
        "gauge", "{token}", "Tokens in the context (projected, else the last sample).", SESSION
    ),
    WINDOW: Metric("gauge", "{token}", "The model's context window.", SESSION),
    POINT: Metric(
        "gauge",
        "{token}",
        "The compaction point: an automatic compaction starts at or above it.",
        SESSION,
    ),
    FORECAST: Metric(
        "gauge",
        "{step}",
        "Expected steps until the next pass of the engine's check (next=pass: a prune or a "
        "summary) or the next summary (next=summary).",
        (*SESSION, NEXT),
    ),
    COMPACTIONS: Metric(
        "sum", "{compaction}", "Compactions that ended well, by kind.", (*SESSION, KIND)
    ),
    FAILED: Metric("sum", "{compaction}", "Summaries that failed.", SESSION),
    SHADOWED: Metric(
        "sum",
        "{token}",
        "Tokens the compactions that ended well took off the context (kind=prune: the pruned "
        "tool results'), by kind.",
        (*SESSION, KIND),
    ),
    FREED: Metric(
        "sum",
        "{token}",
        "What the compactions that ended well freed: the context before minus after.",
        SESSION,
    ),
    PRUNES: Metric("sum", "{result}", "Tool results the pruner cut.", SESSION),
}

SPAN = "compaction"
"""A compaction's span is named ``compaction <kind>``."""
SPAN_ATTRIBUTES: dict[str, str] = {
    CONVERSATION: "the session",
    HOME: "the home's name",
    KIND: "automatic, manual, overflow or prune",
    "dshweb.compaction.number": "its number in the session's ledger (1 is the first)",
    "dshweb.compaction.id": "DSH's compactionId (a summary)",
    "dshweb.compaction.command": "the command that asked for it (/compact …)",
    "dshweb.compaction.shadowed_tokens": "what it took off the context (DSH's count)",
    "dshweb.compaction.shadowed_messages": "how many messages",
    "dshweb.compaction.checkpoint_tokens": "the price of what replaced them",
    "dshweb.compaction.prunes": "tool results cut (a prune pass)",
    "dshweb.context.before": "the context just before it",
    "dshweb.context.after": "the context right after it",
    "dshweb.compaction.freed": "before minus after",
    "dshweb.compaction.cost_usd": "the summariser's request, in dollars (a model it rates)",
    PROVIDER: "the summariser's provider",
    MODEL: "the summariser's model",
    USAGE_INPUT: "the summariser's input tokens (cached ones included)",
    USAGE_OUTPUT: "the summariser's output tokens",
    CACHE_READ: "of which read from the cache",
    CACHE_CREATION: "of which written to the cache",
}
