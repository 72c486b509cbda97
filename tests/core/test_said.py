"""Problems said by a code (``dshweb.core.said``) and worded at the edge (``dshweb.words``):
both tables hold the same codes with the same values, every text reads back to its code
and values, and a page in Chinese words each one (and the said texts inside it) in
Chinese, whatever made it."""

from __future__ import annotations

import re
import string

import pytest
from django.utils import translation

from dshweb.core.errors import LogError
from dshweb.core.said import ENGLISH, NESTED, names, read_back, say
from dshweb.words import PROBLEMS, said

# Values with what trips a pattern: parentheses, colons, the literals of other texts.
AWKWARD = {
    "offset": "1234",
    "seq": "56",
    "detail": "Error (x): (at byte 1) decoding",
    "error": "Connection refused: (errno 111)",
    "base": "http://127.0.0.1:8123",
    "home": "/home/me/my home (copy)",
    "excerpt": '{"ok": false, "note": "did not answer within 3 s"}',
    "output": "dsh: Error: cannot load (profile web); Error: x",
}


def _sample(code: str) -> dict[str, str]:
    return {name: AWKWARD.get(name, f"<{name}>") for name in names(code)}


def test_every_code_has_words_with_the_same_values() -> None:
    assert set(PROBLEMS) == set(ENGLISH)
    with translation.override("en"):
        for code, words in PROBLEMS.items():
            shown = set(re.findall(r"%\((\w+)\)s", str(words)))
            assert shown == names(code), code
            # The English words are the core's own text: the same sentence.
            english = string.Formatter().vformat(ENGLISH[code], (), dict.fromkeys(shown, "V"))
            assert str(words) % dict.fromkeys(shown, "V") == english, code


@pytest.mark.parametrize("code", sorted(ENGLISH))
def test_every_text_reads_back_to_its_code_and_values(code: str) -> None:
    values = _sample(code)
    assert read_back(say(code, **values)) == (code, values)


def test_another_text_is_left_as_it_is() -> None:
    assert read_back("DSH's own words about something") is None
    with translation.override("zh-hans"):
        assert said("DSH's own words about something") == "DSH's own words about something"


def test_a_log_error_reads_in_chinese_with_the_problem_inside_it() -> None:
    error = LogError(say("frame-corrupt", detail="Checksum mismatch"), offset=4096, seq=17)
    assert str(error) == "corrupt zstd frame (Checksum mismatch) (at byte 4096, seq 17)"
    with translation.override("zh-hans"):
        assert said(str(error)) == "zstd 帧已损坏（Checksum mismatch）（位于第 4096 字节，序号 17）"
    with translation.override("en"):
        assert said(str(error)) == str(error)


def test_nested_texts_are_worded_in_their_turn() -> None:
    kind = say("file-kind", kind=say("kind-fifo"))
    text = LogError(say("log-refused", reason=kind), offset=0)
    hung = say(
        "engine-hung",
        what=say("engine-stopped-answering", base="http://127.0.0.1:9", path="/api/x"),
        misses=3,
        seconds="1",
    )
    exited = say("engine-exited-after", exit=say("exit-signal", number=9), seconds="4")
    with translation.override("zh-hans"):
        assert said(str(text)) == (
            "日志是FIFO（命名管道），不是普通文件：dshweb 不读取它（位于第 0 字节）"
        )
        assert said(hung) == (
            "http://127.0.0.1:9 在执行 /api/x 时停止应答"
            "（连续 3 次检查在 1 秒内都没有应答；卡住了？）"
        )
        assert said(exited) == "dsh web 运行 4 秒后被信号 9 终止"
        hint = "pipx install --force 'dshweb[engine]'"
        missing = said(say("engine-no-dsh", install=hint))
        assert missing == f"PATH 中和这个 Python 旁都没有 dsh：{hint}"
    assert {"problem", "kind", "what", "exit"} <= NESTED
