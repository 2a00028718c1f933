"""test_limits.py: the documented input limits (docs/testing.md) hold: a model or data file that claims a size past a limit (2^31 trees, a feature id of 4 billion, a 5 GB model) fails fast with the limit named, also under a 1 GB address-space limit (ulimit -v), where nothing crashes."""
import re
import shlex
import struct
import subprocess
import time

import pytest

from cli_helpers import ENV, EXAMPLE, MODELS, SANITIZER_MARKERS, binary_path

ULIMIT_KB = 1 << 20   # 1 GiB of address space
FAST_S = 5.0          # "fails fast": well under this, even on a loaded machine

# A valid LightGBM model of one tree over 4 features (split on feature 2); each case
# below replaces one of its values by a claim past a limit.
LGB_BASE = """tree
version=v4
num_class=1
num_tree_per_iteration=1
label_index=0
max_feature_idx=3
objective=regression
feature_names=a b c d
feature_infos=none none none none
tree_sizes=280

Tree=0
num_leaves=2
num_cat=0
split_feature=2
split_gain=1
threshold=0.5
decision_type=2
left_child=-1
right_child=-2
leaf_value=1 2
leaf_weight=1 1
leaf_count=1 1
internal_value=0
internal_weight=0
internal_count=2
is_linear=0
shrinkage=1


end of trees
"""

# (case id, text replaced, replacement, the limit the message must name)
LGB_CLAIMS = [
    ("lgb-2^31-trees-per-iteration", "num_tree_per_iteration=1", "num_tree_per_iteration=2147483648", "1073741824"),
    ("lgb-2^31-classes", "num_class=1", "num_class=2147483648", "1073741824"),
    ("lgb-feature-idx-4e9", "max_feature_idx=3", "max_feature_idx=4000000000", "16777215"),
    ("lgb-split-feature-4e9", "split_feature=2", "split_feature=4000000000", "16777215"),
    ("lgb-2^31-leaves", "num_leaves=2", "num_leaves=2147483648", "16777216"),
    ("lgb-2^31-categories", "num_cat=0", "num_cat=2147483648", "16777216"),
    ("lgb-huge-number", "num_leaves=2", "num_leaves=99999999999999999999999999", "16777216"),
]

XGB_SOURCE = MODELS / "xgb_small_v1_sqerr.json"
XGB_CLAIMS = [
    ("xgb-2^31-trees", '"num_trees":"4"', '"num_trees":"2147483648"', "16777216"),
    ("xgb-4e9-features", '"num_feature":"5","num_target"', '"num_feature":"4294967296","num_target"', "16777216"),
    ("xgb-2^31-classes", '"num_class":"0"', '"num_class":"2147483648"', "65536"),
    ("xgb-2^31-nodes", '"num_nodes":"15"', '"num_nodes":"2147483648"', "33554431"),
    ("xgb-split-feature-4e9", '"split_indices":[0,', '"split_indices":[4000000000,', "16777215"),
]


def is_sanitized(path):
    """ASan and TSan reserve terabytes of address space: they cannot run under ulimit -v."""
    data = path.read_bytes()
    return b"__asan_init" in data or b"__tsan_init" in data


@pytest.fixture(scope="module")
def limited():
    """Runs the CLI under `ulimit -v 1 GiB` (a sanitizer build skips the test there)."""
    path = binary_path()
    if not path.is_file():
        pytest.fail(f"treescore binary not found at {path}", pytrace=False)
    sanitized = is_sanitized(path)

    def run(*args, timeout=60):
        if sanitized:  # the checks without the limit have run by then
            pytest.skip("a sanitizer build cannot run under ulimit -v")
        cmd = f"ulimit -v {ULIMIT_KB}; exec {shlex.quote(str(path))} " + " ".join(shlex.quote(str(a)) for a in args)
        start = time.monotonic()
        proc = subprocess.run(["bash", "-c", cmd], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=timeout, env=ENV)
        elapsed = time.monotonic() - start
        err = proc.stderr.decode("utf-8", "replace")
        assert proc.returncode in (0, 1), f"exit {proc.returncode} (a crash?) under ulimit -v: {args}\n{err}"
        for marker in SANITIZER_MARKERS:
            assert marker not in err, err
        return proc.returncode, proc.stdout.decode("utf-8", "replace"), err, elapsed
    return run


def fails_naming_limit(ts, model, data, limit):
    """The CLI (unlimited) fails at once with 'above the limit LIMIT'."""
    start = time.monotonic()
    r = ts.fails("score", "-m", model, "-d", data, mentions=[model])
    assert time.monotonic() - start < FAST_S, r
    assert names_limit(r.stderr, limit), r
    return r


def names_limit(text, limit):
    return re.search(rf"(above|beyond) the limit {limit}\b", text)


@pytest.fixture(scope="module")
def small_data(tmp_path_factory):
    path = tmp_path_factory.mktemp("limits") / "ok.svm"
    path.write_text("0 1:0.1 3:0.7\n1 3:0.2\n")
    return path


