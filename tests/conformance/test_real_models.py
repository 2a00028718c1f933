# test_real_models.py: real model files and real LETOR data, treescore vs LightGBM, XGBoost and a QuickRank reference.
"""Real model files (copies of ../shared/data/models, see tests/data/PROVENANCE.md).

- rankeval_LightGBM.model.txt (lambdarank, 2 trees, 136 features, written by an old
  LightGBM 2.x: see the fixture for the one-line patch the reference needs). No real data set with 136
  features ships with the repository, so the rows are random float32 values inside each
  feature's range from the model's feature_infos, with NaN, zeros and tiny values, plus
  rows on every split threshold. Reference: lightgbm.Booster(model_file=...).predict(
  raw_score=True); bit-exact.
- QuickRank XML (three files, two format versions, one with `##` header lines): the
  reference is the pure-Python scorer tshelpers.predict_trees: score = sum over trees of
  weight * output in double, threshold = float32(float(text)), `x <= t` goes left, NaN
  goes right (NaN <= t is false), feature k = column k. Bit-exact.
- tests/data/letor/mq2008.fold1.test.txt (real LETOR text: CRLF, qid:, "#docid" comments)
  scored through the SVMlight reader with a LightGBM lambdarank model (bit-exact) and an
  XGBoost rank:ndcg model (float32 error bound) trained on it here.
"""

import re

import numpy as np
import pytest

import tshelpers as H

MODELS = H.DATA_DIR / "models"
QUICKRANK = ["rankeval_quickrank.model.xml", "rankeval_quickrank.model.v2.xml",
             "msn_lambdamart_10trees_quickrank.xml"]


