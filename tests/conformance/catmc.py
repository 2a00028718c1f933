# catmc.py: shared helpers of test_categorical.py and test_multiclass.py (small models, rows that probe category rules).
"""Small LightGBM / XGBoost models with categorical features or several outputs, cached
like tsmodels.py's, the rows that probe each library's category rules, and the two checks:

- LightGBM: treescore's K scores per row equal predict(raw_score=True) bit for bit, on
  float32 rows (raw files: LightGBM widens them to double) and on double rows (CSV text
  with 17 digits: LightGBM compares the doubles).
- XGBoost: (1) the same leaves: each output's score is base_k + the leaf values XGBoost's
  own pred_leaf names for the trees of output k (tree_info), added in double, within
  1e-12 relative; (2) within XGBoost's float32 rounding of its margin: every float32
  addition rounds by at most u = 2^-24 relative, and every partial sum is at most
  |base| + sum |leaf|, so |xgboost - exact| <= u (T + 4)(|base| + sum |leaf|) per output.
"""

import json

import numpy as np

import tshelpers as H

N_FEATURES = 8
CAT_COLS = (2, 5)            # categorical columns: ids 0..39 and 0..5
N_TRAIN = 3000

# Values that probe the rules: NaN, negatives (-0.5 truncates to 0 in LightGBM, is invalid
# in XGBoost), non-integers, ids past every bitset, the 2^24 and 2^31 edges, infinities.
SPECIAL = [np.nan, -0.0, 0.0, 1e-40, -1e-40, -0.5, -0.99, -1.0, -1.5, -3.0, 0.5, 2.5, 3.999, 31.0, 32.0, 33.5,
           39.9, 40.0, 63.0, 64.0, 100.0, 1000.0, 16777215.0, 16777216.0, 16777218.0, 2147483520.0, 2147483648.0,
           1e10, -1e10, np.inf, -np.inf]


def train_rows(seed=11, nan_frac=0.05):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N_TRAIN, N_FEATURES))
    X[:, CAT_COLS[0]] = rng.integers(0, 40, N_TRAIN)
    X[:, CAT_COLS[1]] = rng.integers(0, 6, N_TRAIN)
    X[rng.random(X.shape) < nan_frac] = np.nan
    c0 = np.nan_to_num(X[:, CAT_COLS[0]], nan=7)
    c1 = np.nan_to_num(X[:, CAT_COLS[1]], nan=1)
    y = np.nan_to_num(X[:, 0]) + ((c0 % 3) == 0) * 1.5 - (c0 > 30) + 0.7 * (c1 == 2) + rng.normal(0, 0.1, N_TRAIN)
    return X, y


def class_labels(y, k):
    """k classes from a continuous target (quantile bins)."""
    edges = np.quantile(y, np.linspace(0, 1, k + 1)[1:-1])
    return np.searchsorted(edges, y).astype(np.float64)


