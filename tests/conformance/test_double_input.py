# test_double_input.py: LightGBM text input read as doubles (bit-exact vs predict on float64); float32 otherwise.
"""Double-precision input.

LightGBM compares a double input with a double threshold: booster.predict(X64) and
LightGBM reading a text file both see doubles. A value such as 0.988973 next to a
threshold 0.9889730000000001, or an integer around 1.23e8 (float32 holds only every 8th
there), can go the other way in float32. The contract:

- LightGBM models, TEXT data (SVMlight, CSV, TSV): every value is the correctly rounded
  double of its decimal text (Python's float()), and the score is bit-identical to
  booster.predict(X64, raw_score=True) of that float64 matrix (absent SVMlight entries
  0.0; "nan", "NaN" and empty CSV/TSV fields NaN).
- LightGBM models, raw float32 files: float32 semantics (predict on the float32 matrix).
- XGBoost (and QuickRank) models: text values become float32 (nearest), as XGBoost's
  inplace_predict does with float64 data; checked like tests/conformance/test_xgboost.py
  (same leaves as XGBoost's pred_leaf, within XGBoost's float32 rounding error).

Data (make_data): 3,000 LETOR-like rows in float64 with 10 features of the kinds where
float32 loses information: 6-decimal values in [0, 1] (LETOR files), integers
123456700 + [0, 200) and 1234567000 + [0, 2000) (float32 spacing 8 and 128 there),
values with 9-10 significant digits (12345.6789, 123.456789), NaN in two columns, many
zeros in one; labels depend on fine structure of every feature, so splits land between
neighbouring values. Models: lambdarank (63 leaves, 40 rounds, missing types None/NaN),
regression with zero_as_missing=True (31 leaves, 50 rounds, missing type Zero), and an
XGBoost reg:squarederror model (hist, depth 6, 40 rounds). All cached in .cache.

Scoring rows: the training rows themselves; for up to 800 split nodes per model (the
path to the node satisfied by values on the ancestors' own thresholds): the double
threshold T, nextafter(T, -+inf) in float64, the float32 neighbours a <= T < b and the
midpoints of the float32 gaps (prev(a), a), (a, b), (b, next(b)); rows with values at
LightGBM's zero range edge (1e-35f), double subnormals and -0.0. Values are written with
repr(), '%.16E' or as integers. test_rows_exercise_double_path proves the data matters:
LightGBM's own float32 scores differ from its float64 scores on many rows of each kind.

XGBoost and float32 ties: a double that is exactly halfway between two float32s (the gap
midpoints above) rounds to even; the shortest repr() text of such a double is not the
midpoint itself, so rounding that TEXT straight to float32 (strtof) can give the other
neighbour. Rows with such cells are kept apart (test_xgboost_text_float32_ties), whose
reference is float32(double), XGBoost's inplace_predict on float64 data.
"""

from __future__ import annotations

import functools
import re
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest

import tshelpers as H
import test_xgboost as TX  # make_case / check_scores: the XGBoost checks of that module

F32 = np.float32
F64 = np.float64
N_FEATURES = 10
DATA_VERSION = 1  # bump when make_data changes (invalidates the cached models)
DATA_SPEC = dict(n_rows=3000, seed=11, version=DATA_VERSION)
MAX_NODES = 800
LGB_ZERO64 = float(F32(1e-35))  # LightGBM's kZeroThreshold: the double of 1e-35f

LGB_COMMON = dict(learning_rate=0.1, deterministic=True, force_row_wise=True, num_threads=2, seed=1,
                  verbose=-1, min_sum_hessian_in_leaf=1e-9, lambda_l2=0.0, min_data_in_leaf=3)
# name -> (parameters, rounds)
LGB_VARIANTS = {
    "rank63": (dict(objective="lambdarank", num_leaves=63), 40),
    "regression31_zero_as_missing": (dict(objective="regression", num_leaves=31, zero_as_missing=True), 50),
}
XGB_PARAMS = dict(objective="reg:squarederror", tree_method="hist", max_depth=6, eta=0.1, nthread=2, seed=1,
                  verbosity=0)
XGB_ROUNDS = 40

