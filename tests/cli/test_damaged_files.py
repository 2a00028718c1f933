"""test_damaged_files.py: issue 29 from the command line: a truncated ifelse object in the cache, a data or model FIFO without a writer, /dev/zero or a directory as the model, a compiler that hangs, and TREESCORE_WISDOM naming a CSV: a clear error or a rebuild, never a signal, a hang or a destroyed file."""
import glob
import hashlib
import os
import subprocess

import pytest

from cli_helpers import ENV, EXAMPLE, binary_path

MODEL = EXAMPLE / "model.txt"
DATA = EXAMPLE / "rank.test"


def scores(r):
    assert r.returncode == 0, r
    return [float(x) for x in r.stdout.split()]


def test_truncated_ifelse_object_is_rebuilt(ts, tmp_path):
    """A cached object cut to half (a crash while it was written) killed the CLI with
    SIGBUS inside dlopen (exit 135): it is rebuilt with a warning, and auto skips it."""
    cache = tmp_path / "cache"
    env = {"TREESCORE_CACHE_DIR": str(cache), "TREESCORE_WISDOM": "off"}
    ref = scores(ts.run("score", "-m", MODEL, "-d", DATA, "-e", "naive", env=env))
    assert scores(ts.run("score", "-m", MODEL, "-d", DATA, "-e", "ifelse", env=env, timeout=120)) == ref
    (so,) = glob.glob(str(cache / "ifelse-*.so"))
    whole = os.path.getsize(so)
    for engine in ("auto", "ifelse"):
        os.truncate(so, whole // 2)
        r = ts.run("score", "-m", MODEL, "-d", DATA, "-e", engine, env=env, timeout=120)
        assert r.returncode == 0, r
        assert scores(r) == ref
        if engine == "ifelse":
            assert "damaged" in r.stderr and "compiling it again" in r.stderr, r
            assert os.path.getsize(so) >= whole - 4096  # rebuilt whole (paths inside may differ)


def test_data_fifo_without_writer_times_out(ts, tmp_path):
    fifo = tmp_path / "data.svm"
    os.mkfifo(fifo)
    r = ts.run("score", "-m", MODEL, "-d", fifo, env={"TREESCORE_FIFO_TIMEOUT": "1"}, timeout=20)
    assert r.returncode == 1, r
    assert str(fifo) in r.stderr and "TREESCORE_FIFO_TIMEOUT" in r.stderr, r


def test_data_pipes_still_work(ts, tmp_path):
    """A pipe on standard input, and /dev/stdin, are read as before."""
    ref = scores(ts.run("score", "-m", MODEL, "-d", DATA))
    for path in ("-", "/dev/stdin"):
        with open(DATA, "rb") as f:
            p = subprocess.run([str(binary_path()), "score", "-m", str(MODEL), "-d", path], stdin=f,
                               capture_output=True, env=ENV, timeout=20)
        assert p.returncode == 0, p.stderr
        assert [float(x) for x in p.stdout.split()] == ref


def test_feature_names_fifo_refused(ts, tmp_path):
    """--feature-names on a FIFO without a writer blocked in fopen: refused at once, named."""
    fifo = tmp_path / "names.txt"
    os.mkfifo(fifo)
    r = ts.run("score", "-m", MODEL, "-d", DATA, "--feature-names", fifo, timeout=20)
    assert r.returncode == 1, r
    assert str(fifo) in r.stderr and "regular file" in r.stderr, r


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
def test_model_not_regular_file(ts, tmp_path, kind):
    if kind == "fifo":
        path, word = tmp_path / "model.txt", "FIFO"
        os.mkfifo(path)
    elif kind == "dev-zero":
        path, word = "/dev/zero", "character device"
    else:
        path, word = tmp_path, "directory"
    r = ts.run("score", "-m", path, "-d", DATA, timeout=10)
    assert r.returncode == 1, r
    assert str(path) in r.stderr and word in r.stderr and "regular file" in r.stderr, r


def test_hanging_compiler_times_out(ts, tmp_path):
    cc = tmp_path / "hanging-cc"
    cc.write_text("#!/bin/sh\nsleep 60 &\nexec sleep 60\n")
    cc.chmod(0o700)
    env = {"TREESCORE_CACHE_DIR": str(tmp_path / "cache"), "TREESCORE_CC": str(cc), "TREESCORE_CC_TIMEOUT": "1",
           "TREESCORE_WISDOM": "off"}
    r = ts.run("score", "-m", MODEL, "-d", DATA, "-e", "ifelse", env=env, timeout=30)
    assert r.returncode == 1, r
    assert "TREESCORE_CC_TIMEOUT" in r.stderr, r
    assert not glob.glob(str(tmp_path / "cache" / ".tmp-ifelse-*"))
    r = ts.run("score", "-m", MODEL, "-d", DATA, "-e", "auto", env=env, timeout=30)
    assert r.returncode == 0, r


def test_wisdom_never_overwrites_other_files(ts, tmp_path):
    """TREESCORE_WISDOM naming a 160,004-byte CSV turned it into a 131-byte wisdom file."""
    csv = tmp_path / "data.csv"
    lines, size = ["x,y,label\n"], 10
    i = 0
    while size < 160004 - 20:
        lines.append(f"{i},{i * 7},{i % 5}\n")
        size += len(lines[-1])
        i += 1
    text = "".join(lines)
    text += "\n" * (160004 - len(text))
    csv.write_text(text)
    csv.chmod(0o644)
    digest = hashlib.sha256(csv.read_bytes()).hexdigest()
    env = {"TREESCORE_CACHE_DIR": str(tmp_path / "cache"), "TREESCORE_WISDOM": str(csv), "TREESCORE_PLAN_MS": "20"}
    for threads in ("1", "2"):  # two keys: two appends, the second past 64 KiB (a compaction)
        r = ts.run("score", "-m", MODEL, "-d", DATA, "-e", "auto", "-t", threads, env=env, timeout=60)
        assert r.returncode == 0, r
        assert "not using" in r.stderr and "wisdom" in r.stderr, r
    assert hashlib.sha256(csv.read_bytes()).hexdigest() == digest
    assert (csv.stat().st_mode & 0o777) == 0o644


@pytest.mark.parametrize("var", ["TREESCORE_FIFO_TIMEOUT", "TREESCORE_CC_TIMEOUT"])
def test_bad_timeout_variable_is_named(ts, var):
    """TREESCORE_FIFO_TIMEOUT=5m (or -1, abc) was silently the default (60 s; 120 s for
    the compiler), unlike a misspelt TREESCORE_PLAN or TREESCORE_PLAN_MS: it is named now."""
    data = EXAMPLE / "rank.test"
    for value in ("5m", "-1", "abc"):
        r = ts.succeeds("score", "-m", MODEL, "-d", data, "--engine", "naive", env={var: value})
        assert f"ignoring {var}={value} (expected seconds" in r.stderr, r
    # 1e10 is a number >= 0, which the message asked for: it now names the upper bound
    r = ts.succeeds("score", "-m", MODEL, "-d", data, "--engine", "naive", env={var: "1e10"})
    assert f"ignoring {var}=1e10 (expected seconds, a number from 0 to 1e9" in r.stderr, r
    r = ts.succeeds("score", "-m", MODEL, "-d", data, "--engine", "naive", env={var: "2.5"})
    assert var not in r.stderr, r
