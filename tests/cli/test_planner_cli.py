"""test_planner_cli.py: engine auto's planner from the command line: info --plan, --planner, the wisdom file, bench's prepare line; every engine by name."""
import os

import pytest

from cli_helpers import EXAMPLE

MODEL = EXAMPLE / "model.txt"   # LightGBM lambdarank, 300 trees of 31 leaves
DATA = EXAMPLE / "rank.test"
ENGINES = ["naive", "qs", "vqs", "ifelse", "vpred", "block-naive", "block-vpred", "rapid", "trees-simd", "oblivious"]


@pytest.fixture()
def cache(tmp_path):
    """A private cache dir (wisdom file, compiled models) for each test."""
    return tmp_path


def envof(cache, **extra):
    env = {"TREESCORE_CACHE_DIR": str(cache), "TREESCORE_PLAN_MS": "30", "TREESCORE_WISDOM": None,
           "TREESCORE_PLAN": None}
    env.update(extra)
    return env


def test_info_plan_measures_then_remembers(ts, cache):
    r = ts.succeeds("info", "-m", MODEL, "--plan", "--batch", "100", "--threads", "1", env=envof(cache))
    assert "plan:" in r.stdout and "measured:" in r.stdout and "<- fastest" in r.stdout, r
    for e in ("naive", "vpred", "block-vpred", "block-naive", "ifelse"):
        assert e in r.stdout, r
    wisdom = (cache / "wisdom").read_text()
    assert len(wisdom.splitlines()) == 1 and wisdom.startswith("treescore-wisdom-4 "), wisdom
    chosen = wisdom.split()[11]  # the ENGINE field (a line may end in alt=ENGINE: scorer/trial.h)
    r2 = ts.succeeds("info", "-m", MODEL, "--plan", "--batch", "100", "--threads", "1", env=envof(cache))
    assert "wisdom:" in r2.stdout and f"engine {chosen} (" in r2.stdout, r2
    assert "batch_hint: one engine for every call" in r2.stdout, r2
    assert len((cache / "wisdom").read_text().splitlines()) == 1


def test_info_plan_table_every_range(ts, cache):
    """Without --batch: an engine per range of rows per call, one wisdom line per range,
    recalled the second time."""
    r = ts.succeeds("info", "-m", MODEL, "--plan", "--threads", "1", env=envof(cache))
    out = r.stdout
    assert "plan: rows per call -> engine" in out and "every batch size" in out, r
    table = out[out.index("plan: rows per call"):].splitlines()[1:11]
    assert [l.split()[0] for l in table] == ["1", "2-5", "6-7", "8-15", "16", "17-23", "24-31", "32-63", "64-127", "128+"], out
    for batch in (1, 3, 7, 11, 16, 20, 27, 45, 90, 1000):
        assert f"(batch {batch})" in out, out
    lines = (cache / "wisdom").read_text().splitlines()
    assert len(lines) == 10 and all(l.startswith("treescore-wisdom-4 ") for l in lines), lines
    r2 = ts.succeeds("info", "-m", MODEL, "--plan", "--threads", "1", env=envof(cache))
    assert r2.stdout.count("wisdom:") == 10 and "measured:" not in r2.stdout, r2
    assert r2.stdout[r2.stdout.index("plan: rows per call"):].splitlines()[1:11] == table
    assert len((cache / "wisdom").read_text().splitlines()) == 10


def test_info_plan_rule(ts, cache):
    r = ts.succeeds("info", "-m", MODEL, "--plan", "--planner", "rule", env=envof(cache))
    # the demo model (9,000 nodes) at the default batch of 1,000 rows: rapid
    assert "rule of thumb" in r.stdout and "engine rapid" in r.stdout, r
    assert not (cache / "wisdom").exists()


def test_info_plan_rule_small_batches_and_no_avx2(ts, cache):
    """The rule of thumb picks trees-simd for one row (2x vqs and vpred at every ISA level:
    docs/design.md), and without AVX2 vpred, not rapid, whose scalar kernel took 10x
    vpred's time at 1,000 rows (29.7 against 3.0 us/doc on the dev model)."""
    r = ts.succeeds("info", "-m", MODEL, "--plan", "--planner", "rule", "--batch", "1", env=envof(cache))
    assert "engine trees-simd" in r.stdout, r
    r = ts.succeeds("info", "-m", MODEL, "--plan", "--planner", "rule", "--isa", "scalar", env=envof(cache))
    assert "engine vpred" in r.stdout and "no AVX2" in r.stdout, r


