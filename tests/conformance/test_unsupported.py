# test_unsupported.py: models outside the IR give exact scores or a clear error; degenerate trees score exactly.
"""Either-exact-or-refused cases, and degenerate trees.

LightGBM categorical splits and linear trees, XGBoost categorical splits and the
gblinear booster, and multi-class models (several scores per row) are outside the
split-predicate IR of src/model/forest.h. For them `treescore score` must either exit
non-zero with a message on stderr or return the library's scores (exactly for
LightGBM, within XGBoost's float32 error for XGBoost): silently wrong scores fail.

Degenerate but valid models must score exactly: a LightGBM model whose only tree is a
single leaf, and XGBoost trees that are a single leaf.
"""

import numpy as np
import pytest

import tshelpers as H
import tsmodels as M

N = M.N_FEATURES


def data_with_categories():
    """Training data whose column 3 is a small category id (0..9) that drives the label."""
    d = M.train_data(True)
    X = d.X.copy()
    rng = np.random.default_rng(8)
    X[:, 3] = rng.integers(0, 10, X.shape[0]).astype(np.float32)
    y = np.clip(d.y + (X[:, 3] % 3 == 0), 0, 4).astype(np.float32)
    return X, y, d


def score_rows():
    X = M.score_base(include_inf=False).copy()
    X[:, 3] = np.random.default_rng(9).integers(0, 12, X.shape[0]).astype(np.float32)
    return X


def exact_or_refused(model, X, ref, engine, workdir, what, rel=None):
    raw = workdir / f"unsup-{model.stem}.f32"
    H.letor_gen.write_raw(raw, X)
    p = H.run_cli(["score", "-m", model, "-d", raw, "--format", "raw", "--engine", engine])
    if p.returncode != 0:
        assert p.returncode > 0, f"{what}: treescore crashed (signal {-p.returncode})"
        assert p.stderr.strip(), f"{what}: refused without a message on stderr"
        return
    ours = H.parse_scores(p.stdout, len(X), what)
    if ref is None:
        pytest.fail(f"{what}: treescore printed scores for a model it cannot score with one value per row",
                    pytrace=False)
    if rel is None:
        H.assert_exact(ours, ref, X, None, what + " (accepted, so it must be exact)")
    else:
        H.assert_close(ours, ref, rel, X, None, what + " (accepted, so it must match)")


def lgb_model(name, params, rounds, X, y, **ds_kw):
    import lightgbm as lgb

    def build(path):
        ds = lgb.Dataset(X, label=y, params={"verbose": -1}, **ds_kw)
        lgb.train(dict(M.LGB_COMMON, **params), ds, num_boost_round=rounds).save_model(str(path))

    path = H.cached_file(f"lgb-{name}", ".txt", build, params=params, rounds=rounds, train=M.TRAIN_SPEC, kw=ds_kw)
    return path, lgb.Booster(model_file=str(path))


def xgb_model(name, params, rounds, X, y, **dm_kw):
    import xgboost as xgb

    def build(path):
        dm = xgb.DMatrix(X, label=y, missing=np.nan, **dm_kw)
        xgb.train(dict(M.XGB_COMMON, **params), dm, num_boost_round=rounds).save_model(str(path))

    path = H.cached_file(f"xgb-{name}", ".json", build, params=params, rounds=rounds, train=M.TRAIN_SPEC,
                         kw=sorted(dm_kw))
    b = xgb.Booster(model_file=str(path))
    b.set_param({"nthread": 2})
    return path, b


def test_lightgbm_categorical(engine, workdir):
    X, y, _ = data_with_categories()
    path, b = lgb_model("categorical", dict(objective="regression", num_leaves=15, min_data_in_leaf=5,
                                            cat_smooth=1.0, min_data_per_group=5), 20, X, y,
                        categorical_feature=[3])
    assert "num_cat=1" in path.read_text() or "num_cat=2" in path.read_text(), "no categorical split was learned"
    Xs = score_rows()
    exact_or_refused(path, Xs, M.lightgbm_predict(b, Xs), engine, workdir, f"lightgbm categorical, engine {engine}")