# The kind of each feature column.
KINDS = ["letor6 [0,1]", "int 123456700+[0,200)", "9-10 digits 12345.6789", "letor6 normal, NaN",
         "letor6 lognormal, 35% zeros", "9-10 digits 123.456789", "int 1234567000+[0,2000)",
         "letor6 negative, NaN", "9 decimals 0.000123456", "8 decimals [1,10)"]


# ---- data -------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def make_data():
    """(X float64 [3000, 10] with NaN, graded labels 0..4, continuous target, query sizes, qid)."""
    n, seed = DATA_SPEC["n_rows"], DATA_SPEC["seed"]
    rng = np.random.default_rng(seed)
    sizes, total = [], 0
    while total < n:
        s = min(int(rng.integers(20, 61)), n - total)
        sizes.append(s)
        total += s
    groups = np.asarray(sizes, dtype=np.int64)
    qid = np.repeat(np.arange(1, len(groups) + 1), groups)
    X = np.empty((n, N_FEATURES), dtype=F64)
    X[:, 0] = np.round(rng.random(n), 6)
    X[:, 1] = 123456700 + rng.integers(0, 200, n)
    X[:, 2] = np.round(rng.uniform(10000, 99999, n), 4)
    X[:, 3] = np.round(rng.normal(0, 1, n), 6)
    X[:, 4] = np.where(rng.random(n) < 0.35, 0.0, np.round(rng.lognormal(0, 1, n), 6))
    X[:, 5] = np.round(rng.uniform(0, 1000, n), 6)
    X[:, 6] = 1234567000 + rng.integers(0, 2000, n)
    X[:, 7] = -np.round(rng.exponential(1, n), 6)
    X[:, 8] = np.round(rng.random(n) * 1e-3, 9)
    X[:, 9] = np.round(rng.uniform(1, 10, n), 8)
    ints1, ints6 = X[:, 1].astype(np.int64), X[:, 6].astype(np.int64)
    # Fine structure in every feature: neighbouring values get different labels.
    target = (np.sin(X[:, 0] * 300) + 1.5 * (ints1 % 5 == 0) - 0.7 * (ints1 % 2) + np.sin(X[:, 2] * 40)
              + np.cos(X[:, 3] * 20) + np.sin(X[:, 4] * 30) + np.sin(X[:, 5] * 7) + (ints6 % 3 == 0)
              + np.sin(X[:, 7] * 50) + np.sin(X[:, 8] * 2e4) + np.sin(X[:, 9] * 60) + rng.normal(0, 0.5, n))
    X[rng.random(n) < 0.15, 3] = np.nan
    X[rng.random(n) < 0.10, 7] = np.nan
    y = np.searchsorted(np.quantile(target, [0.5, 0.75, 0.9, 0.97]), target).astype(np.int32)
    return X, y, target, groups, qid


# ---- models -----------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def lightgbm_model(name):
    """(model path, booster loaded from it, nodes) of a LightGBM model trained on the float64 data."""
    import lightgbm as lgb
    extra, rounds = LGB_VARIANTS[name]
    params = dict(LGB_COMMON, **extra)

    def build(path):
        X, y, target, groups, _ = make_data()
        rank = params["objective"] == "lambdarank"
        ds = lgb.Dataset(X, label=y if rank else target, group=groups if rank else None, params={"verbose": -1})
        lgb.train(params, ds, num_boost_round=rounds).save_model(str(path))

    path = H.cached_file(f"lgb64-{name}", ".txt", build, params=params, rounds=rounds, data=DATA_SPEC)
    return path, lgb.Booster(model_file=str(path)), lightgbm_nodes(path)


def lightgbm_nodes(path):
    """Per tree with splits: dict(feature, thr (float64, as in the file), left, right, missing_type,
    default_left, index (the tree's number in the file))."""
    text = Path(path).read_text()
    trees, index = [], 0
    for block in re.split(r"\nTree=\d+\n", text)[1:]:
        kv = {}
        for line in block.split("\n"):
            if line.strip() == "" and kv:
                break
            if "=" in line:
                k, v = line.split("=", 1)
                kv[k] = v
        if int(kv["num_leaves"]) == 1:
            index += 1
            continue
        dt = np.array([int(v) for v in kv["decision_type"].split()])
        trees.append(dict(feature=np.array([int(v) for v in kv["split_feature"].split()]),
                          thr=np.array([float(v) for v in kv["threshold"].split()], dtype=F64),
                          left=np.array([int(v) for v in kv["left_child"].split()]),
                          right=np.array([int(v) for v in kv["right_child"].split()]),
                          missing_type=(dt >> 2) & 3, default_left=(dt & 2) != 0, index=index))
        index += 1
    return trees


