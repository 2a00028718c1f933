"""test_threads_isa.py: --threads, --isa, --tau/--delta and bench's engine specs: same scores, clear errors, bench output."""
import re
import sys

import numpy as np
import pytest

from cli_helpers import EXAMPLE, MODELS, REPO

MODEL = EXAMPLE / "model.txt"   # LightGBM lambdarank, 300 trees of 31 leaves (the Yahoo sample)
DATA = EXAMPLE / "rank.test"    # 768 rows
N_ROWS = 768
LEVELS = ["scalar", "sse4.2", "avx2", "avx512"]
TSV_HEADER = "engine\tisa\tthreads\tus_per_doc_median\tus_per_doc_min\tus_per_doc_max\tspeedup"
FALSE_NODES = re.compile(r"false nodes per document per tree \(QuickScorer's visits\): ([0-9.]+) of ([0-9.]+) "
                         r"internal nodes \(mean over (\d+)(?: rows| of the (\d+) rows, evenly spaced)\)")


@pytest.fixture(scope="module")
def reference(ts):
    """The naive engine's scores of the example: every other setting must print the same text."""
    r = ts.succeeds("score", "-m", MODEL, "-d", DATA, "-e", "naive", "--threads", "1")
    assert len(r.stdout.splitlines()) == N_ROWS, r
    return r.stdout


def usage_error(ts, *args, mentions=()):
    r = ts.fails(*args, status=2)
    for m in mentions:
        assert m in r.stderr, f"stderr does not mention {m!r}: {r!r}"
    return r


# ---- score: the same bits for every thread count, level and block ----------------------

@pytest.mark.parametrize("engine", ["qs", "vqs"])
def test_threads_give_the_same_scores(ts, reference, engine):
    for threads in (1, 2, 3, 8, 0):
        r = ts.succeeds("score", "-m", MODEL, "-d", DATA, "-e", engine, "--threads", threads)
        assert r.stdout == reference, f"-e {engine} --threads {threads} differs from naive: {r!r}"


@pytest.mark.parametrize("engine", ["qs", "vqs"])
def test_every_isa_gives_the_same_scores(ts, reference, engine):
    """Levels above the CPU's are lowered, not refused."""
    for isa in ["auto"] + LEVELS:
        r = ts.succeeds("score", "-m", MODEL, "-d", DATA, "-e", engine, "--isa", isa, "-t", "2")
        assert r.stdout == reference, f"-e {engine} --isa {isa} differs from naive: {r!r}"


@pytest.mark.parametrize("engine", ["qs", "vqs"])
def test_blocks_give_the_same_scores(ts, reference, engine):
    for tau in ("1", "7", "all"):
        for delta in ("1", "5", "64"):
            r = ts.succeeds("score", "-m", MODEL, "-d", DATA, "-e", engine, "--tau", tau, "--delta", delta)
            assert r.stdout == reference, f"-e {engine} --tau {tau} --delta {delta} differs from naive: {r!r}"


def test_treescore_isa_environment_gives_the_same_scores(ts, reference):
    for isa in LEVELS:
        r = ts.succeeds("score", "-m", MODEL, "-d", DATA, "-e", "vqs", env={"TREESCORE_ISA": isa})
        assert r.stdout == reference, f"TREESCORE_ISA={isa} differs from naive: {r!r}"


def test_rank_with_settings(ts):
    base = ts.succeeds("rank", "-m", MODEL, "-d", DATA, "-e", "naive", "--quiet")
    r = ts.succeeds("rank", "-m", MODEL, "-d", DATA, "-e", "vqs", "--threads", "3", "--isa", "avx2", "--tau", "7",
                    "--delta", "5", "--quiet")
    assert r.stdout == base.stdout, r


# ---- bad values: usage errors (status 2) that say what is wrong ------------------------

@pytest.mark.parametrize("value", ["avx1024", "", "AVX2x", "sse"])
def test_bad_isa(ts, value):
    r = usage_error(ts, "score", "-m", MODEL, "-d", DATA, "--isa", value, mentions=["--isa", "avx512", "scalar"])
    assert f"'{value}'" in r.stderr, r


@pytest.mark.parametrize("opt,value", [("--tau", "-1"), ("--tau", "abc"), ("--tau", "all2"), ("--tau", "4294967295"),
                                       ("--delta", "all"), ("--delta", "-3"), ("--delta", "1e3"),
                                       ("--threads", "x"), ("--threads", "-1")])
