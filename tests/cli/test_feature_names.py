"""test_feature_names.py: a CSV header must name the model's features in its order, or the run stops."""
import numpy as np
import pytest

from cli_helpers import ENV, binary_path  # noqa: F401 (ENV: the sanitizer settings)
import subprocess


def run(*args):
    return subprocess.run([str(binary_path()), *map(str, args)], capture_output=True, text=True, env=ENV, timeout=30)


@pytest.fixture(scope="module")
def named_models(tmp_path_factory):
    import lightgbm as lgb
    import xgboost as xgb
    d = tmp_path_factory.mktemp("names")
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 3)).astype(np.float32)
    y = 2 * X[:, 0] + X[:, 1] - X[:, 2]
    xgb.train({"objective": "reg:squarederror", "max_depth": 3, "nthread": 1},
              xgb.DMatrix(X, y, feature_names=["a", "b", "c"]), 5).save_model(str(d / "x.json"))
    lgb.train({"objective": "regression", "verbose": -1, "num_leaves": 7, "num_threads": 1},
              lgb.Dataset(X, y, feature_name=["a", "b", "c"]), 5).save_model(str(d / "l.txt"))
    lgb.train({"objective": "regression", "verbose": -1, "num_leaves": 7, "num_threads": 1},
              lgb.Dataset(X, y), 5).save_model(str(d / "unnamed.txt"))
    # the same rows, once in the model's column order and once with the columns reversed
    np.savetxt(d / "ordered.csv", X[:4], delimiter=",", header="a,b,c", comments="", fmt="%.9g")
    np.savetxt(d / "reordered.csv", X[:4, ::-1], delimiter=",", header="c,b,a", comments="", fmt="%.9g")
    return d


@pytest.mark.parametrize("model", ["x.json", "l.txt"])
def test_reordered_header_is_refused(named_models, model):
    r = run("score", "-m", named_models / model, "-d", named_models / "reordered.csv")
    assert r.returncode == 1 and r.stdout == ""
    assert "feature column 0 is named 'c'" in r.stderr and "'a'" in r.stderr and "--no-name-check" in r.stderr


@pytest.mark.parametrize("model", ["x.json", "l.txt"])
def test_ordered_header_and_override(named_models, model):
    ok = run("score", "-m", named_models / model, "-d", named_models / "ordered.csv")
    assert ok.returncode == 0 and len(ok.stdout.split()) == 4, ok.stderr
    forced = run("score", "-m", named_models / model, "-d", named_models / "reordered.csv", "--no-name-check")
    assert forced.returncode == 0 and len(forced.stdout.split()) == 4, forced.stderr
    assert forced.stdout != ok.stdout  # the columns really are read in file order


def test_generic_names_are_not_checked(named_models):
    """LightGBM's Column_0.. names (data without names) do not make headers mandatory."""
    r = run("score", "-m", named_models / "unnamed.txt", "-d", named_models / "reordered.csv")
    assert r.returncode == 0, r.stderr


def test_info_shows_names(named_models):
    r = run("info", "-m", named_models / "x.json")
    assert r.returncode == 0 and "feature names:    a b c" in r.stdout


@pytest.fixture(scope="module")
def dump_model(named_models):
    """An XGBoost JSON dump whose splits name the features a, b, c, and rows to score."""
    import xgboost as xgb
    d = named_models
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 3)).astype(np.float32)
    b = xgb.train({"objective": "reg:squarederror", "max_depth": 3, "nthread": 1},
                  xgb.DMatrix(X, 2 * X[:, 0] + X[:, 1] - X[:, 2], feature_names=["a", "b", "c"]), 5)
    b.dump_model(str(d / "dump.json"), dump_format="json")
    (d / "rows.svm").write_text("".join(f"0 0:{r[0]:.9g} 1:{r[1]:.9g} 2:{r[2]:.9g}\n" for r in X[:4]))
    ok = run("score", "-m", d / "dump.json", "-d", d / "rows.svm", "--feature-names", _names(d, "a\nb\nc\n"))
    assert ok.returncode == 0 and len(ok.stdout.split()) == 4, ok.stderr
    return d, ok.stdout


def _names(d, text, name="names.txt"):
    p = d / name
    if isinstance(text, bytes):
        p.write_bytes(text)
    else:
        p.write_text(text)
    return p


def test_feature_names_given_twice_are_refused(dump_model):
    """A name the model reads given to two columns of --feature-names (or of a CSV header)
    was mapped to the first of them silently; it is now an error naming both columns."""
    d, _ = dump_model
    r = run("score", "-m", d / "dump.json", "-d", d / "rows.svm", "--feature-names", _names(d, "a\nb\na\nc\n"))
    assert r.returncode == 1 and r.stdout == "", r.stdout
    assert "'a'" in r.stderr and "columns 0 and 2" in r.stderr and "ambiguous" in r.stderr, r.stderr
    (d / "dup.csv").write_text("a,b,a,c\n1,2,3,4\n")
    r = run("score", "-m", d / "dump.json", "-d", d / "dup.csv")
    assert r.returncode == 1 and r.stdout == "" and "columns 0 and 2" in r.stderr, r.stderr
    # a repeated name the model does not read is harmless
    r = run("score", "-m", d / "dump.json", "-d", d / "rows.svm", "--feature-names", _names(d, "a\nb\nc\nx\nx\n"))
    assert r.returncode == 0 and len(r.stdout.split()) == 4, r.stderr


