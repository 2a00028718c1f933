# test_catboost_cli.py: CatBoost models with categorical features scored from CSV/TSV text by the CLI equal CatBoost's predict(prediction_type="RawFormulaVal") in every engine.
"""CatBoost categorical features from the command line (issue 24).

Models with one-hot and single-feature CTR splits are trained here by the real CatBoost
(PyPI `catboost`) on a DataFrame with float columns (NaN in training), string and integer
categorical columns, saved as .cbm and JSON, and scored by `treescore score` from CSV and
TSV files whose categorical columns hold the categories' text: strings with commas,
doubled quotes, spaces kept by quoting, UTF-8, the empty string, "nan" and "NA" (text, not
missing markers, in a categorical column), integers written bare or quoted (the integer 3
and the string "3" are one category, as in CatBoost), and categories training never saw
(strings, integers, negative integers). The scores must equal CatBoost's own
predict(DataFrame, prediction_type="RawFormulaVal") bit for bit (== on the doubles; the
issue asks 1e-12 relative), K columns for MultiClass, in every engine, with and without a
header line.
"""

import numpy as np
import pytest

import tshelpers as H

catboost = pytest.importorskip("catboost")

F32 = np.float32
CAT_COLS = ["city", "level", "tag"]
CITIES = ["Oslo", "Bergen", "Turku", "", "a", "Saint Petersburg", 'El Dorado, "the" city', " Aarhus ", "Z\u00fcrich",
          "\u6771\u4eac", "nan", "NA", "7", "-1", "x" * 70]
TAGS = ["red", "green", "blue", "grey"]
UNSEEN_CITIES = ["Atlantis", "oslo", "Oslo ", "\"", ",", "8"]


def frame(n, seed, unseen=False):
    """Columns f0 (float, NaN in 10% of rows), city (string), level (integer), f1 (float),
    tag (string); with unseen, categories training never saw in every categorical column."""
    import pandas as pd
    rng = np.random.default_rng(seed)
    f0 = rng.normal(size=n).astype(F32).astype(np.float64)
    f0[rng.random(n) < 0.1] = np.nan
    df = pd.DataFrame({"f0": f0, "city": rng.choice(CITIES, n), "level": rng.integers(0, 12, n),
                       "f1": rng.normal(size=n).astype(F32).astype(np.float64), "tag": rng.choice(TAGS, n)})
    if unseen:
        df.loc[df.index[::7], "city"] = [UNSEEN_CITIES[i % len(UNSEEN_CITIES)] for i in range(len(df.index[::7]))]
        df.loc[df.index[1::9], "level"] = 99
        df.loc[df.index[2::11], "level"] = -3
        df.loc[df.index[3::8], "tag"] = "mauve"
    return df


def target(df, loss, seed=5):
    rng = np.random.default_rng(seed)
    city = df["city"].map({c: i for i, c in enumerate(CITIES)}).fillna(0).to_numpy()
    z = (np.nan_to_num(df["f0"].to_numpy(), nan=0.5) + 0.3 * (city % 5) + 0.4 * (df["level"].to_numpy() % 4)
         + 0.8 * (df["tag"] == "red") + 0.2 * df["f1"] + rng.normal(0, 0.1, len(df)))
    if loss == "Logloss":
        return (z > np.median(z)).astype(int)
    if loss == "MultiClass":
        return np.digitize(z, np.quantile(z, [0.33, 0.66]))
    return z


COMMON = dict(iterations=25, depth=4, max_ctr_complexity=1, random_seed=0, thread_count=1, verbose=0,
              allow_writing_files=False)
CASES = {
    "onehot-rmse": dict(loss_function="RMSE", one_hot_max_size=255),
    "ctr-rmse": dict(loss_function="RMSE", one_hot_max_size=1, simple_ctr=["Borders", "Counter"]),
    "mixed-logloss-depthwise": dict(loss_function="Logloss", one_hot_max_size=4, grow_policy="Depthwise"),
    "mixed-multiclass-lossguide": dict(loss_function="MultiClass", one_hot_max_size=4, grow_policy="Lossguide",
                                       max_leaves=10),
}


def model(name):
    """(.cbm, .json, the CatBoost model) of CASES[name], trained once (cached)."""
    params = dict(COMMON, **CASES[name])
    if params.get("grow_policy") == "Lossguide":
        params.pop("depth")
    df = frame(900, 3)
    y = target(df, params["loss_function"])
    key = dict(params=params, catboost=catboost.__version__, cities=CITIES)

    def build(path):
        m = catboost.CatBoost(params)
        m.fit(catboost.Pool(df, y, cat_features=CAT_COLS))
        m.save_model(str(path))

    cbm = H.cached_file(f"cbcli-{name}", ".cbm", build, **key)

    def build_json(path):
        m = catboost.CatBoost()
        m.load_model(str(cbm))
        m.save_model(str(path), format="json")

    js = H.cached_file(f"cbcli-{name}", ".json", build_json, cbm=cbm.name, **key)
    m = catboost.CatBoost()
    m.load_model(str(cbm))
    return cbm, js, m


