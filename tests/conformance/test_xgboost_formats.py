# test_xgboost_formats.py: XGBoost JSON dumps (get_dump, ES/OpenSearch LTR wrapper) and UBJSON models vs XGBoost and a dump walker.
"""XGBoost dumps and UBJSON.

Dumps (Booster.get_dump(dump_format="json"), the trees Elasticsearch/OpenSearch LTR and
Vespa read): the reference is `walk_dump` below, a walker written from the format's
documented semantics: NaN goes to "missing"; otherwise x < split_condition (float32)
goes to "yes", else "no"; the score is the sum of the leaves in tree order, in double,
from the base score (0 unless --base-score). For dumps of real XGBoost models:

1. treescore's dump scores equal the walker's bit for bit (every engine);
2. with --base-score set to the model's base margin they equal treescore's scores of
   the JSON model itself bit for bit (test_xgboost.py checks those against XGBoost),
   and are within XGBoost's own float32 error of its margin (the bound of
   test_xgboost.py);
3. the list-of-strings form (get_dump's list saved with json.dump) and the ES-LTR
   {"splits": [...], "objective": ...} wrapper score the same.

Feature names: a model trained with feature_names dumps names in "split". They are
mapped to columns through a CSV header (in any column order) or --feature-names FILE;
scores then equal the walker's with the original column order. Names that match no
column are a clear error.

UBJSON (save_model("m.ubj")): the same scores as the JSON model, bit for bit; a
truncated file is a clear error naming the file.
"""

import json
import re

import numpy as np
import pytest

import tshelpers as H
import tsmodels as M

VARIANTS = ["ndcg_hist_d6", "logistic_hist_d7"]


# ---- the reference walker ------------------------------------------------------------------

def _flatten(tree):
    nodes, stack = {}, [tree]
    while stack:
        n = stack.pop()
        nodes[n["nodeid"]] = n
        stack.extend(n.get("children", []))
    return nodes


def _arrays(tree, column_of):
    nodes = _flatten(tree)
    ids = sorted(nodes)
    at = {i: k for k, i in enumerate(ids)}
    leaf = np.array(["leaf" in nodes[i] for i in ids])
    feat = np.array([0 if "leaf" in nodes[i] else column_of(nodes[i]["split"]) for i in ids], dtype=np.int64)
    cond = np.array([nodes[i].get("split_condition", 0.0) for i in ids], dtype=np.float32)

    def kid(i, key, default=None):
        n = nodes[i]
        return 0 if "leaf" in n else at[n.get(key, n[default] if default else None)]
    yes = np.array([kid(i, "yes") for i in ids], dtype=np.int64)
    no = np.array([kid(i, "no") for i in ids], dtype=np.int64)
    miss = np.array([kid(i, "missing", "no") for i in ids], dtype=np.int64)
    value = np.array([float(np.float32(nodes[i]["leaf"])) if "leaf" in nodes[i] else 0.0 for i in ids])
    return at[tree["nodeid"]], leaf, feat, cond, yes, no, miss, value


def walk_dump(trees, X, column_of, base=0.0):
    """Scores of float32 rows X: base + the leaves reached, added in double in tree order."""
    out = np.full(X.shape[0], base, dtype=np.float64)
    for t in trees:
        root, leaf, feat, cond, yes, no, miss, value = _arrays(t, column_of)
        cur = np.full(X.shape[0], root, dtype=np.int64)
        while True:
            rows = np.flatnonzero(~leaf[cur])
            if rows.size == 0:
                break
            c = cur[rows]
            x = X[rows, feat[c]]
            with np.errstate(invalid="ignore"):
                cur[rows] = np.where(np.isnan(x), miss[c], np.where(x < cond[c], yes[c], no[c]))
        out += value[cur]
    return out


def f_column(name):
    m = re.fullmatch(r"f(0|[1-9][0-9]*)", name)
    assert m, f"not an fN name: {name}"
    return int(m.group(1))


# ---- models and data -------------------------------------------------------------------------

def base_margin_of(model) -> float:
    """treescore's base margin of an XGBoost JSON model (info prints it with %.17g)."""
    p = H.run_cli(["info", "-m", model])
    assert p.returncode == 0, p.stderr
    return float(re.search(r"^base score:\s+(\S+)", p.stdout, re.M).group(1))