def test_feature_names_file_with_bom(dump_model):
    """A names file saved with a UTF-8 byte order mark (Windows editors) read its first name
    with the mark, so 'a' was 'not among the given names'; the mark is now skipped, as in
    CSV and SVMlight data."""
    d, want = dump_model
    r = run("score", "-m", d / "dump.json", "-d", d / "rows.svm", "--feature-names",
            _names(d, b"\xef\xbb\xbfa\r\nb\r\nc\r\n"))
    assert r.returncode == 0 and r.stdout == want, r.stderr


def test_feature_names_file_with_nul(dump_model):
    """A NUL byte ended the name there ("a\\0x" read as "a"), so a binary file or a name
    list in UTF-16 could map columns by what came before the NUL; it is now refused."""
    d, _ = dump_model
    r = run("score", "-m", d / "dump.json", "-d", d / "rows.svm", "--feature-names", _names(d, b"a\0x\nb\nc\n"))
    assert r.returncode == 1 and r.stdout == "" and "line 1 has a NUL byte" in r.stderr, r.stderr
    r = run("score", "-m", d / "dump.json", "-d", d / "rows.svm", "--feature-names",
            _names(d, "a\nb\nc\n".encode("utf-16")))
    assert r.returncode == 1 and r.stdout == "" and "NUL byte" in r.stderr, r.stderr


def test_lightgbm_names_with_spaces_in_a_header(tmp_path):
    """LightGBM stores a DataFrame's 'my feat' as 'my_feat'; the CSV that pandas writes of
    the same frame was refused ('feature column 0 is named 'my feat' but ... is
    'my_feat''). For a LightGBM model a header's spaces now read as underscores, as the
    Python package reads a DataFrame's names; another name is still refused."""
    import lightgbm as lgb
    import pandas as pd
    rng = np.random.default_rng(1)
    X = rng.normal(size=(300, 3))
    df = pd.DataFrame(X, columns=["my feat", "b", "c"])
    b = lgb.train({"objective": "regression", "verbose": -1, "num_threads": 1}, lgb.Dataset(df, X[:, 0] + X[:, 1]), 5)
    assert b.feature_name()[0] == "my_feat"
    b.save_model(str(tmp_path / "m.txt"))
    df.head(4).to_csv(tmp_path / "d.csv", index=False)
    r = run("score", "-m", tmp_path / "m.txt", "-d", tmp_path / "d.csv")
    assert r.returncode == 0, r.stderr
    assert np.array_equal(np.array([float(v) for v in r.stdout.split()]), b.predict(df.head(4), raw_score=True))
    df.head(4).rename(columns={"my feat": "my  feat"}).to_csv(tmp_path / "e.csv", index=False)
    r = run("score", "-m", tmp_path / "m.txt", "-d", tmp_path / "e.csv")
    assert r.returncode == 1 and "named 'my  feat'" in r.stderr, r.stderr


def test_lightgbm_feature_names_of_the_wrong_count_are_named(ts, lgb_model, tmp_path):
    """A model.txt whose feature_names line lists fewer or more names than max_feature_idx
    + 1 (an edited file; LightGBM refuses it: 'Wrong size of feature_names') lost its names
    silently, and with them the check of a CSV header against them. The names are still
    ignored (they are not needed to score), but a warning says so."""
    import re
    text = lgb_model.read_text()
    n = int(re.search(r"^max_feature_idx=(\d+)$", text, re.M).group(1)) + 1
    for count in (3, n + 2):
        model = tmp_path / f"names{count}.txt"
        model.write_text(re.sub(r"^feature_names=.*$", "feature_names=" + " ".join(f"f{i}" for i in range(count)),
                                text, flags=re.M))
        r = ts.succeeds("info", "-m", model)
        assert f"feature_names lists {count} names but max_feature_idx={n - 1} declares {n} features" in r.stderr, r
        assert "feature names:" not in r.stdout, r
    assert "feature_names" not in ts.succeeds("info", "-m", lgb_model).stderr


def test_lightgbm_json_feature_names_of_the_wrong_count_are_named(ts, tmp_path):
    import json
    import lightgbm as lgb
    rng = np.random.default_rng(3)
    X = rng.normal(size=(200, 4))
    dump = lgb.train({"verbose": -1, "num_leaves": 4}, lgb.Dataset(X, X[:, 0]), 3).dump_model()
    dump["feature_names"] = dump["feature_names"][:3]
    model = tmp_path / "names3.json"
    model.write_text(json.dumps(dump))
    r = ts.succeeds("info", "-m", model)
    assert "feature_names lists 3 names but max_feature_idx=3 declares 4 features" in r.stderr, r


def test_xgboost_feature_names_of_the_wrong_count_are_named(ts, tmp_path):
    """learner.feature_names with fewer names than num_feature (an edited file; XGBoost
    loads it and then refuses every named DMatrix) lost its names silently, and with them
    the CSV header check: a warning says so now."""
    import json
    import xgboost as xgb
    rng = np.random.default_rng(4)
    X = rng.normal(size=(200, 4))
    path = tmp_path / "full.json"
    xgb.train({"max_depth": 2}, xgb.DMatrix(X, X[:, 0], feature_names=list("abcd")), 2).save_model(path)
    model = json.loads(path.read_text())
    model["learner"]["feature_names"] = ["a", "b", "c"]
    model["learner"]["feature_types"] = ["float"] * 3
    cut = tmp_path / "names3.json"
    cut.write_text(json.dumps(model))
    r = ts.succeeds("info", "-m", cut)
    assert "feature_names lists 3 names but num_feature is 4" in r.stderr, r
    assert "feature_names" not in ts.succeeds("info", "-m", path).stderr
