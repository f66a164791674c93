"""What a call's output says (compactctl/outputs.py), as a digest shows it."""

from __future__ import annotations

import pytest

from compactctl.describe import describe
from compactctl.model import Message, ToolCall
from compactctl.outputs import outcome


@pytest.mark.parametrize(
    ("text", "lines"),
    [
        ("", 0),
        ("one", 1),
        ("one\n", 1),
        ("one\ntwo", 2),
        ("one\ntwo\n", 2),  # was 3: a digest said "302 lines output" of what `wc -l` and its excerpt call 301
        ("one\r\ntwo\r\n", 2),
        ("\n", 1),
        ("one\n\n", 2),
    ],
)
def test_an_output_has_the_lines_wc_counts_plus_a_last_one_without_its_newline(text, lines):
    assert outcome(Message(role="tool", content=text, tool_call_id="c1")).lines == lines


def test_a_digest_and_its_excerpt_say_the_same_number_of_lines():
    body = "".join(f"line {i}\n" for i in range(1, 302))
    call = ToolCall(id="c1", name="Bash", arguments='{"command": "seq 301"}')
    line = describe(call, Message(role="tool", content=body, tool_call_id="c1"))
    assert "301 lines output" in line and "302" not in line
