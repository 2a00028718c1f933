"""cli_helpers.py: shared code of the CLI tests: where things are, a checked runner of the treescore binary, data writers."""
import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
MODELS = REPO / "tests" / "data" / "models"
LETOR = REPO / "tests" / "data" / "letor" / "mq2008.fold1.test.txt"
EXAMPLE = REPO / "data" / "example"
TIMEOUT_S = 20

# Markers of a sanitizer report: an ASan/UBSan build exits 1 (or our exit code below)
# after one, which would otherwise look like an ordinary "bad input" failure.
SANITIZER_MARKERS = ("AddressSanitizer", "LeakSanitizer", "runtime error:", "UndefinedBehaviorSanitizer")
ENV = dict(os.environ,
           ASAN_OPTIONS="detect_leaks=1:exitcode=86:abort_on_error=0",
           UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:exitcode=87",
           LC_ALL="C")


def binary_path():
    return Path(os.environ.get("TS_BIN", REPO / "build" / "treescore"))


class Result:
    """One finished run: returncode, stdout and stderr as text (undecodable bytes replaced)."""

    def __init__(self, args, proc):
        self.args = args
        self.returncode = proc.returncode
        self.stdout = proc.stdout.decode("utf-8", "replace")
        self.stderr = proc.stderr.decode("utf-8", "replace")

    def __repr__(self):
        return (f"Result(args={self.args!r}, returncode={self.returncode},\n"
                f"stdout={self.stdout[:2000]!r},\nstderr={self.stderr[:2000]!r})")


class Treescore:
    """Runs the CLI with a timeout and checks what every run must satisfy."""

    def __init__(self, path):
        self.path = path

    def run(self, *args, timeout=TIMEOUT_S, env=None):
        """env: variables to set (a value None removes one) on top of ENV."""
        argv = [str(self.path)] + [str(a) for a in args]
        run_env = dict(ENV)
        for k, v in (env or {}).items():
            if v is None:
                run_env.pop(k, None)
            else:
                run_env[k] = v
        try:
            proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, timeout=timeout, env=run_env)
        except subprocess.TimeoutExpired:
            pytest.fail(f"treescore hung: no exit within {timeout} s: {argv}")
        r = Result(argv, proc)
        assert r.returncode >= 0, f"treescore died of signal {-r.returncode}: {r!r}"
        assert r.returncode not in (86, 87, 134, 136, 139), f"crash-like exit status: {r!r}"
        for marker in SANITIZER_MARKERS:
            assert marker not in r.stderr, f"sanitizer report ({marker}): {r!r}"
        return r

    def fails(self, *args, status=1, mentions=(), line=None, out=None, timeout=TIMEOUT_S, env=None):
        """Run, expect exit `status`, a message on stderr ("treescore: ..." for status 1)
        naming each of `mentions`
        (file paths are matched by base name) and, when `line` is given, "NAME:LINE" for
        the first of them; with `out`, expect that no file was left at that path."""
        r = self.run(*args, timeout=timeout, env=env)
        assert r.returncode == status, f"expected exit {status}: {r!r}"
        if status == 1:
            assert "treescore:" in r.stderr, f"no 'treescore:' message on stderr: {r!r}"
        else:
            assert r.stderr.strip(), f"nothing on stderr: {r!r}"
        for m in mentions:
            name = Path(str(m)).name
            assert name in r.stderr, f"stderr does not name {name!r}: {r!r}"
        if line is not None:
            name = re.escape(Path(str(mentions[0])).name)
            assert re.search(rf"{name}:{line}\b", r.stderr), f"stderr lacks '{mentions[0]}:{line}': {r!r}"
        if out is not None:
            assert not Path(out).exists(), f"a failed run left {out} behind: {r!r}"
        return r

    def succeeds(self, *args, timeout=TIMEOUT_S, env=None):
        r = self.run(*args, timeout=timeout, env=env)
        assert r.returncode == 0, f"expected success: {r!r}"
        return r


def write_svmlight_ok(path, n_rows, n_features=136, bad_line=None, bad_text="1 qid:1 1:oops", qid=True):
    """An SVMlight file of n_rows valid rows (feature ids 1..n_features-1, queries of 10
    rows unless qid is False), line `bad_line` (1-based) replaced by bad_text."""
    with open(path, "w") as f:
        for i in range(1, n_rows + 1):
            if i == bad_line:
                f.write(bad_text + "\n")
            else:
                q = f" qid:{1 + i // 10}" if qid else ""
                f.write(f"{i % 3}{q} 1:{i % 7 * 0.5} 5:{i % 11} {n_features - 1}:0.25\n")
    return path