def score_rows(seed=12, n=1500):
    """Random rows, then rows whose categorical columns take every SPECIAL value and every
    id from 0 to 70 (on and off the learned sets)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, N_FEATURES))
    X[:, CAT_COLS[0]] = rng.integers(0, 45, n)
    X[:, CAT_COLS[1]] = rng.integers(0, 8, n)
    X[rng.random(X.shape) < 0.03] = np.nan
    probes = np.array(SPECIAL + [float(i) for i in range(71)])
    k = len(probes)
    X[:k, CAT_COLS[0]] = probes
    X[k:2 * k, CAT_COLS[1]] = probes
    X[2 * k:3 * k, CAT_COLS[0]] = probes
    X[2 * k:3 * k, CAT_COLS[1]] = probes[::-1]
    return X


def write_raw(path, X):
    H.letor_gen.write_raw(path, np.asarray(X, dtype=np.float32))


def write_csv17(path, X):
    """Doubles, 17 significant digits (treescore reads text as doubles for LightGBM)."""
    with open(path, "w") as f:
        for row in X:
            f.write(",".join("nan" if v != v else repr(float(v)) for v in row) + "\n")


def parse_k(text, n_rows, k, what):
    lines = text.splitlines()
    assert len(lines) == n_rows, f"{what}: {len(lines)} lines for {n_rows} rows"
    out = np.array([[float(v) for v in line.split("\t")] for line in lines])
    assert out.shape == (n_rows, k), f"{what}: shape {out.shape}, expected {(n_rows, k)}"
    return out


def score_k(model, data, n_rows, k, engine, *extra):
    args = ["score", "-m", model, "-d", data, "--engine", engine, *extra]
    p = H.run_cli(args)
    what = "treescore " + " ".join(str(a) for a in args)
    assert p.returncode == 0, f"{what}\nexited with status {p.returncode}\nstderr:\n{p.stderr.strip()}"
    return parse_k(p.stdout, n_rows, k, what)


# ---- models --------------------------------------------------------------------------------

def lgb_model(name, params, rounds, X, y, categorical=()):
    import lightgbm as lgb
    params = dict(dict(learning_rate=0.2, deterministic=True, force_row_wise=True, num_threads=2, seed=1,
                       verbose=-1), **params)

    def build(path):
        ds = lgb.Dataset(X, label=y, categorical_feature=list(categorical) or "auto", params={"verbose": -1})
        lgb.train(params, ds, num_boost_round=rounds).save_model(str(path))

    path = H.cached_file(f"catmc-lgb-{name}", ".txt", build, params=params, rounds=rounds, cats=list(categorical),
                         data=f"{np.nansum(X):.17g} {np.sum(y):.17g}")
    return path, lgb.Booster(model_file=str(path))


def xgb_model(name, params, rounds, X, y, categorical=()):
    import xgboost as xgb
    params = dict(dict(eta=0.2, nthread=2, seed=1, verbosity=0, tree_method="hist"), **params)

    def build(path):
        types = ["c" if j in categorical else "q" for j in range(X.shape[1])]
        dm = xgb.DMatrix(np.asarray(X, dtype=np.float32), label=y, missing=np.nan, feature_types=types,
                         enable_categorical=bool(categorical))
        xgb.train(params, dm, num_boost_round=rounds).save_model(str(path))

    path = H.cached_file(f"catmc-xgb-{name}", ".json", build, params=params, rounds=rounds, cats=list(categorical),
                         data=str(np.nansum(X)) + str(np.sum(y)))
    b = xgb.Booster(model_file=str(path))
    b.set_param({"nthread": 2})
    return path, b


# ---- checks --------------------------------------------------------------------------------

def check_lightgbm(path, booster, X, engine, workdir, k):
    """Bit-exact on float32 rows (raw) and on double rows (CSV)."""
    tag = f"{path.stem}-{engine}"
    X32 = np.asarray(X, dtype=np.float32)
    raw = workdir / f"{tag}.f32"
    write_raw(raw, X32)
    csv = workdir / f"{tag}.csv"
    write_csv17(csv, X)
    for data, rows, fmt in ((raw, X32.astype(np.float64), "raw"), (csv, X, "csv")):
        ref = np.asarray(booster.predict(rows, raw_score=True), dtype=np.float64).reshape(len(X), k)
        ours = score_k(path, data, len(X), k, engine, "--format", fmt, *(["--no-header"] if fmt == "csv" else []))
        for j in range(k):
            H.assert_exact(ours[:, j], ref[:, j], rows, None, f"{path.name} output {j}, {fmt} rows, engine {engine}")


def xgb_trees(path):
    """Per tree: its output (tree_info) and {leaf node id: leaf value}; the base margins."""
    j = json.loads(path.read_text())
    model = j["learner"]["gradient_booster"]["model"]
    info = model["tree_info"]
    leaves = []
    for t in model["trees"]:
        lc = t["left_children"]
        leaves.append({i: float(np.float32(t["split_conditions"][i])) for i in range(len(lc)) if lc[i] == -1})
    return info, leaves


def check_xgboost(path, booster, X, engine, workdir, k, base, model_file=None):
    """Same leaves as pred_leaf (1e-12) and within XGBoost's float32 error of its margin;
    treescore reads model_file (the same model in another format) when given."""
    import xgboost as xgb
    # XGBoost's DMatrix (pred_leaf) refuses infinities: the largest floats stand for them.
    X = np.where(np.isinf(X), np.sign(X) * 3.4e38, X)
    X32 = np.asarray(X, dtype=np.float32)
    raw = workdir / f"{path.stem}-{engine}.f32"
    write_raw(raw, X32)
    ours = score_k(model_file or path, raw, len(X), k, engine, "--format", "raw")
    ref = np.asarray(booster.inplace_predict(X32, predict_type="margin", missing=np.nan),
                     dtype=np.float64).reshape(len(X), k)
    pred_leaf = np.asarray(booster.predict(xgb.DMatrix(X32, missing=np.nan), pred_leaf=True),
                           dtype=np.int64).reshape(len(X), -1)
    info, leaves = xgb_trees(path)
    assert pred_leaf.shape[1] == len(leaves)
    S = np.zeros((len(X), k))
    A = np.zeros((len(X), k))
    T = np.zeros(k)
    for t, (out, lv) in enumerate(zip(info, leaves)):
        v = np.array([lv[int(n)] for n in pred_leaf[:, t]])
        S[:, out] += v
        A[:, out] += np.abs(v)
        T[out] += 1
    base = np.broadcast_to(np.asarray(base, dtype=np.float64), (k,))
    for j in range(k):
        what = f"{path.name} output {j}, engine {engine}"
        H.assert_within(ours[:, j], base[j] + S[:, j], 1e-12 * np.maximum(1.0, np.abs(ref[:, j])), X, None,
                        what + ": leaves (vs pred_leaf)")
        bound = 2.0 ** -24 * (T[j] + 4) * (abs(base[j]) + A[:, j]) * 1.01 + 1e-15 * np.maximum(1, np.abs(ref[:, j]))
        H.assert_within(ours[:, j], ref[:, j], bound, X, None, what + ": margin")


def lightgbm_json(path, booster, workdir):
    """The model as LightGBM's dump_model() JSON (the format Vespa imports)."""
    out = workdir / f"{path.stem}.lgb.json"
    if not out.exists():
        out.write_text(json.dumps(booster.dump_model()))
    return out


def xgboost_ubj(path, booster, workdir):
    """The model as XGBoost's binary UBJSON."""
    out = workdir / f"{path.stem}.ubj"
    if not out.exists():
        booster.save_model(str(out))
    return out


def xgb_base(path, k):
    """learner_model_param.base_score as k margins (identity objectives only)."""
    s = json.loads(path.read_text())["learner"]["learner_model_param"]["base_score"].strip("[]")
    vals = [float(np.float32(v)) for v in s.split(",")]
    return np.broadcast_to(np.array(vals), (k,))