def lgb_predict(booster, X):
    return np.asarray(booster.predict(X, raw_score=True, num_threads=2), dtype=F64)


@functools.lru_cache(maxsize=None)
def xgboost_model():
    """(model path (.json), booster, trees of tshelpers.parse_xgboost_json)."""
    import xgboost as xgb

    def build(path):
        X, _, target, _, _ = make_data()
        xgb.train(XGB_PARAMS, xgb.DMatrix(X, label=target, missing=np.nan), num_boost_round=XGB_ROUNDS).save_model(
            str(path))

    path = H.cached_file("xgb64-sqerr_hist_d6", ".json", build, params=XGB_PARAMS, rounds=XGB_ROUNDS, data=DATA_SPEC)
    booster = xgb.Booster(model_file=str(path))
    booster.set_param({"nthread": 2})
    return path, booster, H.parse_xgboost_json(path)


# ---- scoring rows -----------------------------------------------------------------------------

def f32_below(t: float) -> F32:
    """Largest float32 <= the double t."""
    return H.lgb_le_threshold(t)


def up32(a):
    return np.nextafter(F32(a), F32(np.inf))


def down32(a):
    return np.nextafter(F32(a), F32(-np.inf))


def mid(a, b) -> float:
    """Exact midpoint of two float32s (a double: float64 has room for it)."""
    return (float(a) + float(b)) / 2.0


def lgb_values(T: float):
    """Values around a LightGBM double threshold T (split: x <= T)."""
    a = f32_below(T)
    b = up32(a)
    return [("T", T), ("T-", float(np.nextafter(T, -np.inf))), ("T+", float(np.nextafter(T, np.inf))),
            ("f32<=T", float(a)), ("f32>T", float(b)),
            ("mid32(a-,a)", mid(down32(a), a)), ("mid32(a,b)", mid(a, b)), ("mid32(b,b+)", mid(b, up32(b)))]


def xgb_values(T32: float):
    """Values around an XGBoost split `x < c` (c float32) given as x <= T32 = prev32(c)."""
    c = up32(T32)
    lo, hi = mid(T32, c), mid(c, up32(c))
    return [("c", float(c)), ("c-", float(np.nextafter(float(c), -np.inf))),
            ("c+", float(np.nextafter(float(c), np.inf))),
            ("mid32(c-,c)", lo), ("mid32(c,c+)", hi),
            ("mid32(c-,c)-", float(np.nextafter(lo, -np.inf))), ("mid32(c-,c)+", float(np.nextafter(lo, np.inf))),
            ("mid32(c,c+)-", float(np.nextafter(hi, -np.inf))), ("mid32(c,c+)+", float(np.nextafter(hi, np.inf)))]


def threshold_rows(trees, base_rows, values, above, seed, max_nodes=MAX_NODES):
    """Rows reaching split nodes (x <= thr goes left) with values(thr) on the node's feature.
    Ancestors are satisfied with their own threshold (left) or above(threshold) (right).
    trees: dicts with feature, thr (float64), left, right, index. Returns (X float64, tags)."""
    rng = np.random.default_rng(seed)
    targets = []
    for ti, t in enumerate(trees):
        stack = [(0, {})]
        while stack:
            n, box = stack.pop()
            targets.append((ti, n, box))
            f, T = int(t["feature"][n]), float(t["thr"][n])
            lo, hi = box.get(f, (-np.inf, np.inf))
            if t["left"][n] >= 0:
                stack.append((int(t["left"][n]), {**box, f: (lo, min(hi, T))}))
            if t["right"][n] >= 0:
                stack.append((int(t["right"][n]), {**box, f: (max(lo, T), hi)}))
    if len(targets) > max_nodes:
        targets = [targets[i] for i in sorted(rng.choice(len(targets), size=max_nodes, replace=False))]
    out, tags = [], []
    for ti, n, box in targets:
        t = trees[ti]
        base = base_rows[rng.integers(0, base_rows.shape[0])].copy()
        for f, (lo, hi) in box.items():
            if hi < np.inf:
                base[f] = hi
            elif lo > -np.inf:
                base[f] = above(lo)
        f, T = int(t["feature"][n]), float(t["thr"][n])
        for kind, v in values(T):
            r = base.copy()
            r[f] = v
            out.append(r)
            tags.append(f"{kind}: tree {t['index']} node {n} f{f} thr={T!r} x={v!r}")
    return np.vstack(out).astype(F64), tags


