"""phases/prune.py and phases/prune_steps.py: what prune writes for a transcript and its options, pinned where mutation
testing (bench/mutation.py) found that no test looked: the defaults, the stats, the stopping point and the steps' edges."""

from __future__ import annotations

import re
from dataclasses import replace

import orjson

from compactctl import api
from compactctl.markers import EXCERPT_LINE
from compactctl.model import Transcript
from compactctl.phases import prune_steps
from compactctl.phases.prune import LITERALS_KEPT, MIN_ROOM, PruneOptions, truncate_arguments
from compactctl.tokens import make_counter

from .rows import T, call

COUNTER = make_counter("gpt-4o")


def res(cid: str, text: str) -> dict:
    return {"role": "tool", "tool_call_id": cid, "content": text}


def lint(lines: int, pad: int = 0) -> list[dict]:
    """An ask, a lint run whose output has `lines` warnings (and `pad` more tokens), the agent's last words."""
    body = "".join(f"src/app/module_{i}.py:{i}: warning: unused import os\n" for i in range(lines)) + " z" * pad
    return [
        {"role": "user", "content": "lint it"},
        call("a", "bash", {"command": "ruff check"}),
        res("a", body),
        {"role": "assistant", "content": "done"},
    ]


def total(t: Transcript) -> int:
    return sum(COUNTER.messages(t.messages))


# ---- the defaults


def test_by_default_the_last_12800_tokens_are_left_verbatim():
    """PruneOptions() protects the most recent 12,800 tokens: an output that, with the message after it, takes 12,801
    is digested; one a token shorter is not."""
    base = COUNTER.messages(T(lint(850)).messages)
    pad = 12_801 - base[2] - base[3]
    over = T(lint(850, pad))
    assert sum(COUNTER.messages(over.messages)[2:]) == 12_801
    out, st = api.prune(over, COUNTER)
    assert out.messages[2].text().startswith("[bash] ran `ruff check`") and st.protected_from == 3
    under = T(lint(850, pad - 1))
    out, st = api.prune(under, COUNTER)
    assert out.messages[2] is under.messages[2] and st.protected_from == 2


def test_a_digest_keeps_16_quoted_phrases_after_its_names():
    """An output's quoted phrases (a test's message) follow its names in its digest: the first 16 its line does not show."""
    body = "\n".join(f'FAILED test_{k} - assert "message number {k} here"' for k in range(30))
    rows = [{"role": "user", "content": "run the tests"}, call("a", "bash", {"command": "pytest"}), res("a", body)]
    rows += [{"role": "assistant", "content": "ok"}, {"role": "user", "content": "next"}]
    out, _ = api.prune(T(rows), COUNTER, PruneOptions(protect_tokens=5))
    names = out.messages[2].text().split("  names: ")[1]
    assert LITERALS_KEPT == 16
    assert re.findall(r'"[^"]*"', names) == [f'"message number {k} here"' for k in range(3, 19)]  # 0-2: its quoted lines


# ---- the stats


def test_the_stats_of_a_prune_count_what_each_pass_saved_and_nothing_else():
    t = T(lint(300) + [{"role": "user", "content": "thanks"}])
    out, st = api.prune(t, COUNTER, PruneOptions(protect_tokens=5))
    old, new = t.messages[2], out.messages[2]
    saved = {"count": 1, "chars": len(old.text()) - len(new.text()), "tokens": COUNTER.message(old) - COUNTER.message(new)}
    zero = {"count": 0, "chars": 0, "tokens": 0}
    assert st.as_dict() == {"dedup": zero, "summaries": saved, "args": zero, "images": zero, "protected_from": 4}


