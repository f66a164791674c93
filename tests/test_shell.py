"""compactctl.shell: the files a shell command printed (Relevant Files of agents that read through a shell)."""

from __future__ import annotations

import pytest

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
        ("sed -n '1,20p'", None, []),
        ("", None, []),
    ],
)
def test_files_read(command, workdir, files):
    assert files_read(command, workdir) == files


def test_a_relative_workdir_is_not_joined():
    assert files_read("cat a.py", "relative/dir") == ["a.py"]