ZERO_EDGE = [LGB_ZERO64, -LGB_ZERO64, 1e-35, -1e-35, float(np.nextafter(LGB_ZERO64, np.inf)),
             -float(np.nextafter(LGB_ZERO64, np.inf)), float(np.nextafter(LGB_ZERO64, 0)), 1e-36, 1e-300,
             5e-324, -0.0, 0.0]


def edge_rows(base_rows):
    """Each ZERO_EDGE value in each column of some training rows."""
    out, tags = [], []
    for j in range(N_FEATURES):
        for k, v in enumerate(ZERO_EDGE):
            r = base_rows[(j * len(ZERO_EDGE) + k) % base_rows.shape[0]].copy()
            r[j] = v
            out.append(r)
            tags.append(f"zero edge: f{j} x={v!r}")
    return np.vstack(out), tags


def tag_kind(tag: str) -> str:
    return tag.split(":", 1)[0]


@functools.lru_cache(maxsize=None)
def lgb_rows(name):
    """(X float64 with NaN, tags): training rows, threshold rows, zero-edge rows of a LightGBM model."""
    X, *_ = make_data()
    _, _, nodes = lightgbm_model(name)
    Xt, tt = threshold_rows(nodes, X, lgb_values, lambda lo: float(np.nextafter(lo, np.inf)),
                            seed=7 + len(name))
    Xe, te = edge_rows(X)
    tags = [f"training row {i}" for i in range(X.shape[0])]
    return np.vstack([X, Xt, Xe]), tags + tt + te


def xgb_nodes(trees):
    """XGBoost trees as dicts for threshold_rows (thr = the float32 T of `x <= T`)."""
    return [dict(feature=t.feature, thr=t.T.astype(F64), left=t.left, right=t.right, index=i)
            for i, t in enumerate(trees) if t.feature.size]


@functools.lru_cache(maxsize=None)
def xgb_rows():
    """(X float64 with NaN, tags): the training rows, rows on XGBoost's own splits, and the
    threshold and zero-edge rows of both LightGBM models."""
    _, _, trees = xgboost_model()
    X, *_ = make_data()
    n = X.shape[0]
    Xt, tt = threshold_rows(xgb_nodes(trees), X, xgb_values, lambda lo: float(up32(lo)), seed=17)
    parts, tags = [X, Xt], [f"training row {i}" for i in range(n)] + tt
    for name in LGB_VARIANTS:
        Xl, tl = lgb_rows(name)
        parts.append(Xl[n:])
        tags += tl[n:]
    return np.vstack(parts), tags


def is_f32_tie(X: np.ndarray) -> np.ndarray:
    """Cells whose double is exactly halfway between two neighbouring float32s."""
    with np.errstate(over="ignore", invalid="ignore"):
        c = X.astype(F32)
        toward = np.where(X > c.astype(F64), F32(np.inf), F32(-np.inf)).astype(F32)
        n = np.nextafter(c, toward)
        return np.isfinite(X) & (c.astype(F64) != X) & ((c.astype(F64) + n.astype(F64)) / 2.0 == X)


def f32_of_text(s: str) -> F32:
    """The float32 nearest to the decimal text s itself (strtof), ties to even."""
    v = float(s)
    c = F32(v)
    if not np.isfinite(c) or float(c) == v:
        return c
    q = Fraction(s)
    cands = [down32(c), c, up32(c)]
    return min(cands, key=lambda f: (abs(Fraction(float(f)) - q), int(np.array(f, F32).view(np.uint32)) & 1))


