"""What the LLM summarizer keeps whatever the model writes: continuation scoring of the LLM path with a model that
writes nothing of the session (`make eval-llm-floor`).

The model is `tests/llm_server.py`'s "good" one on 127.0.0.1: a 13-section answer that names no fact of any
transcript ("Fix the bug.", "Ran the tests.", app.py). What the scored summaries hold is then what compactctl adds
to an answer (`summarizers/guard.py`: the key facts put back, the sections it left empty, the identifier index in
the room it leaves) plus what prune and the plan kept outside the summary. A real model's prose adds to this floor,
and takes room from it: an answer that fills the whole budget leaves no room for the index. Same cuts, window and
facts as `make eval`'s continuation table; the offline summarizer's row beside it, from the same run.

    python bench/llm_floor.py                       # long, codex, short-cc, swe-agent (about a minute)
    python bench/llm_floor.py --group long,codex
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from eval_corpus import CONTINUATION_GROUPS, present  # noqa: E402

from compactctl import continuation  # noqa: E402
from compactctl.summarizers.llm import LLMSummarizer  # noqa: E402
from compactctl.tokens import make_counter  # noqa: E402
from tests.llm_server import Server  # noqa: E402

GROUPS = "long,codex,short-cc,swe-agent"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--group", default=GROUPS, help=f"continuation groups, comma-separated (default {GROUPS})")
    ap.add_argument("--window-ratio", type=float, default=0.4)
    a = ap.parse_args()
    counter = make_counter("gpt-4o")
    rows = [
        "| data | cuts | needed facts | offline: kept | in context | LLM floor: kept | in context | LLM floor reduction |",
        "|---|---|---|---|---|---|---|---|",
    ]
    pooled: dict[str, list] = {"offline": [], "llm": []}
    with Server() as srv:
        llm = LLMSummarizer("good", base_url=srv.url, api_key="local", retries=0, timeout=30)
        for key, title, files in present(CONTINUATION_GROUPS, a.group.split(",")):
            t0 = time.time()
            paths = [str(f) for f in files]
            off = continuation.evaluate_files(paths, strategies=("compactctl",), window_ratio=a.window_ratio, counter=counter)
            res = continuation.evaluate_files(
                paths, strategies=("compactctl",), window_ratio=a.window_ratio, counter=counter, summarizer=llm
            )
            pooled["offline"] += off["rows"]
            pooled["llm"] += res["rows"]
            rows.append(_row(title, off, res))
            print(f"{key}: {len(res['rows'])} cuts in {time.time() - t0:.1f} s", file=sys.stderr)
    if len(rows) > 3:
        agg = {k: continuation.aggregate(v, ("compactctl",)) for k, v in pooled.items()}
        rows.append(
            _row("**all**", {"aggregate": agg["offline"], "rows": pooled["offline"]}, {"aggregate": agg["llm"], "rows": pooled["llm"]})
        )
    print("\n".join(rows))


def _row(title: str, off: dict, res: dict) -> str:
    o, m = off["aggregate"]["compactctl"], res["aggregate"]["compactctl"]
    return (
        f"| {title} | {len(res['rows'])} | {m['needed']:,} | {o['kept']:.1%} | {o['in_context']:.1%} | {m['kept']:.1%} "
        f"| {m['in_context']:.1%} | {m['reduction']:.1%} |"
    )


if __name__ == "__main__":
    main()