@pytest.mark.parametrize("case,old,new,limit", LGB_CLAIMS, ids=[c[0] for c in LGB_CLAIMS])
def test_lightgbm_claim_past_limit(ts, limited, tmp_path, small_data, case, old, new, limit):
    assert old in LGB_BASE
    model = tmp_path / f"{case}.txt"
    model.write_text(LGB_BASE.replace(old, new, 1))
    fails_naming_limit(ts, model, small_data, limit)
    rc, _, err, elapsed = limited("score", "-m", model, "-d", small_data)
    assert rc == 1 and names_limit(err, limit) and elapsed < FAST_S, err


def test_lightgbm_base_model_scores(ts, limited, tmp_path, small_data):
    """The model the claims are made from is valid, with and without the limit."""
    model = tmp_path / "base.txt"
    model.write_text(LGB_BASE)
    r = ts.succeeds("score", "-m", model, "-d", small_data)
    assert r.stdout.split() == ["1", "1"], r
    rc, out, err, _ = limited("score", "-m", model, "-d", small_data)
    assert rc == 0 and out.split() == ["1", "1"], err


@pytest.mark.parametrize("case,old,new,limit", XGB_CLAIMS, ids=[c[0] for c in XGB_CLAIMS])
def test_xgboost_claim_past_limit(ts, limited, tmp_path, small_data, case, old, new, limit):
    text = XGB_SOURCE.read_text()
    assert old in text
    model = tmp_path / f"{case}.json"
    model.write_text(text.replace(old, new, 1))
    fails_naming_limit(ts, model, small_data, limit)
    rc, _, err, elapsed = limited("score", "-m", model, "-d", small_data)
    assert rc == 1 and names_limit(err, limit) and elapsed < FAST_S, err


def test_model_file_past_size_limit(ts, limited, tmp_path):
    """A 5 GB (sparse) model file is refused before a byte of it is read."""
    model = tmp_path / "huge.txt"
    with open(model, "wb") as f:
        f.truncate(5 << 30)
    start = time.monotonic()
    r = ts.fails("info", "-m", model, mentions=[model])
    assert time.monotonic() - start < FAST_S and "above the limit 4294967296" in r.stderr, r
    rc, _, err, _ = limited("info", "-m", model)
    assert rc == 1 and "above the limit" in err, err


@pytest.mark.parametrize("fid", ["4000000000", "4294967296", "16777216", "99999999999999999999999"])
def test_svmlight_feature_id_past_limit(ts, limited, tmp_path, fid):
    """A data file's feature id of 2^24 or more (4 billion, past 2^64) is an error naming
    the limit, also under the address-space limit (no row that wide is allocated)."""
    model = tmp_path / "m.txt"
    model.write_text(LGB_BASE)
    data = tmp_path / "wide.svm"
    data.write_text(f"0 1:1 {fid}:0.5\n")
    r = ts.fails("score", "-m", model, "-d", data, mentions=[data], line=1)
    assert fid in r.stderr and "above the limit 16777215" in r.stderr, r
    rc, _, err, elapsed = limited("score", "-m", model, "-d", data)
    assert rc == 1 and fid in err and elapsed < FAST_S, err


def test_raw_header_claiming_huge_matrix(ts, limited, tmp_path):
    """A raw matrix header claiming 2^40 rows of 4 columns, or 2^31 columns: a clean error."""
    model = tmp_path / "m.txt"
    model.write_text(LGB_BASE)
    for name, cols, rows in (("rows", 4, 1 << 40), ("cols", 1 << 31, 1)):
        data = tmp_path / f"huge-{name}.raw"
        data.write_bytes(b"TSRAWF32" + struct.pack("<IIQ", 1, cols, rows) + b"\0" * 64)
        r = ts.fails("score", "-m", model, "-d", data, "--data-format", "raw", mentions=[data])
        rc, _, err, elapsed = limited("score", "-m", model, "-d", data, "--data-format", "raw")
        assert rc == 1 and "treescore:" in err and elapsed < FAST_S, err
        if name == "cols":
            assert "limit 16777216" in r.stderr, r


def test_wide_model_under_address_limit(limited, tmp_path, small_data):
    """The wide model of issue 15 (max_feature_idx=16777215, one split) scores under 1 GiB
    of address space: memory follows the columns it reads (more in test_wide_model.py)."""
    model = tmp_path / "wide.txt"
    model.write_text(LGB_BASE.replace("max_feature_idx=3", "max_feature_idx=16777215"))
    rc, out, err, _ = limited("score", "-m", model, "-d", small_data, timeout=120)
    assert rc == 0 and out.split() == ["1", "1"], err


def test_real_model_under_address_limit(limited):
    """An ordinary model and data file score under 1 GiB of address space."""
    rc, out, err, _ = limited("score", "-m", EXAMPLE / "model.txt", "-d", EXAMPLE / "rank.test", timeout=120)
    assert rc == 0, err
    assert len(out.split()) == sum(1 for _ in open(EXAMPLE / "rank.test")), err