def test_planner_env_rule(ts, cache):
    r = ts.succeeds("info", "-m", MODEL, "--plan", env=envof(cache, TREESCORE_PLAN="rule"))
    assert "rule of thumb" in r.stdout, r
    assert "ignoring" not in r.stderr, r
    # a misspelt mode was silently the default (as TREESCORE_ISA, it is now named)
    r = ts.succeeds("info", "-m", MODEL, "--plan", env=envof(cache, TREESCORE_PLAN="rules"))
    assert "ignoring TREESCORE_PLAN=rules (expected measure or rule)" in r.stderr, r


def test_bad_planner_and_lanes(ts, cache):
    r = ts.fails("score", "-m", MODEL, "-d", DATA, "--planner", "guess", status=2, env=envof(cache))
    assert "'measure' or 'rule'" in r.stderr, r
    r = ts.fails("score", "-m", MODEL, "-d", DATA, "--lanes", "x", status=2, env=envof(cache))
    assert "--lanes" in r.stderr, r
    r = ts.fails("info", "-m", MODEL, "--plan", "--batch", "-1", status=2, env=envof(cache))
    assert "--batch" in r.stderr, r


def test_auto_scores_equal_naive(ts, cache):
    ref = ts.succeeds("score", "-m", MODEL, "-d", DATA, "-e", "naive", env=envof(cache)).stdout
    assert ts.succeeds("score", "-m", MODEL, "-d", DATA, env=envof(cache)).stdout == ref
    assert ts.succeeds("score", "-m", MODEL, "-d", DATA, "--planner", "rule", env=envof(cache)).stdout == ref


@pytest.mark.parametrize("engine", ENGINES)
def test_every_engine_by_name(ts, cache, engine):
    ref = ts.succeeds("score", "-m", MODEL, "-d", DATA, "-e", "naive", env=envof(cache)).stdout
    for threads in ("1", "3"):
        r = ts.succeeds("score", "-m", MODEL, "-d", DATA, "-e", engine, "--threads", threads, env=envof(cache))
        assert r.stdout == ref, f"-e {engine} --threads {threads} differs from naive"


def test_bench_prepare_line_and_auto(ts, cache):
    r = ts.succeeds("bench", "-m", MODEL, "-d", DATA, "--engines", "naive,auto,vpred:lanes=4,block-vpred:tau=10:delta=64",
                    "--repeat", "1", "--rows", "100", env=envof(cache))
    line = [l for l in r.stdout.splitlines() if l.startswith("prepare ms")]
    assert line and "auto (chose " in line[0] and "vpred:lanes=4" in line[0], r
    r = ts.succeeds("bench", "-m", MODEL, "-d", DATA, "--engines", "naive,vqs", "--repeat", "1", "--rows", "50",
                    "--format", "tsv", env=envof(cache))
    assert "# prepare ms" in r.stderr and "prepare" not in r.stdout, r


@pytest.mark.parametrize("dtype", ["f32", "f64", None])
def test_bench_dtype(ts, cache, dtype):
    """bench --dtype: float32 or float64 rows (text data: float64 by default, as score reads
    it); every engine checked bit for bit against the first on those rows."""
    args = ["bench", "-m", MODEL, "-d", DATA, "--engines", "naive,auto,rapid,vqs", "--repeat", "1", "--rows", "200",
            "--batch", "7"]
    if dtype:
        args += ["--dtype", dtype]
    r = ts.succeeds(*args, env=envof(cache))
    want = "float32" if dtype == "f32" else "float64"
    assert f"{want} rows, batch 7" in r.stdout, r
    assert "auto (chose " in r.stdout and "for this batch)" in r.stdout, r
    r = ts.fails("bench", "-m", MODEL, "-d", DATA, "--dtype", "f16", status=2, env=envof(cache))
    assert "--dtype" in r.stderr, r


def test_help_lists_engines(ts, cache):
    for cmd in ("score", "bench"):
        out = ts.succeeds(cmd, "--help", env=envof(cache)).stdout
        assert "--lanes" in out and "--planner" in out
    r = ts.fails("score", "-m", MODEL, "-d", DATA, "-e", "warp", status=2, env=envof(cache))
    for e in ENGINES:
        assert e in r.stderr, r


@pytest.mark.parametrize("where", ["file", "under-file"])
def test_cache_dir_not_a_directory_is_said(ts, cache, where):
    """TREESCORE_CACHE_DIR naming a file (or a path under one) plans and scores, and says
    why nothing is remembered or cached, with the path and the reason (it used to say only
    "no writable, trusted wisdom file"); a directory not made yet stays silent."""
    f = cache / "afile"
    f.write_text("x")
    d = f if where == "file" else f / "sub"
    r = ts.succeeds("info", "-m", MODEL, "--plan", "--batch", "100", "--threads", "1",
                    env=envof(cache, TREESCORE_CACHE_DIR=str(d)))
    assert f"cannot use the cache directory {d}: " in r.stderr and "Not a directory" in r.stderr, r
    assert "wisdom is neither read nor written" in r.stderr, r
    r = ts.succeeds("score", "-m", MODEL, "-d", DATA, "--engine", "ifelse",
                    env=envof(cache, TREESCORE_CACHE_DIR=str(d)))
    assert f"cannot use the cache directory {d}: " in r.stderr and "private temporary directory" in r.stderr, r
    r = ts.succeeds("info", "-m", MODEL, "--plan", "--batch", "100", "--threads", "1",
                    env=envof(cache, TREESCORE_CACHE_DIR=str(cache / "new" / "dir")))
    assert "cache directory" not in r.stderr, r


