"""Every reference in a compacted corpus output resolves to its original (skipped when ../shared/corpus is absent)."""

from __future__ import annotations

import pytest

from compactctl import api, archive, refs

from .test_corpus import EVERY, compacted, needs_corpus

pytestmark = [needs_corpus, pytest.mark.corpus]


@pytest.mark.parametrize("path", EVERY, ids=lambda p: p.name)
def test_every_reference_resolves_to_its_original(path, tmp_path):
    db = tmp_path / "a.sqlite"
    sink = archive.SqliteSink(str(db))
    outputs = []
    for seq, (t, out, rep, err) in enumerate(compacted(path, take=True)):  # compacted at 32,000 tokens, as test_corpus checks it
        if err is not None:
            assert err.fallback is not None
            out, archived = err.fallback
        else:
            archived = rep.archived
        for a in archived:
            sink.add({"seq": seq, **a.record()})
        outputs.append((t, out))
    sink.close(True)
    with archive.Index.open(str(db)) as ix:
        for t, out in outputs:
            originals = {m.index: m for m in t.messages}
            for ref in refs.REF_RE.findall(api.write(out).decode()):
                hits = ix.recall(ref, t.id)
                for h in hits:  # the message it names, or every archived member of the summarized span
                    assert h.transcript == t.id and refs.ref_of(originals[h.index]) == h.ref == refs.ref_of_body(h.message)
                    assert h.span == ref if h.span else h.ref == ref
