# test_unsupported.py: models outside the IR give exact scores or a clear error; degenerate trees score exactly.
"""Either-exact-or-refused cases, and degenerate trees.

LightGBM linear trees and the XGBoost gblinear booster are outside the split-predicate
IR of src/model/forest.h. For them `treescore score` must either exit non-zero with a
message on stderr or return the library's scores (exactly for LightGBM, within
XGBoost's float32 error for XGBoost): silently wrong scores fail. Linear trees must be
refused with a message that names them. (Categorical splits and multiclass models are
supported: test_categorical.py, test_multiclass.py.)

Degenerate but valid models must score exactly: a LightGBM model whose only tree is a
single leaf, and XGBoost trees that are a single leaf.
"""

import numpy as np
import pytest

import tshelpers as H
import tsmodels as M

N = M.N_FEATURES


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


def test_lightgbm_linear_tree(engine, workdir):
    d = M.train_data(False)
    path, b = lgb_model("linear", dict(objective="regression", num_leaves=15, min_data_in_leaf=20,
                                       linear_tree=True), 10, d.X, d.y.astype(np.float32))
    Xs = np.nan_to_num(M.score_base(include_inf=False), nan=0.0)
    exact_or_refused(path, Xs, M.lightgbm_predict(b, Xs), engine, workdir, f"lightgbm linear_tree, engine {engine}")
    p = H.run_cli(["info", "-m", path])
    assert p.returncode > 0 and "linear trees" in p.stderr and "linear_tree" in p.stderr, p.stderr


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