def test_without_token_counts_a_target_still_decides_and_no_target_counts_no_token():
    """count_tokens False (`prune` without --stats) with a target: the same output as counting them (the target needs
    the counts whatever it reports); with no target, the passes' tokens stay 0."""
    t = T(lint(300) + lint(320) + [{"role": "user", "content": "thanks"}])
    target = total(t) - 500
    for exact in (True, False):
        counted, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=5, target=target, exact_totals=exact))
        uncounted, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=5, target=target, exact_totals=exact, count_tokens=False))
        assert counted.messages[2] is not t.messages[2] and [m.text() for m in uncounted.messages] == [m.text() for m in counted.messages]
    _, st = api.prune(t, COUNTER, PruneOptions(protect_tokens=5, count_tokens=False))
    assert st.summaries.count == 2 and st.summaries.chars > 0 and st.summaries.tokens == 0


# ---- the room under the target


def checks(n: int = 3, names: int = 40) -> Transcript:
    """An ask, `n` commands each printing `names` paths of its own package, the agent's last words naming two paths of
    the first: its output is the most used, digested last."""
    rows: list[dict] = [{"role": "user", "content": "check"}]
    for k in range(n):
        rows += [
            call(f"c{k}", "bash", {"command": f"check {k}"}),
            res(f"c{k}", "".join(f"src/pkg{k}/file_{k}_{i}.py: ok\n" for i in range(names))),
        ]
    return T([*rows, {"role": "assistant", "content": "src/pkg0/file_0_1.py and src/pkg0/file_0_2.py need work"}])


def test_room_the_last_digest_leaves_goes_to_the_earlier_ones():
    """Under its target with room to spare, the digest that took the transcript there keeps more names, and then the
    earlier digests do: each keeps more than its default 8 here."""
    t = checks()
    out, st = api.prune(t, COUNTER, PruneOptions(protect_tokens=5, target=total(t) - 500, digest_names=8))
    assert out.messages[2] is t.messages[2] and st.summaries.count == 2 and st.tokens_after <= total(t) - 500
    first, last = out.messages[4].text(), out.messages[6].text()  # digested in this order (message 2 is the most used)
    assert "src/pkg2/file_2_20.py" in last and "src/pkg1/file_1_8.py" in first  # (the 21st and the 9th names)


def test_an_excerpt_follows_a_digest_when_the_room_left_is_48_tokens_or_more():
    """Once every digest keeps all its names, the room left under the target goes to the output's first lines when it
    holds 48 tokens (EXCERPT_MIN_ROOM); at 47 the digest stays alone."""
    rows = [
        {"role": "user", "content": "build it"},
        call("a", "bash", {"command": "make"}),
        res("a", "building src/main.c\n" + "ok\n" * 300),
    ]
    t = T([*rows, {"role": "assistant", "content": "built"}])
    digested, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=5, refs=False))  # the digest, with its only name
    assert digested.messages[2].text().endswith("  names: src/main.c")
    fitted = total(digested)
    alone, st = api.prune(t, COUNTER, PruneOptions(protect_tokens=5, target=fitted + 47, refs=False))
    assert alone.messages[2].text() == digested.messages[2].text() and st.tokens_after == fitted
    out, st = api.prune(t, COUNTER, PruneOptions(protect_tokens=5, target=fitted + 48, refs=False))
    assert out.messages[2].text().startswith(digested.messages[2].text() + "\n" + EXCERPT_LINE + "the first ")
    assert fitted < st.tokens_after <= fitted + 48


def test_an_excerpt_of_a_first_line_longer_than_its_room_says_it_shows_the_start_of_that_line():
    """An output whose first line alone is longer than the room (minified JSON, a long log line): the excerpt shows
    its start, and says so, not that it shows the first line."""
    first = " ".join(f"item{k}" for k in range(2000))
    rows = [
        {"role": "user", "content": "build it"},
        call("a", "bash", {"command": "make"}),
        res("a", "building src/main.c " + first + "\n" + "ok\n" * 300),
    ]
    t = T([*rows, {"role": "assistant", "content": "built"}])
    digested, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=5, refs=False))
    out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=5, target=total(digested) + 100, refs=False))
    said, _, shown = out.messages[2].text().partition("\n" + EXCERPT_LINE)[2].partition("\n")
    assert said == "the start of line 1 of 301, as it was:"
    assert shown and "\n" not in shown and ("building src/main.c " + first).startswith(shown)


