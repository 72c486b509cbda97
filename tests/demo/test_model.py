"""The demo's stand-in model (dshweb/demo/model.py), over real HTTP on 127.0.0.1: the
summariser's request gets a checkpoint that lists the person's requests, says who wrote
it and is shorter than what it replaces; anything else one short line; a stream as the
Messages API sends it. (The real ``dsh web`` compacting with it: tests/browser/test_demo.py.)"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from dshweb.demo.model import COMPACTION_DIRECTIVE, NOTE, OTHER, DemoModel

RUNTIME = "Current runtime context. This snapshot supersedes earlier runtime-context snapshots."


@pytest.fixture(scope="module")
def model() -> Iterator[DemoModel]:
    served = DemoModel()
    yield served
    served.stop()


def _user(*texts: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": t} for t in texts]}


def _ask(model: DemoModel, body: dict[str, Any]) -> tuple[str, bytes]:
    request = urllib.request.Request(
        f"{model.base_url}/v1/messages",
        data=json.dumps(body).encode(),
        headers={"content-type": "application/json", "x-api-key": "anything"},
    )
    with urllib.request.urlopen(request, timeout=10) as answer:
        return answer.headers["content-type"], answer.read()


CONVERSATION = [
    _user("Refactor the CSV importer: it reads each export whole.", RUNTIME),
    {"role": "assistant", "content": [{"type": "text", "text": "Reading it. " * 200}]},
    _user("Run the importer tests."),
    {"role": "assistant", "content": [{"type": "text", "text": "48 passed. " * 200}]},
    _user(f"{COMPACTION_DIRECTIVE}. Summarise the conversation above."),
]


def test_a_summary_lists_the_requests_and_says_who_wrote_it(model: DemoModel) -> None:
    body = {"model": "deepseek-flash", "stream": False, "messages": CONVERSATION}
    kind, raw = _ask(model, body)
    assert kind == "application/json"
    message = json.loads(raw)
    (block,) = message["content"]
    assert block["text"] == (
        "## Primary Request and Intent\n- Refactor the CSV importer: it reads each export whole.\n"
        "## Requests in this span\n"
        "- Refactor the CSV importer: it reads each export whole.\n"
        "- Run the importer tests.\n"
        "## Current Work\n- Run the importer tests.\n"
        f"## Note\n- {NOTE}"
    )
    assert len(block["text"]) < len(json.dumps(CONVERSATION[:-1])) // 4
    usage = message["usage"]
    assert usage["input_tokens"] > usage["output_tokens"] > 0


def test_a_stream_is_the_messages_api_s_and_any_other_request_one_line(
    model: DemoModel,
) -> None:
    body = {"model": "deepseek-v4-pro", "stream": True, "messages": [_user("hello")]}
    kind, raw = _ask(model, body)
    assert kind == "text/event-stream"
    events = [
        (chunk.split("\n")[0].removeprefix("event: "), json.loads(chunk.split("data: ", 1)[1]))
        for chunk in raw.decode().strip().split("\n\n")
    ]
    names = [name for name, _ in events]
    assert names[:2] == ["message_start", "content_block_start"]
    assert names[-3:] == ["content_block_stop", "message_delta", "message_stop"]
    text = "".join(d["delta"]["text"] for n, d in events if n == "content_block_delta")
    assert text == OTHER
    assert events[0][1]["message"]["model"] == "deepseek-v4-pro"


def test_what_is_not_a_request_is_refused(model: DemoModel) -> None:
    request = urllib.request.Request(f"{model.base_url}/v1/messages", data=b"[not json")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 400
    refused.value.close()
    env = model.env()
    assert env["DEEPSEEK_BASE_URL"].startswith("http://127.0.0.1:")
