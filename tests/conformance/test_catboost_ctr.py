# test_catboost_ctr.py: CatBoost models with CTRs over combinations of features (categorical features with each other, with binarized float and one-hot conditions) score exactly CatBoost's RawFormulaVal in every engine, from the C API (raw rows of category ids through the CLI), the CLI on CSV text and Python on a DataFrame.
"""CatBoost CTRs over feature combinations (issue 24).

CatBoost's defaults (max_ctr_complexity 4 on CPU) give CTRs over combinations in almost
every model with two or more categorical features: projections of several categorical
features, and of categorical features with binarized float conditions (x > border) and
one-hot conditions (the category equals a value). Every model here is trained by the
real CatBoost (PyPI `catboost`) on 2 to 4 categorical features and 2 float features (NaN
in some training rows), saved as .cbm and JSON, and scored on rows with NaN floats and
categories training never saw, in every categorical column:

- through `treescore score --format raw` with each engine (TS_ENGINES), on float32 rows
  whose categorical columns hold the model's category ids (what a C caller passes:
  ts_model_category_id, here through the Python package's DataFrame conversion), and
- through `treescore score` on a CSV file of the categories' text (test_catboost_ctr_cli_csv),
- through the Python package's Model.predict(DataFrame, raw_score=True),

and must equal CatBoost's predict(prediction_type="RawFormulaVal") on the DataFrame,
bit for bit (the bound asked is 1e-12 relative; CatBoost adds leaf values in double in
tree order, as treescore does, so the doubles are equal).
"""

import json

import numpy as np
import pytest

import catmc as C
import tshelpers as H

F32 = np.float32
CITIES = [f"city{i}" for i in range(24)] + ["", "Zürich", "東京", "x" * 40]
SHOPS = [f"s{i}" for i in range(9)]
TAGS = ["red", "green", "blue"]
LEVELS = list(range(15))


def frame(n, seed, n_cats=4, unseen=False):
    """Float columns f0 (NaN in 10% of the rows) and f1; categorical columns city, level
    (integers), shop and tag (the first n_cats of them). With unseen: categories training
    never saw in every categorical column."""
    import pandas as pd
    rng = np.random.default_rng(seed)
    f0 = rng.normal(size=n).astype(F32).astype(np.float64)
    f0[rng.random(n) < 0.1] = np.nan
    cols = {"f0": f0, "city": rng.choice(CITIES, n), "level": rng.choice(LEVELS, n),
            "f1": rng.normal(size=n).astype(F32).astype(np.float64), "shop": rng.choice(SHOPS, n),
            "tag": rng.choice(TAGS, n)}
    cats = ["city", "level", "shop", "tag"][:n_cats]
    df = pd.DataFrame({k: v for k, v in cols.items() if k in ("f0", "f1") or k in cats})
    if unseen:
        df.loc[df.index[::7], "city"] = "Atlantis"
        df.loc[df.index[1::9], "level"] = 99
        if "shop" in cats:
            df.loc[df.index[3::8], "shop"] = "nowhere"
        if "tag" in cats:
            df.loc[df.index[4::10], "tag"] = "mauve"
        df.loc[df.index[5::6], "f0"] = np.nan
    return df, cats


def target(df, loss, seed=5):
    """A target that rewards combinations: city x level, shop x tag, city x f0."""
    rng = np.random.default_rng(seed)
    city = df["city"].map({c: i for i, c in enumerate(CITIES)}).fillna(0).to_numpy()
    level = df["level"].to_numpy() % 5
    z = ((city + level) % 3 == 0) * 1.0 + 0.5 * np.sin(city) * np.nan_to_num(df["f0"].to_numpy(), nan=0.3)
    if "shop" in df:
        shop = df["shop"].map({c: i for i, c in enumerate(SHOPS)}).fillna(0).to_numpy()
        z += 0.7 * ((shop + city) % 4 == 1)
    if "tag" in df:
        z += 0.6 * ((df["tag"] == "red") & (level > 2))
    z += 0.2 * df["f1"].to_numpy() + rng.normal(0, 0.1, len(df))
    if loss == "Logloss":
        return (z > np.median(z)).astype(int)
    if loss == "MultiClass":
        return np.digitize(z, np.quantile(z, [0.33, 0.66]))
    return z


