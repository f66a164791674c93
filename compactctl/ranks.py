"""The BPE ranks in a binary form that opens in about a millisecond, and an exact pure-Python
token counter that needs no tiktoken start-up.

Parsing the official rank files (base64 lines, 3.6 MB for o200k_base) takes ~0.4 s, and building
tiktoken's Rust encoder from them another ~0.2 s, at every start. Instead, the first run writes a
per-user cache file (`$XDG_CACHE_HOME/compactctl/` or `~/.cache/compactctl/`, or $COMPACTCTL_RANK_CACHE; folder 0700, file
0600, written to a temporary file and renamed) holding the token bytes, their offsets and an
open-addressing hash table over them. Later runs map it read-only and look tokens up in place.
The header records the sha256 of the official rank file it was built from (which must be the
official one) and the sha256 of its own payload, checked when the file is first opened and again
whenever the file has changed since (a stamp beside it, see `_stat_key`): a file that fails either
check is rebuilt from the official source. The ranks are a dense 0..n-1 range in both encodings.

`FastCounter` counts tokens exactly like tiktoken's `encode_ordinary`: ASCII text is split by the
official pattern restricted to ASCII (where its Unicode classes are plain: letters, digits, the six
White_Space characters) run by the standard `re` module, and so is text whose other characters are all
punctuation or symbols (—, →, ✓: they fall in the same classes of both patterns); other text by the official
pattern in the `regex` module when each of its characters has a settled
Unicode class (see below); then each piece goes through the same byte-pair merge loop as
tiktoken's `_byte_pair_merge` (lowest rank first, leftmost on ties). The counter declines (None)
what it cannot count that way, and the caller uses the real tiktoken encoder.
"""

from __future__ import annotations

import contextlib
import marshal
import mmap
import os
import re
import struct
import sys
import zlib
from collections.abc import Callable

from . import xdg

MAGIC = b"CCTKRK1" + (b"L" if sys.byteorder == "little" else b"B")  # arrays are in native byte order
# magic, n tokens, table slots, blob bytes, dict bytes, sha256 of the source, of the table part, of the dict part
HEADER = struct.Struct("<8sIIII32s32s32s")
EMPTY = 0xFFFFFFFF


def cache_dir() -> str:
    if os.environ.get("COMPACTCTL_RANK_CACHE"):
        return os.environ["COMPACTCTL_RANK_CACHE"]
    return os.path.join(xdg.base("XDG_CACHE_HOME", ".cache"), "compactctl")


def cache_path(name: str, source_sha256: str) -> str:
    return os.path.join(cache_dir(), f"{name}-{source_sha256[:16]}.ranks")


def _slot(key: bytes, mask: int) -> int:
    return zlib.crc32(key) & mask


def build(tokens: list[bytes], source_sha256: str) -> bytes:
    """The cache file's bytes for `tokens` (token i has rank i)."""
    import hashlib
    from array import array

    n = len(tokens)
    slots = 1 << (n * 2 - 1).bit_length()  # load factor <= 0.5
    mask = slots - 1
    offsets = array("I", [0]) * (n + 1)
    pos = 0
    for i, tok in enumerate(tokens):
        pos += len(tok)
        offsets[i + 1] = pos
    table = array("I", [EMPTY]) * slots
    for i, tok in enumerate(tokens):
        h = _slot(tok, mask)
        while table[h] != EMPTY:
            h = (h + 1) & mask
        table[h] = i
    blob = b"".join(tokens)
    payload = offsets.tobytes() + table.tobytes() + blob
    as_dict = marshal.dumps(dict(zip(tokens, range(n), strict=True)))  # what tiktoken's encoder is built from, fastest to load
    return (
        HEADER.pack(
            MAGIC,
            n,
            slots,
            len(blob),
            len(as_dict),
            bytes.fromhex(source_sha256),
            hashlib.sha256(payload).digest(),
            hashlib.sha256(as_dict).digest(),
        )
        + payload
        + as_dict
    )


def write_atomic(path: str, data: bytes) -> None:
    import tempfile

    folder = os.path.dirname(path)
    os.makedirs(folder, mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".ranks-", suffix=".tmp")  # mode 0600
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