def test_bad_numbers(ts, opt, value):
    usage_error(ts, "score", "-m", MODEL, "-d", DATA, opt, value, mentions=[opt, f"'{value}'"])


def test_bad_settings_in_rank_and_bench(ts):
    usage_error(ts, "rank", "-m", MODEL, "-d", DATA, "--isa", "mmx", mentions=["mmx"])
    usage_error(ts, "bench", "-m", MODEL, "-d", DATA, "--tau", "some", mentions=["some"])


@pytest.mark.parametrize("spec,mention", [
    ("warp", "unknown engine 'warp'"),
    ("qs:foo=1", "foo"),
    ("qs:tau", "KEY=VALUE"),
    ("qs:=3", "KEY=VALUE"),
    ("qs:isa=avx9", "avx9"),
    ("qs:tau=x", "'x'"),
    ("vqs:threads=-2", "'-2'"),
    ("qs,,vqs", "empty"),
    ("qs,", "empty"),
    ("", "empty"),
])
def test_bad_engine_specs(ts, spec, mention):
    r = usage_error(ts, "bench", "-m", MODEL, "-d", DATA, "--engines", spec, "--repeat", "1", mentions=[mention])
    assert r.stdout == "", r


# ---- bench ------------------------------------------------------------------------------

def test_bench_tsv_is_exactly_header_and_rows(ts):
    specs = ["qs:tau=all:delta=1", "qs", "vqs:isa=avx2", "vqs:threads=1", "naive"]
    r = ts.succeeds("bench", "-m", MODEL, "-d", DATA, "--rows", "100", "--repeat", "1", "--format", "tsv",
                    "--engines", ",".join(specs))
    lines = r.stdout.split("\n")
    assert lines[-1] == "", r  # ends with a newline
    lines = lines[:-1]
    assert lines[0] == TSV_HEADER, r
    assert len(lines) == 1 + len(specs), r
    for spec, line in zip(specs, lines[1:]):
        cells = line.split("\t")
        assert len(cells) == 7, line
        assert cells[0] == spec, line
        assert cells[1] in LEVELS, line
        assert int(cells[2]) >= 1, line
        med, lo, hi, speedup = map(float, cells[3:])
        assert 0 < lo <= med <= hi and speedup > 0, line
    rows = dict(zip(specs, (l.split("\t") for l in lines[1:])))
    assert rows["vqs:threads=1"][2] == "1", r
    assert rows["naive"][1] == "scalar" and rows["qs"][1] == "scalar", r
    assert LEVELS.index(rows["vqs:isa=avx2"][1]) <= LEVELS.index("avx2"), r
    assert rows[specs[0]][6] == "1.000", r
    assert FALSE_NODES.search(r.stderr), r
    assert any(l.startswith("# false nodes") for l in r.stderr.splitlines()), r


def cpu_line(ts, env=None):
    r = ts.succeeds("-V", env=env)
    m = re.search(r"^cpu: (\S+) \(this build can use ([^)]*)\), (\d+) threads$", r.stdout, re.M)
    assert m, f"no cpu line in -V: {r!r}"
    levels = m.group(2).split(", ")
    return m.group(1), levels, int(m.group(3))


def test_version_cpu_line(ts):
    best, levels, threads = cpu_line(ts, env={"TREESCORE_ISA": None})
    assert threads >= 1
    assert levels == LEVELS[:len(levels)] and levels[-1] == best, (best, levels)
    if sys.platform == "linux" and __import__("platform").machine() == "x86_64":
        flags = open("/proc/cpuinfo").read()
        if " avx512bw " in flags and " avx512vl " in flags and " avx512dq " in flags:
            assert best == "avx512", best
        elif " avx2 " in flags:
            assert best in ("avx2", "avx512"), best
    for lvl in levels:
        got, got_levels, _ = cpu_line(ts, env={"TREESCORE_ISA": lvl})
        assert got == lvl and got_levels == levels[:levels.index(lvl) + 1], (lvl, got, got_levels)
    r = ts.succeeds("--version")
    assert r.stdout.startswith("treescore 0.1.0\ncpu: "), r