@pytest.fixture(scope="session")
def dump_case(workdir):
    cases = {}

    def get(name):
        if name not in cases:
            path, booster, trees = M.xgboost_model(name)
            Xb = M.score_base(include_inf=False)
            Xt, _ = H.threshold_rows(trees, Xb, seed=7, max_nodes=800, extra_values=(np.nan,))
            X = np.vstack([Xb, Xt]).astype(np.float32)
            raw = workdir / f"dump-{name}.f32"
            H.letor_gen.write_raw(raw, X)
            texts = booster.get_dump(dump_format="json")
            dump = [json.loads(t) for t in texts]
            files = {}
            files["list"] = workdir / f"dump-{name}.json"
            files["list"].write_text("[\n" + ",\n".join(texts) + "\n]\n")
            files["strings"] = workdir / f"dump-{name}-strings.json"
            files["strings"].write_text(json.dumps(texts))
            files["es-ltr"] = workdir / f"dump-{name}-es.json"
            files["es-ltr"].write_text(json.dumps({"objective": "reg:linear", "splits": dump}))
            json_scores = H.score(path, raw, X.shape[0], "naive")
            cases[name] = dict(model=path, booster=booster, trees=trees, X=X, raw=raw, dump=dump, files=files,
                               base=base_margin_of(path), json_scores=json_scores)
        return cases[name]

    return get


@pytest.mark.parametrize("variant", VARIANTS)
def test_dump_scores_exactly(dump_case, variant, engine):
    c = dump_case(variant)
    n = c["X"].shape[0]
    ours = H.score(c["files"]["list"], c["raw"], n, engine)
    H.assert_exact(ours, walk_dump(c["dump"], c["X"], f_column), c["X"], what=f"{variant} dump vs walker")
    with_base = H.score(c["files"]["list"], c["raw"], n, engine, "--base-score", repr(c["base"]))
    H.assert_exact(with_base, c["json_scores"], c["X"], what=f"{variant} dump + base vs the JSON model")
    ref = M.xgboost_margin(c["booster"], c["X"])
    bound = H.xgb_float32_error_bound(c["trees"], c["X"], c["base"], ref)
    H.assert_within(with_base, ref, 1.01 * bound + 1e-15 * np.maximum(1.0, np.abs(ref)), c["X"],
                    what=f"{variant} dump + base vs XGBoost's margin")


@pytest.mark.parametrize("form", ["strings", "es-ltr"])
def test_dump_forms(dump_case, form, engine):
    c = dump_case(VARIANTS[0])
    ours = H.score(c["files"][form], c["raw"], c["X"].shape[0], engine)
    H.assert_exact(ours, walk_dump(c["dump"], c["X"], f_column), c["X"], what=f"{form} dump vs walker")


def test_dump_info(dump_case):
    c = dump_case(VARIANTS[0])
    p = H.run_cli(["info", "-m", c["files"]["es-ltr"]])
    assert p.returncode == 0, p.stderr
    assert re.search(r"^format:\s+xgboost-dump$", p.stdout, re.M), p.stdout
    assert re.search(r"^objective:\s+reg:linear$", p.stdout, re.M), p.stdout
    assert re.search(r"^base score:\s+0$", p.stdout, re.M), p.stdout
    assert "column numbers" in p.stdout, p.stdout


# ---- feature names ---------------------------------------------------------------------------

NAMED = ["bm25 title"] + [f"feat_{j}" for j in range(1, M.N_FEATURES)]


def _train_named(path):
    import xgboost as xgb
    d = M.train_data(True)
    dm = xgb.DMatrix(d.X, label=d.y.astype(np.float32), missing=np.nan, feature_names=NAMED)
    params = dict(objective="reg:squarederror", tree_method="hist", max_depth=5, nthread=2, seed=1)
    xgb.train(params, dm, num_boost_round=20).save_model(str(path))


def write_csv_named(path, X, names):
    with open(path, "w") as f:
        f.write(",".join(names) + "\n")
        for row in X:
            f.write(",".join(H.fmt_f32(v) for v in row) + "\n")


