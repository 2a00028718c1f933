"""test_bad_input.py: the treescore CLI on broken, truncated, empty, huge and missing inputs."""
import random
import re
import struct

import pytest
from pathlib import Path

from cli_helpers import EXAMPLE, MODELS, write_svmlight_ok

LGB_FEATURES = 136  # rankeval_LightGBM.model.txt: max_feature_idx=135
REAL_MODELS = sorted(p.name for p in MODELS.iterdir() if p.is_file())


# ---- baseline: the inputs the bad ones are made from are good ---------------------------

def test_baseline_score_ok(ts, lgb_model, tmp_path):
    data = write_svmlight_ok(tmp_path / "ok.svm", 20)
    r = ts.succeeds("score", "-m", lgb_model, "-d", data)
    lines = r.stdout.split()
    assert len(lines) == 20, r
    [float(x) for x in lines]
    out = tmp_path / "out.txt"
    ts.succeeds("score", "-m", lgb_model, "-d", data, "-o", out)
    assert out.read_text().split() == lines


@pytest.mark.parametrize("name", REAL_MODELS)
def test_baseline_info_ok(ts, name):
    r = ts.succeeds("info", "-m", MODELS / name)
    assert r.stdout.strip(), r


# ---- truncated models -------------------------------------------------------------------

def strict_regions(data, kind):
    """Byte ranges [a, b) where any cut must make the model invalid: inside a LightGBM
    tree block before its leaf_value line (required field lost), anywhere before the last
    </tree> of QuickRank XML (unclosed elements), anywhere before the final '}' of JSON."""
    if kind == "lightgbm":
        regions = []
        for m in re.finditer(rb"^Tree=\d+\r?\n", data, re.M):
            lv = data.find(b"\nleaf_value=", m.end())
            if lv > 0:
                regions.append((m.start() + 6, lv + 1))
        return regions
    if kind == "quickrank":
        return [(data.index(b"<") + 1, data.rindex(b"</tree>"))]
    if kind == "catboost":  # "CBM1", a size, the FlatBuffers core: any cut loses part of it
        return [(1, len(data))]
    return [(1, len(data.rstrip()) - 1)]