def test_bench_table(ts):
    r = ts.succeeds("bench", "-m", MODEL, "-d", DATA, "--rows", "100", "--repeat", "2",
                    "--engines", "naive,qs:tau=all:delta=1,vqs:isa=scalar,vqs")
    lines = r.stdout.splitlines()
    best, _, threads = cpu_line(ts)
    assert lines[0] == f"cpu: {best}, {threads} threads available", r
    assert re.match(r"engine +isa +threads +tau/delta +us/doc median +min +max +docs/s +speedup$", lines[2]), r
    rows = {l.split()[0]: l.split() for l in lines[3:7]}
    assert set(rows) == {"naive", "qs:tau=all:delta=1", "vqs:isa=scalar", "vqs"}, r
    assert rows["naive"][3] == "-" and rows["naive"][8] == "1.00x", r
    assert re.fullmatch(r"(all|300)/1", rows["qs:tau=all:delta=1"][3]), r
    assert rows["vqs:isa=scalar"][1] == "scalar", r
    assert re.fullmatch(r"\d+/\d+", rows["vqs"][3]), r
    m = FALSE_NODES.search(r.stdout)
    assert m and m.group(3) == "100" and m.group(4) is None, r
    assert float(m.group(2)) == 30, r  # 31 leaves: 30 internal nodes in every tree
    assert 0 < float(m.group(1)) < 30, r


def test_bench_isa_environment_and_default_engines(ts):
    r = ts.succeeds("bench", "-m", MODEL, "-d", DATA, "--rows", "50", "--repeat", "1", "--format", "tsv",
                    env={"TREESCORE_ISA": "scalar"})
    lines = r.stdout.splitlines()
    assert [l.split("\t")[0] for l in lines[1:]] == ["naive", "qs", "vqs"], r
    assert all(l.split("\t")[1] == "scalar" for l in lines[1:]), r


def test_bench_samples_at_most_1000_rows(ts, tmp_path):
    big = tmp_path / "big.svm"
    text = DATA.read_text()
    big.write_text(text * 2)  # 1,536 rows
    r = ts.succeeds("bench", "-m", MODEL, "-d", big, "--repeat", "1", "--engines", "qs")
    m = FALSE_NODES.search(r.stdout)
    assert m and m.group(4) == str(2 * N_ROWS) and int(m.group(3)) <= 1000, r


def all_false_nodes(trees, X):
    """Mean over rows and trees of the internal nodes whose test sends the row right."""
    total = 0
    for t in trees:
        if t.feature.size == 0:
            continue
        x = X[:, t.feature]  # rows x nodes
        nan = np.isnan(x)
        x = np.where(np.abs(x) <= np.float32(1e-35), np.float32(0), x)
        mt = t.missing_type[None, :]
        x = np.where(nan & (mt != 2), np.float32(0), x)
        missing = ((mt == 1) & (x == 0)) | ((mt == 2) & nan)
        left = np.where(missing, t.default_left[None, :], x <= t.T[None, :])
        total += int((~left).sum())
    return total / (X.shape[0] * len(trees))


def test_false_nodes_value(ts, tmp_path):
    """The statistic against a Python count on a model with missing type Zero, with 0, tiny,
    NaN and threshold values in the data."""
    sys.path.insert(0, str(REPO / "tests" / "conformance"))
    import tshelpers as H
    model = MODELS / "lgb_small_zero_missing.txt"
    trees = H.parse_lightgbm_text(model)
    rng = np.random.default_rng(11)
    X = rng.normal(size=(300, 5)).astype(np.float32)
    X[rng.random(X.shape) < 0.15] = np.nan
    X[rng.random(X.shape) < 0.15] = 0.0
    X[rng.random(X.shape) < 0.05] = np.float32(1e-36)
    for j, t in enumerate(trees):  # some values exactly on thresholds
        if t.feature.size:
            X[j * 10:(j + 1) * 10, t.feature[0]] = t.T[0]
    csv = tmp_path / "x.csv"
    H.write_csv(csv, X, header=False)
    want = all_false_nodes(trees, X)
    r = ts.succeeds("bench", "-m", model, "-d", csv, "--repeat", "1", "--engines", "naive,qs")
    m = FALSE_NODES.search(r.stdout)
    assert m and m.group(3) == "300", r
    assert abs(float(m.group(1)) - want) <= 0.05 + 1e-9, (want, r)


def test_help_texts(ts):
    for sub in ("score", "rank", "bench"):
        r = ts.succeeds(sub, "--help")
        for word in ("vqs", "--isa", "--tau", "--delta", "--threads", "avx512"):
            assert word in r.stdout, f"{sub} --help lacks {word}: {r!r}"
        assert "single-threaded" not in r.stdout, r
