"""compactctl.shell: the files a shell command printed (Relevant Files of agents that read through a shell)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compactctl.shell import files_read

W = "/repo/packages/services/src"


@pytest.mark.parametrize(
    "command, workdir, files",
    [
        # Codex reads every file this way, in the call's workdir.
        ("sed -n '1,160p' createService.ts", W, [f"{W}/createService.ts"]),
        ("sed -n -e '1p' -e '5,9p' a.py b.py", None, ["a.py", "b.py"]),
        ("sed 's/x/y/' notes.md", None, ["notes.md"]),
        ("nl -ba src/app.py | sed -n '40,80p'", "/repo", ["/repo/src/app.py"]),
        ("cat ../README.md", W, ["/repo/packages/services/README.md"]),
        ("cat /etc/hosts README.md", None, ["/etc/hosts", "README.md"]),
        ("head -n 40 log.txt && tail -20 log.txt", None, ["log.txt"]),
        ("tail -f -n 5 server.log 2>&1", None, ["server.log"]),
        ("cd apps/web && cat package.json", "/repo", ["/repo/apps/web/package.json"]),
        ("cd /srv && bat -r 1:20 main.rs", None, ["/srv/main.rs"]),
        ("cat src/a.py 2>/dev/null || echo missing", None, ["src/a.py"]),
        ("less +G app.log", None, ["app.log"]),
        ("cat -- -odd-name", None, []),  # a name starting with "-" is not taken (an option to most readers)
        # Not reads: an edit, writes, searches, listings, globs, variables, scripts.
        ("sed -i 's/a/b/' f.py", None, []),
        ("sed -i.bak 's/a/b/' f.py", None, []),
        ("sed -ni 's/a/b/p' f.py", None, []),
        ("sed --in-place=.bak 's/a/b/' f.py", None, []),
        ("cat > out.txt", None, []),
        ("echo hi | cat", None, []),
        ("rg createService src", None, []),
        ("grep -n foo a.py", None, []),
        ("ls -la src", None, []),
        ("cat *.md", None, []),
        ("cat $FILE", None, []),
        ("cat ~/.bashrc", None, []),
        ("cat <<'EOF' > x.py\nprint(1)\nEOF", None, []),
        ("cat 'unclosed", None, []),
        # A parenthesis inside a command is bash's syntax error (Codex: an unquoted Next.js route group); a subshell is not.
        ("sed -n '1,200p' app/(protected)/page.tsx", "/r", []),
        ("sed -n '1,200p' 'app/(protected)/page.tsx'", "/r", ["/r/app/(protected)/page.tsx"]),
        ("(cd sub && cat y.txt)", "/r", ["/r/sub/y.txt"]),
        ("echo $(cat y.txt)", None, []),
        ("sed -n '1,20p'", None, []),
        ("", None, []),
    ],
)
def test_files_read(command, workdir, files):
    assert files_read(command, workdir) == files


def test_a_relative_workdir_is_not_joined():
    assert files_read("cat a.py", "relative/dir") == ["a.py"]


@settings(max_examples=300, deadline=None)
@given(
    st.text(alphabet=st.sampled_from(list("catsedhn -'\"|&;<>()$*~/\\.12\n\t")) | st.characters(), max_size=80), st.none() | st.just("/w")
)
def test_any_text_gives_names_or_nothing(command, workdir):
    """Whatever the command (unclosed quotes, operators alone, control characters), no error: plain names or none."""
    for path in files_read(command, workdir):
        assert path and not set(path) & set("*?[]$`{}~") and not path.startswith(("-", "+"))
        assert workdir is None or path.startswith("/")  # joined to the working directory, or absolute already
