"""The demo's stand-in for a model: what the ``dsh web`` dshweb runs on the demo home asks
when Compact summarises a demo session.

The demo home's sessions were recorded against a fake model, and a demo has no API key:
so that Compact works on the demo, the managed ``dsh web`` of the demo home is pointed
(``DEEPSEEK_BASE_URL``) at this server on 127.0.0.1, never at a real provider. DSH's own
engine does the compaction, writes every event and checks the summary; only the
summary's text comes from here, and it says so.

Contract: ``POST …/v1/messages`` as the Anthropic Messages API DSH's ``deepseek-official``
provider speaks (``stream: true`` as server-sent events, else one JSON message). The
answer to compaction-basic's summariser request is a checkpoint in the sections the
engine asks for, listing the person's requests in the span (cut short), so it is
smaller than what it replaces; any other request gets one short line. Usage grows with
the request (a quarter of its characters) as a provider's would. One server per
process (:func:`demo_model`), in a daemon thread, started on first use.
"""

from __future__ import annotations

import json
import logging
import math
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

log = logging.getLogger(__name__)

COMPACTION_DIRECTIVE = "You are now acting as a compaction engine"
"""How compaction-basic's summariser instruction starts (DSH_FACTS §7)."""
NOT_SAID = (
    "Current runtime context.",
    "Time sampled while preparing",
    "This is an automatically generated checkpoint",
)
"""How the user messages DSH writes itself start (its runtime context, an earlier summary)."""
ITEM_CHARS = 120
"""The longest a request is quoted in a summary."""
ITEMS = 8
"""The most requests a summary lists (the first and the newest)."""
API_KEY = "dshweb-demo"
"""The key the demo's ``dsh web`` sends (this server reads none)."""
NOTE = (
    "Written by dshweb's demo stand-in for a model, which lists the requests of the span "
    "instead of summarising them."
)
OTHER = "This is dshweb's demo: its stand-in model only writes compaction summaries."


def _texts(message: dict[str, Any]) -> list[str]:
    content = message.get("content")
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        return []
    return [
        str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text"
    ]


def _requests(messages: list[dict[str, Any]]) -> list[str]:
    """The person's own words in a conversation, oldest first: each user message's first
    text, not DSH's runtime context, nor the summariser's instruction, nor a checkpoint."""
    said: list[str] = []
    for message in messages:
        if message.get("role") != "user":
            continue
        for text in _texts(message):
            first = text.strip().splitlines()[0] if text.strip() else ""
            if not first or first.startswith((COMPACTION_DIRECTIVE, *NOT_SAID)):
                continue
            said.append(first if len(first) <= ITEM_CHARS else first[: ITEM_CHARS - 1] + "…")
            break
    return said


def is_compaction(body: dict[str, Any]) -> bool:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages or not isinstance(messages[-1], dict):
        return False
    last = messages[-1]
    return last.get("role") == "user" and any(
        t.startswith(COMPACTION_DIRECTIVE) for t in _texts(last)
    )


def summary_of(body: dict[str, Any]) -> str:
    """The checkpoint this stand-in writes for a summariser request."""
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    said = _requests(messages)
    if len(said) > ITEMS:
        said = [said[0], *said[-(ITEMS - 1) :]]
    items = "".join(f"- {text}\n" for text in said) or "- (none)\n"
    first = said[0] if said else "(none)"
    newest = said[-1] if said else "(none)"
    return (
        f"## Primary Request and Intent\n- {first}\n"
        f"## Requests in this span\n{items}"
        f"## Current Work\n- {newest}\n"
        f"## Note\n- {NOTE}"
    )


def answer_to(body: dict[str, Any]) -> str:
    return summary_of(body) if is_compaction(body) else OTHER


def _usage(body: dict[str, Any], text: str) -> tuple[int, int]:
    visible = {k: body[k] for k in ("system", "messages", "tools") if k in body}
    size = len(json.dumps(visible, ensure_ascii=False, separators=(",", ":")))
    return math.ceil(size / 4), max(1, math.ceil(len(text) / 4))


def sse_events(body: dict[str, Any], text: str, message_id: str) -> Iterator[tuple[str, Any]]:
    """The stream of one text answer, as the Messages API sends it."""
    prompt, output = _usage(body, text)
    model = str(body.get("model") or "demo")
    yield (
        "message_start",
        {
            "type": "message_start",
            "message": {
                "id": message_id,
                "type": "message",
                "role": "assistant",
                "model": model,
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": prompt, "output_tokens": 1},
            },
        },
    )
    yield (
        "content_block_start",
        {
            "type": "content_block_start",
            "index": 0,
            "content_block": {"type": "text", "text": ""},
        },
    )
    for start in range(0, len(text), 400):
        yield (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text[start : start + 400]},
            },
        )
    yield "content_block_stop", {"type": "content_block_stop", "index": 0}
    yield (
        "message_delta",
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"input_tokens": prompt, "output_tokens": output},
        },
    )
    yield "message_stop", {"type": "message_stop"}


class _Handler(BaseHTTPRequestHandler):
    server: DemoModel

    def log_message(self, format: str, *args: object) -> None:
        log.debug("demo model: " + format, *args)

    def _json(self, status: int, payload: Any) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self) -> None:
        if not self.path.split("?", 1)[0].rstrip("/").endswith("/v1/messages"):
            self._json(404, {"type": "error", "error": {"type": "not_found_error"}})
            return
        try:
            length = int(self.headers.get("content-length") or 0)
            body = json.loads(self.rfile.read(length))
            if not isinstance(body, dict):
                raise ValueError("not an object")
        except ValueError as problem:
            error = {"type": "invalid_request_error", "message": str(problem)}
            self._json(400, {"type": "error", "error": error})
            return
        text = answer_to(body)
        message_id = f"msg_dshweb_demo_{self.server.next_id()}"
        if body.get("stream") is False:
            prompt, output = _usage(body, text)
            self._json(
                200,
                {
                    "id": message_id,
                    "type": "message",
                    "role": "assistant",
                    "model": str(body.get("model") or "demo"),
                    "content": [{"type": "text", "text": text}],
                    "stop_reason": "end_turn",
                    "stop_sequence": None,
                    "usage": {"input_tokens": prompt, "output_tokens": output},
                },
            )
            return
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        for name, data in sse_events(body, text, message_id):
            self.wfile.write(
                f"event: {name}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()
            )
        self.wfile.flush()


class DemoModel(ThreadingHTTPServer):
    """The stand-in on a free port of 127.0.0.1, serving from a daemon thread."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self._ids = 0
        self._ids_lock = threading.Lock()
        self._thread = threading.Thread(
            target=self.serve_forever, name="dshweb-demo-model", daemon=True
        )
        self._thread.start()

    def next_id(self) -> int:
        with self._ids_lock:
            self._ids += 1
            return self._ids

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def env(self) -> dict[str, str]:
        """What a ``dsh`` process needs to ask this stand-in (and no real provider)."""
        return {"DEEPSEEK_BASE_URL": self.base_url, "DEEPSEEK_API_KEY": API_KEY}

    def stop(self) -> None:
        self.shutdown()
        self.server_close()


_model: DemoModel | None = None
_model_lock = threading.Lock()


def demo_model() -> DemoModel:
    """The process's one stand-in (started on first use)."""
    global _model
    with _model_lock:
        if _model is None:
            _model = DemoModel()
            log.info("demo model on %s", _model.base_url)
        return _model
