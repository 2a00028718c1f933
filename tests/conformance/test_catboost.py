# test_catboost.py: CatBoost float-feature models (.cbm and JSON) score exactly CatBoost's predict(prediction_type="RawFormulaVal") in every engine.
"""CatBoost models, float features (issue 24, first part).

Every model is trained by the real CatBoost (PyPI `catboost`, pinned in
tests/requirements.txt), saved both as .cbm (save_model's default) and as JSON
(save_model(format="json")), and scored by `treescore score` with each engine; the
scores must equal CatBoost's own predict(prediction_type="RawFormulaVal") bit for bit
(== on the doubles), K columns for multi-dimensional models:

- regression (RMSE: its bias, boost_from_average, is a last one-leaf tree), binary
  Logloss, ranking (YetiRank with group ids), MultiClass (3 outputs) and MultiRMSE;
- SymmetricTree of every depth 1 to 8, Depthwise and Lossguide (non-symmetric trees,
  MultiClass included);
- NaN in the training rows of some features (HasNans) and not others, nan_mode Min
  (NaN compares below every border) and Max (above), and Forbidden, where CatBoost's
  predict does not refuse a NaN input: it compares below every border, like Min;
- scoring rows with NaN, +-inf, -0.0, and every border of the model (read from the JSON),
  the float just below and just above it, in each feature, the other columns random.

Categorical features (test_catboost_categorical): one-hot and CTR splits of single
categorical features (Borders, Buckets, Counter, BinarizedTargetMeanValue; RMSE, Logloss,
MultiClass; oblivious, Depthwise, Lossguide), string, UTF-8 and integer categories of every
CityHash length class, unseen categories; rows carry category ids computed here
independently of the loader (CatBoost's own hashes, from its Python export, ranked among
the hashes the JSON model holds).
Both formats (.cbm: the CTR tables of its static CTR provider part).
CTRs over combinations of features: test_catboost_ctr.py.
Refused with a clear message: text features, a scale other than 1.
Truncated .cbm files are refused without a crash.
"""

import json

import numpy as np
import pytest

import catmc as C
import tshelpers as H

N_FEATURES = 6
N_TRAIN = 600
F32 = np.float32


def train_rows(seed=31, nan_cols=(1, 2, 4)):
    """Float32 values (CatBoost reads float32); NaN in 12% of the cells of nan_cols only,
    so column 0, 3 and 5 have no NaN in training (HasNans false there)."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(N_TRAIN, N_FEATURES)).astype(F32).astype(np.float64)
    for j in nan_cols:
        X[rng.random(N_TRAIN) < 0.12, j] = np.nan
    z = np.nan_to_num(X, nan=0.3)
    y = z[:, 0] + 0.8 * z[:, 1] ** 2 - 0.5 * z[:, 2] * z[:, 3] + 0.3 * np.isnan(X[:, 4]) + rng.normal(0, 0.1, N_TRAIN)
    return X, y


def model_borders(json_path):
    """{flat column: borders} of the model's float features."""
    j = json.loads(json_path.read_text())
    return {f["flat_feature_index"]: [F32(b) for b in f["borders"]] for f in j["features_info"].get("float_features", [])}


def score_rows(json_path, seed=32, n_random=300, max_borders=40):
    """Random rows (NaN in 15% of the cells, and in every column), special values, then
    for every column (at most max_borders of its borders) rows with the border, the
    floats just below and just above it in that column."""
    rng = np.random.default_rng(seed)
    X = rng.normal(size=(n_random, N_FEATURES)).astype(F32)
    X[rng.random(X.shape) < 0.15] = np.nan
    special = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, np.finfo(F32).max, -np.finfo(F32).max]
    rows = [X]
    for j in range(N_FEATURES):
        S = rng.normal(size=(len(special), N_FEATURES)).astype(F32)
        S[:, j] = special
        rows.append(S)
    for j, borders in sorted(model_borders(json_path).items()):
        if len(borders) > max_borders:
            borders = [borders[i] for i in sorted(rng.choice(len(borders), max_borders, replace=False))]
        for b in borders:
            with np.errstate(over="ignore"):  # the neighbours of the largest float are +-inf
                vals = [np.nextafter(b, F32(-np.inf)), b, np.nextafter(b, F32(np.inf))]
            R = rng.normal(size=(len(vals), N_FEATURES)).astype(F32)
            R[:, j] = vals
            rows.append(R)
    return np.vstack(rows).astype(F32)


