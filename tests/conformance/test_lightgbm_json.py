# test_lightgbm_json.py: LightGBM dump_model() JSON models must score exactly as LightGBM (and as the text model).
"""LightGBM JSON conformance (the format of Booster.dump_model(), which Vespa imports).

Models: the text models of tsmodels.LGB_VARIANTS (NaN, Zero and None missing types, a
regression objective), each dumped with booster.dump_model() and written with Python's
json module (once compact, once with sorted keys and indentation, so "name" is not the
first key). Plus small categorical, multiclass, random-forest and one-leaf models.

Reference: booster.predict(X32, raw_score=True) of the booster that wrote the dump, as in
test_lightgbm.py: bit for bit. test_numbers_round_trip checks the premise: every
threshold and leaf value in the JSON is the very double of the text model (LightGBM prints
17 significant digits, Python's json the shortest round-trip repr).
"""

import hashlib
import json
import re

import numpy as np
import pytest

import tshelpers as H
import tsmodels as M

VARIANTS = ["rank63", "rank63_zero_as_missing", "rank63_trained_without_nan", "regression63"]


def dump_json(text_model, name, **dump_kw):
    """The dump_model() JSON of a text model, cached beside it."""
    import lightgbm as lgb

    def build(p):
        d = lgb.Booster(model_file=str(text_model)).dump_model()
        p.write_text(json.dumps(d, **dump_kw))

    return H.cached_file(f"lgbjson-{name}", ".json", build, src=text_model.name, kw=dump_kw)


def run(*args):
    return H.run_cli([str(a) for a in args])


def score_multi(model, data, n_rows, engine, *extra):
    """Scores of a `treescore score` run as a rows x K array (K tab-separated values per row)."""
    p = run("score", "-m", model, "-d", data, "--engine", engine, *extra)
    assert p.returncode == 0, p.stderr
    rows = [line.split() for line in p.stdout.splitlines() if line.strip()]
    assert len(rows) == n_rows, f"{len(rows)} score lines for {n_rows} rows"
    return np.array([[float(v) for v in r] for r in rows], dtype=np.float64)


def json_nodes(tree):
    """(internal nodes, leaves) of one tree_structure, as dicts keyed by split/leaf index."""
    splits, leaves, stack = {}, {}, [tree]
    while stack:
        n = stack.pop()
        if "split_index" in n:
            splits[n["split_index"]] = n
            stack += [n["left_child"], n["right_child"]]
        else:
            leaves[n.get("leaf_index", 0)] = n
    return splits, leaves


def text_arrays(path):
    """Per tree: (thresholds, leaf values) as the doubles of the text model's tokens."""
    out = []
    for block in re.split(r"\nTree=\d+\n", path.read_text())[1:]:
        kv = dict(line.split("=", 1) for line in block.split("\n\n")[0].split("\n") if "=" in line)
        thr = [float(v) for v in kv.get("threshold", "").split()]
        out.append((thr, [float(v) for v in kv["leaf_value"].split()]))
    return out


@pytest.fixture(scope="session")
def lj_case(workdir):
    """name -> dict(json, sorted, text, X, tags, ref, raw), built once."""
    cases = {}

    def get(name):
        if name not in cases:
            path, booster, trees = M.lightgbm_model(name)
            Xb = M.score_base()
            Xt, tt = H.threshold_rows(trees, Xb, seed=7, max_nodes=800)
            X = np.vstack([Xb, Xt]).astype(np.float32)
            raw = workdir / f"lj-{name}.f32"
            H.letor_gen.write_raw(raw, X)
            cases[name] = dict(json=dump_json(path, name), sorted=dump_json(path, name, sort_keys=True, indent=1),
                               text=path, booster=booster, X=X, raw=raw, ref=M.lightgbm_predict(booster, X),
                               tags=[f"scoring row {i}" for i in range(len(Xb))] + tt)
        return cases[name]

    return get


