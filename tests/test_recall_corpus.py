"""Every reference in a compacted corpus output resolves to its original (skipped when ../shared/corpus is absent)."""

from __future__ import annotations

import pytest

from compactctl import api, archive, refs, search
from compactctl.errors import CannotFit

from .test_corpus import COUNTER, EVERY, compacted, needs_corpus

pytestmark = [needs_corpus, pytest.mark.corpus]


@pytest.mark.parametrize("path", EVERY, ids=lambda p: p.name)
def test_every_reference_resolves_to_its_original(path, tmp_path):
    results = []
    for t, out, rep, err in compacted(path, take=True):  # compacted at 32,000 tokens, as test_corpus checks it
        results.append((t, *_written(out, rep, err)))
    _check_references(results, tmp_path / "a.sqlite")


@pytest.mark.parametrize("path", EVERY, ids=lambda p: p.name)
def test_every_reference_resolves_at_a_fifth_of_each_transcript(path, tmp_path):
    """At a small target (bench/recall.py's): summaries of spans prune changed whole, reference lines that give way."""
    results = []
    for t in api.read([str(path)]):
        target = max(sum(COUNTER.messages(t.messages)) // 5, 1)
        budget = api.Budget(context_window=target * 2, threshold=0.5, summary_min=min(2000, target // 3))
        try:
            out, rep = api.compact(t, COUNTER, api.OfflineSummarizer(), api.CompactOptions(budget, min_saving=0.0))
            results.append((t, *_written(out, rep, None)))
        except CannotFit as e:
            results.append((t, *_written(None, None, e)))
    _check_references(results, tmp_path / "a.sqlite")


def _written(out, rep, err):
    """What the run writes (a compaction, or what --on-error skip writes) and the originals it archives."""
    if err is not None:
        assert err.fallback is not None
        return err.fallback
    return out, rep.archived


def _check_references(results, db):
    sink = archive.SqliteSink(str(db))
    for seq, (_, _, archived) in enumerate(results):
        for a in archived:
            sink.add({"seq": seq, **a.record()})
    sink.close(True)
    with search.Index.open(str(db)) as ix:
        for t, out, _ in results:
            originals = {m.index: m for m in t.messages}
            for ref in refs.REF_RE.findall(api.write(out).decode()):
                hits = ix.recall(ref, t.id)
                for h in hits:  # the message it names, or every archived member of the summarized span
                    assert h.transcript == t.id and refs.ref_of(originals[h.index]) == h.ref == refs.ref_of_body(h.message)
                    assert h.span == ref if h.span else h.ref == ref
