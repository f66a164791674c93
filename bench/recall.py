"""References and recall over the real corpus: token cost of the references, every reference
resolving, search latency on an archive of the whole corpus, and the eval's recovery arm.

    python bench/recall.py [--ratio 0.2] [--queries 500]   # writes bench/results/recall.json

Every transcript compactctl reads in ../shared/corpus is compacted offline twice (--refs and
--no-refs) at the eval's budget (`--ratio` of its tokens, min_saving 0) and at a fixed 32k window;
the archive records of the --refs runs go into one SQLite index (bench/data/recall/corpus.sqlite).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus"
sys.path.insert(0, str(ROOT))

from compactctl import api, archive, refs, search  # noqa: E402
from compactctl.errors import CannotFit  # noqa: E402
from compactctl.evaluate import found, haystack, probes, removed_indices  # noqa: E402
from compactctl.recovery import recoverable  # noqa: E402
from compactctl.tokens import make_counter  # noqa: E402


def files() -> list[Path]:
    return sorted(p for p in CORPUS.rglob("*") if p.suffix in (".jsonl", ".json", ".traj"))


def compact(t, counter, budget, on: bool, min_saving: float):
    try:
        out, rep = api.compact(t, counter, api.OfflineSummarizer(), api.CompactOptions(budget, min_saving=min_saving, refs=on))
        return out, rep.archived
    except CannotFit as e:
        return e.fallback if e.fallback is not None else (t, [])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ratio", type=float, default=0.2)
    ap.add_argument("--queries", type=int, default=500)
    a = ap.parse_args()
    if not CORPUS.is_dir():
        raise SystemExit(f"{CORPUS} is absent")
    counter = make_counter("gpt-4o")
    data = ROOT / "bench" / "data" / "recall"
    data.mkdir(parents=True, exist_ok=True)
    db = data / "corpus.sqlite"
    sink = archive.SqliteSink(str(db))
    settings = {"ratio": {}, "window32k": {}}
    for name in settings:
        settings[name] = {"with": 0, "without": 0, "refs": 0, "transcripts": 0, "worst": 0.0}
    facts_total = in_context = back = 0
    queries: list[str] = []
    seq = 0
    unresolved: list[tuple[str, str, str]] = []
    outputs: list[tuple[str, list[str]]] = []
    facts_by: dict[str, list[str]] = {}
    t0 = time.perf_counter()
    for f in files():
        for t in api.read([str(f)]):
            tokens = sum(counter.messages(t.messages))
            target = max(int(tokens * a.ratio), 1)
            budgets = {
                "ratio": (api.Budget(context_window=target * 2, threshold=0.5, summary_min=min(2000, target // 3)), 0.0),
                "window32k": (api.Budget(context_window=32000), 0.10),
            }
            for name, (budget, min_saving) in budgets.items():
                with_refs, archived = compact(t, counter, budget, True, min_saving)
                without, _ = compact(t, counter, budget, False, min_saving)
                w, wo = sum(counter.messages(with_refs.messages)), sum(counter.messages(without.messages))
                s = settings[name]
                s["with"] += w
                s["without"] += wo
                s["transcripts"] += 1
                s["worst"] = max(s["worst"], (w - wo) / wo if wo else 0.0)
                found_refs = refs.REF_RE.findall(api.write(with_refs).decode())
                s["refs"] += len(found_refs)
                if name == "ratio":
                    for r in archived:
                        sink.add({"seq": seq, **r.record()})
                    outputs.append((t.id, found_refs))
                    ps = probes(t, removed_indices(t, with_refs))
                    hay = haystack(with_refs)
                    missing = [p.text for p in ps if not found(p, hay)]
                    facts_total += len(ps)
                    in_context += len(ps) - len(missing)
                    queries.extend(p.text for p in ps)
                    facts_by[t.id] = missing
                    seq += 1
    sink.close(True)
    build_s = time.perf_counter() - t0

    ix = search.Index.open(str(db))
    for tid, found_refs in outputs:
        for r in found_refs:
            try:
                hits = ix.recall(r, tid)
                if not hits or not all(refs.ref_of_body(h.message) == h.ref for h in hits):
                    unresolved.append((tid, r, "mismatch" if hits else "no hit"))
            except search.UnknownRef:
                unresolved.append((tid, r, "unknown"))
    # Recovery arm: the probes missing from each compacted context, one search each (top 5) in its transcript's part.
    for tid, facts in facts_by.items():
        back += len(recoverable(facts, ix, tid))

    rng = random.Random(12)
    words = [w for q in queries for w in q.split() if len(w) > 3]
    sample = rng.sample(queries, min(len(queries), a.queries // 2)) + rng.sample(words, min(len(words), a.queries - a.queries // 2))
    for q in sample[:20]:
        ix.search(q)  # warm the page cache
    lat, slow = [], []
    for q in sample:
        s0 = time.perf_counter()
        ix.search(q, 5)
        lat.append((time.perf_counter() - s0) * 1000)
        if lat[-1] > 50:
            slow.append((round(lat[-1], 1), q[:200]))
    records = ix.db.execute("SELECT count(*) FROM records WHERE ref IS NOT NULL").fetchone()[0]
    ix.close()
    lat.sort()
    res = {
        "transcripts": settings["ratio"]["transcripts"],
        "archive": {"records": records, "bytes": db.stat().st_size, "build_and_compact_s": round(build_s, 1)},
        "refs_overhead": {
            k: {**v, "overhead": (v["with"] - v["without"]) / v["without"] if v["without"] else 0.0} for k, v in settings.items()
        },
        "refs_checked": sum(len(r) for _, r in outputs),
        "refs_unresolved": len(unresolved),
        "unresolved": unresolved[:10],
        "search_ms": {
            "queries": len(lat),
            "p50": statistics.median(lat),
            "p95": lat[int(len(lat) * 0.95) - 1],
            "max": lat[-1],
            "over_50ms": sorted(slow, reverse=True)[:10],
        },
        "recovery": {
            "facts": facts_total,
            "in_context": in_context,
            "recoverable": back,
            "in_context_share": in_context / facts_total if facts_total else 1.0,
            "with_recovery_share": (in_context + back) / facts_total if facts_total else 1.0,
        },
    }
    out = ROOT / "bench" / "results"
    out.mkdir(parents=True, exist_ok=True)
    (out / "recall.json").write_text(json.dumps(res, indent=2))
    print(json.dumps(res, indent=2))


if __name__ == "__main__":
    main()