@pytest.mark.parametrize("name", VARIANTS)
def test_numbers_round_trip(name, lj_case):
    """Every threshold and leaf value of the dump is the text model's double, bit for bit."""
    c = lj_case(name)
    dump = json.loads(c["json"].read_text())
    text = text_arrays(c["text"])
    assert len(dump["tree_info"]) == len(text)
    for ti, (t, (thr, leaf)) in enumerate(zip(dump["tree_info"], text)):
        splits, leaves = json_nodes(t["tree_structure"])
        # LightGBM's dump writes infinite thresholds as +-1e300 (Common::AvoidInf); the loader
        # reads them back as +-inf.
        unclamp = {1e300: np.inf, -1e300: -np.inf}
        assert [unclamp.get(splits[i]["threshold"], splits[i]["threshold"]) for i in range(len(splits))] == thr, \
            f"tree {ti} thresholds"
        assert [leaves[j]["leaf_value"] for j in range(len(leaves))] == leaf, f"tree {ti} leaf values"


@pytest.mark.parametrize("name", VARIANTS)
def test_raw_bit_exact(name, engine, lj_case):
    c = lj_case(name)
    ours = H.score(c["json"], c["raw"], len(c["X"]), engine, "--format", "raw")
    H.assert_exact(ours, c["ref"], c["X"], c["tags"], f"lightgbm-json {name}, engine {engine}")


def test_sorted_keys_and_flag(engine, lj_case):
    """Detection does not depend on key order ("name" last, "tree_info" late); the
    --model-format lightgbm-json flag; info names the format."""
    c = lj_case("rank63")
    ours = H.score(c["sorted"], c["raw"], len(c["X"]), engine, "--format", "raw")
    H.assert_exact(ours, c["ref"], c["X"], c["tags"], f"sorted keys, engine {engine}")
    ours = H.score(c["json"], c["raw"], len(c["X"]), engine, "--format", "raw", "--model-format", "lightgbm-json")
    H.assert_exact(ours, c["ref"], c["X"], c["tags"], f"--model-format lightgbm-json, engine {engine}")


def test_info_format(lj_case):
    c = lj_case("rank63")
    for model in (c["json"], c["sorted"]):
        p = run("info", "-m", model)
        assert p.returncode == 0, p.stderr
        assert re.search(r"format:\s+lightgbm-json", p.stdout), p.stdout
    p = run("info", "-m", c["json"], "--model-format", "xgboost")
    assert p.returncode == 1 and str(c["json"]) in p.stderr, p


def test_text_input_compares_double(engine, lj_case, workdir):
    """CSV values are doubles, compared in double as LightGBM does (as for the text model)."""
    c = lj_case("regression63")
    X = c["X"][:600]
    csv = workdir / "lj-regression63.csv"
    if not csv.exists():
        H.write_csv(csv, X)
    X64 = np.array([[float(H.fmt_f32(v)) for v in row] for row in X], dtype=np.float64)
    ref = np.asarray(c["booster"].predict(X64, raw_score=True, num_threads=2), dtype=np.float64)
    ours = H.score(c["json"], csv, len(X), engine)
    H.assert_exact(ours, ref, X, c["tags"][:600], f"CSV into lightgbm-json, engine {engine}")


@pytest.mark.parametrize("name", ["lgb_small_lambdarank.txt", "lgb_small_zero_missing.txt"])
def test_real_model_files(name, engine, workdir):
    """The repository's small real LightGBM text models, dumped by LightGBM: the JSON scores
    as LightGBM does. (rankeval's v2 model is not here: LightGBM 4 cannot load it.)"""
    path = H.DATA_DIR / "models" / name
    import lightgbm as lgb
    booster = lgb.Booster(model_file=str(path))
    trees = H.parse_lightgbm_text(path)
    n_cols = booster.num_feature()
    rng = np.random.default_rng(17)
    Xb = (rng.normal(size=(800, n_cols)) * 5).astype(np.float32)
    Xb[rng.random(Xb.shape) < 0.1] = np.nan
    Xb[rng.random(Xb.shape) < 0.1] = 0.0
    Xt, tags = H.threshold_rows(trees, Xb, seed=18, max_nodes=400)
    X = np.vstack([Xb, Xt]).astype(np.float32)
    raw = workdir / f"lj-real-{name}.f32"
    H.letor_gen.write_raw(raw, X)
    ref = M.lightgbm_predict(booster, X)
    js = dump_json(path, f"real-{name}")
    ours = H.score(js, raw, len(X), engine, "--format", "raw")
    H.assert_exact(ours, ref, X, [f"row {i}" for i in range(len(Xb))] + tags, f"{name} as JSON, engine {engine}")


