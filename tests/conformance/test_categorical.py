# test_categorical.py: LightGBM and XGBoost categorical splits score exactly in every engine, bad category data in models is refused.
"""Categorical splits (issue 13, part 5).

LightGBM (categorical_feature: decision_type bit 0, cat_boundaries / cat_threshold
bitsets): treescore must equal predict(raw_score=True) bit for bit on float32 and double
rows, including NaN, negative, non-integer, huge and out-of-set category values (LightGBM:
NaN, v <= -1 and v >= 2^31 go right; otherwise (int)v in the set goes left).
XGBoost (enable_categorical, split_type 1 with categories lists, partition splits and
one-hot splits): the same leaves as XGBoost's pred_leaf and its margin within float32
error (NaN to the default side; v < 0 and v >= 2^24 are invalid and go left; (int)v in
the set goes right). A multiclass LightGBM model with categorical splits covers both parts;
the same models as LightGBM JSON (dump_model) and XGBoost UBJSON score the same.
Malformed category data in a model is a clear load error.
"""

import json

import numpy as np
import pytest

import catmc as C
import tshelpers as H


def lgb_cat(name="cat", params=None, rounds=20):
    X, y = C.train_rows()
    p = dict(objective="regression", num_leaves=15, min_data_in_leaf=5, min_data_per_group=5, cat_smooth=1.0,
             max_cat_to_onehot=4)
    p.update(params or {})
    return C.lgb_model(name, p, rounds, X, y, categorical=C.CAT_COLS)


def xgb_cat(name, params, rounds=15):
    X, y = C.train_rows()
    p = dict(objective="reg:squarederror", max_depth=4)
    p.update(params)
    return C.xgb_model(name, p, rounds, X, y, categorical=C.CAT_COLS)


def test_lightgbm_categorical(engine, workdir):
    path, b = lgb_cat()
    text = path.read_text()
    assert "cat_threshold=" in text, "no categorical split was learned"
    C.check_lightgbm(path, b, C.score_rows(), engine, workdir, 1)


def test_lightgbm_categorical_multiclass(engine, workdir):
    X, y = C.train_rows()
    path, b = C.lgb_model("cat-multiclass", dict(objective="multiclass", num_class=3, num_leaves=7,
                                                 min_data_per_group=5, cat_smooth=1.0), 8, X, C.class_labels(y, 3),
                          categorical=C.CAT_COLS)
    assert "cat_threshold=" in path.read_text()
    C.check_lightgbm(path, b, C.score_rows(seed=13, n=600), engine, workdir, 3)


@pytest.mark.parametrize("kind", ["partition", "onehot"])
def test_xgboost_categorical(engine, workdir, kind):
    # partition: max_cat_to_onehot=1 makes every split a set of categories; onehot: the
    # default threshold (4) makes splits on the 6-category column one-hot (one category).
    params = dict(max_cat_to_onehot=1) if kind == "partition" else dict(max_cat_to_onehot=8)
    path, b = xgb_cat(f"cat-{kind}", params)
    trees = json.loads(path.read_text())["learner"]["gradient_booster"]["model"]["trees"]
    assert any(1 in t.get("split_type", []) for t in trees), "no categorical split was learned"
    C.check_xgboost(path, b, C.score_rows(), engine, workdir, 1, C.xgb_base(path, 1))


def test_other_formats(engine, workdir):
    """The same categorical models as LightGBM JSON (dump_model) and XGBoost UBJSON."""
    path, b = lgb_cat()
    X = C.score_rows(seed=14, n=400)
    C.check_lightgbm(C.lightgbm_json(path, b, workdir), b, X, engine, workdir, 1)
    path, b = xgb_cat("cat-partition", dict(max_cat_to_onehot=1))
    C.check_xgboost(path, b, X, engine, workdir, 1, C.xgb_base(path, 1), model_file=C.xgboost_ubj(path, b, workdir))


def test_info_counts_categorical_splits():
    path, _ = lgb_cat()
    p = H.run_cli(["info", "-m", path])
    assert p.returncode == 0, p.stderr
    assert "categorical:" in p.stdout and "splits test a category set" in p.stdout, p.stdout


# ---- malformed models ------------------------------------------------------------------------

def refused(model_text, suffix, workdir, name, *needles):
    bad = workdir / f"bad-{name}{suffix}"
    bad.write_text(model_text)
    raw = workdir / "bad-cat-rows.f32"
    C.write_raw(raw, C.score_rows()[:50])
    p = H.run_cli(["score", "-m", bad, "-d", raw, "--format", "raw", "--engine", "naive"])
    assert p.returncode > 0, f"{name}: accepted (status {p.returncode})"
    for n in needles:
        assert n in p.stderr, f"{name}: message lacks {n!r}: {p.stderr.strip()}"


def lgb_tree_line(text, key):
    """The first tree's `key=` line."""
    start = text.index("Tree=0")
    i = text.index(f"\n{key}=", start) + 1
    return i, text.index("\n", i)


def test_lightgbm_bad_cat_boundaries(workdir):
    path, _ = lgb_cat()
    text = path.read_text()
    i, j = lgb_tree_line(text, "cat_boundaries")
    vals = text[i:j].split("=")[1].split()
    vals[-1] = str(int(vals[-1]) + 3)  # past the end of cat_threshold
    refused(text[:i] + "cat_boundaries=" + " ".join(vals) + text[j:], ".txt", workdir, "lgb-boundaries",
            "cat_boundaries")


def test_lightgbm_bad_cat_index(workdir):
    path, _ = lgb_cat()
    text = path.read_text()
    i, j = lgb_tree_line(text, "decision_type")
    dts = text[i:j].split("=")[1].split()
    k = next(n for n, d in enumerate(dts) if int(d) & 1)
    ti, tj = lgb_tree_line(text, "threshold")
    thr = text[ti:tj].split("=")[1].split()
    thr[k] = "99"  # no such category set
    refused(text[:ti] + "threshold=" + " ".join(thr) + text[tj:], ".txt", workdir, "lgb-index",
            "category set index")


def test_lightgbm_missing_cat_threshold(workdir):
    path, _ = lgb_cat()
    text = path.read_text()
    i, j = lgb_tree_line(text, "cat_threshold")
    refused(text[:i] + text[j + 1:], ".txt", workdir, "lgb-no-threshold", "cat_threshold")


def xgb_edit(path, edit):
    j = json.loads(path.read_text())
    trees = j["learner"]["gradient_booster"]["model"]["trees"]
    t = next(t for t in trees if t.get("categories_nodes"))
    edit(t)
    return json.dumps(j)


def test_xgboost_bad_segment(workdir):
    path, _ = xgb_cat("cat-partition", dict(max_cat_to_onehot=1))

    def edit(t):
        t["categories_sizes"][0] = len(t["categories"]) + 5
    refused(xgb_edit(path, edit), ".json", workdir, "xgb-segment", "categories segment")


def test_xgboost_category_out_of_range(workdir):
    path, _ = xgb_cat("cat-partition", dict(max_cat_to_onehot=1))

    def edit(t):
        t["categories"][0] = -4
    refused(xgb_edit(path, edit), ".json", workdir, "xgb-range", "category -4 is out of range")


def test_xgboost_categories_on_a_leaf(workdir):
    path, _ = xgb_cat("cat-partition", dict(max_cat_to_onehot=1))

    def edit(t):
        leaf = t["left_children"].index(-1)
        t["categories_nodes"][0] = leaf
    refused(xgb_edit(path, edit), ".json", workdir, "xgb-leaf", "is not a categorical split node")