@pytest.fixture(scope="session")
def named_case(workdir):
    import xgboost as xgb
    path = H.cached_file("xgb-named", ".json", _train_named, names=NAMED, rounds=20, depth=5, train=M.TRAIN_SPEC)
    booster = xgb.Booster(model_file=str(path))
    texts = booster.get_dump(dump_format="json")
    assert any('"split": "bm25 title"' in t or '"split": "feat_' in t for t in texts)
    dump_file = workdir / "named-dump.json"
    dump_file.write_text("[" + ",".join(texts) + "]")
    X = M.score_base(include_inf=False)[:400]
    perm = np.random.default_rng(11).permutation(M.N_FEATURES)
    files = dict(dump=dump_file)
    files["csv"] = workdir / "named.csv"
    write_csv_named(files["csv"], X, NAMED)
    files["csv_perm"] = workdir / "named-perm.csv"
    write_csv_named(files["csv_perm"], X[:, perm], [NAMED[p] for p in perm])
    files["raw_perm"] = workdir / "named-perm.f32"
    H.letor_gen.write_raw(files["raw_perm"], X[:, perm])
    files["names_perm"] = workdir / "named-perm.txt"
    files["names_perm"].write_text("".join(NAMED[p] + "\n" for p in perm))
    ref = walk_dump([json.loads(t) for t in texts], X, NAMED.index)
    return dict(X=X, files=files, ref=ref, booster=booster)


@pytest.mark.parametrize("how", ["header", "header_permuted", "feature_names_file"])
def test_dump_feature_names(named_case, how, engine):
    c = named_case
    f = c["files"]
    n = c["X"].shape[0]
    if how == "header":
        ours = H.score(f["dump"], f["csv"], n, engine)
    elif how == "header_permuted":
        ours = H.score(f["dump"], f["csv_perm"], n, engine)
    else:
        ours = H.score(f["dump"], f["raw_perm"], n, engine, "--feature-names", f["names_perm"])
    H.assert_exact(ours, c["ref"], c["X"], what=f"named dump ({how}) vs walker")


def test_dump_feature_names_match_xgboost(named_case):
    import xgboost as xgb
    c = named_case
    margin = c["booster"].predict(xgb.DMatrix(c["X"], missing=np.nan, feature_names=NAMED), output_margin=True)
    base = base_margin_of(H.cached_file("xgb-named", ".json", _train_named, names=NAMED, rounds=20, depth=5,
                                        train=M.TRAIN_SPEC))
    ours = H.score(c["files"]["dump"], c["files"]["csv_perm"], c["X"].shape[0], "naive", "--base-score", repr(base))
    H.assert_close(ours, np.asarray(margin, dtype=np.float64), 1e-5, c["X"], what="named dump + base vs XGBoost")


def test_dump_feature_mapping_in_info(named_case):
    f = named_case["files"]
    p = H.run_cli(["info", "-m", f["dump"]])
    assert p.returncode == 0 and "order of first use" in p.stdout, p.stdout + p.stderr
    p = H.run_cli(["info", "-m", f["dump"], "--feature-names", f["names_perm"]])
    assert p.returncode == 0 and "--feature-names" not in p.stderr and "named-perm.txt" in p.stdout, p.stdout


def test_dump_names_matching_no_column(named_case, workdir):
    f = named_case["files"]
    names = workdir / "wrong-names.txt"
    names.write_text("".join(("bm25 body" if n == "bm25 title" else n) + "\n" for n in NAMED))
    p = H.run_cli(["score", "-m", f["dump"], "-d", f["raw_perm"], "--feature-names", names])
    assert p.returncode == 1 and "'bm25 title'" in p.stderr and "named-dump.json" in p.stderr, p.stderr
    csv = workdir / "wrong-header.csv"
    lines = f["csv"].read_text().splitlines(True)
    csv.write_text(lines[0].replace("bm25 title", "bm25 body") + "".join(lines[1:]))
    p = H.run_cli(["score", "-m", f["dump"], "-d", csv])
    assert p.returncode == 1 and "'bm25 title'" in p.stderr and "wrong-header.csv" in p.stderr, p.stderr
    assert p.stdout == ""


# ---- hand-written dumps ---------------------------------------------------------------------

HAND = [
    # children listed "no" first; missing absent (NaN goes to "no"); ids not in order
    {"nodeid": 0, "split": "f2", "split_condition": 0.5, "yes": 7, "no": 3, "children": [
        {"nodeid": 3, "split": "f0", "split_condition": -1.25, "yes": 4, "no": 5, "missing": 4, "children": [
            {"nodeid": 4, "leaf": 0.125}, {"nodeid": 5, "leaf": -2.5}]},
        {"nodeid": 7, "leaf": 1.0e-3}]},
    {"nodeid": 0, "leaf": 0.3},
    {"nodeid": 0, "depth": 0, "split": "f1", "split_condition": 3.4028235e38, "yes": 1, "no": 2, "missing": 2,
     "gain": 1.5, "cover": 10, "children": [{"nodeid": 1, "leaf": 7}, {"nodeid": 2, "leaf": -7}]},
]


