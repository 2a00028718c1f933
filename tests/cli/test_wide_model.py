"""test_wide_model.py: memory follows the columns a model reads (issue 15, item 4): a valid
LightGBM model declaring 16,777,216 features (max_feature_idx=16777215) that splits on a
few of them scores an SVMlight file exactly under `ulimit -v 2 GiB`, whether the CLI reads
only the columns the model uses (a file) or full-width rows that the library gathers
(standard input, every engine)."""
import random
import shlex
import subprocess
import time

import pytest

from cli_helpers import ENV, SANITIZER_MARKERS, binary_path
from test_limits import is_sanitized

ULIMIT_KB = 2 << 20   # 2 GiB of address space: a row of 16,777,216 doubles is 128 MiB

# Three trees: two numerical splits on small ids, one on a large id, and a categorical
# split (categories 1 and 2 go left) on another large id. No feature_names line: the
# file stays small (LightGBM writes one name per declared feature).
WIDE_MODEL = """tree
version=v4
num_class=1
num_tree_per_iteration=1
label_index=0
max_feature_idx=16777215
objective=regression

Tree=0
num_leaves=3
num_cat=0
split_feature=2 5
threshold=0.5 -1.25
decision_type=2 10
left_child=1 -1
right_child=-3 -2
leaf_value=0.25 -1.5 3

Tree=1
num_leaves=2
num_cat=0
split_feature=16777000
threshold=0.75
decision_type=0
left_child=-1
right_child=-2
leaf_value=0.125 -0.5

Tree=2
num_leaves=2
num_cat=1
split_feature=16777001
threshold=0
decision_type=1
left_child=-1
right_child=-2
leaf_value=1 -2
cat_boundaries=0 1
cat_threshold=6

end of trees
"""

# The trees above as (feature, threshold or category set, left, right); a child >= 0 is
# a node, < 0 leaf ~c. LightGBM's rules for values that are never NaN: x <= t goes left;
# a category goes left when int(x) >= 0 is in the set.
TREES = [
    ([(2, 0.5, 1, -3), (5, -1.25, -1, -2)], [0.25, -1.5, 3.0]),
    ([(16777000, 0.75, -1, -2)], [0.125, -0.5]),
    ([(16777001, {1, 2}, -1, -2)], [1.0, -2.0]),
]


def reference(row):
    """LightGBM's raw score of one row (a dict id -> value; absent ids are 0.0)."""
    total = 0.0
    for nodes, leaves in TREES:
        n = 0
        while n >= 0:
            f, t, left, right = nodes[n]
            x = row.get(f, 0.0)
            goes_left = (x >= 0 and int(x) in t) if isinstance(t, set) else x <= t
            n = left if goes_left else right
        total += leaves[~n]
    return total


def write_rows(path, n_rows, seed):
    rng = random.Random(seed)
    rows = []
    with open(path, "w") as f:
        for _ in range(n_rows):
            row = {}
            for fid in (2, 5, 16777000, 16777001, rng.randrange(6, 16777000), 16777215):
                if rng.random() < 0.8:
                    row[fid] = rng.choice([round(rng.uniform(-3, 3), rng.randrange(1, 8)), float(rng.randrange(0, 4)),
                                           0.5, -1.25, 0.75])
            rows.append(row)
            f.write(f"1 qid:{len(rows) // 10} " + " ".join(f"{k}:{row[k]!r}" for k in sorted(row)) + "\n")
    return rows


@pytest.fixture(scope="module")
def limited():
    path = binary_path()
    if not path.is_file():
        pytest.fail(f"treescore binary not found at {path}", pytrace=False)
    if is_sanitized(path):
        pytest.skip("a sanitizer build cannot run under ulimit -v")

    def run(args, stdin_path=None, timeout=120):
        cmd = f"ulimit -v {ULIMIT_KB}; exec {shlex.quote(str(path))} " + " ".join(shlex.quote(str(a)) for a in args)
        with open(stdin_path, "rb") if stdin_path else open("/dev/null", "rb") as stdin:
            proc = subprocess.run(["bash", "-c", cmd], stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  timeout=timeout, env=ENV)
        err = proc.stderr.decode("utf-8", "replace")
        for marker in SANITIZER_MARKERS:
            assert marker not in err, err
        assert proc.returncode == 0, f"exit {proc.returncode} under ulimit -v {ULIMIT_KB}: {args}\n{err}"
        return proc.stdout.decode()
    return run


@pytest.fixture(scope="module")
def wide(tmp_path_factory):
    d = tmp_path_factory.mktemp("wide")
    model = d / "wide.txt"
    model.write_text(WIDE_MODEL)
    return model, d


def check_scores(out, rows):
    got = [float(v) for v in out.split()]
    assert len(got) == len(rows)
    for i, (g, row) in enumerate(zip(got, rows)):
        assert g == reference(row), (i, row, g, reference(row))


def test_wide_model_file_under_2gib(limited, wide):
    """The CLI reads only the columns the model uses: 5,000 rows, default engine (auto),
    in well under a second (rows of the declared width took about 9 ms each)."""
    model, d = wide
    data = d / "rows.svm"
    rows = write_rows(data, 5000, seed=15)
    start = time.monotonic()
    out = limited(["score", "-m", model, "-d", data])
    assert time.monotonic() - start < 10.0
    check_scores(out, rows)
    ranked = limited(["rank", "-m", model, "-d", data, "--top", "1", "--quiet"])
    best = {}
    for i, row in enumerate(rows):  # qid (i + 1) // 10, as write_rows numbers them
        best[(i + 1) // 10] = max(best.get((i + 1) // 10, -1e300), reference(row))
    lines = [line.split() for line in ranked.splitlines()]
    assert len(lines) == len(best), ranked[:500]
    for qid, _, _, score, *_ in lines:
        assert float(score) == best[int(qid)], (qid, score)


@pytest.mark.parametrize("engine", ["auto", "naive", "qs", "vqs", "vpred", "block-naive", "block-vpred", "rapid", "trees-simd",
                                    "oblivious"])
def test_wide_model_stdin_under_2gib(limited, wide, engine):
    """From standard input the reader builds full-width rows (one per chunk) and the
    library gathers the columns the trees read (ts_scorer_create with default options for
    auto: its planner times the engines on those columns only)."""
    model, d = wide
    data = d / f"stdin-{engine}.svm"
    rows = write_rows(data, 12, seed=len(engine))
    check_scores(limited(["score", "-m", model, "-d", "-", "-e", engine], stdin_path=data), rows)


def test_wide_model_errors_unchanged(ts, wide):
    """Only the used columns are kept, but every id is still checked: past the declared
    count, and duplicates of a column no split reads."""
    model, d = wide
    past = d / "past.svm"
    past.write_text("0 2:1\n0 16777216:1\n")
    r = ts.fails("score", "-m", model, "-d", past, mentions=[past], line=2)
    assert "16777216" in r.stderr, r
    dup = d / "dup.svm"
    dup.write_text("0 2:1\n0 7:1 7:2\n")
    r = ts.fails("score", "-m", model, "-d", dup, mentions=[dup], line=2)
    assert "duplicate feature id 7" in r.stderr, r