def random_rows(lo, hi, n_rows, seed):
    """float32 rows with column j uniform in [lo_j, hi_j] (half of the columns rounded to
    integers), 5% NaN, 10% zeros, a few tiny values and -0.0."""
    rng = np.random.default_rng(seed)
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    X = lo + (hi - lo) * rng.random((n_rows, lo.size))
    ints = rng.random(lo.size) < 0.5
    X[:, ints] = np.round(X[:, ints])
    X[rng.random(X.shape) < 0.10] = 0.0
    X[rng.random(X.shape) < 0.05] = np.nan
    X = X.astype(np.float32)
    return H.letor_gen.add_edge_values(X, seed=seed + 1, n_cells=X.size // 100)


def lightgbm_feature_ranges(path):
    m = re.search(r"^feature_infos=(.*)$", path.read_text(), re.M)
    lo, hi = [], []
    for info in m.group(1).split():
        if info == "none":
            lo.append(0.0)
            hi.append(0.0)
        else:
            a, b = info.strip("[]").split(":")
            lo.append(float(a))
            hi.append(float(b))
    return lo, hi


@pytest.fixture(scope="session")
def rankeval_lgb(workdir):
    import lightgbm as lgb
    path = MODELS / "rankeval_LightGBM.model.txt"
    # The file comes from an old LightGBM (2.x: no version= line, no num_cat= per tree);
    # LightGBM 4.7 refuses it without num_cat, so the reference loads a copy with
    # "num_cat=0" added to every tree (no categorical splits: decision_type=2 is a plain
    # numerical split with default-left, missing type None). treescore reads the original.
    patched = workdir / "rankeval_LightGBM.num_cat.txt"
    patched.write_text(re.sub(r"(?m)^(num_leaves=\d+)$", r"\1\nnum_cat=0", path.read_text()))
    booster = lgb.Booster(model_file=str(patched))
    trees = H.parse_lightgbm_text(path)
    lo, hi = lightgbm_feature_ranges(path)
    assert len(lo) == booster.num_feature() == 136
    Xb = random_rows(lo, hi, 3000, seed=31)
    Xt, tt = H.threshold_rows(trees, Xb, seed=32, max_nodes=10**6)
    X = np.vstack([Xb, Xt]).astype(np.float32)
    tags = [f"random row {i}" for i in range(len(Xb))] + tt
    raw = workdir / "rankeval_lgb.f32"
    H.letor_gen.write_raw(raw, X)
    ref = np.asarray(booster.predict(X, raw_score=True), dtype=np.float64)
    return dict(model=path, trees=trees, X=X, tags=tags, raw=raw, ref=ref)


def test_rankeval_lightgbm_reference_semantics(rankeval_lgb):
    c = rankeval_lgb
    H.assert_exact(H.predict_trees(c["trees"], c["X"]), c["ref"], c["X"], c["tags"], "python model of LightGBM")


def test_rankeval_lightgbm(engine, rankeval_lgb):
    c = rankeval_lgb
    ours = H.score(c["model"], c["raw"], len(c["X"]), engine, "--format", "raw")
    H.assert_exact(ours, c["ref"], c["X"], c["tags"], f"rankeval_LightGBM.model.txt, engine {engine}")


@pytest.fixture(scope="session")
def quickrank_case(workdir):
    cases = {}

    def get(name):
        if name not in cases:
            path = MODELS / name
            trees = H.parse_quickrank_xml(path)
            n_cols = 1 + max(int(t.feature.max()) for t in trees if t.feature.size)
            # Value ranges around the thresholds each feature is split on.
            lo, hi = np.zeros(n_cols), np.ones(n_cols)
            for t in trees:
                for f, T in zip(t.feature, t.T):
                    lo[f] = min(lo[f], 2 * float(T) if T < 0 else 0.0)
                    hi[f] = max(hi[f], 2 * float(T) if T > 0 else 1.0)
            Xb = random_rows(lo, hi, 2000, seed=41)
            Xt, tt = H.threshold_rows(trees, Xb, seed=42, max_nodes=10**6)
            X = np.vstack([Xb, Xt]).astype(np.float32)
            tags = [f"random row {i}" for i in range(len(Xb))] + tt
            raw = workdir / f"{name}.f32"
            H.letor_gen.write_raw(raw, X)
            cases[name] = dict(model=path, trees=trees, X=X, tags=tags, raw=raw,
                               ref=H.predict_trees(trees, X))
        return cases[name]

    return get


def test_quickrank_reference_on_known_values():
    """The QuickRank reference itself, on rankeval_quickrank.model.xml worked by hand:
    tree 1 splits f108 <= 14.895151 then f115 <= -8.024558; tree 2 splits f8 <= 0.666667."""
    trees = H.parse_quickrank_xml(MODELS / "rankeval_quickrank.model.xml")
    assert len(trees) == 2 and all(len(t.leaf_value) == 3 for t in trees)
    assert trees[0].weight == 0.10000000149011612
    x = np.zeros((1, 116), dtype=np.float32)
    x[0, 108], x[0, 115], x[0, 8] = 14.895151138305664, -8.0245580673217773, 0.0
    t2 = trees[1]
    leaf2 = t2.leaf_value[H.exit_leaves(t2, x)[0]]
    assert leaf2 == 0.37133907932286642
    want = 0.0 + 0.10000000149011612 * 0.3412887828162291 + 0.10000000149011612 * 0.37133907932286642
    assert H.predict_trees(trees, x)[0] == want
    x[0, 108] = np.nan  # NaN goes right: the tree-1 leaf 0.96317280453257792
    want = 0.0 + 0.10000000149011612 * 0.96317280453257792 + 0.10000000149011612 * 0.37133907932286642
    assert H.predict_trees(trees, x)[0] == want


@pytest.mark.parametrize("name", QUICKRANK)
def test_quickrank(name, engine, quickrank_case):
    c = quickrank_case(name)
    ours = H.score(c["model"], c["raw"], len(c["X"]), engine, "--format", "raw")
    H.assert_exact(ours, c["ref"], c["X"], c["tags"], f"{name}, engine {engine}")


def test_quickrank_model_format_flag(engine, quickrank_case):
    c = quickrank_case("msn_lambdamart_10trees_quickrank.xml")
    ours = H.score(c["model"], c["raw"], len(c["X"]), engine, "--format", "raw", "--model-format", "quickrank")
    H.assert_exact(ours, c["ref"], c["X"], c["tags"], f"--model-format quickrank, engine {engine}")


# ---- real LETOR data: MQ2008 fold 1 (CRLF, qid:, "#docid = ..." comments) ---------------

MQ2008 = H.DATA_DIR / "letor" / "mq2008.fold1.test.txt"


@pytest.fixture(scope="session")
def mq2008():
    """Dense float32 rows of the file (feature id k -> column k, 47 columns), labels, qids."""
    X, y = H.read_svmlight_dense(MQ2008, 47, absent=0.0)
    qid = np.array([int(l.split()[1].split(":")[1]) for l in MQ2008.read_text().splitlines() if l.strip()])
    return X, y, qid


def test_mq2008_lightgbm(engine, mq2008):
    """A LightGBM lambdarank model trained on the first 100 queries scores the whole file
    through the SVMlight reader (auto format) bit for bit."""
    import lightgbm as lgb
    X, y, qid = mq2008
    train = qid != qid[0]  # any split works; keep one query out of training
    _, sizes = np.unique(qid[train], return_counts=True)
    order = np.argsort(np.unique(qid[train], return_index=True)[1])  # file order of queries

    def build(path):
        ds = lgb.Dataset(X[train], label=y[train], group=sizes[order], params={"verbose": -1})
        params = dict(objective="lambdarank", num_leaves=63, min_data_in_leaf=3, learning_rate=0.1,
                      deterministic=True, force_row_wise=True, num_threads=2, seed=1, verbose=-1)
        lgb.train(params, ds, num_boost_round=40).save_model(str(path))

    path = H.cached_file("lgb-mq2008", ".txt", build, data="mq2008.fold1.test", v=1)
    ref = np.asarray(lgb.Booster(model_file=str(path)).predict(X, raw_score=True), dtype=np.float64)
    ours = H.score(path, MQ2008, len(X), engine)
    H.assert_exact(ours, ref, X, None, f"mq2008 lightgbm via SVMlight, engine {engine}")


def test_mq2008_xgboost(engine, mq2008):
    """The same with an XGBoost rank:ndcg model (every feature is present on every line)."""
    import xgboost as xgb
    X, y, qid = mq2008

    def build(path):
        dm = xgb.DMatrix(X, label=y, qid=qid, missing=np.nan)
        params = dict(objective="rank:ndcg", tree_method="hist", max_depth=6, eta=0.1, nthread=2, seed=1)
        xgb.train(params, dm, num_boost_round=40).save_model(str(path))

    path = H.cached_file("xgb-mq2008", ".json", build, data="mq2008.fold1.test", v=1)
    b = xgb.Booster(model_file=str(path))
    ref = np.asarray(b.inplace_predict(X, predict_type="margin"), dtype=np.float64)
    trees, base = H.parse_xgboost_json(path), H.xgb_base_margin(path)
    ours = H.score(path, MQ2008, len(X), engine)
    # XGBoost's float32 rounding bound, as in test_xgboost.py
    H.assert_within(ours, ref, H.xgb_float32_error_bound(trees, X, base, ref), X, None,
                    f"mq2008 xgboost via SVMlight, engine {engine}")