# ---- small special models ---------------------------------------------------------------------

def small_data(seed=3, n=2000, f=6):
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n, f)).astype(np.float32)
    X[rng.random(X.shape) < 0.1] = np.nan
    return X, rng


def train_small(name, params, rounds, X, y, cat=()):
    import lightgbm as lgb

    def build(p):
        ds = lgb.Dataset(X, y, categorical_feature=list(cat) if cat else "auto", params={"verbose": -1})
        lgb.train(dict(dict(verbose=-1, num_threads=2, seed=1, deterministic=True), **params), ds,
                  num_boost_round=rounds).save_model(str(p))

    path = H.cached_file(f"lgbjson-small-{name}", ".txt", build, params=params, rounds=rounds,
                         x=hashlib.sha256(X.tobytes()).hexdigest(), cat=list(cat))
    return path, lgb.Booster(model_file=str(path))


def text_model_refused(path):
    """The text loader's message when it refuses this model as not supported yet, else None."""
    p = run("info", "-m", path)
    return p.stderr.strip() if p.returncode != 0 and "not supported" in p.stderr else None


def check_small(path, booster, X, name, engine, workdir, k=1):
    refused = text_model_refused(path)
    if refused:
        pytest.xfail(f"the LightGBM text loader refuses this model yet: {refused}")
    js = dump_json(path, f"small-{name}")
    raw = workdir / f"lj-small-{name}.f32"
    H.letor_gen.write_raw(raw, X)
    ref = np.asarray(booster.predict(X, raw_score=True, num_threads=2), dtype=np.float64).reshape(len(X), k)
    ours = score_multi(js, raw, len(X), engine, "--format", "raw")
    H.assert_exact(ours.ravel(), ref.ravel(), None, None, f"lightgbm-json {name}, engine {engine}")
    text = score_multi(path, raw, len(X), engine, "--format", "raw")
    H.assert_exact(ours.ravel(), text.ravel(), None, None, f"json vs text model {name}, engine {engine}")


def test_one_leaf_and_random_forest(engine, workdir):
    """A one-leaf tree (its tree_structure has no leaf_index) and average_output (rf)."""
    X, rng = small_data(4)
    y = np.nan_to_num(X[:, 0]) + 0.1 * rng.normal(size=len(X))
    path, b = train_small("rf", dict(boosting="rf", bagging_fraction=0.5, bagging_freq=1, num_leaves=15,
                                     objective="regression"), 8, X, y)
    check_small(path, b, X, "rf", engine, workdir)
    path, b = train_small("one-leaf", dict(objective="regression", min_data_in_leaf=5000), 2, X, y)
    assert "leaf_index" not in json.dumps(b.dump_model()["tree_info"][0]["tree_structure"])
    check_small(path, b, X, "one-leaf", engine, workdir)


def categorical_rows(X, rng, col):
    """Scoring rows with categories in range, out of range, negative, fractional and NaN."""
    Xs = X[:400].copy()
    specials = np.array([0, 1, 5, 39, 40, 63, 64, 1000, 1e9, -1, -0.5, 0.5, 2.75, np.nan, np.inf, -np.inf],
                        dtype=np.float32)
    Xs[: len(specials) * 4, col] = np.repeat(specials, 4)
    return Xs


