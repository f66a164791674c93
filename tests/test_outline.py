"""outline.py: which lines a numbered file read showed and where its definitions are; prune's digests of such a read."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactctl import api, outline
from compactctl.describe import describe
from compactctl.markers import EXCERPT_LINE, QUOTED_LINE
from compactctl.phases.prune import PruneOptions
from compactctl.summarizers.facts import action_for

from .test_budget_aware import COUNTER, T, call, res, session


def numbered(code: str, start: int = 1, sep: str = "→") -> str:
    return "\n".join(f"{n:6d}{sep}{line}" for n, line in enumerate(code.split("\n"), start))


ELIXIR = """defmodule MyApp.Sessions do
  @moduledoc false

  def list(opts) do
    Repo.all(opts)
  rescue
    _ -> []
  end

  defp load(nil), do: nil
  defp load(id) do
    Repo.get(id)
  end
end"""

PYTHON = '''import os


class Parser:
    """Parses."""

    def parse(self, text):
        if text:
            return 1
        else:
            return 2

    @property
    def size(self):
        return 3


def main():
    pass
'''


def test_a_claude_code_read_is_numbered_and_shows_its_lines():
    text = numbered(ELIXIR)
    assert outline.shown(text) == (1, 14)
    assert outline.shown(numbered(ELIXIR, start=40, sep="\t")) == (40, 53)  # cat -n, nl -ba, OpenHands


@pytest.mark.parametrize(
    "text",
    [
        "plain output\nwith lines\nand more",
        "1. first item\n2. second\n3. third",  # a numbered list is not a read
        "3\tapples\n17\tpears\n5\tfigs\n12\tplums",  # counts (uniq -c, wc): the numbers do not climb
        "12→one line",  # too short to tell
    ],
)
def test_other_outputs_are_not_numbered_reads(text):
    assert outline.shown(text) is None and outline.definitions(text) == []


def test_elixir_definitions_span_to_their_end_and_clauses_are_one_entry():
    found = [str(d) for d in outline.definitions(numbered(ELIXIR))]
    # `rescue` inside list/1 does not end it; the two clauses of load/1 are one entry (their parameters differ: none).
    assert found == ["MyApp.Sessions 1-14", "list(opts) 4-8", "load 10-13"]


def test_python_definitions_stop_before_the_next_one_at_their_indent():
    found = [str(d) for d in outline.definitions(numbered(PYTHON))]
    # `else:` does not end parse; the decorator starts the next item.
    assert found == ["Parser 4-15", "parse(self, text) 7-11", "size 14-15", "main 18-19"]  # a lone self says nothing


def test_javascript_go_and_test_blocks():
    js = 'export const handle = (e) => {\n  go(e);\n};\n\nfunction render() {\n  return 1;\n}\n\ndescribe("parser", () => {\n  it("reads a file", () => {});\n});'
    assert [str(d) for d in outline.definitions(numbered(js))] == [
        "handle 1-3",
        "render 5-7",
        "parser 9-11",
        "reads a file 10",
    ]
    go = "package main\n\nfunc (s *Server) Start() error {\n\treturn nil\n}\n\nfunc main() {\n}"
    assert [d.name for d in outline.definitions(numbered(go))] == ["Start", "main"]


def test_an_entry_gives_the_parameters_on_its_line_when_they_say_something():
    code = (
        "def fetch(url, *, timeout=(3, 10)):\n    pass\n\n"  # one level of nested parentheses
        "def run(self):\n    pass\n\n"  # a lone self: nothing
        "def wide(" + ", ".join(f"argument_{i}" for i in range(8)) + "):\n    pass\n\n"  # over ARGS_CHARS: left out
        "def split(a,\n          b):\n    pass"  # a list that goes on to the next line: left out
    )
    found = outline.definitions(numbered(code))
    assert [str(d) for d in found] == ["fetch(url, *, timeout=(3, 10)) 1-2", "run 4-5", "wide 7-8", "split 10-12"]
    # A digest's outline line lists them so; its names read back without the parameters.
    assert outline.listed(" ".join(map(str, found))) == ["fetch", "run", "wide", "split"]
    assert outline.listed("reads a file 10 handle(e) 1-3 MyApp.Sessions 1-14") == ["file", "handle", "MyApp.Sessions"]
    # ... and with them, for the summary's index (the definitions listed bare have none).
    assert outline.listed_parameters(" ".join(map(str, found))) == [("fetch", "(url, *, timeout=(3, 10))")]


def read_session(text: str):
    rows = session(1)
    rows[2] = call("r0", "Read", {"file_path": "/repo/lib/my_app/sessions.ex"})
    rows[3] = res("r0", text)
    return T(rows)


def test_a_digest_of_a_numbered_read_gives_its_lines_and_outline_and_no_name_twice():
    body = ELIXIR + "\n" + "\n".join(f"# filler line {i} with a_name_{i}" for i in range(300))
    t = read_session(numbered(body))
    out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10))
    digest = out.messages[3].text()
    first, outline_line, *rest = digest.split("\n")
    assert first.startswith("[Read] read /repo/lib/my_app/sessions.ex lines 1-314")
    # A range follows each name, its parameters (when they say something) the name; no comma (a token each).
    assert outline_line == "  outline: MyApp.Sessions 1-14 list(opts) 4-8 load 10-13"
    quoted = [ln for ln in rest if ln.startswith(QUOTED_LINE)]  # lines for names the outline does not show
    names = next(ln for ln in rest if ln.startswith("  names: "))
    assert rest.index(names) == len(quoted) and "MyApp.Sessions" not in names + "".join(quoted)
    # The summary's action line keeps the read's line and its outline (where each definition is; the index takes the names).
    action = action_for(t.messages[2].tool_calls[0], out.messages[3])
    assert action.line.startswith("[Read] read /repo/lib/my_app/sessions.ex lines 1-314; outline: MyApp.Sessions 1-14 list(opts) 4-8")
    # So does a digest that keeps more names than its default (the room its target leaves, a summary to follow).
    total = sum(COUNTER.messages(t.messages))
    roomy, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10, target=total - 200))
    assert "  outline: MyApp.Sessions 1-14 list(opts) 4-8 load 10-13" in roomy.messages[3].text()


# A module whose functions take parameters the agent passes when it calls them (what the next edit or report names).
TMUX = """defmodule Spotter.Services.Tmux do
  def capture_pane(pane_id, opts) do
    System.cmd("tmux", ["capture-pane", "-p", "-t", pane_id], opts)
  end

  def send_keys(pane_id, keys) do
    System.cmd("tmux", ["send-keys", "-t", pane_id, keys])
  end

  def launch_review_session(project_id, cwd) do
    System.cmd("tmux", ["new-session", "-d", "-c", cwd, project_id])
  end