def test_lightgbm_linear_tree(engine, workdir):
    d = M.train_data(False)
    path, b = lgb_model("linear", dict(objective="regression", num_leaves=15, min_data_in_leaf=20,
                                       linear_tree=True), 10, d.X, d.y.astype(np.float32))
    Xs = np.nan_to_num(M.score_base(include_inf=False), nan=0.0)
    exact_or_refused(path, Xs, M.lightgbm_predict(b, Xs), engine, workdir, f"lightgbm linear_tree, engine {engine}")


def test_lightgbm_multiclass_refused(engine, workdir):
    d = M.train_data(True)
    path, _ = lgb_model("multiclass", dict(objective="multiclass", num_class=5, num_leaves=7), 5, d.X, d.y)
    exact_or_refused(path, M.score_base(), None, engine, workdir, f"lightgbm multiclass, engine {engine}")


def test_xgboost_categorical(engine, workdir):
    X, y, _ = data_with_categories()
    types = ["q"] * N
    types[3] = "c"
    path, b = xgb_model("categorical", dict(objective="reg:squarederror", tree_method="hist", max_depth=4,
                                            max_cat_to_onehot=1), 10, X, y,
                        feature_types=types, enable_categorical=True)
    Xs = score_rows()
    Xs[:, 3] = np.minimum(Xs[:, 3], 9)  # only categories seen in training
    exact_or_refused(path, Xs, M.xgboost_margin(b, Xs), engine, workdir, f"xgboost categorical, engine {engine}",
                     rel=1e-6)


def test_xgboost_gblinear(engine, workdir):
    d = M.train_data(True)
    path, b = xgb_model("gblinear", dict(booster="gblinear", objective="reg:squarederror"), 10,
                        d.X, d.y.astype(np.float32))
    import xgboost as xgb
    Xs = M.score_base(include_inf=False)
    ref = b.predict(xgb.DMatrix(Xs, missing=np.nan), output_margin=True)  # no inplace_predict for gblinear
    exact_or_refused(path, Xs, ref, engine, workdir, f"xgboost gblinear, engine {engine}",
                     rel=1e-6)


def test_lightgbm_single_leaf(engine, workdir):
    """min_data_in_leaf larger than the data: LightGBM keeps one tree that is one leaf
    (the label mean) and stops."""
    d = M.train_data(True)
    path, b = lgb_model("single-leaf", dict(objective="regression", num_leaves=31, min_data_in_leaf=10**6), 5,
                        d.X, d.y.astype(np.float32))
    trees = H.parse_lightgbm_text(path)
    assert [len(t.leaf_value) for t in trees] == [1]
    Xs = M.score_base()
    raw = workdir / "lgb-single-leaf.f32"
    H.letor_gen.write_raw(raw, Xs)
    ours = H.score(path, raw, len(Xs), engine, "--format", "raw")
    H.assert_exact(ours, M.lightgbm_predict(b, Xs), Xs, None, f"lightgbm single-leaf model, engine {engine}")


def test_xgboost_single_leaf_trees(engine, workdir):
    """min_child_weight larger than the data: every tree is a single leaf; a few more
    rounds with normal trees after them would be a different model, so this one has
    only stumps-without-splits."""
    d = M.train_data(True)
    path, b = xgb_model("single-leaf", dict(objective="reg:squarederror", tree_method="hist", max_depth=6,
                                           min_child_weight=1e9), 5, d.X, d.y.astype(np.float32))
    trees = H.parse_xgboost_json(path)
    assert all(t.feature.size == 0 for t in trees)
    Xs = M.score_base(include_inf=False)
    raw = workdir / "xgb-single-leaf.f32"
    H.letor_gen.write_raw(raw, Xs)
    ours = H.score(path, raw, len(Xs), engine, "--format", "raw")
    H.assert_close(ours, M.xgboost_margin(b, Xs), 1e-6, Xs, None, f"xgboost single-leaf trees, engine {engine}")