def test_a_digest_grows_into_16_tokens_of_room_and_not_into_15():
    """The room a digest may grow into under its target is used from 16 tokens (MIN_ROOM): here one more name."""
    t = checks(1, 12)
    opts = PruneOptions(protect_tokens=5, refs=False, digest_names=1)
    digested, _ = api.prune(t, COUNTER, opts)
    assert digested.messages[2].text().endswith("  names: src/pkg0/file_0_1.py")  # (the name the agent wrote first)
    fitted = total(digested)
    out, st = api.prune(t, COUNTER, replace(opts, target=fitted + 15))
    assert out.messages[2].text() == digested.messages[2].text() and st.tokens_after == fitted
    out, st = api.prune(t, COUNTER, replace(opts, target=fitted + 16))
    assert out.messages[2].text().endswith("  names: src/pkg0/file_0_1.py src/pkg0/file_0_2.py") and st.tokens_after <= fitted + 16


def test_the_tokens_after_a_prune_are_its_outputs_exactly_whatever_the_target_left():
    """--stats' tokens_after is the count of what prune wrote, and the passes' tokens add up to what it saved: a target
    over every reduction (the digests keep 4x their names), one that leaves room for names or lines, one just met."""
    t = checks(4, 60)
    for target in (1, total(t) // 3, total(t) - 700, total(t) - 1):
        out, st = api.prune(t, COUNTER, PruneOptions(protect_tokens=5, target=target, digest_names=8))
        saved = st.dedup.tokens + st.summaries.tokens + st.args.tokens + st.images.tokens
        assert st.tokens_before == total(t) and st.tokens_after == total(out) == total(t) - saved, target


def numbered_read(code: str) -> Transcript:
    """An ask, a Read of a file whose output is `code` numbered as Claude Code's Read prints it, the agent's last words."""
    text = "\n".join(f"{n:6d}→{line}" for n, line in enumerate(code.split("\n"), 1))
    rows = [{"role": "user", "content": "look at the steps"}, call("r", "Read", {"file_path": "/repo/steps.py"}), res("r", text)]
    return T([*rows, {"role": "assistant", "content": "read it"}])


def test_room_under_the_target_never_shortens_the_outline_of_a_read_with_few_names():
    """A read whose only names are its 8 definitions: its digest's outline gives each one's lines. The room left under
    its target has no more names to give it, and leaves the outline whole (not 4 definitions and 4 bare names)."""
    t = numbered_read("\n".join(f"def step_{k}():\n    pass\n" for k in range(8)) + "\n" + "\n".join("# filler" for _ in range(300)))
    digested, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=5, refs=False))
    outline = "  outline: " + " ".join(f"step_{k} {3 * k + 1}-{3 * k + 2}" for k in range(8))
    assert digested.messages[2].text() == "[Read] read /repo/steps.py lines 1-324\n" + outline
    for room in (16, 30, 47):
        out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=5, refs=False, target=total(digested) + room))
        assert out.messages[2].text() == digested.messages[2].text(), room


def test_no_line_to_show_leaves_the_digest_alone_and_the_stats_exact():
    """An output that opens with blank lines has no first lines worth showing in a small room: its digest stays as it
    is, and tokens_after is still what prune wrote."""
    rows = [
        {"role": "user", "content": "go"},
        call("a", "bash", {"command": "make"}),
        res("a", "\n" * 400 + "built src/main.c\n" + "ok\n" * 200),
    ]
    t = T([*rows, {"role": "assistant", "content": "done"}])
    digested, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=5, refs=False))
    for room in (48, 100):
        out, st = api.prune(t, COUNTER, PruneOptions(protect_tokens=5, refs=False, target=total(digested) + room))
        assert out.messages[2].text() == digested.messages[2].text() and st.tokens_after == total(out) == total(digested)