# name -> (loss, categorical columns, extra parameters); every case keeps CatBoost's
# default max_ctr_complexity (4 on CPU; CatBoost lowers it to 1 for short trainings such
# as 60 iterations, hence 200). FeatureFreq and FloatTargetMeanValue are GPU-only.
CASES = {
    "logloss-default": ("Logloss", 3, {}),
    "rmse-default-4cats": ("RMSE", 4, {}),
    "rmse-ctr-types": ("RMSE", 3, dict(simple_ctr=["Borders:TargetBorderCount=2", "Counter"],
                                       combinations_ctr=["Borders:TargetBorderCount=2", "Counter",
                                                         "BinarizedTargetMeanValue:TargetBorderCount=2"])),
    "logloss-buckets": ("Logloss", 4, dict(simple_ctr=["Buckets", "Borders"],
                                           combinations_ctr=["Buckets", "Borders", "Counter"])),
    # a nonzero prior: an unseen key's Counter value is Calc(0, CounterDenominator), not Calc(0, 0)
    "counter-prior": ("RMSE", 3, dict(simple_ctr=["Counter:Prior=1/1", "Borders:Prior=0.5/1"],
                                      combinations_ctr=["Counter:Prior=1/1", "Counter:Prior=0.3/1"])),
    "multiclass": ("MultiClass", 3, dict(simple_ctr=["Borders", "Counter"],
                                         combinations_ctr=["Borders", "Buckets", "Counter"])),
    "onehot-combinations": ("RMSE", 4, dict(one_hot_max_size=4)),
    "depthwise": ("RMSE", 3, dict(grow_policy="Depthwise", depth=5)),
    "lossguide-multiclass": ("MultiClass", 4, dict(grow_policy="Lossguide", max_leaves=12, one_hot_max_size=3)),
    "two-cats-deep": ("Logloss", 2, dict(depth=8)),
    # tables cut to their 10 most frequent keys, the single-feature ones kept whole: the
    # combinations' keys are decoded over the product of the known categories
    "leaf-limit": ("Logloss", 3, dict(ctr_leaf_count_limit=10, store_all_simple_ctr=True)),
    # the single-feature tables cut too: here every key's categories are still in some table
    "leaf-limit-lossy": ("Logloss", 3, dict(ctr_leaf_count_limit=10, store_all_simple_ctr=False)),
}

# CatBoost 1.2 builds no combinations for non-symmetric trees (Depthwise, Lossguide): those
# cases check that default settings there still load and score exactly
NO_COMBINATIONS = {"depthwise", "lossguide-multiclass"}


def model(name):
    """(.cbm, .json, categorical columns) of CASES[name], trained once (cached)."""
    import catboost
    loss, n_cats, extra = CASES[name]
    params = dict(dict(iterations=200, depth=6, loss_function=loss, random_seed=0, thread_count=1, verbose=0,
                       allow_writing_files=False), **extra)
    if params.get("grow_policy") == "Lossguide":
        params.pop("depth")
    df, cats = frame(1500, 3, n_cats)
    y = target(df, loss)
    key = dict(params=params, catboost=catboost.__version__, cities=CITIES, cats=cats, v=1)

    def build(path):
        m = catboost.CatBoost(params)
        m.fit(catboost.Pool(df, y, cat_features=cats))
        m.save_model(str(path))

    cbm = H.cached_file(f"cb-ctr-{name}", ".cbm", build, **key)

    def build_json(path):
        m = catboost.CatBoost()
        m.load_model(str(cbm))
        m.save_model(str(path), format="json")

    return cbm, H.cached_file(f"cb-ctr-{name}", ".json", build_json, cbm=cbm.name, **key), cats


def reference(cbm, df):
    import catboost
    m = catboost.CatBoost()
    m.load_model(str(cbm))
    return np.asarray(m.predict(df, prediction_type="RawFormulaVal", thread_count=1)).reshape(len(df), -1)


def combinations(js):
    """The CTRs' projections of more than one element, as sets of element kinds."""
    ctrs = json.loads(js.read_text())["features_info"].get("ctrs", [])
    return [sorted({e["combination_element"] for e in c["elements"]}) for c in ctrs if len(c["elements"]) > 1]


@pytest.mark.parametrize("name", sorted(CASES))
def test_catboost_ctr_combinations(engine, workdir, name):
    """Every engine, both formats, on raw float32 rows of category ids (NaN floats, unseen
    categories), equal to CatBoost's RawFormulaVal on the DataFrame."""
    import treescore
    cbm, js, cats = model(name)
    assert bool(combinations(js)) == (name not in NO_COMBINATIONS), name
    df, _ = frame(500, 4, len(cats), unseen=True)
    ref = reference(cbm, df)
    k = ref.shape[1]
    X = treescore.Model(str(cbm), engine="naive")._as_matrix(df)  # ids, as a C caller passes them
    assert np.isnan(X).any()
    raw = workdir / f"{cbm.stem}.f32"
    C.write_raw(raw, X)
    for path in (cbm, js):
        ours = C.score_k(path, raw, len(X), k, engine, "--format", "raw")
        for j in range(k):
            H.assert_close(ours[:, j], ref[:, j], 1e-12, X, None, f"{path.name} output {j} of {k}, engine {engine}")
            H.assert_exact(ours[:, j], ref[:, j], X, None, f"{path.name} output {j} of {k}, engine {engine}")


