# test_xgboost.py: treescore vs XGBoost margins: the same leaves, and only XGBoost's float32 rounding error apart.
"""XGBoost conformance.

Models (tsmodels.XGB_VARIANTS): rank:ndcg (hist, depth 6; exact, depth 8),
binary:logistic (hist, depth 7), reg:squarederror (exact, depth 6; hist, depth 8 with
base_score 1.25), and a dart booster (rate_drop 0.1). NaN in training and scoring data;
rows on split thresholds (XGBoost's split is x < t with a float t: the tests put t and
its float32 neighbours there).

Two checks per case:

1. Same leaves. treescore adds base + the leaf values in double; the test adds the leaf
   values XGBoost's own pred_leaf says each row reaches (in double, tree order). The two
   must differ only by the constant base margin: |ours - (b + S)| <= 1e-12 * max(1, |ref|)
   with b estimated as the median of ours - S, and b must be XGBoost's base margin
   (within 8 float32 ulps: a loader may compute logit(base_score) in float or double).
   Any wrong leaf shows up here, however small its value. (Dart only: plus
   2u * sum_k |w_k * leaf_k|, since the float32 tree weights may be read as doubles.)

2. Same score as XGBoost's margin (inplace_predict, predict_type="margin"), within the
   error XGBoost itself makes. XGBoost adds each tree's leaf value to a float32 running sum
   (and, for dart, multiplies the leaf by the tree weight in float32); every float32
   operation rounds with relative error at most u = 2**-24. So for a row with double
   partial sums s_1..s_T (s_0 = base),
       |xgboost - exact| <= u * (sum_k |s_k| + sum_k |w_k * leaf_k| [dart] + 4 |base|)
   (the base margin term covers XGBoost computing logit(base_score) in float32). The test
   uses that bound times 1.01 plus 1e-15 * max(1, |ref|) for treescore's own double
   rounding. This per-row bound is rigorous, and tighter than any fixed relative
   tolerance: observed errors here reach ~8.5e-7 relative to max(1, |ref|) with 80 trees
   (a fixed 1e-6 would only barely cover them, and the error grows with the number of
   trees), while the largest observed error / bound ratio is about 0.28.
"""

import numpy as np
import pytest

import tshelpers as H
import tsmodels as M

VARIANTS = list(M.XGB_VARIANTS)
U32 = H.XGB_U32


def make_case(path, booster, trees, X, tags, raw=None):
    """Everything the checks need for scoring rows X of one model."""
    leaves = M.xgboost_leaves(booster, X)
    # S: the leaf values XGBoost's own pred_leaf names, added in double in tree order.
    S = np.zeros(X.shape[0])
    for k, t in enumerate(trees):
        pos = {int(n): i for i, n in enumerate(t.leaf_node_id)}
        S = S + t.weight * t.leaf_value[np.array([pos[int(n)] for n in leaves[:, k]])]
    ref = M.xgboost_margin(booster, X)
    base = H.xgb_base_margin(path)
    # Check 1 tolerance: double rounding only; for dart also the tree weight, which XGBoost
    # keeps in float32 and a loader may read as the double of the JSON text (<= u relative).
    leaf_tol = 1e-12 * np.maximum(1.0, np.abs(ref))
    if any(t.weight != 1.0 for t in trees):
        leaf_tol = leaf_tol + 2 * U32 * sum(np.abs(t.weight * t.leaf_value[H.exit_leaves(t, X)]) for t in trees)
    return dict(model=path, booster=booster, trees=trees, X=X, tags=tags, raw=raw, leaves=leaves,
                S=S, ref=ref, base=base, leaf_tol=leaf_tol, bound=H.xgb_float32_error_bound(trees, X, base, ref))