def test_categorical(engine, workdir):
    X, rng = small_data(5)
    X[:, 2] = rng.integers(0, 40, size=len(X)).astype(np.float32)
    X[:, 4] = rng.integers(0, 70, size=len(X)).astype(np.float32)
    y = np.nan_to_num(X[:, 0]) + (X[:, 2] % 3 == 0) * 2 + (X[:, 4] % 5 == 1)
    path, b = train_small("cat", dict(objective="regression", num_leaves=15, min_data_per_group=5, cat_smooth=1,
                                      max_cat_to_onehot=4), 15, X, y, cat=(2, 4))
    assert "==" in json.dumps(b.dump_model()), "no categorical split in the model"
    Xs = categorical_rows(X, rng, 2)
    Xs[100:160, 4] = Xs[:60, 2]
    check_small(path, b, Xs, "cat", engine, workdir)


def test_multiclass(engine, workdir):
    X, rng = small_data(6)
    y = (np.nan_to_num(X[:, 0]) > 0).astype(int) + (np.nan_to_num(X[:, 1]) > 0.5)
    path, b = train_small("multiclass", dict(objective="multiclass", num_class=3, num_leaves=7), 6, X, y)
    check_small(path, b, X[:500], "multiclass", engine, workdir, k=3)


# ---- bad input --------------------------------------------------------------------------------

def fails(model, *mentions, status=1):
    p = run("info", "-m", model)
    assert p.returncode == status, (p.returncode, p.stderr)
    for m in (str(model),) + mentions:
        assert m in p.stderr, f"{m!r} not in {p.stderr!r}"
    return p.stderr


def test_truncated(lj_case, tmp_path):
    data = lj_case("rank63")["json"].read_bytes()
    for off in sorted({1, 100, len(data) // 3, len(data) // 2, len(data) - 2, len(data) - 1}):
        path = tmp_path / f"cut{off}.json"
        path.write_bytes(data[:off])
        fails(path)


def test_bad_structures(tmp_path):
    def leaf(j, v=0.5):
        return {"leaf_index": j, "leaf_value": v}

    def split(i, left, right, thr=0.5, **kw):
        return dict({"split_index": i, "split_feature": 0, "threshold": thr, "decision_type": "<=",
                     "default_left": True, "missing_type": "None", "left_child": left, "right_child": right}, **kw)

    def model(tree, **kw):
        return dict({"name": "tree", "version": "v4", "num_class": 1, "max_feature_idx": 3,
                     "tree_info": [{"tree_index": 0, "num_leaves": 2, "tree_structure": tree}]}, **kw)

    cases = {
        "dup_leaf": (model(split(0, leaf(0), leaf(0))), ["leaf_index 0 appears twice"]),
        "bad_root": (model(split(1, leaf(0), leaf(1))), ["split_index 0 is missing"]),
        "no_value": (model(split(0, leaf(0), {"leaf_index": 1})), ["neither"]),
        "bad_missing": (model(split(0, leaf(0), leaf(1), missing_type="Sometimes")), ["missing_type"]),
        "bad_category": (model(split(0, leaf(0), leaf(1), thr="1||x", decision_type="==")), ["bad category 'x'"]),
        "linear": (model(split(0, dict(leaf(0), leaf_const=0.5, leaf_coeff=[1.0], leaf_features=[1]), leaf(1))),
                   ["linear trees"]),
        "no_tree_info": ({"name": "tree", "num_class": 1, "max_feature_idx": 3}, ["tree_info"]),
    }
    cases["num_leaves"] = (model(split(0, leaf(0), leaf(1))), ["num_leaves is 3"])
    cases["num_leaves"][0]["tree_info"][0]["num_leaves"] = 3
    for name, (obj, mentions) in cases.items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(obj))
        fails(path, *mentions)
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps(model(split(0, leaf(0, -1.0), leaf(1, 2.0)))))
    p = run("info", "-m", ok)
    assert p.returncode == 0 and "lightgbm-json" in p.stdout, p.stderr