def cb_model(name, params, X, y, group_id=None):
    """(.cbm path, .json path) of a CatBoost model trained once per parameter set (cached)."""
    import catboost
    params = dict(dict(iterations=12, learning_rate=0.3, random_seed=1, thread_count=1, verbose=0,
                       allow_writing_files=False), **params)
    key = dict(params=params, catboost=catboost.__version__, data=f"{np.nansum(X):.17g} {np.sum(y):.17g}",
               groups=None if group_id is None else int(np.sum(group_id)))

    def build(path):
        m = catboost.CatBoost(params)
        m.fit(catboost.Pool(X, y, group_id=group_id))
        m.save_model(str(path))

    cbm = H.cached_file(f"cb-{name}", ".cbm", build, **key)

    def build_json(path):
        m = catboost.CatBoost()
        m.load_model(str(cbm))
        m.save_model(str(path), format="json")

    return cbm, H.cached_file(f"cb-{name}", ".json", build_json, cbm=cbm.name, **key)


def reference(cbm, X):
    import catboost
    m = catboost.CatBoost()
    m.load_model(str(cbm))
    ref = np.asarray(m.predict(np.asarray(X, dtype=np.float64), prediction_type="RawFormulaVal", thread_count=1))
    return ref.reshape(len(X), -1), m


def check(cbm, js, engine, workdir, X=None):
    """Both files, scored by `engine` on float32 rows, equal CatBoost's RawFormulaVal."""
    if X is None:
        X = score_rows(js)
    ref, _ = reference(cbm, X)
    k = ref.shape[1]
    raw = workdir / f"{cbm.stem}.f32"
    C.write_raw(raw, X)
    for path in (cbm, js):
        ours = C.score_k(path, raw, len(X), k, engine, "--format", "raw")
        for j in range(k):
            H.assert_exact(ours[:, j], ref[:, j], X, None, f"{path.name} output {j} of {k}, engine {engine}")
    return len(X)


# name -> (CatBoost parameters, target kind, train rows' NaN columns)
CASES = {
    **{f"rmse-sym-d{d}-{mode.lower()}": (dict(depth=d, nan_mode=mode), "reg", (1, 2, 4))
       for d, mode in [(1, "Min"), (2, "Max"), (3, "Min"), (4, "Max"), (5, "Min"), (6, "Max"), (7, "Min"),
                       (8, "Max")]},
    "rmse-depthwise": (dict(depth=6, grow_policy="Depthwise", nan_mode="Max"), "reg", (1, 2, 4)),
    "rmse-lossguide": (dict(grow_policy="Lossguide", max_leaves=16, nan_mode="Min"), "reg", (1, 2, 4)),
    "logloss": (dict(loss_function="Logloss", depth=5, nan_mode="Max"), "bin", (1, 2, 4)),
    "yetirank": (dict(loss_function="YetiRank", depth=4), "rank", (1, 2, 4)),
    "multiclass": (dict(loss_function="MultiClass", depth=4, nan_mode="Max"), "mc", (1, 2, 4)),
    "multiclass-lossguide": (dict(loss_function="MultiClass", grow_policy="Lossguide", max_leaves=10), "mc",
                             (1, 2, 4)),
    "multirmse-depthwise": (dict(loss_function="MultiRMSE", depth=4, grow_policy="Depthwise", boost_from_average=True),
                            "multi", (1, 2, 4)),
    # no NaN in training: nan_mode Forbidden; CatBoost's predict takes NaN all the same
    "rmse-forbidden": (dict(depth=4, nan_mode="Forbidden"), "reg", ()),
}