end"""


def test_a_digest_at_its_default_size_gives_each_definition_its_parameters():
    """A read of a module digested at its default size listed its definitions bare ("capture_pane 2-4") and the
    parameters' names in its names line, none beside the definition that takes it: the agent calling
    `capture_pane(pane_id, opts)` next saw the name and the words, not the signature. Its outline gives them."""
    t = read_session(numbered(TMUX + "\n" + "\n".join(f"# filler line {i}" for i in range(300))))
    out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10))
    digest = out.messages[3].text()
    outline_line = next(ln for ln in digest.split("\n") if ln.startswith("  outline: "))
    assert outline_line == (
        "  outline: Spotter.Services.Tmux 1-13 capture_pane(pane_id, opts) 2-4 send_keys(pane_id, keys) 6-8"
        " launch_review_session(project_id, cwd) 10-12"
    )
    assert "pane_id" not in digest.replace(outline_line, "")  # (what the outline shows, its names line does not repeat)


def _fitted(t, target: int, **kw):
    out, st = api.prune(t, COUNTER, PruneOptions(protect_tokens=10, target=target, **kw))
    return out.messages[3].text(), st


def test_an_excerpt_of_a_read_follows_its_outline_bare():
    """With room for the read's lines after its digest (an excerpt: its target leaves it), a read with no more names
    than a digest keeps at its default size lists its definitions bare, as it did: the excerpt's lines show them whole,
    the room its parameters took goes to more of them. Left without an excerpt, it keeps them."""
    t = read_session(numbered(TMUX + "\n" + "\n".join(f"# filler line {i}" for i in range(300))))
    total = sum(COUNTER.messages(t.messages))
    plain, _ = _fitted(t, 1)  # over any target: the digest as it is, a summary to follow (its names 4x)
    roomy, _ = _fitted(t, total - 1_500)  # room for its lines
    assert "capture_pane(pane_id, opts) 2-4" in plain and EXCERPT_LINE not in plain
    assert EXCERPT_LINE in roomy and "  outline: Spotter.Services.Tmux 1-13 capture_pane 2-4 send_keys 6-8" in roomy
    assert "def capture_pane(pane_id, opts) do" in roomy and "pane_id" in roomy.split("  names: ")[1]


def test_a_read_that_fits_its_target_with_a_bare_outline_needs_no_summary():
    """Its definitions' parameters make a digest larger than it was: a transcript that fit its target by pruning alone
    with the outline bare still does (the outline bare again, not a summary to follow, its digests' names 4x)."""
    t = read_session(numbered(TMUX + "\n" + "\n".join(f"# filler line {i}" for i in range(300))))
    with_params, st = _fitted(t, 1, vocabulary=False)  # over any target: every reduction, the digest as it is
    assert "capture_pane(pane_id, opts) 2-4" in with_params and st.tokens_after > 1
    bare, st2 = _fitted(t, st.tokens_after - 1)  # a token under it
    assert st2.tokens_after <= st.tokens_after - 1 and "  outline: Spotter.Services.Tmux 1-13 capture_pane 2-4 send_keys 6-8" in bare
    assert "pane_id" in bare.split("  names: ")[1]  # (the names line lists what the outline no longer shows)


def test_an_outline_never_carries_a_secret_shaped_name():
    secret = "AKIA" + "Z7Q4X2M9P3L8K5N1"
    code = f"def {secret}():\n    pass\n\ndef visible_handler():\n    pass\n" + "\n".join(f"# pad {i}" for i in range(300))
    out, _ = api.prune(read_session(numbered(code)), COUNTER, PruneOptions(protect_tokens=10))
    digest = out.messages[3].text()
    assert "visible_handler" in digest and secret not in digest


def test_c_and_java_functions_and_a_read_with_a_header_line():
    c = "Here's the result of running `cat -n` on /repo/src/parser.c:\n" + numbered(
        '#include "parser.h"\n\nstatic ast_t* parse_expr(parser_t* p)\n{\n  ast_t* a = next(p);\n  return a;\n}\n\nint main(int argc, char** argv) {\n  return run(argv);\n}',
        sep="\t",
    )
    assert outline.shown(c) == (1, 11)
    assert [str(d) for d in outline.definitions(c)] == ["parse_expr(parser_t* p) 3-7", "main(int argc, char** argv) 9-11"]
    java = "public class Server {\n    private final int port = 8080;\n    public void start() throws IOException {\n        listen(port);\n    }\n}"
    assert [str(d) for d in outline.definitions(numbered(java))] == ["Server 1-6", "start 3-5"]


def test_line_numbers_of_a_read_are_not_names():
    from compactctl.names import names_in

    text = numbered("defp foo_bar(x), do: 12345\nend", start=2561)
    assert names_in(text) == ["foo_bar", "12345"]
    assert names_in(numbered("load_config(4002)\nok\ndone", start=1200, sep="\t")) == ["load_config", "4002"]
    # Not a numbered read: a number before a tab or a colon is data (ids of a tab-separated table, a time).
    assert names_in("port 4002\nsecond line\nthird line\n2561\tcolumns") == ["4002", "2561"]
    assert names_in("12:05 query done\nid\tname\n40021\talice\n40023\tbob") == ["40021", "40023"]


def test_line_numbers_of_reads_inside_a_longer_output_are_not_names():
    """SWE-agent's linter refusing an edit shows the edit and the original under a header of its own: the output
    is no numbered read as a whole, and its digest listed every line number (1459 1460 1461 ...) as a name."""
    from compactctl.names import names_in

    edit = "\n".join(f"{n}:    value_{n % 3} = {n % 7}" for n in range(1459, 1466))
    text = (
        "Your proposed edit has introduced new syntax error(s). Please read this error message carefully.\n\nERRORS:\n\n"
        "- E999 IndentationError: unexpected indent\nThis is how your edit would have looked if applied\n"
        "------------------------------------------------\n[File: /testbed/src/fields.py (1998 lines total)]\n"
        f"(1458 more lines above)\n{edit}\n(532 more lines below)\n"
        "This is the original code before your edit\n-------\n"
        f"{edit}\n(532 more lines below)\nYour changes have NOT been applied."
    )
    found = names_in(text)
    assert not any(str(n) in found for n in range(1459, 1466)), found
    assert {"value_0", "value_1", "value_2", "/testbed/src/fields.py", "1998", "1458"} <= set(found)
    # Two numbered lines, or numbers that do not climb: data, kept
    assert names_in("header\n4001: alice\n4002: bob\nfooter") == ["4001", "4002"]
    assert names_in("x\n4001: a\n4005: b\n4009: c\ny") == ["4001", "4005", "4009"]
    assert names_in("x = " + "7" * 5000 + "\n4001: a\n4002: b\n4003: c") == ["7" * 5000]  # no int() of 5,000 digits
    # Values that climb inside a read's lines are no line numbers
    assert names_in(numbered("port = 8001\nport = 8002\nport = 8003", start=7)) == ["8001", "8002", "8003"]


_LINES = ["def f():", "defp g(x) do", "end", "}", "  else:", "class C:", "function h() {", "x = 1", "", "# note", 'test "it works" do']


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 12), st.sampled_from(_LINES)), min_size=3, max_size=60), st.integers(1, 5000))
def test_outline_invariants(rows, first):
    text = numbered("\n".join(" " * ind + line for ind, line in rows), start=first)
    lo, hi = outline.shown(text)
    found = outline.definitions(text)
    assert all(lo <= d.start <= d.end <= hi for d in found)
    assert [d.start for d in found] == sorted({d.start for d in found})  # file order, each line once
    assert all(a.name != b.name for a, b in zip(found, found[1:], strict=False))  # a function's clauses are one entry