# ---- text files -------------------------------------------------------------------------------

NAN_SPELLINGS = ["nan", "", "NaN", "NA"]


def fmt64(v: float, i: int, j: int) -> str:
    """A decimal text whose correctly rounded double is exactly v (varied by row and column)."""
    v = float(v)
    if v != v:
        return NAN_SPELLINGS[(i + j) % len(NAN_SPELLINGS)]
    style = (i + 2 * j) % 4
    if style == 1 and v.is_integer() and abs(v) < 1e15 and not (v == 0 and np.signbit(v)):
        return str(int(v))
    if style == 3:
        return "%.16E" % v  # 17 significant digits: round-trips every double
    return repr(v)


def write_text(path, X: np.ndarray, fmt: str, omit_zeros: bool) -> None:
    """fmt "svmlight": `label qid:Q k:v` (NaN cells left out; zeros left out on odd rows when
    omit_zeros); "csv" / "tsv": features only, no header, NaN spelled in several ways."""
    lines = []
    for i in range(X.shape[0]):
        row = X[i]
        if fmt == "svmlight":
            parts = [str(i % 5), f"qid:{1 + i // 50}"]
            for j, v in enumerate(row):
                v = float(v)
                if v != v or (omit_zeros and v == 0.0 and i % 2):
                    continue
                parts.append(f"{j}:{fmt64(v, i, j)}")
            lines.append(" ".join(parts))
        else:
            sep = "," if fmt == "csv" else "\t"
            lines.append(sep.join(fmt64(v, i, j) for j, v in enumerate(row)))
    Path(path).write_text("\n".join(lines) + "\n")


def svmlight_matrix(X: np.ndarray) -> np.ndarray:
    """The float64 matrix LightGBM sees for an SVMlight file written from X: NaN (left out) -> 0.0."""
    return np.where(np.isnan(X), 0.0, X)


# ---- fixtures ---------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def lgb_case(workdir):
    """(name, fmt) -> dict(model, X64 (what LightGBM sees), tags, file, ref, ref32)."""
    cases = {}

    def get(name, fmt):
        key = (name, fmt)
        if key not in cases:
            path, booster, _ = lightgbm_model(name)
            X, tags = lgb_rows(name)
            X64 = svmlight_matrix(X) if fmt == "svmlight" else X
            f = workdir / f"dbl-{name}.{fmt}.txt"
            write_text(f, X, fmt, omit_zeros=True)
            cases[key] = dict(model=path, booster=booster, X64=X64, tags=tags, file=f,
                              ref=lgb_predict(booster, X64), ref32=lgb_predict(booster, X64.astype(F32)))
        return cases[key]

    return get


@pytest.fixture(scope="session")
def xgb_case(workdir):
    """dict(model, booster, trees, X (float64, NaN = absent), tags, tie_rows (rows with a float32-tie cell),
    plain / tie: dict(X64, file, tags, case) for the rows without / with a float32-tie cell)."""
    path, booster, trees = xgboost_model()
    X, tags = xgb_rows()
    tie = np.any(is_f32_tie(X), axis=1)
    out = dict(model=path, booster=booster, trees=trees, X=X, tags=tags, tie_rows=tie)
    for part, rows in (("plain", ~tie), ("tie", tie)):
        Xp = X[rows]
        tp = [t for t, keep in zip(tags, rows) if keep]
        f = workdir / f"dbl-xgb-{part}.svmlight.txt"
        write_text(f, Xp, "svmlight", omit_zeros=False)  # an absent entry is missing for XGBoost
        # the reference: XGBoost on the float32 conversion of the doubles
        out[part] = dict(X64=Xp, file=f, tags=tp, case=TX.make_case(path, booster, trees, Xp.astype(F32), tp))
    return out


# ---- tests: the models and data really exercise doubles ---------------------------------------