def test_without_exact_totals_prune_writes_the_same_and_reports_no_token_figure():
    """exact_totals False (`prune` without --stats), on a transcript well over its target (its own way, counting only
    what the decisions need): the same messages and counts as counting everything, and no token figure at all, not
    one made up from the room the last digests grew into."""
    t = checks(8, 200)
    target = total(t) // 12
    exact, st = api.prune(t, COUNTER, PruneOptions(protect_tokens=5, target=target, digest_names=8))
    bounded, bt = api.prune(t, COUNTER, PruneOptions(protect_tokens=5, target=target, digest_names=8, exact_totals=False))
    assert st.tokens_after is not None and target - MIN_ROOM < st.tokens_after <= target  # (the last digests grew)
    assert [m.text() for m in bounded.messages] == [m.text() for m in exact.messages]
    assert bt.tokens_before is None and bt.tokens_after is None
    assert [(s.count, s.chars, s.tokens) for s in (bt.dedup, bt.summaries, bt.args, bt.images)] == [
        (s.count, s.chars, 0) for s in (st.dedup, st.summaries, st.args, st.images)
    ]


# ---- the steps: images


def shot(text: str) -> dict:
    return {
        "role": "user",
        "content": [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 4000}}],
    }


def test_only_old_images_outside_the_last_ask_become_a_placeholder_and_only_when_asked():
    t = T(
        [
            shot("here is the bug"),
            {"role": "assistant", "content": "I see it."},
            shot("and this one"),
            {"role": "assistant", "content": "Fixed."},
            shot("one more"),
        ]
    )

    def parts(opts: PruneOptions) -> list[str | None]:
        """Each message's second part's type (an image, or the placeholder's text), as prune left it."""
        out, st = api.prune(t, COUNTER, opts)
        kinds = [m.content[1]["type"] if isinstance(m.content, list) else None for m in out.messages]
        assert st.images.count == kinds.count("text")
        return kinds

    assert parts(PruneOptions(protect_tokens=5)) == ["text", None, "text", None, "image_url"]  # the last ask keeps its image
    assert parts(PruneOptions(protect_tokens=5, images=False)) == ["image_url", None, "image_url", None, "image_url"]
    assert parts(PruneOptions(protect_tokens=3000)) == ["image_url", None, "image_url", None, "image_url"]  # all recent


# ---- the steps: digests


def test_a_read_digested_with_no_names_is_its_line_and_with_one_name_its_longest_definition():
    """--digest-names 0 makes one-liners, a numbered read's too (no outline); 1 gives a read its longest definition, with
    its lines, in the outline (not a bare name)."""
    code = "def short():\n    pass\n\ndef longer_one(a, b):\n    x = 1\n    y = 2\n    return x + y\n\n" + "\n".join(
        "# filler" for _ in range(300)
    )
    t = numbered_read(code)
    line = "[Read] read /repo/steps.py lines 1-308"
    digests = [api.prune(t, COUNTER, PruneOptions(protect_tokens=5, refs=False, digest_names=k))[0].messages[2].text() for k in (0, 1)]
    assert digests == [line, line + "\n  outline: longer_one(a, b) 4-7"]


def test_an_excerpt_under_a_bare_outline_is_sized_on_the_bare_digest():
    """A read with no more names than a digest keeps, whose outline's parameters take many tokens: under an excerpt the
    outline goes bare (the lines show the parameters), and the excerpt fills the room that leaves, not only the room
    the digest with its parameters left (no excerpt at all, or a short one)."""
    t = numbered_read(
        "\n".join(f"def op_{k}(src, dst, mode=1):\n    return {k}\n" for k in range(20))
        + "\n"
        + "\n".join(f"# filler line {i}" for i in range(300))
    )
    digested, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=5, refs=False))
    assert " op_0(src, dst, mode=1) 1-2 " in digested.messages[2].text()
    for room in range(48, 300, 12):
        target = total(digested) + room
        out, st = api.prune(t, COUNTER, PruneOptions(protect_tokens=5, refs=False, target=target))
        text = out.messages[2].text()
        assert " op_0 1-2 " in text and EXCERPT_LINE in text and target - 24 < st.tokens_after <= target, room