def test_a_long_deeply_nested_read_is_outlined_in_one_pass():
    import time

    text = numbered("\n".join(" " * (i % 300) + f"def f{i}():" for i in range(100_000)))
    t = time.perf_counter()
    found = outline.definitions(text)
    assert len(found) == 100_000 and time.perf_counter() - t < 5  # 0.5 s; a scan per definition took 17 s


def test_swe_agent_viewer_reads_are_numbered_and_a_raise_is_no_definition():
    body = "\n".join(
        f"{n}:{line}"
        for n, line in enumerate(
            [
                "    def _serialize(self, value):",
                "        if value is None:",
                "            raise ValueError(value)",
                "        return value",
                "",
                "class Mapping(Field):",
                "    pass",
            ],
            1466,
        )
    )
    text = "[File: /repo/src/fields.py (1997 lines total)]\n(1465 more lines above)\n" + body
    assert outline.shown(text) == (1466, 1472)
    assert [str(d) for d in outline.definitions(text)] == ["_serialize(self, value) 1466-1469", "Mapping(Field) 1471-1472"]
    from compactctl.names import names_in

    assert "1468" not in " ".join(names_in(text)) and "1997" in names_in(text)
    # grep -n output is not a read: its numbers do not climb, its lines keep their numbers
    assert outline.shown("12:foo = 1\n40:bar = 2\n77:baz = 3\n90:qux = 4") is None