@pytest.mark.parametrize("name", list(LGB_VARIANTS))
def test_models_have_double_thresholds(name):
    """Thresholds not representable as float32 on the named feature kinds; the missing types."""
    _, booster, nodes = lightgbm_model(name)
    extra, rounds = LGB_VARIANTS[name]
    assert booster.num_trees() == rounds
    feat = np.concatenate([t["feature"] for t in nodes])
    thr = np.concatenate([t["thr"] for t in nodes])
    mt = np.concatenate([t["missing_type"] for t in nodes])
    not32 = thr.astype(F32).astype(F64) != thr
    print(f"\n{name}: {thr.size} splits, {int(not32.sum())} thresholds not representable as float32")
    for j in range(N_FEATURES):
        print(f"  f{j} ({KINDS[j]}): {int((feat == j).sum())} splits, {int((not32 & (feat == j)).sum())} not float32")
        assert np.any(not32 & (feat == j)), f"{name}: no non-float32 threshold on f{j} ({KINDS[j]})"
    # thresholds strictly inside a float32 gap that holds a training value of the feature
    X, *_ = make_data()
    inside = 0
    for f, T in zip(feat, thr):
        a = float(f32_below(T))
        col = X[:, f]
        inside += int(np.any((col > a) & (col < float(up32(a))) & (col != T)))
    print(f"  {inside} splits have a training value in the float32 gap around their threshold")
    assert inside > 50
    if extra.get("zero_as_missing"):
        assert np.any(mt == 1), "no split with missing type Zero"
        assert np.any(mt[feat == 4] == 1), "f4 (35% zeros) has no split with missing type Zero"
    else:
        assert np.any(mt == 2), "no split with missing type NaN"


@pytest.mark.parametrize("name", list(LGB_VARIANTS))
@pytest.mark.parametrize("fmt", ["svmlight", "csv"])
def test_rows_exercise_double_path(name, fmt, lgb_case):
    """LightGBM's float32 scores differ from its float64 scores on many rows (so a float32
    reader cannot pass the bit-exact tests); printed by kind of row. No treescore here."""
    c = lgb_case(name, fmt)
    differ = c["ref"] != c["ref32"]
    kinds = {}
    for tag, d in zip(c["tags"], differ):
        k = "training row" if tag.startswith("training") else tag_kind(tag)
        n, m = kinds.get(k, (0, 0))
        kinds[k] = (n + 1, m + int(d))
    print(f"\n{name} {fmt}: {int(differ.sum())} of {differ.size} rows differ between float32 and float64 input")
    for k, (n, m) in kinds.items():
        print(f"  {k:14s} {m:6d} of {n:6d}")
    assert kinds["training row"][1] > 100, "training rows: float32 and float64 agree (data too coarse?)"
    assert kinds["T"][1] > 50, "rows on thresholds: float32 and float64 agree"
    assert differ.sum() > 1000


def test_text_reference_is_exact(xgb_case):
    """Every decimal text written parses (Python float()) back to exactly the double of the
    reference matrix (all rows of every set: the XGBoost set holds the LightGBM ones)."""
    X = xgb_case["X"]
    for i in range(X.shape[0]):
        for j in range(N_FEATURES):
            v = float(X[i, j])
            s = fmt64(v, i, j)
            if v != v:
                assert s in NAN_SPELLINGS
            else:
                assert F64(float(s)).view(np.uint64) == F64(v).view(np.uint64), (i, j, s, v)


# ---- tests: treescore -------------------------------------------------------------------------

@pytest.mark.parametrize("name", list(LGB_VARIANTS))
@pytest.mark.parametrize("fmt", ["svmlight", "csv", "tsv"])
def test_lightgbm_text_bit_exact(name, fmt, engine, lgb_case):
    """treescore on a text file == booster.predict(X64, raw_score=True), bit for bit."""
    c = lgb_case(name, fmt)
    ours = H.score(c["model"], c["file"], len(c["X64"]), engine, "--format", fmt,
                   *(("--no-header",) if fmt != "svmlight" else ()))
    n32 = int(np.sum(c["ref"] != c["ref32"]))
    like32 = int(np.sum((ours == c["ref32"]) & (c["ref"] != c["ref32"])))
    print(f"\n{name} {fmt} {engine}: float32 and float64 references differ on {n32} rows; "
          f"treescore equals the float32 one on {like32} of them")
    H.assert_exact(ours, c["ref"], c["X64"], c["tags"],
                   f"lightgbm {name}, {fmt} text, engine {engine} (float32 semantics on {like32} of the {n32} "
                   f"rows where float32 and float64 differ)")