# ---- the steps: which lines an excerpt shows


def test_a_name_that_opens_the_output_counts_on_every_line_that_shows_it():
    """The excerpt is the run of lines that shows the most names the agent wrote: a name the output opens with counts
    on its later lines too (here the two lines naming settle_invoice, not the one naming INVOICE_GRACE_DAYS)."""
    lines = [f"value_{j} = compute(row_{j}, 'column {j}')" for j in range(900)]
    lines[0], lines[300], lines[700], lines[701] = (
        "settle_invoice: starting the run",
        "INVOICE_GRACE_DAYS read from the config",
        "settle_invoice: retry 1",
        "settle_invoice: retry 2",
    )
    rows = [{"role": "user", "content": "run it"}, call("a", "bash", {"command": "python run.py"}), res("a", "\n".join(lines) + "\n")]
    t = T([*rows, {"role": "assistant", "content": "settle_invoice ignores INVOICE_GRACE_DAYS; fixing it next."}])
    out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=5, refs=False, target=total(t) - 6000))
    shown = out.messages[2].text().partition(EXCERPT_LINE)[2]
    assert shown.startswith("lines 701-") and "\nsettle_invoice: retry 1\nsettle_invoice: retry 2\n" in shown


def test_an_excerpts_run_keeps_3_lines_clear_of_anything_redaction_would_change():
    """A run of lines within 3 lines of one that redaction changes (its key may stand there, its value in the run) is
    not shown; 4 lines away it is."""
    for gap, shown in ((3, False), (4, True)):
        for at in (100 - gap, 100 + gap):
            lines = [f"trace step {k} ok" for k in range(200)]
            lines[100], lines[at] = "settle_invoice(INVOICE_GRACE_DAYS) -> retry", "password=hunter2secret"
            body = "\n".join(lines) + "\n"
            run = prune_steps._used_run(body, prune_steps.line_uses(body, ["settle_invoice"]), len(lines[100]) + 1)
            assert (run is not None and run[:2] == (100, 101)) is shown, (gap, at)


# ---- the steps: names and phrases a digest keeps


def test_a_digest_lists_no_name_from_inside_a_private_key():
    """An output that prints an encrypted private key: its digest's names come from the output as redaction leaves it,
    so not the key's salt (a hex string no rule would take alone)."""
    key = "-----BEGIN RSA PRIVATE KEY-----\nProc-Type: 4,ENCRYPTED\nDEK-Info: AES-128-CBC,3f17f5316e2bac89\n\n"
    key += "\n".join("MIIEowIBAAKCAQEA" + "Zx9Lm2Qr7Tv3Wp8K" * 3 + f"Ab{k}" for k in range(20)) + "\n-----END RSA PRIVATE KEY-----\n"
    body = "wrote config/deploy_settings.yaml\n" + key + "".join(f"checked src/mod_{k}.py\n" for k in range(20))
    rows = [{"role": "user", "content": "deploy"}, call("b", "bash", {"command": "cat deploy.env"}), res("b", body)]
    out, _ = api.prune(
        T([*rows, {"role": "assistant", "content": "done"}, {"role": "user", "content": "next"}]), COUNTER, PruneOptions(protect_tokens=5)
    )
    names = out.messages[2].text().split("  names: ")[1]
    assert names.startswith("config/deploy_settings.yaml src/mod_0.py ") and "3f17f5316e2bac89" not in names


def test_a_digest_does_not_repeat_a_phrase_its_line_shows():
    """A grep for 'Team not found' finds "Team not found": the digest's line shows the phrase (in the command), so its
    quoted phrases do not list it again."""
    body = "".join(f'src/app/api_{k}.ts:{k}:  throw new Error("Team not found")\n' for k in range(20))
    rows = [{"role": "user", "content": "find it"}, call("a", "bash", {"command": "grep -rn 'Team not found' src"}), res("a", body)]
    out, _ = api.prune(
        T([*rows, {"role": "assistant", "content": "found"}, {"role": "user", "content": "next"}]), COUNTER, PruneOptions(protect_tokens=5)
    )
    line, names = out.messages[2].text().split("\n  names: ")
    assert "'Team not found'" in line and "Team not found" not in names and names.startswith("src/app/api_0.ts ")


