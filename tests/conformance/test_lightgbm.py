# test_lightgbm.py: treescore scores of LightGBM models must equal LightGBM's raw scores bit for bit.
"""LightGBM conformance.

Models (tsmodels.LGB_VARIANTS): lambdarank with 31, 63 and 255 leaves trained on data
with NaN (missing type NaN), zero_as_missing (missing type Zero), a model trained
without NaN but scored with NaN (missing type None: NaN counts as 0.0), a regression
objective. The data has count-like and heavy-tailed features, a feature that is always
0 (the last column), and the scoring rows add tiny values, denormals, -0.0, +-inf,
+-FLT_MAX, and rows that sit exactly on split thresholds (np.float32 of the threshold
and its float32 neighbours, with the path to the node satisfied).

Reference: booster.predict(X32, raw_score=True) of the booster loaded from the same
model file. LightGBM widens float32 to double exactly and adds leaf values in double in
tree order, as treescore does, so the scores must be equal bit for bit.
"""

import numpy as np
import pytest

import tshelpers as H
import tsmodels as M

VARIANTS = list(M.LGB_VARIANTS)


def text_reference(name, X):
    """LightGBM's raw scores of the values that text files written with H.fmt_f32 hold:
    LightGBM compares double inputs in double, and so does treescore on text input, so the
    reference is the float64 parse of each written decimal (not the float32 it came from)."""
    _, booster, _ = M.lightgbm_model(name)
    X64 = np.array([[float(H.fmt_f32(v)) for v in row] for row in X], dtype=np.float64)
    return np.asarray(booster.predict(X64, raw_score=True, num_threads=2), dtype=np.float64)


@pytest.fixture(scope="session")
def lgb_case(workdir):
    """name -> dict(model, X, tags, ref, raw): scoring rows and LightGBM's scores, built once."""
    cases = {}

    def get(name):
        if name not in cases:
            path, booster, trees = M.lightgbm_model(name)
            Xb = M.score_base()
            Xt, tt = H.threshold_rows(trees, Xb, seed=5, max_nodes=1500)
            X = np.vstack([Xb, Xt]).astype(np.float32)
            tags = [f"scoring row {i}" for i in range(Xb.shape[0])] + tt
            raw = workdir / f"lgb-{name}.f32"
            H.letor_gen.write_raw(raw, X)
            cases[name] = dict(model=path, booster=booster, trees=trees, X=X, tags=tags,
                               ref=M.lightgbm_predict(booster, X), raw=raw)
        return cases[name]

    return get


@pytest.mark.parametrize("name", VARIANTS)
def test_model_shape(name):
    """The variants really are what they claim (else the suite tests less than it says)."""
    _, booster, trees = M.lightgbm_model(name)
    extra, rounds, with_nan = M.LGB_VARIANTS[name]
    assert len(trees) == rounds
    assert booster.num_feature() == M.N_FEATURES  # the constant-0 last column is counted
    assert max(len(t.leaf_value) for t in trees) == extra["num_leaves"]
    mt = np.concatenate([t.missing_type for t in trees])
    if extra.get("zero_as_missing"):
        assert np.any(mt == 1), "no split with missing type Zero"
    elif with_nan:
        assert np.any(mt == 2), "no split with missing type NaN"
    else:
        assert np.all(mt == 0), "a model trained without NaN should have missing type None only"
    used = np.unique(np.concatenate([t.feature for t in trees]))
    assert M.N_FEATURES - 1 not in used, "the constant-0 feature is used by a split"


@pytest.mark.parametrize("name", VARIANTS)
def test_reference_semantics(name, lgb_case):
    """The test's own model of LightGBM's decision rule (the one treescore implements, see
    src/model/forest.h) reproduces LightGBM bit for bit. A failure here is a test-suite or
    library-version problem, not a treescore bug."""
    c = lgb_case(name)
    H.assert_exact(H.predict_trees(c["trees"], c["X"]), c["ref"], c["X"], c["tags"],
                   f"python model of LightGBM, {name}")