def test_lightgbm_raw_float32(engine, lgb_case, workdir):
    """Raw float32 files keep float32 semantics: predict on the float32 matrix, bit for bit."""
    c = lgb_case("rank63", "csv")
    X32 = c["X64"].astype(F32)
    raw = workdir / "dbl-rank63.f32"
    H.letor_gen.write_raw(raw, X32)
    ref = lgb_predict(c["booster"], X32)
    assert np.array_equal(ref, c["ref32"])
    ours = H.score(c["model"], raw, len(X32), engine, "--format", "raw")
    H.assert_exact(ours, ref, X32, c["tags"], f"lightgbm rank63, raw float32, engine {engine}")


def test_xgboost_converts_to_float32(xgb_case):
    """The reference: XGBoost's inplace_predict on float64 data equals that on its float32
    conversion (XGBoost converts input to float32). No treescore here."""
    b = xgb_case["booster"]
    X = xgb_case["X"]
    m64 = np.asarray(b.inplace_predict(X, predict_type="margin", missing=np.nan), dtype=F64)
    m32 = np.asarray(b.inplace_predict(X.astype(F32), predict_type="margin", missing=np.nan), dtype=F64)
    assert np.array_equal(m64, m32)
    tie = xgb_case["tie_rows"]
    print(f"\nxgboost: {X.shape[0]} rows, {int(tie.sum())} with a cell exactly halfway between two float32s")
    assert tie.sum() > 100


def test_xgboost_text(engine, xgb_case):
    """XGBoost model, SVMlight text (no float32 ties): values are float32(double); same leaves
    as XGBoost's pred_leaf and within its float32 rounding error (test_xgboost.check_scores)."""
    p = xgb_case["plain"]
    ours = H.score(xgb_case["model"], p["file"], len(p["X64"]), engine, "--format", "svmlight")
    TX.check_scores(ours, p["case"], f"xgboost reg:squarederror, svmlight text, engine {engine}")


def strtof_matrix(X: np.ndarray) -> np.ndarray:
    """float32 matrix of an SVMlight file written from X with each text rounded straight to
    float32 (strtof); only float32-tie cells can differ from X.astype(float32)."""
    Xs = X.astype(F32)
    for i, j in zip(*np.nonzero(is_f32_tie(X))):
        Xs[i, j] = f32_of_text(fmt64(X[i, j], i, j))
    return Xs


def test_xgboost_ties_matter(xgb_case):
    """The tie rows tell float32(double) from strtof(text): the two give XGBoost different
    margins on some of them. No treescore here."""
    p = xgb_case["tie"]
    X = p["X64"]
    Xs = strtof_matrix(X)
    cells = int(np.sum(Xs.view(np.uint32) != X.astype(F32).view(np.uint32)))
    m = np.asarray(xgb_case["booster"].inplace_predict(Xs, predict_type="margin", missing=np.nan), dtype=F64)
    rows = int(np.sum(m != p["case"]["ref"]))
    print(f"\nxgboost tie rows: {X.shape[0]}; strtof(text) != float32(double) in {cells} cells; "
          f"XGBoost's margin differs on {rows} rows")
    assert rows > 20


def test_xgboost_text_float32_ties(engine, xgb_case):
    """Rows with a value exactly halfway between two float32s, written with repr() or '%.16E':
    the value is float32(double) (ties to even), what inplace_predict does with float64 data;
    rounding the decimal text straight to float32 (strtof) can pick the other neighbour."""
    p = xgb_case["tie"]
    ours = H.score(xgb_case["model"], p["file"], len(p["X64"]), engine, "--format", "svmlight")
    try:
        TX.check_scores(ours, p["case"], f"xgboost, float32 ties in svmlight text, engine {engine}")
    except pytest.fail.Exception as e:
        # Diagnose: does treescore round the decimal text itself to float32?
        ms = TX.make_case(xgb_case["model"], xgb_case["booster"], xgb_case["trees"], strtof_matrix(p["X64"]),
                          p["tags"])
        try:
            TX.check_scores(ours, ms, "strtof semantics")
            hint = "treescore matches strtof(text) semantics instead (rounds the decimal text, not the double)"
        except pytest.fail.Exception:
            hint = "treescore matches neither float32(double) nor strtof(text) semantics"
        pytest.fail(f"{e}\n{hint}", pytrace=False)