@pytest.fixture(scope="session")
def xgb_case(workdir):
    cases = {}

    def get(name):
        if name not in cases:
            path, booster, trees = M.xgboost_model(name)
            Xb = M.score_base(include_inf=False)  # XGBoost refuses inf input
            Xt, tt = H.threshold_rows(trees, Xb, seed=6, max_nodes=1500, extra_values=(np.nan,))
            X = np.vstack([Xb, Xt]).astype(np.float32)
            tags = [f"scoring row {i}" for i in range(Xb.shape[0])] + tt
            raw = workdir / f"xgb-{name}.f32"
            H.letor_gen.write_raw(raw, X)
            cases[name] = make_case(path, booster, trees, X, tags, raw)
        return cases[name]

    return get


def check_scores(ours, c, what):
    X, tags = c["X"], c["tags"]
    # 1. same leaves: ours - S is the same base margin b on every row
    b = float(np.median(ours - c["S"]))
    H.assert_within(ours, b + c["S"], c["leaf_tol"], X, tags,
                    f"{what}: not the leaves XGBoost picks (ours vs base {b!r} + leaf sum)")
    assert abs(b - c["base"]) <= 8 * U32 * max(1.0, abs(c["base"])), \
        f"{what}: base margin {b!r}, XGBoost's is {c['base']!r}"
    # 2. within XGBoost's own float32 rounding error of its margin
    H.assert_within(ours, c["ref"], c["bound"], X, tags, f"{what}: vs XGBoost margin, beyond its float32 error bound")


@pytest.mark.parametrize("name", VARIANTS)
def test_reference_semantics(name, xgb_case):
    """The test's model of XGBoost's traversal (x < t, NaN -> default) picks the leaves
    XGBoost's pred_leaf reports, and the bound of check 2 holds for the exact leaf sum.
    A failure here is a test-suite problem, not a treescore bug."""
    c = xgb_case(name)
    mine = np.stack([t.leaf_node_id[H.exit_leaves(t, c["X"])] for t in c["trees"]], axis=1)
    bad = np.flatnonzero(np.any(mine != c["leaves"], axis=1))
    assert bad.size == 0, f"{name}: python traversal disagrees with pred_leaf on rows {bad[:5]} ({c['tags'][bad[0]]})"
    exact = H.predict_trees(c["trees"], c["X"], base=c["base"])
    assert np.all(np.abs(exact - c["ref"]) <= c["bound"]), f"{name}: float32 error bound too tight"


@pytest.mark.parametrize("name", VARIANTS)
def test_raw(name, engine, xgb_case):
    c = xgb_case(name)
    ours = H.score(c["model"], c["raw"], len(c["X"]), engine, "--format", "raw")
    check_scores(ours, c, f"xgboost {name}, engine {engine}")


def test_model_format_flag(engine, xgb_case):
    c = xgb_case("ndcg_hist_d6")
    ours = H.score(c["model"], c["raw"], len(c["X"]), engine, "--format", "raw", "--model-format", "xgboost")
    check_scores(ours, c, f"--model-format xgboost, engine {engine}")


@pytest.mark.parametrize("name", ["ndcg_hist_d6", "sqerr_exact_d6"])
def test_svmlight_absent_is_missing(name, engine, workdir):
    """SVMlight with qid: a feature left out of a line is missing (NaN) for XGBoost models;
    an explicit k:0 is the value 0. Small file, both --format auto and svmlight."""
    path, booster, trees = M.xgboost_model(name)
    d = H.letor_gen.make_letor(n_rows=400, n_features=M.N_FEATURES, seed=21)
    X = d.X.copy()
    rng = np.random.default_rng(22)
    present = rng.random(X.shape) > 0.3
    X[rng.random(X.shape) < 0.1] = 0.0          # explicit zeros, written as k:0
    X[~present] = np.nan                        # absent == missing
    X[5] = np.nan                               # a line with only label and qid
    f = workdir / f"xgb-{name}.svm.txt"
    H.write_svmlight(f, X, d.y, d.qid, present)
    c = make_case(path, booster, trees, X, None)
    for extra in ((), ("--format", "svmlight")):
        ours = H.score(path, f, len(X), engine, *extra)
        check_scores(ours, c, f"xgboost {name} svmlight {' '.join(extra) or '(auto)'}, engine {engine}")
