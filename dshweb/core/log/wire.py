"""The lines of a DSH log, as much of each as the fold reads (DSH_FACTS §3).

Each event type the fold reads has a record here; every other type decodes to
:class:`Other` (its type, seq and time). Parts the fold only measures are kept as
:class:`~dshweb.core.log.structs.Raw`, the exact JSON text the host wrote, so its
``JSON.stringify`` length is its length; parts it never reads (the stream of an assistant
message that carries its usage, plugin payloads) are skipped, not built.

:func:`decode_line` is the one entry: msgspec decodes a line straight into these records
when installed; otherwise, or for a line msgspec refuses (a field of an unexpected type),
``json.loads`` and the lenient :func:`~dshweb.core.log.structs.convert` build the same ones.
Both paths give equal records for every line (a test holds them to it).
"""

from __future__ import annotations

from typing import Any, ClassVar, Union

from dshweb.core.log.structs import Raw, SafeInt, Struct, tag_of

# -- records ------------------------------------------------------------------------------


class Usage(Struct, rename="camel"):
    input_tokens: SafeInt | None = None
    output_tokens: SafeInt | None = None
    cache_read_tokens: SafeInt | None = None
    cache_write_tokens: SafeInt | None = None


class Block(Struct):
    """One content block; a block of another type is priced by its JSON text."""

    type: str | None = None
    text: str | None = None
    name: str | None = None
    arguments: str | None = None


class Message(Struct):
    role: str | None = None
    content: Union[list[Raw], str, None] = None  # noqa: UP007 - msgspec reads the Union
    source: Any = None
    """Where a user message came from (``{"kind": "runtime-context", "sections": …}``,
    read by :mod:`dshweb.core.fold.told`); any shape decodes."""


class Replace(Struct, rename="camel"):
    op: str | None = None
    start_seq: Any = None
    end_seq: Any = None


class Range(Struct):
    start: Any = None
    end: Any = None


class Step(Struct):
    turn: Any = None
    step: Any = None


class SurfaceData(Struct):
    turn: Any = None
    step: Any = None
    message: Message | None = None
    usage: Usage | None = None
    stream: Raw = Raw()


class Header(Struct, rename="camel"):
    config: Raw = Raw()
    adapter_defaults: Raw = Raw()
    tools: Raw = Raw()


class HeaderData(Struct):
    header: Header | None = None


class HeaderConfig(Struct, rename="camel"):
    provider: str | None = None
    model: str | None = None
    max_tokens: SafeInt | None = None


class AdapterDefaults(Struct, rename="camel"):
    reasoning_effort: Any = None
    max_tokens: Any = None


class ContextData(Struct, rename="camel"):
    context_window: SafeInt | None = None


class ShadowData(Struct, rename="camel"):
    compaction_id: Any = None
    shadowed_range: Range | None = None
    shadowed_seqs: list[SafeInt] | None = None
    shadowed_token_count: SafeInt | None = None
    provider: Any = None
    model: Any = None
    usage: Usage | None = None


class CompactionData(Struct, rename="camel"):
    compaction_id: Any = None
    turn: Any = None
    source_command_id: Any = None
    error: Any = None


class CommandData(Struct, rename="camel"):
    command_id: Any = None
    name: Any = None
    args: Any = None
    kind: Any = None
    text: Any = None


class TitleData(Struct):
    title: Any = None


class PresetData(Struct, rename="camel"):
    agent_preset: Any = None


class StreamChunk(Struct):
    type: Any = None
    usage: Usage | None = None
    reason: Any = None


class StreamRecord(Struct):
    chunk: StreamChunk | None = None


# -- events -------------------------------------------------------------------------------


class Event(Struct, tag_field="type", kw_only=True, rename="camel"):
    kind: ClassVar[str] = ""
    seq: SafeInt | None = None
    time: SafeInt | None = None


class Other(Struct):
    """An event of a type the fold does not read."""

    type: str
    seq: SafeInt | None = None
    time: SafeInt | None = None

    @property
    def kind(self) -> str:
        return self.type


class _Surface(Event):
    """An event that may add to or replace part of the surface."""

    data: SurfaceData | None = None
    surface_op: Union[str, Replace, None] = None  # noqa: UP007


class SystemMessage(_Surface, tag="system/message"):
    pass


class DeveloperMessage(_Surface, tag="developer/message"):
    pass


class AssistantMessage(_Surface, tag="assistant/message"):
    pass


class ToolResult(_Surface, tag="tool/result"):
    pass


class UserMessage(_Surface, tag="user/message"):
    """``data`` is the message itself."""

    data: Message | None = None  # type: ignore[assignment]


class AssistantAttempt(Event, tag="assistant/attempt"):
    data: SurfaceData | None = None


class RequestHeader(Event, tag="request/header"):
    data: HeaderData | None = None


class RequestContext(Event, tag="request/context"):
    data: ContextData | None = None


class CompactionSummary(Event, tag="compaction/summary"):
    data: ShadowData | None = None


class CompactionPrune(Event, tag="compaction/prune"):
    data: ShadowData | None = None


class CompactionStart(Event, tag="compaction/start"):
    data: CompactionData | None = None


class CompactionEnd(Event, tag="compaction/end"):
    data: CompactionData | None = None


class CommandRun(Event, tag="command/run"):
    data: CommandData | None = None


class CommandDone(Event, tag="command/done"):
    data: CommandData | None = None


class RetryStarted(Event, tag="llm/retry-started"):
    data: Step | None = None


class SessionTitle(Event, tag="session/title"):
    data: TitleData | None = None


class PresetSelected(Event, tag="agent-preset/selected"):
    """The session runs another agent preset from here on (the header's ``agentPreset``
    is the one it was created with)."""

    data: PresetData | None = None


class TurnStart(Event, tag="turn/start"):
    """The events below are read only by their type (turns, steps, seeds, tool calls)."""


class TurnEnd(Event, tag="turn/end"):
    pass


class StepStart(Event, tag="step/start"):
    pass


class StepEnd(Event, tag="step/end"):
    pass


class ToolCall(Event, tag="tool/call"):
    pass


class EndSeed(Event, tag="session/end-seed"):
    pass


SURFACE = (SystemMessage, DeveloperMessage, AssistantMessage, ToolResult, UserMessage)
SurfaceEvent = SystemMessage | DeveloperMessage | AssistantMessage | ToolResult | UserMessage
KNOWN: tuple[type[Event], ...] = (
    *SURFACE,
    AssistantAttempt,
    RequestHeader,
    RequestContext,
    CompactionSummary,
    CompactionPrune,
    CompactionStart,
    CompactionEnd,
    CommandRun,
    CommandDone,
    RetryStarted,
    SessionTitle,
    PresetSelected,
    TurnStart,
    TurnEnd,
    StepStart,
    StepEnd,
    ToolCall,
    EndSeed,
)
for _cls in KNOWN:
    _cls.kind = tag_of(_cls) or ""  # the event type, written once: in the class's tag
BY_KIND: dict[str, type[Event]] = {cls.kind: cls for cls in KNOWN}
PACKED_TYPES = frozenset({"text-chunks", "reasoning-chunks", "tool-call-chunks"})
"""v0/v1 rows standing for runs of stream chunks (``seq0``, ``time0``, ``dt[]``)."""

AnyEvent = Event | Other
