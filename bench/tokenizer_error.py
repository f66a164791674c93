"""How far the cheap estimates are from exact counts, measured on the real corpus.

    python bench/tokenizer_error.py [CORPUS_DIR]

1. chars/4 against o200k_base, by kind of text: JSON tool outputs, code (file reads and edits),
   prose (user and assistant text).
2. o200k_base against Claude's own tokenizer: Claude Code logs carry the API's usage.output_tokens
   for each assistant message (final line of each message.id); compared with o200k_base on the text,
   thinking and tool input the message produced. Thinking may be stored incompletely in logs, so
   this is an estimate of the order of magnitude.
"""

from __future__ import annotations

import sys
from pathlib import Path

import orjson

from compactctl import api, outputs, tools
from compactctl.pairs import calls_for_results
from compactctl.tokens import make_counter


def kinds(corpus: Path):
    out = {"json": [0, 0], "code": [0, 0], "prose": [0, 0]}
    c = make_counter("gpt-4o")
    files = [p for p in corpus.rglob("*.jsonl") if "openhands" not in p.parts]
    transcripts = [t for path in files for t in api.read([str(path)])]
    tau = corpus / "openai-chat/tau-bench/gpt-4o-airline.json"
    if tau.exists():
        from compactctl.formats.openai import message_from_dict
        from compactctl.model import Transcript

        for r in orjson.loads(tau.read_bytes()):
            transcripts.append(Transcript([message_from_dict(d, "tau", 0, i) for i, d in enumerate(r["traj"])]))
    for t in transcripts:
        call_of = calls_for_results(t.messages)
        for i, m in enumerate(t.messages):
            text = m.text()
            if not text.strip():
                continue
            if m.role == "tool":
                body, _ = outputs.unwrap_output(text)
                s = body.lstrip()
                call = call_of.get(i)
                if s[:1] in "{[":
                    try:
                        orjson.loads(s)
                        k = "json"
                    except orjson.JSONDecodeError:
                        k = None
                else:
                    k = None
                if k is None:
                    k = "code" if call is not None and tools.kind_of(call.name) in ("read", "editor") else None
                if k is None:
                    continue
                text = body
            elif m.role in ("user", "assistant"):
                k = "prose"
            else:
                continue
            out[k][0] += (len(text) + 3) // 4
            out[k][1] += c.text(text)
    return out


def claude(corpus: Path):
    c = make_counter("gpt-4o")
    api_total = ours = n = 0
    for path in (corpus / "claude-code").rglob("*.jsonl"):
        last: dict[str, dict] = {}
        blocks: dict[str, list] = {}
        for line in path.read_bytes().splitlines():
            if not line.strip():
                continue
            o = orjson.loads(line)
            msg = o.get("message") if o.get("type") == "assistant" else None
            if not isinstance(msg, dict) or not msg.get("id") or not isinstance(msg.get("content"), list):
                continue
            last[msg["id"]] = msg
            blocks.setdefault(msg["id"], []).extend(msg["content"])
        for mid, msg in last.items():
            out_tokens = (msg.get("usage") or {}).get("output_tokens")
            if not out_tokens or out_tokens < 20:
                continue
            text = []
            for b in blocks[mid]:
                if b.get("type") == "text":
                    text.append(b.get("text", ""))
                elif b.get("type") == "thinking":
                    text.append(b.get("thinking", ""))
                elif b.get("type") == "tool_use":
                    text.append(b.get("name", "") + orjson.dumps(b.get("input", {})).decode())
            mine = c.text("".join(text))
            if mine == 0:
                continue
            api_total += out_tokens
            ours += mine
            n += 1
    return n, api_total, ours


def main() -> None:
    corpus = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parents[2] / "shared" / "corpus")
    print("chars/4 against o200k_base (positive: chars/4 over-counts)")
    for k, (approx, exact) in kinds(corpus).items():
        print(f"  {k:<6} {exact:>10,} tokens exact, {approx:>10,} by chars/4: {100 * (approx - exact) / exact:+.1f}%")
    n, api_total, ours = claude(corpus)
    print(
        f"Claude (API usage.output_tokens) against o200k_base, {n} assistant messages: {api_total:,} vs {ours:,} "
        f"-> Claude counts {100 * (api_total - ours) / ours:+.1f}% more than o200k_base"
    )


if __name__ == "__main__":
    main()
