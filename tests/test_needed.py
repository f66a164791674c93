"""compactctl.needed, the continuation eval's fact extractor: what counts as a fact, what is noise, and how a fact
of the prefix is matched in the continuation (used again) and in a compacted output (kept)."""

from __future__ import annotations

from compactctl import needed

from .rows import T


def keys(facts):
    return {(f.kind, f.key) for f in facts}


def test_a_url_or_directory_written_with_its_trailing_slash_is_the_same_fact():
    """The key of a URL or a path drops its trailing slash ("https://docs.example.com/guide/" is
    "https://docs.example.com/guide"); the matcher refused a key followed by "/", so the same URL or directory written
    again with its slash was not a use, and an output that kept it verbatim did not keep it. A slash that goes on to a
    longer URL or path is still another fact."""
    ask = "Read https://docs.example.com/guide/ and fix /srv/app/static/ first"
    for later in (
        "Again: https://docs.example.com/guide/ and /srv/app/static/ please",
        "Again: https://docs.example.com/guide and /srv/app/static please",
    ):
        msgs = T([{"role": "user", "content": ask}, {"role": "assistant", "content": "ok"}, {"role": "user", "content": later}]).messages
        fs = needed.needed_facts(msgs, 2)
        assert keys(fs) == {("url", "https://docs.example.com/guide"), ("path", "app/static")}, later
        assert needed.kept_facts(fs, msgs[:1]) == [True, True], later  # the ask kept verbatim keeps both
    assert needed.occurs("url", "https://docs.example.com/guide", "see https://docs.example.com/guide/.")
    assert needed.occurs("path", "app/static", "(in /srv/app/static/)")
    assert not needed.occurs("url", "https://docs.example.com/guide", "see https://docs.example.com/guide/intro")
    assert not needed.occurs("path", "app/static", "ls /srv/app/static/css")
    assert not needed.occurs("path", "app/static", "ls /srv/app/static/.env")