@pytest.mark.parametrize("value", ["0", "-5", "abc", "10ms"])
def test_bad_plan_ms_is_named(ts, cache, value):
    """TREESCORE_PLAN_MS that is not a positive number of milliseconds was silently the
    default budget; it is now named, as a misspelt TREESCORE_PLAN is."""
    r = ts.succeeds("info", "-m", MODEL, "--plan", "--batch", "10", "--threads", "1",
                    env=envof(cache, TREESCORE_PLAN_MS=value))
    assert f"ignoring TREESCORE_PLAN_MS={value} (expected milliseconds" in r.stderr, r
    r = ts.succeeds("info", "-m", MODEL, "--plan", "--batch", "10", "--threads", "1",
                    env=envof(cache, TREESCORE_PLAN_MS="5"))
    assert "TREESCORE_PLAN_MS" not in r.stderr, r


@pytest.mark.parametrize("kind", ["symlink", "directory"])
def test_wisdom_refused_is_said(ts, cache, kind):
    """A TREESCORE_WISDOM that is a symbolic link (a dotfile manager's) or a directory is
    refused (the trust rules); that was silent, so every run planned again without a word."""
    w = cache / "w"
    if kind == "symlink":
        (cache / "real").write_text("")
        w.symlink_to(cache / "real")
    else:
        w.mkdir()
    r = ts.succeeds("info", "-m", MODEL, "--plan", "--batch", "10", "--threads", "1",
                    env=envof(cache, TREESCORE_WISDOM=str(w)))
    why = "symbolic link" if kind == "symlink" else "not a regular file"
    assert f"not using {w} as the planner's wisdom file" in r.stderr and why in r.stderr, r
    r = ts.succeeds("info", "-m", MODEL, "--plan", "--batch", "10", "--threads", "1",
                    env=envof(cache, TREESCORE_WISDOM=str(cache / "new")))
    assert "wisdom file" not in r.stderr, r   # a file not made yet is silent