class RankTable:
    """Token bytes -> rank, looked up in place in the mapped cache file (or in memory)."""

    def __init__(self, data, source_sha256: str, verify: bool = True):
        if len(data) < HEADER.size:
            raise ValueError("truncated rank cache")
        magic, n, slots, blob_len, dict_len, src, digest, self._dict_digest = HEADER.unpack_from(data, 0)
        if magic != MAGIC or src.hex() != source_sha256:
            raise ValueError("not a rank cache for this source")
        end = HEADER.size + 4 * (n + 1) + 4 * slots + blob_len
        if len(data) != end + dict_len:
            raise ValueError("rank cache has the wrong size")
        view = memoryview(data)
        if verify:
            import hashlib

            if hashlib.sha256(view[HEADER.size : end]).digest() != digest:
                raise ValueError("rank cache fails its sha256")
        self._dict_span = (end, end + dict_len)
        start = HEADER.size
        self.n = n
        self._mask = slots - 1
        self._offsets = view[start : start + 4 * (n + 1)].cast("I")
        start += 4 * (n + 1)
        self._table = view[start : start + 4 * slots].cast("I")
        start += 4 * slots
        self._blob = data
        self._blob_start = start
        self._data = data

    def get(self, key: bytes) -> int | None:
        table, offsets, blob, base = self._table, self._offsets, self._blob, self._blob_start
        mask = self._mask
        h = zlib.crc32(key) & mask
        while True:
            i = table[h]
            if i == EMPTY:
                return None
            a = offsets[i]
            b = offsets[i + 1]
            if b - a == len(key) and blob[base + a : base + b] == key:
                return i
            h = (h + 1) & mask

    def as_dict(self) -> dict[bytes, int]:
        """Every token -> its rank, for tiktoken's encoder (checked against its own sha256)."""
        import hashlib

        a, b = self._dict_span
        raw = self._data[a:b]
        if hashlib.sha256(raw).digest() != self._dict_digest:
            raise ValueError("rank cache fails its sha256")
        ranks = marshal.loads(raw)
        if not isinstance(ranks, dict) or len(ranks) != self.n:
            raise ValueError("rank cache holds no rank table")
        return ranks


def open_table(name: str, source_sha256: str, tokens_from_source) -> RankTable:
    """The cached table for `name`, built from `tokens_from_source()` (verified official ranks,
    as a list of token bytes in rank order) when missing or invalid."""
    path = cache_path(name, source_sha256)
    try:
        with open(path, "rb") as f:
            seen = _stat_key(os.fstat(f.fileno()))
            mm = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        verified = _read_stamp(path) == seen
        table = RankTable(mm, source_sha256, verify=not verified)
        if not verified:
            _write_stamp(path, seen)
        return table
    except (OSError, ValueError):
        pass
    data = build(tokens_from_source(), source_sha256)
    with contextlib.suppress(OSError):  # a read-only home still counts, from memory
        write_atomic(path, data)
        _write_stamp(path, _stat_key(os.stat(path)))
    return RankTable(data, source_sha256, verify=False)


# The payload's sha256 is checked once per cache file, not at every start (hashing 4.4 MB and OpenSSL's
# start-up were ~7 ms of a ~150 ms run): a stamp beside the file records the file's identity and times
# when its check passed, as git's index does for the files it has hashed. A write through the file system
# (write, truncate) changes its ctime, which no user can set back, and a file renamed over it has another
# inode: a stamp that still matches means the bytes are the ones that were checked; otherwise the check runs
# again and a file that fails it is rebuilt. Not seen (a reviewer showed the first): a change made through a
# writable shared mapping of the file to a page already dirty, and the disk's own corruption; the folder is
# the user's own (0700), and nothing of compactctl maps the file writable.
def _stat_key(st: os.stat_result) -> bytes:
    return f"{MAGIC.decode()} {st.st_dev} {st.st_ino} {st.st_size} {st.st_mtime_ns} {st.st_ctime_ns}".encode()


def _stamp_path(path: str) -> str:
    return path + ".checked"