def cut_offsets(regions, n=10):
    """n offsets spread evenly over the union of the regions."""
    points = [p for a, b in regions for p in range(a, b)]
    assert points, "no region to cut in"
    step = max(1, len(points) // n)
    return sorted(set(points[i] for i in range(step // 2, len(points), step)))[:n]


def kind_of(path):
    return {".txt": "lightgbm", ".xml": "quickrank", ".json": "xgboost", ".cbm": "catboost"}[path.suffix]


def check_truncations(ts, model, tmp_path):
    data = model.read_bytes()
    kind = kind_of(model)
    problems = []
    strict = cut_offsets(strict_regions(data, kind))
    lenient = [1, len(data) // 50, len(data) - 2]  # may or may not still be a valid model
    for off in strict + [o for o in lenient if o not in strict]:
        path = tmp_path / f"cut{off}_{model.name}"
        path.write_bytes(data[:off])
        r = ts.run("info", "-m", path)  # run() already rejects signals, hangs, sanitizer reports
        if off not in strict and r.returncode == 0:
            continue
        if r.returncode != 1:
            problems.append(f"cut at {off}: exit {r.returncode}")
        elif kind == "catboost" and not re.search(re.escape(path.name) + r"(:\d+)?: ", r.stderr):  # binary: no lines
            problems.append(f"cut at {off}: message lacks '{path.name}: ': {r.stderr.strip()!r}")
        elif kind != "catboost" and not re.search(re.escape(path.name) + r":\d+", r.stderr):
            problems.append(f"cut at {off}: message lacks '{path.name}:LINE': {r.stderr.strip()!r}")
    assert not problems, f"{model.name} ({len(data)} bytes):\n" + "\n".join(problems)


@pytest.mark.parametrize("name", REAL_MODELS)
def test_truncated_real_models(ts, name, tmp_path):
    check_truncations(ts, MODELS / name, tmp_path)


def test_truncated_trained_lightgbm(ts, trained_lgb_model, tmp_path):
    check_truncations(ts, trained_lgb_model, tmp_path)


@pytest.fixture(scope="module")
def trained_xgb_model(tmp_path_factory):
    """A small XGBoost ranking model saved as JSON (3 trees of depth 2, missing values)."""
    xgb = pytest.importorskip("xgboost")
    np = pytest.importorskip("numpy")
    rng = np.random.default_rng(5)
    X = rng.normal(size=(200, 8))
    X[rng.random(X.shape) < 0.1] = np.nan
    y = (np.nan_to_num(X[:, 1]) > 0).astype(int)
    d = xgb.DMatrix(X, label=y)
    d.set_group([20] * 10)
    booster = xgb.train({"objective": "rank:ndcg", "max_depth": 2, "nthread": 1}, d, 3)
    path = tmp_path_factory.mktemp("xgb") / "trained_xgboost.json"
    booster.save_model(str(path))
    return path


def test_truncated_trained_xgboost(ts, trained_xgb_model, tmp_path):
    check_truncations(ts, trained_xgb_model, tmp_path)


# ---- empty, garbled, binary, wrong-kind models ------------------------------------------

@pytest.mark.parametrize("fmt", ["auto", "lightgbm", "xgboost", "quickrank"])
def test_empty_model(ts, tmp_path, fmt):
    model = tmp_path / "empty_model.txt"
    model.write_bytes(b"")
    ts.fails("info", "-m", model, "--model-format", fmt, mentions=[model])
    out = tmp_path / "out.txt"
    data = write_svmlight_ok(tmp_path / "ok.svm", 3)
    ts.fails("score", "-m", model, "--model-format", fmt, "-d", data, "-o", out, mentions=[model], out=out)


# name -> (content, line of the error or None where no one line is to blame)
GARBLED = {
    "prose.txt": (b"this is not a model\nat all\n", None),
    "lightgbm_bad_split.txt": (b"tree\nversion=v4\nnum_class=1\nnum_tree_per_iteration=1\nlabel_index=0\n"
                               b"max_feature_idx=3\nobjective=regression\n\nTree=0\nnum_leaves=3\n"
                               b"split_feature=a b\nthreshold=1 2\ndecision_type=2 2\nleft_child=1 -1\n"
                               b"right_child=-2 -3\nleaf_value=1 2 3\nshrinkage=1\n\n\nend of trees\n", 11),
    "quickrank_bad_threshold.xml": (b"<ranker>\n<ensemble>\n<tree id=\"1\" weight=\"1\">\n<split>\n"
                                    b"<feature>1</feature>\n<threshold>x</threshold>\n<split pos=\"left\">"
                                    b"<output>1</output></split>\n<split pos=\"right\"><output>2</output>"
                                    b"</split>\n</split>\n</tree>\n</ensemble>\n</ranker>\n", 6),
    "quickrank_unclosed.xml": (b"<ranker><ensemble><tree id=\"1\" weight=\"1\"><split><feature>1"
                               b"</feature><threshold>0.5</threshold><split pos=\"left\"><output>1", 1),
    "json_garbled.json": (b'{"learner":\n {"gradient_booster": [1, 2,, }', 2),
    "nul_bytes.txt": (b"tree\n\x00\x00\x00version=v4\n\x00", None),
}


@pytest.mark.parametrize("name", sorted(GARBLED))
def test_garbled_model(ts, tmp_path, name):
    content, line = GARBLED[name]
    model = tmp_path / name
    model.write_bytes(content)
    ts.fails("info", "-m", model, mentions=[model], line=line)


@pytest.mark.parametrize("fmt", ["auto", "lightgbm", "xgboost", "quickrank"])
def test_random_binary_model(ts, tmp_path, fmt):
    rng = random.Random(12345)
    model = tmp_path / "random.bin"
    model.write_bytes(bytes(rng.randrange(256) for _ in range(8192)))
    ts.fails("info", "-m", model, "--model-format", fmt, mentions=[model])


@pytest.mark.parametrize("text", ['{"name": "not a model", "trees": [1, 2, 3]}', "{}", "[]", '"x"',
                                  '{"learner": {"gradient_booster": {"name": "gbtree"}}}'])
def test_json_that_is_not_xgboost(ts, tmp_path, text):
    model = tmp_path / "other.json"
    model.write_text(text + "\n")
    ts.fails("info", "-m", model, mentions=[model])
    ts.fails("info", "-m", model, "--model-format", "xgboost", mentions=[model])


def test_model_in_wrong_forced_format(ts, lgb_model):
    ts.fails("info", "-m", lgb_model, "--model-format", "xgboost", mentions=[lgb_model])
    ts.fails("info", "-m", lgb_model, "--model-format", "quickrank", mentions=[lgb_model])


# ---- empty data: zero rows is not an error for text formats -----------------------------

@pytest.mark.parametrize("name,fmt", [("empty.svm", "svmlight"), ("empty.txt", "auto"),
                                      ("empty.csv", "csv"), ("empty.csv", "auto"), ("empty.tsv", "tsv")])
def test_empty_text_data_is_zero_rows(ts, lgb_model, tmp_path, name, fmt):
    data = tmp_path / name
    data.write_bytes(b"")
    r = ts.succeeds("score", "-m", lgb_model, "-d", data, "--format", fmt)
    assert r.stdout == "", r
    out = tmp_path / "out.txt"
    ts.succeeds("score", "-m", lgb_model, "-d", data, "--format", fmt, "-o", out)
    assert out.exists() and out.read_bytes() == b""


def test_empty_raw_data_is_an_error(ts, lgb_model, tmp_path):
    data = tmp_path / "empty.f32"
    data.write_bytes(b"")
    out = tmp_path / "out.txt"
    ts.fails("score", "-m", lgb_model, "-d", data, "--format", "raw", "-o", out, mentions=[data], out=out)


# ---- malformed data ---------------------------------------------------------------------

def dense_row(n, value="0.5", sep=","):
    return sep.join([value] * n)


def test_csv_wrong_column_count(ts, lgb_model, tmp_path):
    data = tmp_path / "five.csv"
    data.write_text("\n".join(dense_row(5) for _ in range(3)) + "\n")
    out = tmp_path / "out.txt"
    ts.fails("score", "-m", lgb_model, "-d", data, "--no-header", "-o", out, mentions=[data], out=out)


def test_csv_ragged_row_names_line(ts, lgb_model, tmp_path):
    data = tmp_path / "ragged.csv"
    rows = [dense_row(LGB_FEATURES)] * 2 + [dense_row(LGB_FEATURES - 1)] + [dense_row(LGB_FEATURES)]
    data.write_text("\n".join(rows) + "\n")
    out = tmp_path / "out.txt"
    ts.fails("score", "-m", lgb_model, "-d", data, "--no-header", "-o", out, mentions=[data], line=3, out=out)


def test_csv_bad_number_names_line(ts, lgb_model, tmp_path):
    data = tmp_path / "badnum.csv"
    rows = [dense_row(LGB_FEATURES)] * 4
    rows[1] = "0.5," * (LGB_FEATURES - 1) + "0.5x"
    data.write_text("\n".join(rows) + "\n")
    out = tmp_path / "out.txt"
    ts.fails("score", "-m", lgb_model, "-d", data, "--no-header", "-o", out, mentions=[data], line=2, out=out)


def raw_file(n_rows, n_cols, data_rows=None):
    hdr = b"TSRAWF32" + struct.pack("<IIQ", 1, n_cols, n_rows)
    rows = n_rows if data_rows is None else data_rows
    return hdr + struct.pack("<%df" % int(rows * n_cols), *([0.25] * int(rows * n_cols)))


def test_raw_ok_baseline(ts, lgb_model, tmp_path):
    data = tmp_path / "ok.f32"
    data.write_bytes(raw_file(3, LGB_FEATURES))
    r = ts.succeeds("score", "-m", lgb_model, "-d", data)
    assert len(r.stdout.split()) == 3, r


@pytest.mark.parametrize("cut", ["mid_row", "mid_value", "header"])
def test_raw_truncated(ts, lgb_model, tmp_path, cut):
    full = raw_file(3, LGB_FEATURES)
    end = {"mid_row": 24 + 4 * LGB_FEATURES * 2 + 4 * 10, "mid_value": len(full) - 2, "header": 13}[cut]
    data = tmp_path / "truncated.f32"
    data.write_bytes(full[:end])
    out = tmp_path / "out.txt"
    ts.fails("score", "-m", lgb_model, "-d", data, "-o", out, mentions=[data], out=out)


def test_raw_wrong_column_count(ts, lgb_model, tmp_path):
    data = tmp_path / "narrow.f32"
    data.write_bytes(raw_file(2, 10))
    out = tmp_path / "out.txt"
    ts.fails("score", "-m", lgb_model, "-d", data, "-o", out, mentions=[data], out=out)


def test_raw_bad_magic(ts, lgb_model, tmp_path):
    data = tmp_path / "bad.f32"
    data.write_bytes(b"NOTRAW!!" + raw_file(1, LGB_FEATURES)[8:])
    ts.fails("score", "-m", lgb_model, "-d", data, "--format", "raw", mentions=[data])


def test_svmlight_feature_id_past_model(ts, lgb_model, tmp_path):
    data = write_svmlight_ok(tmp_path / "wide.svm", 6, bad_line=4, bad_text="1 qid:1 3:0.5 500:1.0")
    out = tmp_path / "out.txt"
    ts.fails("score", "-m", lgb_model, "-d", data, "-o", out, mentions=[data], line=4, out=out)


@pytest.mark.parametrize("bad", ["1 qid:1 1:abc", "1 qid:1 1:0.5 1:0.7 :3", "x qid:1 1:0.5",
                                 "1 qid:zz 1:0.5", "1 qid:1 -3:0.5", "1 qid:1 1:0.5 2:"])
def test_svmlight_bad_token_names_line(ts, lgb_model, tmp_path, bad):
    data = write_svmlight_ok(tmp_path / "bad.svm", 5, bad_line=3, bad_text=bad)
    out = tmp_path / "out.txt"
    ts.fails("score", "-m", lgb_model, "-d", data, "-o", out, mentions=[data], line=3, out=out)


def test_random_binary_data(ts, lgb_model, tmp_path):
    rng = random.Random(777)
    data = tmp_path / "random.svm"
    data.write_bytes(bytes(rng.randrange(256) for _ in range(8192)))
    out = tmp_path / "out.txt"
    ts.fails("score", "-m", lgb_model, "-d", data, "-o", out, mentions=[data], line=1, out=out)


LINE_LIMIT_WORDS = re.compile(r"limit|too long|longer than|exceeds", re.I)


def test_svmlight_10mb_line(ts, lgb_model, tmp_path):
    data = tmp_path / "long.svm"
    with open(data, "w") as f:
        f.write("1 qid:1 1:0.5\n0 qid:1")
        chunk = " 1:0.5" * 10000
        while f.tell() < 10 * 1024 * 1024:
            f.write(chunk)
        f.write("\n1 qid:1 2:0.5\n")
    out = tmp_path / "out.txt"
    r = ts.fails("score", "-m", lgb_model, "-d", data, "-o", out, mentions=[data], line=2, out=out)
    assert LINE_LIMIT_WORDS.search(r.stderr), r


def test_csv_10mb_line(ts, lgb_model, tmp_path):
    data = tmp_path / "long.csv"
    with open(data, "w") as f:
        f.write(dense_row(LGB_FEATURES) + "\n")
        chunk = ",0.5" * 10000
        while f.tell() < 10 * 1024 * 1024:
            f.write(chunk)
        f.write("\n" + dense_row(LGB_FEATURES) + "\n")
    out = tmp_path / "out.txt"
    r = ts.fails("score", "-m", lgb_model, "-d", data, "--no-header", "-o", out, mentions=[data], line=2, out=out)
    assert LINE_LIMIT_WORDS.search(r.stderr), r


def test_query_file_mismatch(ts, lgb_model, tmp_path):
    data = write_svmlight_ok(tmp_path / "noqid.svm", 5, qid=False)
    q = tmp_path / "sizes.query"
    q.write_text("2\n2\n")  # 4 rows, the file has 5
    r = ts.fails("rank", "-m", lgb_model, "-d", data, "--query-file", q)
    assert q.name in r.stderr or data.name in r.stderr, r


# ---- missing files, directories ---------------------------------------------------------

def test_nonexistent_model(ts, tmp_path):
    data = write_svmlight_ok(tmp_path / "ok.svm", 2)
    missing = tmp_path / "no_such_model.txt"
    out = tmp_path / "out.txt"
    ts.fails("score", "-m", missing, "-d", data, "-o", out, mentions=[missing], out=out)
    ts.fails("info", "-m", missing, mentions=[missing])
    ts.fails("rank", "-m", missing, "-d", data, mentions=[missing])


def test_nonexistent_data(ts, lgb_model, tmp_path):
    missing = tmp_path / "no_such_data.svm"
    out = tmp_path / "out.txt"
    ts.fails("score", "-m", lgb_model, "-d", missing, "-o", out, mentions=[missing], out=out)
    ts.fails("rank", "-m", lgb_model, "-d", missing, mentions=[missing])


def test_nonexistent_query_file(ts, lgb_model, tmp_path):
    data = write_svmlight_ok(tmp_path / "ok.svm", 2)
    missing = tmp_path / "no_such.query"
    ts.fails("score", "-m", lgb_model, "-d", data, "--query-file", missing, mentions=[missing])


def test_directory_as_model(ts, tmp_path):
    d = tmp_path / "a_directory"
    d.mkdir()
    ts.fails("info", "-m", d, mentions=[d])
    data = write_svmlight_ok(tmp_path / "ok.svm", 2)
    ts.fails("score", "-m", d, "-d", data, mentions=[d])


def test_directory_as_data(ts, lgb_model, tmp_path):
    d = tmp_path / "data_dir"
    d.mkdir()
    out = tmp_path / "out.txt"
    ts.fails("score", "-m", lgb_model, "-d", d, "-o", out, mentions=[d], out=out)


def test_output_in_missing_directory(ts, lgb_model, tmp_path):
    data = write_svmlight_ok(tmp_path / "ok.svm", 2)
    out = tmp_path / "no_dir" / "out.txt"
    ts.fails("score", "-m", lgb_model, "-d", data, "-o", out, mentions=[out], out=out)


# ---- an error deep in a large file: nothing written -------------------------------------

def test_error_midway_leaves_no_output(ts, lgb_model, tmp_path):
    outdir = tmp_path / "outdir"
    outdir.mkdir()
    data = write_svmlight_ok(tmp_path / "big.svm", 10000, bad_line=5000)
    out = outdir / "scores.txt"
    ts.fails("score", "-m", lgb_model, "-d", data, "-o", out, mentions=[data], line=5000, out=out)
    assert list(outdir.iterdir()) == [], "temporary files left behind"


def test_error_midway_keeps_existing_output(ts, lgb_model, tmp_path):
    data = write_svmlight_ok(tmp_path / "big.svm", 10000, bad_line=5000)
    out = tmp_path / "scores.txt"
    out.write_text("precious\n")
    ts.fails("score", "-m", lgb_model, "-d", data, "-o", out, mentions=[data], line=5000)
    assert out.read_text() == "precious\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["big.svm", "scores.txt"]


def test_example_data_past_model_range(ts, lgb_model):
    """data/example/rank.test has feature ids up to 300: past the 136-feature model."""
    ts.fails("score", "-m", lgb_model, "-d", EXAMPLE / "rank.test", mentions=["rank.test"], line=1)


# ---- CSV headers wider than the model, CR-only line endings --------------------------------

def test_header_wider_than_generic_names(ts, tmp_path):
    """A CSV whose header names one column more than a LightGBM model of generic names
    (Column_0 .. Column_4: trained on an array) died of SIGSEGV (strcmp of the model's NULL
    name past its last feature); now the column count is refused, naming both files."""
    model = MODELS / "lgb_small_lambdarank.txt"
    data = tmp_path / "wide.csv"
    data.write_text("a,b,c,d,e,f\n1,2,3,4,5,6\n")
    ts.fails("score", "-m", model, "-d", data, mentions=[data, model])
    ok = tmp_path / "label.csv"
    ok.write_text("Column_0,Column_1,Column_2,Column_3,Column_4,label\n1,2,3,4,5,6\n")
    assert len(ts.succeeds("score", "-m", model, "-d", ok, "--label-column", "5").stdout.split()) == 1


@pytest.mark.parametrize("ext,text", [("csv", "1,2,3,4,5\r1,2,3,4,5\r"), ("svm", "0 1:2\r0 1:3\r")])
def test_cr_only_line_endings(ts, tmp_path, ext, text):
    """Old-Mac CR-only line endings make the whole file one line: a CSV reader took it for
    a header (after the crash above: no rows, status 0); refused, naming the CR. CRLF
    stays accepted."""
    model = MODELS / "lgb_small_lambdarank.txt"
    data = tmp_path / f"cr.{ext}"
    data.write_bytes(text.encode())
    r = ts.fails("score", "-m", model, "-d", data, mentions=[data], line=1)
    assert "carriage return" in r.stderr, r
    crlf = tmp_path / f"crlf.{ext}"
    crlf.write_bytes(text.replace("\r", "\r\n").encode())
    assert len(ts.succeeds("score", "-m", model, "-d", crlf).stdout.split()) == 2


@pytest.mark.parametrize("label,shown", [("1e308", "1e+308"), ("-1", "-1"), ("31", "31"), ("2.5", "2.5")])
def test_ndcg_needs_relevance_grades(ts, tmp_path, label, shown):
    """rank's NDCG (gain 2^label - 1) printed '-nan' for a label of 1e308 and a number
    for -1, 31 or 2.5, which LightGBM's label_gain (integer grades 0 to 30) does not
    take: the ranking is printed and NDCG is 'not computed', naming the row and label."""
    data = tmp_path / "q.svm"
    data.write_text(f"0 qid:1 1:1\n{label} qid:1 1:2\n3 qid:2 1:3\n")
    r = ts.succeeds("rank", "-m", MODELS / "lgb_small_lambdarank.txt", "-d", data)
    assert len(r.stdout.splitlines()) == 3, r
    assert f"not computed (row 2 has label {shown}:" in r.stderr, r
    assert "nan" not in r.stderr, r
    data.write_text("0 qid:1 1:1\n4 qid:1 1:2\n30 qid:2 1:3\n")
    assert "NDCG@10: 1.0000 over 2 queries" in ts.succeeds("rank", "-m", MODELS / "lgb_small_lambdarank.txt",
                                                           "-d", data).stderr


def test_pandas_default_labels_are_a_header(ts, tmp_path):
    """pd.DataFrame(array).to_csv(index=False) writes the header 0,1,2,3,4: detection read
    it as numbers and scored one row too many (51 scores for 50 rows, silently). The
    labels 0..n-1 (n >= 4) are a header; --no-header still scores such a line."""
    model = MODELS / "lgb_small_lambdarank.txt"
    data = tmp_path / "pandas.csv"
    data.write_text("0,1,2,3,4\n" + "0.5,1.5,2.5,3.5,4.5\n" * 3)
    assert len(ts.succeeds("score", "-m", model, "-d", data).stdout.split()) == 3
    assert len(ts.succeeds("score", "-m", model, "-d", data, "--no-header").stdout.split()) == 4
    other = tmp_path / "data.csv"
    other.write_text("0,1,2,4,3\n" + "0.5,1.5,2.5,3.5,4.5\n" * 3)  # not the labels: a row
    assert len(ts.succeeds("score", "-m", model, "-d", other).stdout.split()) == 4


def test_output_never_overwrites_an_input(ts, tmp_path):
    """-o naming the model (options mixed up) replaced the model with its scores; the
    data, the model, the query file and a link to one of them are refused, and stay."""
    model = tmp_path / "model.txt"
    model.write_bytes((MODELS / "lgb_small_lambdarank.txt").read_bytes())
    data = tmp_path / "ok.svm"
    data.write_text("".join(f"{i % 3} qid:1 1:{i * 0.5} 3:{i}\n" for i in range(4)))
    link = tmp_path / "link.txt"
    link.symlink_to(model)
    before = model.read_bytes(), data.read_bytes()
    for out, what in ((model, "the model"), (link, "the model"), (data, "the input data")):
        r = ts.fails("score", "-m", model, "-d", data, "-o", out, mentions=[out])
        assert f"would overwrite {what}" in r.stderr, r
    sizes = tmp_path / "q.txt"
    sizes.write_text("4\n")
    r = ts.fails("rank", "-m", model, "-d", data, "-q", sizes, "-o", sizes, mentions=[sizes])
    assert "would overwrite the query file" in r.stderr, r
    assert (model.read_bytes(), data.read_bytes()) == before and sizes.read_text() == "4\n"
    assert len(ts.succeeds("score", "-m", model, "-d", data, "-o", tmp_path / "s.txt").stdout) == 0
    assert len((tmp_path / "s.txt").read_text().split()) == 4


def test_output_through_a_dangling_link(ts, tmp_path):
    """-o naming a symbolic link whose target does not exist yet replaced the link with a
    regular file (realpath fails on it) and never created the target; the target is now
    created and the link kept, as a shell's '> link' does. An existing link's target is
    written as before."""
    model = MODELS / "lgb_small_lambdarank.txt"
    data = tmp_path / "ok.svm"
    data.write_text("".join(f"{i % 3} qid:1 1:{i * 0.5} 3:{i}\n" for i in range(4)))
    (tmp_path / "t").mkdir()
    link = tmp_path / "link.txt"
    link.symlink_to("t/out.txt")  # relative to the link's directory
    chain = tmp_path / "chain.txt"
    chain.symlink_to(link)  # a link to the dangling link
    want = ts.succeeds("score", "-m", model, "-d", data).stdout
    for out in (link, chain):
        ts.succeeds("score", "-m", model, "-d", data, "-o", out)
        assert link.is_symlink() and chain.is_symlink(), out
        assert (tmp_path / "t" / "out.txt").read_text() == want
        (tmp_path / "t" / "out.txt").unlink()
    loop = tmp_path / "loop.txt"
    loop.symlink_to(loop)
    ts.fails("score", "-m", model, "-d", data, "-o", loop, mentions=[loop])
    assert loop.is_symlink()


def test_output_never_replaces_a_read_only_file(ts):
    """-o naming an existing file the user may not write (mode 0444) replaced it (the
    finished output is renamed into place, which needs only the directory's permission),
    where '> file' fails; it is now refused and the file left as it was. Run as an
    unprivileged user (root may write anything), in a directory it may write."""
    import os
    import shutil
    import subprocess
    import tempfile
    d = Path(tempfile.mkdtemp(prefix="ts-ro-"))
    try:
        d.chmod(0o777)
        model = d / "model.txt"
        shutil.copyfile(MODELS / "lgb_small_lambdarank.txt", model)
        model.chmod(0o644)
        data = d / "ok.svm"
        data.write_text("".join(f"{i % 3} qid:1 1:{i * 0.5} 3:{i}\n" for i in range(4)))
        data.chmod(0o644)
        kept = d / "kept.txt"
        kept.write_text("precious\n")
        kept.chmod(0o444)
        drop = (lambda: (os.setgid(65534), os.setuid(65534))) if os.geteuid() == 0 else None
        r = subprocess.run([str(ts.path), "score", "-m", str(model), "-d", str(data), "-o", str(kept), "-e", "naive"],
                           capture_output=True, text=True, timeout=60, preexec_fn=drop,
                           env=dict(os.environ, HOME=str(d), TREESCORE_CACHE_DIR=str(d / "cache")))
        assert r.returncode == 1 and str(kept) in r.stderr and "ermission denied" in r.stderr, (r.returncode, r.stderr)
        assert kept.read_text() == "precious\n" and (kept.stat().st_mode & 0o777) == 0o444
        assert not [p for p in d.iterdir() if ".tmp." in p.name]
    finally:
        shutil.rmtree(d)


@pytest.mark.parametrize("name,head,what", [
    ("rows.npy", b"\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (3, 5), }\n", "NumPy .npy"),
    ("rows.parquet", b"PAR1\x15\x04\x15\x00\x15", "Parquet"),
    ("rows.svm.gz", b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\x03", "gzip-compressed data"),
    ("rows.zip", b"PK\x03\x04\x14\x00\x00\x00\x08\x00", "a zip archive"),
    ("rows16.csv", b"\xff\xfe" + "0.5,1.5\n".encode("utf-16-le"), "UTF-16")])
def test_binary_data_files_are_named(ts, lgb_model, tmp_path, name, head, what):
    """A NumPy .npy, Parquet or zip file given as DATA failed with 'NUL byte in a text line
    (binary data?)' (or a parse error on its first token): the message now says what the
    file is and what treescore reads instead, as it did for gzip."""
    data = tmp_path / name
    data.write_bytes(head + b"\x00" * 64 + b"\n")
    for fmt in ([], ["--format", "svmlight"], ["--format", "csv"]):
        r = ts.fails("score", "-m", lgb_model, "-d", data, *fmt, mentions=[data])
        assert what in r.stderr, r


def test_rank_ties_small_queries_and_comments(ts, tmp_path):
    """rank at its edges: rows of equal score keep file order (as LightGBM's stable sort
    for NDCG), --top beyond a query's size prints the whole query, a query of one row or of
    zero labels has NDCG 1 (LightGBM's convention). A comment holding a tab (a docid
    copied from a TSV) made its line 7 tab-separated fields instead of the 6 the help
    promises: tabs in comments are printed as spaces now."""
    data = tmp_path / "q.svm"
    # feature 1 is not read by the model's splits on the first rows alike: equal scores
    data.write_text("0 qid:1 1:1 # a\tb\n0 qid:1 1:1 # c\n0 qid:1 1:1 #d\n2 qid:7 1:1\n")
    r = ts.succeeds("rank", "-m", MODELS / "lgb_small_lambdarank.txt", "-d", data, "--top", "50")
    lines = [line.split("\t") for line in r.stdout.splitlines()]
    assert all(len(f) == 6 for f in lines), r
    assert [(f[0], f[1], f[2], f[5]) for f in lines] == [("1", "1", "1", "a b"), ("1", "2", "2", "c"),
                                                         ("1", "3", "3", "d"), ("7", "1", "4", "")], r
    assert len({f[3] for f in lines[:3]}) == 1, r
    assert "NDCG@50: 1.0000 over 2 queries" in r.stderr, r


@pytest.mark.parametrize("text", ["0.5,1.5,2.5,3.5,4.5\n", "a,b,c,d,e\n0.5,1.5,2.5,3.5,4.5\n",
                                  "0.5\t1.5\t2.5\t3.5\t4.5\n"])
def test_csv_read_as_svmlight_says_so(ts, tmp_path, text):
    """CSV or TSV data in a file not named .csv/.tsv (or on standard input) is read as
    SVMlight, the default: the error was "bad label '0.5,1.5,...'" or "expected ID:VALUE,
    got '1.5'", which does not say why the file was read that way. It says so now, and
    the way out; an explicit --format svmlight gets the plain message."""
    model = MODELS / "lgb_small_lambdarank.txt"
    data = tmp_path / "rows.txt"
    data.write_text(text)
    r = ts.fails("score", "-m", model, "-d", data, mentions=[data], line=1)
    assert "read as SVMlight" in r.stderr and "--format csv" in r.stderr, r
    r = ts.fails("score", "-m", model, "-d", data, "--format", "svmlight", mentions=[data], line=1)
    assert "read as SVMlight" not in r.stderr, r