def case_model(name):
    params, kind, nan_cols = CASES[name]
    X, y = train_rows(nan_cols=nan_cols)
    group_id = None
    if kind == "bin":
        y = (y > np.median(y)).astype(np.float64)
    elif kind == "rank":
        y = np.clip(np.round(y), 0, 4)
        group_id = np.repeat(np.arange(N_TRAIN // 20), 20)
    elif kind == "mc":
        y = C.class_labels(y, 3)
    elif kind == "multi":
        y = np.stack([y, 2 * np.nan_to_num(X[:, 0]) - y], axis=1)
    return cb_model(name, params, X, y, group_id)


@pytest.mark.parametrize("name", sorted(CASES))
def test_catboost_model(engine, workdir, name):
    cbm, js = case_model(name)
    check(cbm, js, engine, workdir)


def test_catboost_tree_shapes():
    """The cases hold what they claim: oblivious and non-symmetric trees, K outputs, biases."""
    shapes = {}
    for name in CASES:
        _, js = case_model(name)
        j = json.loads(js.read_text())
        shapes[name] = ("oblivious_trees" in j, len(j["scale_and_bias"][1]))
    assert shapes["rmse-sym-d8-max"] == (True, 1) and shapes["multiclass"] == (True, 3)
    assert shapes["rmse-depthwise"][0] is False and shapes["multiclass-lossguide"] == (False, 3)
    assert shapes["multirmse-depthwise"] == (False, 2)
    _, js = case_model("rmse-sym-d8-max")
    trees = json.loads(js.read_text())["oblivious_trees"]
    assert max(len(t["splits"]) for t in trees) == 8
    _, js = case_model("rmse-forbidden")
    assert all(not f["has_nans"] for f in json.loads(js.read_text())["features_info"]["float_features"])


def test_catboost_double_rows(engine, workdir):
    """CSV rows (doubles): CatBoost converts them to float32, and so does treescore."""
    cbm, js = case_model("rmse-sym-d6-max")
    X = score_rows(js).astype(np.float64)
    X[:200] += np.random.default_rng(5).normal(0, 1e-9, size=(200, N_FEATURES))  # not float32 values
    ref, _ = reference(cbm, X)
    csv = workdir / "cb-double.csv"
    C.write_csv17(csv, X)
    for path in (cbm, js):
        ours = C.score_k(path, csv, len(X), 1, engine, "--format", "csv", "--no-header")
        H.assert_exact(ours[:, 0], ref[:, 0], X, None, f"{path.name}, CSV rows, engine {engine}")


def test_catboost_bias_and_scale(workdir):
    """A bias set on a model without one is added after the trees; a scale other than 1 is refused."""
    import catboost
    cbm, js = case_model("logloss")
    m = catboost.CatBoost()
    m.load_model(str(cbm))
    X = score_rows(js)
    m.set_scale_and_bias(1.0, 0.375)
    biased = workdir / "cb-biased.cbm"
    m.save_model(str(biased))
    m.save_model(str(workdir / "cb-biased.json"), format="json")
    check(biased, workdir / "cb-biased.json", "naive", workdir, X)
    m.set_scale_and_bias(2.0, 0.375)
    scaled = workdir / "cb-scaled.cbm"
    m.save_model(str(scaled))
    m.save_model(str(workdir / "cb-scaled.json"), format="json")
    for path in (scaled, workdir / "cb-scaled.json"):
        p = H.run_cli(["info", "-m", path])
        assert p.returncode == 1 and "scale 2" in p.stderr and "not supported" in p.stderr, p.stderr


# ---- categorical features (issue 24, part 2) ---------------------------------------------

CAT_HASH_MULT = 0x4906BA494954CB65
CAT_KEY_INV = pow(CAT_HASH_MULT * CAT_HASH_MULT, -1, 1 << 64)  # CalcHash(0, h) = M * M * h mod 2^64
# strings of every CityHash length class (0, 1-3, 4-8, 9-16, 17-32, 33-64, 65+), and UTF-8
CITIES = ["", "a", "bc", "Oslo", "Helsinki", "Copenhagen", "Reykjavik-Nord", "Saint Petersburg", "Llanfairpwllgwyngyll",
          "Rio de Janeiro, Estado do Rio de Janeiro", "x" * 64, "Tallinn " * 9, "Zürich", "東京", "1", "-7", "nan",
          "Bergen", "Turku", "Aarhus"]
TAGS = ["red", "green", "blue", "grey"]


def cat_frame(n, seed, unseen=False):
    """Float columns f0 (NaN in 10% of the rows) and f1, a string column city (20
    categories), an integer column level (0..11) and a string column tag (4 values).
    With unseen: categories training never saw in every categorical column."""
    import pandas as pd
    rng = np.random.default_rng(seed)
    f0 = rng.normal(size=n).astype(F32).astype(np.float64)
    f0[rng.random(n) < 0.1] = np.nan
    df = pd.DataFrame({"f0": f0, "city": rng.choice(CITIES, n), "level": rng.integers(0, 12, n),
                       "f1": rng.normal(size=n).astype(F32).astype(np.float64), "tag": rng.choice(TAGS, n)})
    if unseen:
        df.loc[df.index[::7], "city"] = "Atlantis"
        df.loc[df.index[1::9], "level"] = 99
        df.loc[df.index[2::11], "level"] = -3
        df.loc[df.index[3::8], "tag"] = "mauve"
    return df


def cat_target(df, loss, seed=5):
    rng = np.random.default_rng(seed)
    city = df["city"].map({c: i for i, c in enumerate(CITIES)}).fillna(0).to_numpy()
    z = (np.nan_to_num(df["f0"].to_numpy(), nan=0.5) + 0.3 * (city % 5) + 0.4 * (df["level"].to_numpy() % 4)
         + 0.8 * (df["tag"] == "red") + 0.2 * df["f1"] + rng.normal(0, 0.1, len(df)))
    if loss == "Logloss":
        return (z > np.median(z)).astype(int)
    if loss == "MultiClass":
        return np.digitize(z, np.quantile(z, [0.33, 0.66]))
    return z


CAT_COLS = ["city", "level", "tag"]
COMMON_CAT = dict(iterations=30, depth=4, max_ctr_complexity=1, one_hot_max_size=1)
CAT_CASES = {
    "onehot-rmse": ("RMSE", dict(one_hot_max_size=255)),
    "onehot-multiclass-depthwise": ("MultiClass", dict(one_hot_max_size=255, grow_policy="Depthwise")),
    "ctr-borders-rmse": ("RMSE", dict(simple_ctr=["Borders:TargetBorderCount=3"])),
    "ctr-counter-mean-rmse": ("RMSE", dict(simple_ctr=["Counter", "BinarizedTargetMeanValue:TargetBorderCount=2"])),
    "ctr-buckets-rmse": ("RMSE", dict(simple_ctr=["Buckets:TargetBorderCount=2"])),
    "ctr-logloss": ("Logloss", {}),
    "ctr-multiclass": ("MultiClass", dict(simple_ctr=["Borders", "Buckets", "Counter"])),
    "mixed-depthwise": ("RMSE", dict(grow_policy="Depthwise", one_hot_max_size=4)),
    "mixed-lossguide-multiclass": ("MultiClass", dict(grow_policy="Lossguide", one_hot_max_size=4, max_leaves=12)),
}


def cat_model(name):
    """(.cbm, .json) of CAT_CASES[name], trained once on cat_frame (cached)."""
    import catboost
    loss, extra = CAT_CASES[name]
    params = dict(dict(COMMON_CAT, loss_function=loss, random_seed=0, thread_count=1, verbose=0,
                       allow_writing_files=False), **extra)
    if params.get("grow_policy") == "Lossguide":
        params.pop("depth")
    df = cat_frame(900, 3)
    y = cat_target(df, loss)
    key = dict(params=params, catboost=catboost.__version__, cities=CITIES)

    def build(path):
        m = catboost.CatBoost(params)
        m.fit(catboost.Pool(df, y, cat_features=CAT_COLS))
        m.save_model(str(path))

    cbm = H.cached_file(f"cb-cat-{name}", ".cbm", build, **key)

    def build_json(path):
        m = catboost.CatBoost()
        m.load_model(str(cbm))
        m.save_model(str(path), format="json")

    return cbm, H.cached_file(f"cb-cat-{name}", ".json", build_json, cbm=cbm.name, **key)


def catboost_hashes(cbm, df, workdir):
    """{category text: CatBoost's 32-bit hash} of every value of df's categorical columns,
    from CatBoost itself (its Python export writes the hashes of the pool's values; the
    hash is the model's: any small oblivious model trained on df has them)."""
    import ast
    import catboost
    m = catboost.CatBoost(dict(iterations=1, depth=1, verbose=0, allow_writing_files=False, thread_count=1))
    m.fit(catboost.Pool(df, np.arange(len(df)) % 2, cat_features=CAT_COLS))
    py = workdir / f"{cbm.stem}-hashes.py"
    m.save_model(str(py), format="python", pool=catboost.Pool(df, cat_features=CAT_COLS))
    text = py.read_text(encoding="utf-8")
    block = text[text.index("cat_features_hashes = {") + len("cat_features_hashes = {"):]
    block = block[:block.index("\n}")]
    out = {}
    for line in block.strip().splitlines():
        k, v = line.rsplit(":", 1)
        key = ast.literal_eval(k.strip())  # a str of the UTF-8 bytes' code points
        out[key.encode("latin-1").decode("utf-8")] = int(v.strip().rstrip(",")) & 0xFFFFFFFF
    return out


def known_hashes(js):
    """{column: sorted category hashes the model knows} from the JSON model, computed here
    independently of the loader: one-hot values and the CTR tables' keys (M * M * h)."""
    j = json.loads(js.read_text())
    cats = j["features_info"].get("categorical_features", [])
    known = {c["flat_feature_index"]: {v & 0xFFFFFFFF for v in c.get("values", [])} for c in cats}
    flat = {c["feature_index"]: c["flat_feature_index"] for c in cats}
    tables = j.get("ctr_data", {})
    for ctr in j["features_info"].get("ctrs", []):
        (el,) = ctr["elements"]
        rows = tables[ctr["identifier"]]
        stride = rows["hash_stride"]
        for key in rows["hash_map"][::stride]:
            key = int(key)
            if key == (1 << 64) - 1:
                continue
            h = key * CAT_KEY_INV % (1 << 64)
            assert h < (1 << 31) or h >= (1 << 64) - (1 << 31), key
            known[flat[el["cat_feature_index"]]].add(h & 0xFFFFFFFF)
    return {col: sorted(v) for col, v in known.items()}


def cat_id_rows(cbm, js, df, workdir):
    """df as float32 rows for the C API: float columns as they are, each categorical column
    as the category's id (its rank among the model's known hashes); a category the model
    never saw as NaN, -1, 1e6 or the first id past the known ones, in turn."""
    hashes = catboost_hashes(cbm, df, workdir)
    known = known_hashes(js)
    X = np.empty((len(df), df.shape[1]), dtype=np.float64)
    unseen = [np.nan, -1.0, 1e6, None]
    n_unseen = 0
    for c, label in enumerate(df.columns):
        if label not in CAT_COLS:
            X[:, c] = df[label].to_numpy()
            continue
        ids = {h: i for i, h in enumerate(known.get(c, []))}
        for r, v in enumerate(df[label]):
            i = ids.get(hashes[str(v)])
            if i is None:
                u = unseen[n_unseen % len(unseen)]
                i = len(ids) if u is None else u
                n_unseen += 1
            X[r, c] = i
    assert n_unseen > 0
    return X


@pytest.mark.parametrize("name", sorted(CAT_CASES))
def test_catboost_categorical(engine, workdir, name):
    """One-hot and CTR models (single categorical features), every engine, rows with NaN
    float values and unseen categories: equal to CatBoost's RawFormulaVal on the DataFrame."""
    import catboost
    cbm, js = cat_model(name)
    df = cat_frame(400, 4, unseen=True)
    m = catboost.CatBoost()
    m.load_model(str(cbm))
    ref = np.asarray(m.predict(df, prediction_type="RawFormulaVal", thread_count=1)).reshape(len(df), -1)
    k = ref.shape[1]
    X = cat_id_rows(cbm, js, df, workdir)
    raw = workdir / f"{cbm.stem}.f32"
    C.write_raw(raw, X)
    for path in (cbm, js):
        ours = C.score_k(path, raw, len(X), k, engine, "--format", "raw")
        for j in range(k):
            H.assert_exact(ours[:, j], ref[:, j], X, None, f"{path.name} output {j} of {k}, engine {engine}")


def test_catboost_categorical_shapes():
    """The cases hold what they claim: one-hot only, CTRs of the named types, both."""
    types = {}
    for name in CAT_CASES:
        _, js = cat_model(name)
        j = json.loads(js.read_text())
        fi = j["features_info"]
        onehot = any(c.get("values") for c in fi["categorical_features"])
        types[name] = (onehot, sorted({c["ctr_type"] for c in fi.get("ctrs", [])}))
    assert types["onehot-rmse"] == (True, [])
    assert types["ctr-borders-rmse"] == (False, ["Borders"])
    assert types["ctr-counter-mean-rmse"] == (False, ["BinarizedTargetMeanValue", "Counter"])
    assert types["ctr-buckets-rmse"] == (False, ["Buckets"])
    assert types["ctr-multiclass"] == (False, ["Borders", "Buckets", "Counter"])
    assert types["mixed-depthwise"][0] and types["mixed-depthwise"][1]


def test_catboost_categorical_refused(workdir):
    """Text features are refused by name (CTRs over combinations of features are scored:
    test_catboost_ctr.py)."""
    import catboost
    df = cat_frame(600, 8)
    y = cat_target(df, "RMSE")
    text = catboost.CatBoost(dict(iterations=3, depth=2, verbose=0, allow_writing_files=False, thread_count=1))
    tdf = df.assign(note=[f"word{i % 5} other{i % 3}" for i in range(len(df))])[["f0", "note"]]
    text.fit(catboost.Pool(tdf, y, text_features=["note"]))
    path = workdir / "cb-text.cbm"
    text.save_model(str(path))
    p = H.run_cli(["info", "-m", path])
    assert p.returncode == 1 and "text feature" in p.stderr and "'note'" in p.stderr, p


def test_catboost_formats_and_detection(workdir):
    """Detected from content (whatever the file name), named by --model-format, and a
    format named wrongly is an error, not scores."""
    cbm, js = case_model("rmse-sym-d3-min")
    for path, fmt in ((cbm, "catboost"), (js, "catboost-json")):
        renamed = workdir / f"renamed-{path.suffix[1:]}.model"
        renamed.write_bytes(path.read_bytes())
        p = H.run_cli(["info", "-m", renamed])
        assert p.returncode == 0 and f"format:           {fmt}" in p.stdout, p.stdout + p.stderr
        p = H.run_cli(["info", "-m", path, "--model-format", fmt])
        assert p.returncode == 0, p.stderr
    p = H.run_cli(["info", "-m", js, "--model-format", "catboost"])
    assert p.returncode == 1 and "CBM1" in p.stderr, p.stderr
    p = H.run_cli(["info", "-m", cbm, "--model-format", "catboost-json"])
    assert p.returncode == 1 and p.stderr.strip(), p.stderr


def test_catboost_truncated_refused(workdir):
    """Every prefix of a .cbm (and a few corrupted copies) is refused cleanly, never crashes."""
    cbm, _ = case_model("multiclass-lossguide")
    data = cbm.read_bytes()
    cuts = sorted(set(list(range(0, 64)) + list(range(64, len(data), max(1, len(data) // 40)))))
    path = workdir / "cb-cut.cbm"
    for n in cuts:
        path.write_bytes(data[:n])
        p = H.run_cli(["info", "-m", path, "--model-format", "catboost"])
        assert p.returncode == 1 and path.name in p.stderr, (n, p.returncode, p.stderr)
    rng = np.random.default_rng(3)
    for _ in range(30):
        b = bytearray(data)
        for i in rng.integers(8, len(b), 4):
            b[i] = int(rng.integers(0, 256))
        path.write_bytes(bytes(b))
        p = H.run_cli(["info", "-m", path])
        assert p.returncode in (0, 1), (p.returncode, p.stderr)


def test_catboost_feature_names(workdir):
    """A model trained on a DataFrame names its features: a CSV header in the model's order
    scores CatBoost's values, a reordered one is refused rather than scored wrong."""
    import catboost
    import pandas as pd
    rng = np.random.default_rng(9)
    df = pd.DataFrame({"alpha": rng.normal(size=300), "beta": rng.normal(size=300), "gamma": rng.normal(size=300)})
    y = 2 * df["alpha"] + df["beta"] - df["gamma"] ** 2
    m = catboost.CatBoost(dict(iterations=6, depth=3, verbose=0, allow_writing_files=False, thread_count=1,
                               random_seed=1))
    m.fit(df, y)
    rows = df[:40].astype(np.float32).astype(np.float64)
    ref = np.asarray(m.predict(rows, prediction_type="RawFormulaVal"))
    rows.to_csv(workdir / "cb-named.csv", index=False)
    rows[["beta", "alpha", "gamma"]].to_csv(workdir / "cb-named-swapped.csv", index=False)
    for fmt in ("cbm", "json"):
        path = workdir / f"cb-named.{fmt}"
        m.save_model(str(path), format=fmt)
        p = H.run_cli(["info", "-m", path])
        assert "feature names:    alpha beta gamma" in p.stdout, p.stdout
        ours = H.score(path, workdir / "cb-named.csv", len(rows), "naive")
        H.assert_exact(ours, ref, rows.to_numpy(), None, f"{path.name}, CSV with a header")
        p = H.run_cli(["score", "-m", path, "-d", workdir / "cb-named-swapped.csv"])
        assert p.returncode == 1 and "is named 'beta'" in p.stderr, p.stderr