@pytest.mark.parametrize("name", sorted(CASES))
def test_catboost_ctr_python(name):
    """Model.predict on the DataFrame (pandas object and integer columns named by the model
    as categorical) equals CatBoost's, both formats, several batch sizes."""
    import treescore
    cbm, js, cats = model(name)
    df, _ = frame(300, 6, len(cats), unseen=True)
    ref = reference(cbm, df)
    for path in (cbm, js):
        m = treescore.Model(str(path))
        y = np.asarray(m.predict(df, raw_score=True)).reshape(ref.shape)
        H.assert_exact(y.ravel(), ref.ravel(), None, None, f"{path.name} (Python, DataFrame)")
        for lo, hi in ((0, 1), (1, 4), (4, 21)):
            y = np.asarray(m.predict(df.iloc[lo:hi], raw_score=True)).reshape(hi - lo, -1)
            H.assert_exact(y.ravel(), ref[lo:hi].ravel(), None, None, f"{path.name} rows {lo}:{hi}")


def test_catboost_ctr_shapes():
    """The cases hold what they claim: combinations of categorical features with each
    other, with float conditions and with one-hot conditions; the CTR types asked for."""
    kinds, types = set(), {}
    for name in CASES:
        _, js, _ = model(name)
        for c in combinations(js):
            kinds.add(tuple(c))
        ctrs = json.loads(js.read_text())["features_info"]["ctrs"]
        types[name] = {c["ctr_type"] for c in ctrs if len(c["elements"]) > 1}
    assert ("cat_feature_value",) in kinds
    assert any("float_feature" in k for k in kinds)
    assert any("cat_feature_exact_value" in k for k in kinds)
    assert {"Borders", "Counter"} <= types["rmse-ctr-types"]
    assert {"Buckets"} <= types["logloss-buckets"] | types["multiclass"]


def test_catboost_ctr_unrecoverable_refused(workdir):
    """ctr_leaf_count_limit without store_all_simple_ctr drops rare categories from every
    table but may keep some of them in combinations' keys: such a key names a category no
    input id can stand for, and the model is refused by name, in both formats (these
    rows, 60 x 6 x 55 categories, give such keys)."""
    import catboost
    import pandas as pd
    rng = np.random.default_rng(1)
    n = 3000
    df = pd.DataFrame({"a": rng.integers(0, 60, n).astype(str), "b": rng.integers(0, 6, n).astype(str),
                       "x": rng.normal(size=n), "c": rng.integers(0, 55, n).astype(str)})
    y = ((df.a.astype(int) % 3 == 0) ^ (df.c.astype(int) % 2 == 0) ^ (df.x > 0)).astype(int)
    m = catboost.CatBoost(dict(iterations=200, depth=6, loss_function="Logloss", random_seed=0, thread_count=1,
                               verbose=0, allow_writing_files=False, ctr_leaf_count_limit=10,
                               store_all_simple_ctr=False))
    m.fit(catboost.Pool(df, y, cat_features=["a", "b", "c"]))
    path = workdir / "cb-ctr-leaf-limit-lossy.cbm"
    m.save_model(str(path))
    m.save_model(str(path.with_suffix(".json")), format="json")
    for p in (path, path.with_suffix(".json")):
        r = H.run_cli(["info", "-m", p])
        assert r.returncode == 1, r
        assert "CTR over a combination" in r.stderr and "ctr_leaf_count_limit" in r.stderr, r.stderr


def csv_field(v):
    """A CSV field: floats with 17 digits ("nan" for NaN), anything else as its text,
    quoted when it holds a comma, a quote or spaces at an end."""
    if isinstance(v, (float, np.floating)):
        return "nan" if v != v else repr(float(v))
    s = str(v)
    return '"' + s.replace('"', '""') + '"' if ("," in s or '"' in s or s != s.strip()) else s


@pytest.mark.parametrize("name", sorted(CASES))
def test_catboost_ctr_cli_csv(engine, workdir, name):
    """`treescore score` on a CSV file whose categorical columns hold the categories' text
    (a header line of the model's feature names), every engine, both formats."""
    cbm, js, cats = model(name)
    df, _ = frame(300, 7, len(cats), unseen=True)
    ref = reference(cbm, df)
    k = ref.shape[1]
    data = workdir / f"cb-ctr-{name}.csv"
    lines = [",".join(df.columns)] + [",".join(csv_field(v) for v in row) for row in df.itertuples(index=False)]
    data.write_text("\n".join(lines) + "\n", encoding="utf-8")
    X = df.assign(**{c: np.nan for c in cats}).to_numpy(dtype=np.float64)  # floats, for the report
    for path in (cbm, js):
        p = H.run_cli(["score", "-m", path, "-d", data, "--engine", engine])
        assert p.returncode == 0, p.stderr
        ours = np.array([[float(v) for v in line.split("\t")] for line in p.stdout.splitlines()])
        assert ours.shape == ref.shape, (ours.shape, p.stderr)
        for j in range(k):
            H.assert_exact(ours[:, j], ref[:, j], X, None, f"{path.name} on {data.name} output {j}, engine {engine}")