@pytest.mark.parametrize("name", VARIANTS)
def test_raw_bit_exact(name, engine, lgb_case):
    c = lgb_case(name)
    ours = H.score(c["model"], c["raw"], len(c["X"]), engine, "--format", "raw")
    H.assert_exact(ours, c["ref"], c["X"], c["tags"], f"lightgbm {name}, engine {engine}")


def test_formats_detected(engine, lgb_case, workdir):
    """--format auto (raw magic sniffed from a .bin file) and --model-format auto/lightgbm."""
    c = lgb_case("rank63")
    sniff = workdir / "lgb-rank63-sniff.bin"
    sniff.write_bytes(c["raw"].read_bytes())
    ours = H.score(c["model"], sniff, len(c["X"]), engine)
    H.assert_exact(ours, c["ref"], c["X"], c["tags"], f"auto formats, engine {engine}")
    ours = H.score(c["model"], c["raw"], len(c["X"]), engine, "--format", "raw", "--model-format", "lightgbm")
    H.assert_exact(ours, c["ref"], c["X"], c["tags"], f"--model-format lightgbm, engine {engine}")


def test_csv_and_tsv(engine, lgb_case, workdir):
    """Text input: CSV (format from the .csv name, no header) and TSV with a header and a
    label column. Values are written with '%.9g'; LightGBM would read them as doubles."""
    c = lgb_case("rank255")
    X, tags = c["X"], c["tags"]
    ref = text_reference("rank255", X)
    csv = workdir / "lgb-rank255.csv"
    if not csv.exists():
        H.write_csv(csv, X)
    ours = H.score(c["model"], csv, len(X), engine)
    H.assert_exact(ours, ref, X, tags, f"CSV (auto), engine {engine}")
    ours = H.score(c["model"], csv, len(X), engine, "--format", "csv", "--no-header")
    H.assert_exact(ours, ref, X, tags, f"CSV --no-header, engine {engine}")
    tsv = workdir / "lgb-rank255.tsv"
    if not tsv.exists():
        H.write_csv(tsv, X, sep="\t", header=True, label=np.arange(len(X)) % 5)
    ours = H.score(c["model"], tsv, len(X), engine, "--format", "tsv", "--header", "--label-column", "0")
    H.assert_exact(ours, ref, X, tags, f"TSV --header --label-column 0, engine {engine}")


def test_many_rows_threads_and_output_file(engine, workdir):
    """12,345 rows (several 4096-row chunks, a ragged last one), 1 and 3 threads, -o FILE."""
    path, booster, _ = M.lightgbm_model("rank63")
    d = H.letor_gen.make_letor(n_rows=12345, n_features=M.N_FEATURES, seed=11)
    X = H.letor_gen.add_edge_values(d.X, seed=12)
    raw = workdir / "lgb-many.f32"
    H.letor_gen.write_raw(raw, X)
    ref = M.lightgbm_predict(booster, X)
    for threads in ("1", "3"):
        out = workdir / f"lgb-many-{engine}-{threads}.txt"
        ours = H.score(path, raw, len(X), engine, "--threads", threads, out_file=out)
        H.assert_exact(ours, ref, X, None, f"12,345 rows, --threads {threads}, engine {engine}")


def test_standard_input(engine, lgb_case):
    """-d - reads standard input (raw and CSV)."""
    c = lgb_case("rank31")
    ours = H.score(c["model"], "-", len(c["X"]), engine, "--format", "raw", stdin=c["raw"].read_bytes())
    H.assert_exact(ours, c["ref"], c["X"], c["tags"], f"raw on stdin, engine {engine}")
    text = "".join(",".join(H.fmt_f32(v) for v in row) + "\n" for row in c["X"][:500])
    ours = H.score(c["model"], "-", 500, engine, "--format", "csv", "--no-header", stdin=text.encode())
    ref = text_reference("rank31", c["X"][:500])
    H.assert_exact(ours, ref, c["X"][:500], c["tags"][:500], f"CSV on stdin, engine {engine}")