# ---- tests: the library in process, every batch size ------------------------------------------

@functools.lru_cache(maxsize=None)
def _loadable(path: str) -> bool:
    """Whether this Python can load the library: one built with a sanitizer (the ASan stage
    of make test) aborts the process that loads it without the sanitizer's runtime first,
    so it is tried in a child process once."""
    probe = subprocess.run([sys.executable, "-c", "import ctypes, sys; ctypes.CDLL(sys.argv[1])", path],
                           capture_output=True, timeout=60)
    return probe.returncode == 0


def _libtreescore():
    """libtreescore next to the CLI under test (ctypes), or None (none there, or one this
    Python cannot load: a sanitizer build)."""
    import ctypes

    for name in ("libtreescore.so", "libtreescore.dylib"):
        p = H.treescore_bin().parent / name
        if p.is_file():
            if not _loadable(str(p)):
                return None
            lib = ctypes.CDLL(str(p))
            lib.ts_scorer_score_f64.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_size_t,
                                                ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p]
            lib.ts_scorer_free.argtypes = [ctypes.c_void_p]
            lib.ts_model_free.argtypes = [ctypes.c_void_p]
            return lib
    return None


@pytest.mark.parametrize("isa", ["scalar", "avx2", "avx512"])
@pytest.mark.parametrize("name", list(LGB_VARIANTS))
def test_lightgbm_f64_batches(name, isa, engine, lgb_case):
    """ts_scorer_score_f64 on the float64 matrix == booster.predict(X64, raw_score=True), bit for
    bit, in batches of 1 to 300 rows and whole, at each instruction set level (one the CPU lacks
    is lowered to its best): rapid codes the doubles itself (engines/common/quant.h "Double codes"),
    the other engines round them (src/scorer/f64.c)."""
    import ctypes

    lib = _libtreescore()
    if lib is None:
        pytest.skip("no libtreescore next to the treescore binary that this Python can load (a sanitizer build)")
    c = lgb_case(name, "csv")
    X = np.ascontiguousarray(c["X64"], dtype=F64)
    ref = c["ref"]
    err = ctypes.create_string_buffer(4096)
    model = ctypes.c_void_p()
    assert lib.ts_model_load_file(str(c["model"]).encode(), 0, ctypes.byref(model), err) == 0, err.raw[:200]
    # ts_scorer_options: size_t size, then ts_engine engine, unsigned n_threads, ts_isa max_isa
    opts = ctypes.create_string_buffer(1024)
    lib.ts_scorer_options_init(opts)
    eng, level = ctypes.c_int(), ctypes.c_int()
    assert lib.ts_engine_from_name(engine.encode(), ctypes.byref(eng)) == 0
    assert lib.ts_isa_from_name(isa.encode(), ctypes.byref(level)) == 0
    ctypes.memmove(ctypes.addressof(opts) + 8, ctypes.byref(eng), 4)
    ctypes.memmove(ctypes.addressof(opts) + 16, ctypes.byref(level), 4)
    scorer = ctypes.c_void_p()
    try:
        assert lib.ts_scorer_create(model, opts, ctypes.byref(scorer), err) == 0, err.raw[:200]
        out = np.empty(X.shape[0], dtype=F64)
        n, cols = X.shape
        for batch in (n, 300, 129, 64, 7, 2, 1):
            rows = n if batch >= 7 else min(n, 40 * batch + 3)  # small batches on the first rows
            out[:] = np.nan
            for r0 in range(0, rows, batch):
                k = min(batch, rows - r0)
                st = lib.ts_scorer_score_f64(scorer, X[r0:].ctypes.data, k, cols, cols, out[r0:].ctypes.data, err)
                assert st == 0, err.raw[:200]
            H.assert_exact(out[:rows], ref[:rows], X[:rows], c["tags"][:rows],
                           f"lightgbm {name}, ts_scorer_score_f64 in batches of {batch}, engine {engine}, isa {isa}")
    finally:
        lib.ts_scorer_free(scorer)
        lib.ts_model_free(model)