def test_a_result_with_no_call_is_said_by_its_first_80_characters():
    first = "".join(f"w{k:02d} " for k in range(40))  # 160 characters
    rows = [
        {"role": "user", "content": "go"},
        {"role": "assistant", "content": "running"},
        {"role": "tool", "tool_call_id": "zz", "content": first + "\n" + "more\n" * 50},
    ]
    out, _ = api.prune(
        T([*rows, {"role": "assistant", "content": "done"}, {"role": "user", "content": "next"}]),
        COUNTER,
        PruneOptions(protect_tokens=5, refs=False, digest_names=0),
    )
    assert out.messages[2].text().endswith(" chars: " + first[:80])


# ---- the steps: long arguments


def test_a_cut_never_goes_through_a_word_even_the_first_one():
    """A long argument is cut at the start of the word the cut would go through, so a word 30 characters long that the
    value opens with, cut at 20, is not kept at all (nor a piece of it)."""
    value = "x" * 30 + " then more words follow here" * 30 + " end"
    cut = orjson.loads(truncate_arguments(orjson.dumps({"content": value}).decode(), 20, names=0))["content"]
    assert cut == "...[truncated]"


# ---- the steps: the order


def test_the_newest_quarter_of_old_outputs_goes_last_even_unused():
    """8 old outputs, the agent wrote names of the first 6: the 2 newest (a quarter) are reduced after the others, oldest
    first, though nothing names them (too new for their names to have been written); three digests take the oldest."""
    rows: list[dict] = [{"role": "user", "content": "check"}]
    for k in range(8):
        rows += [
            call(f"c{k}", "bash", {"command": f"check {k}"}),
            res(f"c{k}", "".join(f"src/pkg{k}/file_{k}_{i}.py: ok\n" for i in range(40))),
        ]
    t = T([*rows, {"role": "assistant", "content": " ".join(f"src/pkg{k}/file_{k}_1.py" for k in range(6)) + " need work"}])
    out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=5, target=total(t) - 200))
    assert [i for i, (a, b) in enumerate(zip(t.messages, out.messages, strict=True)) if a is not b] == [2, 4, 6]


def test_a_cut_argument_names_what_its_code_defines_before_what_it_binds_inside():
    """The names a cut argument keeps: the functions its code defines first (what a later diff or test names), then
    what their bodies bind, whatever order they come in."""
    code = "// header comment here\nfunction renderPanel() {\n  const showLoading = useLoading();\n  return showLoading;\n}\n\n"
    code += "function EmptyState() {\n  return null;\n}\n" + "// padding line\n" * 40
    cut = orjson.loads(truncate_arguments(orjson.dumps({"content": code}).decode(), 20, names=3))["content"]
    assert cut.endswith("...[truncated] names: renderPanel EmptyState showLoading")


def test_with_check_names_a_digest_keeps_no_phrase_that_stands_as_a_secret():
    """--check-names: a quoted phrase that redaction takes where it stands (a password's value) is left out of the
    digest; another phrase of the same output is kept."""
    body = 'loaded config/app.yaml\n  password: "correct horse battery staple"\n  greeting: "hello there friend"\n'
    rows = [
        {"role": "user", "content": "go"},
        call("a", "bash", {"command": "cat config/app.yaml"}),
        res("a", body + "checked src/mod.py\n" * 30),
    ]
    t = T([*rows, {"role": "assistant", "content": "done"}, {"role": "user", "content": "next"}])
    out, _ = api.prune(t, COUNTER, PruneOptions(protect_tokens=5, refs=False, check_names=True))
    digest = out.messages[2].text()
    assert digest.endswith('"hello there friend"') and "correct horse" not in digest