def test_wisdom_too_large_starts_afresh(ts, cache):
    """A wisdom file past 16 MiB was not read (too large to read) yet appended to on every
    run, and never compacted (compaction reads it first): it grew without end and the
    planner timed again on every run. It is now started afresh with the new answer."""
    w = cache / "wisdom"
    with open(w, "w") as f:
        f.write("treescore-wisdom-4 old line\n" * ((17 << 20) // 28))
    env = envof(cache)
    ts.succeeds("info", "-m", MODEL, "--plan", "--batch", "10", "--threads", "1", env=env)
    assert w.stat().st_size < 4096, w.stat().st_size
    r = ts.succeeds("info", "-m", MODEL, "--plan", "--batch", "10", "--threads", "1", env=env)
    assert "wisdom:" in r.stdout, r


def test_ifelse_compiles_once_for_processes_at_once(ts, cache):
    """Processes preparing ifelse for the same model at the same time (Dask workers, a
    shell loop) each compiled it (minutes and GBs each on big models); now one compiles
    and the others wait for it and load its object."""
    import subprocess
    env = dict(os.environ, TREESCORE_CACHE_DIR=str(cache), TREESCORE_VERBOSE="1", LC_ALL="C")
    procs = [subprocess.Popen([str(ts.path), "score", "-m", str(MODEL), "-d", str(DATA), "-e", "ifelse",
                               "-o", str(cache / f"out{i}.txt")], env=env, stderr=subprocess.PIPE,
                              stdin=subprocess.DEVNULL) for i in range(3)]
    errs = [p.communicate(timeout=120)[1].decode() for p in procs]
    assert all(p.returncode == 0 for p in procs), errs
    assert sum("ifelse: cache miss" in e for e in errs) == 1, errs
    outs = {(cache / f"out{i}.txt").read_bytes() for i in range(3)}
    assert len(outs) == 1


def test_compiler_writing_garbage_is_said_plainly(ts, cache):
    """A TREESCORE_CC whose output is not a shared object failed with the dynamic loader's
    message about the descriptor path it loads through ("/proc/self/fd/./././...//./4:
    file too short"); the reason now stands alone."""
    cc = cache / "garbage-cc"
    cc.write_text('#!/bin/sh\nwhile [ $# -gt 0 ]; do [ "$1" = -o ] && echo garbage > "$2"; shift; done\nexit 0\n')
    cc.chmod(0o755)
    r = ts.fails("score", "-m", MODEL, "-d", DATA, "-e", "ifelse",
                 env=envof(cache, TREESCORE_CC=str(cc)))
    assert "does not load: " in r.stderr and "/proc/self/fd" not in r.stderr, r


@pytest.mark.parametrize("home", [None, "/proc"])
def test_ifelse_without_a_cache_dir_is_said(ts, cache, home):
    """HOME unset (a systemd service, cron) with no TREESCORE_CACHE_DIR or XDG_CACHE_HOME,
    or a HOME where no directory can be made (mkdir fails with ENOENT under /proc): ifelse
    compiled in a temporary directory on every run without a word."""
    env = envof(cache, TREESCORE_CACHE_DIR=None, XDG_CACHE_HOME=None, HOME=home)
    r = ts.succeeds("score", "-m", MODEL, "-d", DATA, "-e", "ifelse", env=env)
    assert "private temporary directory" in r.stderr and "on every run" in r.stderr, r


@pytest.mark.parametrize("var,value", [("TREESCORE_IFELSE_OPT", "-O2"), ("TREESCORE_IFELSE_OPT", "O3"),
                                       ("TREESCORE_RAPID_UPDATE", "GFNI"), ("TREESCORE_RAPID_UPDATE", "vpand")])
def test_misspelt_engine_variables_are_named(ts, cache, var, value):
    """TREESCORE_IFELSE_OPT=-O2 (the flag, not the level) or TREESCORE_RAPID_UPDATE=GFNI
    were silently the default, as TREESCORE_PLAN=rules once was."""
    r = ts.succeeds("score", "-m", MODEL, "-d", DATA, "-e", "rapid", env=envof(cache, **{var: value}))
    assert f"ignoring {var}={value}" in r.stderr, r
    good = "2" if var == "TREESCORE_IFELSE_OPT" else "and"
    r = ts.succeeds("score", "-m", MODEL, "-d", DATA, "-e", "rapid", env=envof(cache, **{var: good}))
    assert var not in r.stderr, r


def test_wisdom_after_a_torn_line(ts, cache):
    """A wisdom file whose last line was cut (a full disk, a killed process) swallowed the
    next answer: appended to the cut line, it did not parse, so the next run planned
    again (and so on, one lost answer per cut). The answer now starts a line of its own."""
    w = cache / "wisdom"
    w.write_text("treescore-wisdom-4 0f62a81d891db4d4")
    env = envof(cache)
    ts.succeeds("info", "-m", MODEL, "--plan", "--batch", "10", "--threads", "1", env=env)
    r = ts.succeeds("info", "-m", MODEL, "--plan", "--batch", "10", "--threads", "1", env=env)
    assert "wisdom:" in r.stdout, (r, w.read_text())


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only (mode 0500) directory")
def test_ifelse_cache_not_writable_is_said(ts, cache):
    """A cache directory that is trusted but not writable (mode 0500, a read-only mount)
    made ifelse compile on every run without a word (the report under TREESCORE_VERBOSE
    only); it now warns once."""
    d = cache / "ro"
    d.mkdir(mode=0o700)
    d.chmod(0o500)
    try:
        r = ts.succeeds("score", "-m", MODEL, "-d", DATA, "-e", "ifelse", env=envof(cache, TREESCORE_CACHE_DIR=str(d)))
    finally:
        d.chmod(0o700)
    assert f"cannot store the compiled object in the cache directory {d}" in r.stderr, r


@pytest.mark.skipif(not os.path.isdir("/proc/self"), reason="needs /proc")
def test_wisdom_not_writable_is_said(ts, cache):
    """A wisdom file that cannot be written (a read-only mount, a directory where it cannot
    be made: /proc) was skipped without a word: every run timed the engines again."""
    r = ts.succeeds("info", "-m", MODEL, "--plan", "--batch", "10", "--threads", "1",
                    env=envof(cache, TREESCORE_WISDOM="/proc/treescore-wisdom"))
    assert "/proc" in r.stderr and "wisdom" in r.stderr, r


def test_cache_dir_path_too_long_is_said(ts, cache):
    """A TREESCORE_CACHE_DIR longer than a path may be was reported as if no variable were
    set ("no cache directory (set TREESCORE_CACHE_DIR, XDG_CACHE_HOME or HOME)")."""
    long_dir = str(cache) + "/" + "/".join(["d" * 200] * 25)
    r = ts.succeeds("score", "-m", MODEL, "-d", DATA, "-e", "ifelse",
                    env=envof(cache, TREESCORE_CACHE_DIR=long_dir))
    assert "is longer than" in r.stderr and "(set TREESCORE_CACHE_DIR" not in r.stderr, r