def field(v, sep, quote_all):
    """One CSV/TSV field: floats with 17 digits ("nan" for NaN), integers as they are,
    text as it is unless it must be quoted (the separator, a quote, spaces at an end) or
    quote_all; quotes inside doubled."""
    if isinstance(v, (float, np.floating)):
        return "nan" if v != v else repr(float(v))
    s = str(v)
    if quote_all or sep in s or '"' in s or s != s.strip():
        return '"' + s.replace('"', '""') + '"'
    return s


def write(path, df, sep, header, quote_all=False):
    lines = [sep.join(df.columns)] if header else []
    for row in df.itertuples(index=False):
        lines.append(sep.join(field(v, sep, quote_all and i % 2 == 1) for i, v in enumerate(row)))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("name", sorted(CASES))
def test_catboost_cli_text_categories(engine, workdir, name):
    cbm, js, m = model(name)
    df = frame(300, 4, unseen=True)
    ref = np.asarray(m.predict(df, prediction_type="RawFormulaVal", thread_count=1)).reshape(len(df), -1)
    k = ref.shape[1]
    X = df.assign(**{c: np.nan for c in CAT_COLS}).to_numpy(dtype=np.float64)  # floats, for the report
    files = [(write(workdir / f"cbcli-{name}.csv", df, ",", header=True), ()),
             (write(workdir / f"cbcli-{name}-q.csv", df, ",", header=False, quote_all=True), ("--no-header",)),
             (write(workdir / f"cbcli-{name}.tsv", df, "\t", header=True), ())]
    for path in (cbm, js):
        for data, extra in files:
            p = H.run_cli(["score", "-m", path, "-d", data, "--engine", engine, *extra])
            assert p.returncode == 0, p.stderr
            lines = p.stdout.splitlines()
            assert len(lines) == len(df), (len(lines), p.stderr)
            ours = np.array([[float(v) for v in line.split("\t")] for line in lines])
            assert ours.shape == ref.shape
            for j in range(k):
                H.assert_exact(ours[:, j], ref[:, j], X, None,
                               f"{path.name} on {data.name} output {j} of {k}, engine {engine}")


def test_catboost_cli_cases_hold():
    """The models hold what the cases claim: one-hot splits, CTRs, both; every category
    kind (empty, comma, quote, spaces) occurs in the training frame."""
    import json
    kinds = {}
    for name in CASES:
        _, js, _ = model(name)
        fi = json.loads(js.read_text())["features_info"]
        kinds[name] = (any(c.get("values") for c in fi["categorical_features"]), bool(fi.get("ctrs")))
    assert kinds["onehot-rmse"] == (True, False)
    assert kinds["ctr-rmse"] == (False, True)
    assert kinds["mixed-logloss-depthwise"] == (True, True)
    assert kinds["mixed-multiclass-lossguide"][1]
    df = frame(900, 3)
    assert {"", 'El Dorado, "the" city', " Aarhus ", "nan", "NA"} <= set(df["city"])


def test_catboost_cli_categorical_only(workdir):
    """A model of categorical columns only: a header line (the model's feature names) is
    recognized, a first line of categories is a row; both score CatBoost's values."""
    params = dict(COMMON, loss_function="RMSE", one_hot_max_size=4)
    train = frame(900, 3)[CAT_COLS]
    y = target(frame(900, 3), "RMSE")

    def build(path):
        m = catboost.CatBoost(params)
        m.fit(catboost.Pool(train, y, cat_features=CAT_COLS))
        m.save_model(str(path))

    cbm = H.cached_file("cbcli-cats-only", ".cbm", build, params=params, catboost=catboost.__version__, cities=CITIES)
    m = catboost.CatBoost()
    m.load_model(str(cbm))
    df = frame(200, 6, unseen=True)[CAT_COLS]
    ref = np.asarray(m.predict(df, prediction_type="RawFormulaVal", thread_count=1))
    for header in (True, False):
        data = write(workdir / f"cbcli-cats-only-{header}.csv", df, ",", header=header)
        ours = H.score(cbm, data, len(df), "naive")
        H.assert_exact(ours, ref, None, None, f"categorical columns only, header {header}")