def test_hand_written_dump(workdir, engine):
    vals = np.array([np.nan, -np.inf, -1.25, np.nextafter(np.float32(-1.25), np.float32(0)), 0.0, 0.5,
                     np.nextafter(np.float32(0.5), np.float32(0)), 3.4028235e38, np.inf], dtype=np.float32)
    grid = np.array(np.meshgrid(vals, vals, vals, indexing="ij")).reshape(3, -1).T.astype(np.float32)
    raw = workdir / "hand.f32"
    H.letor_gen.write_raw(raw, grid)
    model = workdir / "hand-dump.json"
    model.write_text(json.dumps({"splits": HAND}))
    ours = H.score(model, raw, grid.shape[0], engine, "--base-score", "0.75")
    H.assert_exact(ours, walk_dump(HAND, grid, f_column, base=0.75), grid, what="hand-written dump vs walker")


# ---- UBJSON ----------------------------------------------------------------------------------

@pytest.fixture(scope="session")
def ubj_model():
    def get(name):
        import xgboost as xgb
        path, _, _ = M.xgboost_model(name)
        return H.cached_file(f"xgb-{name}", ".ubj", lambda p: xgb.Booster(model_file=str(path)).save_model(str(p)),
                             source=path.name)
    return get


@pytest.mark.parametrize("variant", VARIANTS)
def test_ubjson_scores_like_json(dump_case, ubj_model, variant, engine):
    c = dump_case(variant)
    ubj = ubj_model(variant)
    assert ubj.read_bytes()[:2] == b"{L", "XGBoost wrote no UBJSON?"
    ours = H.score(ubj, c["raw"], c["X"].shape[0], engine)
    H.assert_exact(ours, c["json_scores"], c["X"], what=f"{variant} UBJSON vs JSON")


def test_ubjson_info(ubj_model):
    p = H.run_cli(["info", "-m", ubj_model(VARIANTS[1])])
    assert p.returncode == 0, p.stderr
    assert re.search(r"^format:\s+xgboost-ubjson$", p.stdout, re.M), p.stdout
    assert re.search(r"^objective:\s+binary:logistic$", p.stdout, re.M), p.stdout


@pytest.mark.parametrize("cut", [1, 2, 40, 1000, -1])
def test_ubjson_truncated(ubj_model, dump_case, workdir, cut):
    data = ubj_model(VARIANTS[0]).read_bytes()
    bad = workdir / f"truncated-{cut}.ubj"
    bad.write_bytes(data[:cut] if cut > 0 else data[:len(data) // 2])
    p = H.run_cli(["score", "-m", bad, "-d", dump_case(VARIANTS[0])["raw"], "--model-format", "ubjson"])
    assert p.returncode == 1, p.stderr
    assert bad.name in p.stderr and ("truncated" in p.stderr or "not an XGBoost UBJSON" in p.stderr), p.stderr
    assert p.stdout == ""


# ---- CLI options -----------------------------------------------------------------------------

def test_cli_option_errors(named_case, workdir):
    f = named_case["files"]
    p = H.run_cli(["score", "-m", f["dump"], "-d", f["csv"], "--base-score", "nan"])
    assert p.returncode == 2 and "--base-score" in p.stderr, p.stderr
    p = H.run_cli(["score", "-m", f["dump"], "-d", f["csv"], "--feature-names", workdir / "absent.txt"])
    assert p.returncode == 1 and "absent.txt" in p.stderr, p.stderr
    empty_line = workdir / "empty-line.txt"
    empty_line.write_text("bm25 title\n\nfeat_2\n")
    p = H.run_cli(["score", "-m", f["dump"], "-d", f["csv"], "--feature-names", empty_line])
    assert p.returncode == 1 and "line 2 is empty" in p.stderr, p.stderr
    # a model whose splits give column numbers has no names to map
    numbered = workdir / "numbered-dump.json"
    numbered.write_text(json.dumps([{"nodeid": 0, "leaf": 1.5}]))
    p = H.run_cli(["score", "-m", numbered, "-d", f["raw_perm"], "--feature-names", f["names_perm"]])
    assert p.returncode == 1 and "no feature names" in p.stderr, p.stderr


def test_warning_when_names_stay_unmapped(named_case):
    f = named_case["files"]
    p = H.run_cli(["score", "-m", f["dump"], "-d", f["raw_perm"]])
    assert p.returncode == 0 and "order of first use" in p.stderr, p.stderr