def test_a_run_of_underscores_is_no_name():
    from compactctl.names import names_in

    assert names_in("_____________ test_edge _private __init__ ______") == ["test_edge", "_private", "__init__"]


def test_an_outline_never_carries_a_password_in_a_test_title():
    code = 'test "login with password=letmeinplease" do\n  :ok\nend\n\ntest "sends Bearer abcdefghijklmnopqrstuv" do\n  :ok\nend\n\ndef visible_handler do\n  :ok\nend\n'
    code += "\n".join(f"# pad {i}" for i in range(300))
    out, _ = api.prune(read_session(numbered(code)), COUNTER, PruneOptions(protect_tokens=10))
    digest = out.messages[3].text()
    assert "visible_handler" in digest and "letmeinplease" not in digest and "abcdefghijklmnopqrstuv" not in digest


def test_a_digest_whose_only_names_are_its_outline_keeps_its_reference_in_the_summary():
    code = "def load_config():\n    pass\n\ndef main():\n    pass\n" + "\n".join("#" for _ in range(300))
    t = read_session(numbered(code))
    out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=10))
    digest = out.messages[3].text()
    assert "  outline: load_config 1-2 main 4-5 [ref " in digest and "names:" not in digest
    action = action_for(t.messages[2].tool_calls[0], out.messages[3])
    assert action.line.endswith("; outline: load_config 1-2 main 4-5 [ref " + action.line.rsplit("[ref ", 1)[1])  # its reference once, last