def _read_stamp(path: str) -> bytes | None:
    try:
        with open(_stamp_path(path), "rb") as f:
            return f.read(256)
    except OSError:
        return None


def _write_stamp(path: str, key: bytes) -> None:
    with contextlib.suppress(OSError):  # no stamp: the check runs at every start, as before
        write_atomic(_stamp_path(path), key)


# --- the split patterns ------------------------------------------------------------------------
# The official patterns (tiktoken_ext.openai_public; a test checks they are the same).
PATTERNS = {
    "cl100k_base": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
    "o200k_base": "|".join(
        [
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""\p{N}{1,3}""",
            r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]
    ),
}
# The same patterns restricted to ASCII, for the standard `re` module. On ASCII text they match the
# same pieces: \p{L} = [A-Za-z], \p{Lu} = [A-Z], \p{Ll} = [a-z], \p{Lt} \p{Lm} \p{Lo} \p{M} have no
# ASCII member, \p{N} = [0-9], \s (White_Space) = [\t\n\v\f\r ] as re.ASCII has it, and `$` (end of
# text in Rust's regex) is `\Z`. cl100k_base's possessive quantifiers are left out (Python 3.10's `re` has
# none), which splits the same pieces: each of them ends its alternative, or is followed only by a
# quantifier that cannot fail (`[\r\n]*`) or by the end of the text (`\s+\Z`: giving back white space
# cannot reach the end), and the optional `[^\r\nA-Za-z0-9]?` stands before a run of letters it has no
# member of, so backtracking never finds another match. A test compares the splits with the official
# patterns in the `regex` module.
_ASCII_PATTERNS = {
    "cl100k_base": r"""'(?i:[sdmt]|ll|ve|re)|[^\r\nA-Za-z0-9]?[A-Za-z]+|[0-9]{1,3}| ?[^\sA-Za-z0-9]+[\r\n]*|\s+\Z|\s*[\r\n]|\s+(?!\S)|\s""",
    "o200k_base": "|".join(
        [
            r"""[^\r\nA-Za-z0-9]?[A-Z]*[a-z]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[^\r\nA-Za-z0-9]?[A-Z]+[a-z]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
            r"""[0-9]{1,3}""",
            r""" ?[^\sA-Za-z0-9]+[\r\n/]*""",
            r"""\s*[\r\n]+""",
            r"""\s+(?!\S)""",
            r"""\s+""",
        ]
    ),
}
MAX_PIECE = 1024  # longer pieces (bytes; the merge loop is quadratic: ~15 ms at 1 KB) go to tiktoken
LONG_PIECE = 128
LONG_BYTES = 64 << 10  # distinct pieces over LONG_PIECE bytes merged here, in all, before tiktoken is cheaper
MEMO_PIECES = 1 << 18

# Other text is split by the `regex` module (tiktoken's own dependency) with the official pattern.
# Its classes (\p{..}, \s) come from its own Unicode tables, tiktoken's from Rust's regex crate,
# and the two may be of different Unicode versions. So a character is counted here only when its
# class is settled: assigned in Python's unicodedata (Unicode 14 on 3.11, 13 on 3.10), with the same general category
# and white-space status there as in the `regex` module's newer tables, so not one of the few
# characters whose properties moved between versions. Anything else goes to tiktoken.
_CLASSES = ("Lu", "Lt", "Lm", "Lo", "M", "Ll", "N")
_FOLDS_INTO_CONTRACTIONS = {"\u017f"}  # long s case-folds to s: kept away from the (?i:'s...) branch


class _UnicodeClasses:
    def __init__(self):
        import regex

        self._regex = regex
        self._probe = [regex.compile(rf"\p{{{c}}}").match for c in _CLASSES] + [regex.compile(r"\s").match]
        self._settled: dict[str, bool] = {}

    def settled(self, ch: str) -> bool:
        ok = self._settled.get(ch)
        if ok is None:
            import unicodedata

            cat = unicodedata.category(ch)
            if cat in ("Cn", "Cs", "Co") or ch in _FOLDS_INTO_CONTRACTIONS:
                ok = False
            else:
                old = [cat == c or (c in ("M", "N") and cat[0] == c) for c in _CLASSES] + [ch.isspace()]
                ok = old == [m(ch) is not None for m in self._probe]
            self._settled[ch] = ok
        return ok


class FastCounter:
    """Exact token counts from the rank table alone (see the module's docstring)."""

    def __init__(self, name: str, table: RankTable):
        self.name = name
        self.table = table
        self._split = re.compile(_ASCII_PATTERNS[name], re.ASCII).findall
        self._usplit: Callable[[str], list[str]] | None = None
        self._classes: _UnicodeClasses | None = None
        self._symbol: dict[str, bool] = {}  # non-ASCII character -> punctuation or a symbol (see _symbols_only)
        self._pieces: dict[str, int] = {}
        self._long_bytes = 0

    def _unicode_split(self, s: str, wide: set[str]):
        """`s` split by the official pattern (the `regex` module), or None when a character of `wide` (its
        non-ASCII ones) is not settled."""
        if self._usplit is None:
            try:
                self._classes = _UnicodeClasses()
            except ImportError:
                return None
            # `$` is the end of the text in Rust's regex, `\Z` in Python's.
            self._usplit = self._classes._regex.compile(PATTERNS[self.name].replace("$", r"\Z")).findall
        assert self._classes is not None  # set together with _usplit
        settled = self._classes.settled
        if not all(map(settled, wide)):
            return None
        return self._usplit(s)

    def _symbols_only(self, wide: set[str]) -> bool:
        """Every character of `wide` (a text's non-ASCII ones) is punctuation or a symbol (general category P* or S*: a dash, an arrow,
        a check mark, box drawing: what agent transcripts mostly hold). The official pattern's classes leave such a
        character where the ASCII pattern does (not a letter, number, mark nor space; a test checks every one of
        them against the `regex` module's tables), so the ASCII pattern splits `s` into the same pieces, and the
        `regex` module (~16 ms to import and compile the pattern) is not needed."""
        symbol = self._symbol
        for ch in wide:
            ok = symbol.get(ch)
            if ok is None:
                from unicodedata import category

                ok = symbol[ch] = category(ch)[0] in "PS"
            if not ok:
                return False
        return True

    def count(self, s: str) -> int | None:
        """Tokens of `s`, or None when this counter cannot count it (an unsettled character, a huge piece)."""
        if s.isascii():
            pieces = self._split(s)
        else:
            wide = {ch for ch in set(s) if ch > "\x7f"}  # its non-ASCII characters
            pieces = self._split(s) if self._symbols_only(wide) else self._unicode_split(s, wide)
            if pieces is None:
                return None
        memo = self._pieces
        n = 0
        for piece in pieces:
            k = memo.get(piece)
            if k is None:
                b = piece.encode("utf-8")
                if len(b) > LONG_PIECE:
                    self._long_bytes += len(b)
                    if len(b) > MAX_PIECE or self._long_bytes > LONG_BYTES:
                        return None
                if len(memo) >= MEMO_PIECES:
                    memo.clear()
                k = memo[piece] = self._bpe(b)
            n += k
        return n

    def _bpe(self, piece: bytes) -> int:
        get = self.table.get
        if len(piece) == 1 or get(piece) is not None:
            return 1
        # tiktoken's _byte_pair_merge: parts are (start, rank of the pair starting there).
        big = 1 << 32
        starts = list(range(len(piece) + 1))
        ranks = [r if (r := get(piece[i : i + 2])) is not None else big for i in range(len(piece) - 1)] + [big, big]
        while True:
            best = min(ranks[:-1])
            if best == big:
                break
            i = ranks.index(best)
            del starts[i + 1]
            del ranks[i + 1]
            if i + 2 < len(starts):
                r = get(piece[starts[i] : starts[i + 2]])
                ranks[i] = big if r is None else r
            else:
                ranks[i] = big
            if i > 0:
                r = get(piece[starts[i - 1] : starts[i + 1]]) if i + 1 < len(starts) else None
                ranks[i - 1] = big if r is None else r
        return len(starts) - 1