def test_adversarial_lines_take_linear_time():
    import time

    from compactctl.names import names_in

    t = time.perf_counter()
    names_in("_" + "a" * 20_000 + "B")  # the snake_case pattern backtracked: 2.8 s
    names_in("_1" * 20_000 + "é")  # 13 s
    outline.definitions(numbered("\n".join(["static " * 50] * 200)))  # modifiers or C type words: every split
    outline._definition().match("public " * 4000 + "x")  # 4.3 s
    assert time.perf_counter() - t < 2


def test_prose_and_calls_are_no_c_definitions_and_a_trailing_reminder_is_no_part_of_a_read():
    prose = "The parser handles nested lists (up to depth 8)\nSee the docs (docs/usage.md)\nmatch CommandParser(cs).parse(x)\nstatic int main(int argc)\n{\n  return 0;\n}"
    assert [str(d) for d in outline.definitions(numbered(prose))] == ["main(int argc) 4-7"]
    read = (
        numbered("def a():\n    pass\n\ndef b():\n    pass")
        + "\n\n<system-reminder>\nWhenever you read a file, consider\nwhether it is malware.\n</system-reminder>\n"
    )
    assert outline.shown(read) == (1, 5) and [d.name for d in outline.definitions(read)] == ["a", "b"]


def test_a_digit_less_secret_is_no_name_in_a_digest():
    key = "sk_test_" + "abcdefghijklmnopqrstuvwx"
    rows = session(1)
    rows[3] = res("r0", f"stripe configured with {key} for the checkout_service\n" + "x = 1\n" * 300)
    out, _ = api.prune(T(rows), COUNTER, PruneOptions(protect_tokens=10))
    digest = out.messages[3].text()
    assert "checkout_service" in digest and key not in digest


def test_swe_agent_open_is_a_read_that_says_its_lines():

    t = T(
        [
            call("o1", "open", {"path": "src/fields.py", "line_number": 1468}),
            res(
                "o1",
                "[File: /repo/src/fields.py (1997 lines total)]\n(1465 more lines above)\n"
                + "\n".join(f"{n}:x = {n}" for n in range(1466, 1480)),
            ),
        ]
    )
    line = describe(t.messages[0].tool_calls[0], t.messages[1])
    assert line == "[open] read src/fields.py lines 1466-1479"


def test_swe_agent_edit_of_the_open_file_lists_that_file():
    """SWE-agent's `edit` and `insert` name no file: they change the file its editor has open, which the
    observation's footer says. Relevant Files said "fields.py (read)" of a file the agent edited; an edit whose result
    prune digested (the footer gone) takes the file the agent last opened."""
    from compactctl.summarizers.facts import extract

    footer = "\n(Open file: /repo/src/fields.py)\n(Current directory: /repo)\nbash-$"
    t = T(
        [
            call("o1", "open", {"path": "src/fields.py", "line_number": 10}),
            res("o1", "[File: /repo/src/fields.py (40 lines total)]\n" + "\n".join(f"{n}:x = {n}" for n in range(1, 20)) + footer),
            call("e1", "edit", {"search": "x = 4", "replace": "x = 44"}),
            res("e1", "[File: /repo/src/fields.py (40 lines total)]\n4:x = 44" + footer),
            call("e2", "insert", {"text": "y = 1", "line": 5}),
            res("e2", "[insert] called(text=y = 1) -> ok, 3 lines output [ref 0c0edd67]"),  # a digest: no footer
        ]
    )
    m = t.messages
    assert describe(m[2].tool_calls[0], m[3]).startswith("[edit] edited src/fields.py (")
    assert extract(m).files == {"src/fields.py": {"read", "edit"}}
    assert [a.files for a in extract(m).actions][2] == [("edit", "src/fields.py")]  # the digested insert
