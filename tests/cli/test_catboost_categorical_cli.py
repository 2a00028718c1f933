"""test_catboost_categorical_cli.py: a CatBoost model with categorical features scores CSV/TSV rows whose categorical columns hold the categories' text (quoted or not, integers as text, unseen ones), refuses SVMlight rows (numbers only) by name, and scores raw float32 rows of ids."""
import struct
from pathlib import Path

import pytest

MODELS = Path(__file__).resolve().parents[1] / "data" / "models"
CASES = ["cb_small_onehot.cbm", "cb_small_ctr.json"]
# columns of both models: f0 (float), city and level (categorical)
ROWS = [("0.5", "3", "1"), ("0.25", "red", "2"), ("nan", "Oslo", "0"), ("-1.5", "", "7"), ("2", "Atlantis", "-3"),
        ("0", "nan", "NA")]


def write(path, rows, sep=",", header=None):
    lines = ([sep.join(header)] if header else []) + [sep.join(r) for r in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def scores(ts, model, data, *extra):
    return [float(v) for v in ts.succeeds("score", "-m", MODELS / model, "-d", data, *extra).stdout.split()]


@pytest.mark.parametrize("model", CASES)
def test_text_categories_scored(ts, tmp_path, model):
    """CSV and TSV, with and without a header, quoted or not, give the same scores; the
    integer 3 and the quoted string "3" are one category; rank and bench read them too."""
    csv = scores(ts, model, write(tmp_path / "rows.csv", ROWS))
    assert len(csv) == len(ROWS)
    assert scores(ts, model, write(tmp_path / "rows.tsv", ROWS, sep="\t")) == csv
    assert scores(ts, model, write(tmp_path / "h.csv", ROWS, header=("f0", "city", "level"))) == csv
    quoted = [(f, f'"{c}"', f' "{l}" ') for f, c, l in ROWS]
    assert scores(ts, model, write(tmp_path / "q.csv", quoted)) == csv
    # --header forced, and a header detected from the float column alone
    assert scores(ts, model, write(tmp_path / "h2.csv", ROWS, header=("x", "1", "2")), "--header", "--no-name-check") == csv
    assert scores(ts, model, write(tmp_path / "h3.csv", ROWS, header=("x", "1", "2")), "--no-name-check") == csv
    (tmp_path / "rows.query").write_text(f"{len(ROWS)}\n")
    ts.succeeds("rank", "-m", MODELS / model, "-d", tmp_path / "rows.csv", "--query-file", tmp_path / "rows.query",
                "-o", tmp_path / "ranked.txt")
    ts.succeeds("bench", "-m", MODELS / model, "-d", tmp_path / "rows.csv", "--engines", "naive,rapid",
                "--repeat", "1")


@pytest.mark.parametrize("model", CASES)
def test_unseen_categories_like_raw_nan(ts, tmp_path, model):
    """Categories the model never saw score as a NaN id in raw rows (CatBoost's unseen
    category), in every categorical column; commas and doubled quotes inside quotes are
    text."""
    rows = [("0.5", "Atlantis", "12345"), ("0.5", '"El Dorado, ""the"" city"', "-9"), ("0.5", "zzz", "zzz")]
    text = scores(ts, model, write(tmp_path / "u.csv", rows))
    raw = tmp_path / "u.f32"
    write_raw(raw, [[0.5, float("nan"), float("nan")]] * 3)
    assert text == scores(ts, model, raw)


def test_categorical_csv_errors(ts, tmp_path):
    """A bad number in a float column names the file, line and column; an unterminated
    quote the line; SVMlight data and standard input of unnamed format are refused with
    what to do instead."""
    model = MODELS / "cb_small_ctr.json"
    bad = write(tmp_path / "bad.csv", [("0.5", "red", "1"), ("x1", "red", "1")], header=("f0", "city", "level"))
    r = ts.fails("score", "-m", model, "-d", bad, mentions=[bad], line=3)
    assert "bad value 'x1' in column 0 ('f0')" in r.stderr, r
    quote = tmp_path / "quote.csv"
    quote.write_text('0.5,"red,1\n')
    ts.fails("score", "-m", model, "-d", quote, mentions=[quote], line=1)
    svm = tmp_path / "rows.svm"
    svm.write_text("0 0:0.5 1:3 2:1\n")
    out = tmp_path / "out.txt"
    for args in (["-d", svm], ["-d", svm, "--format", "svmlight"]):
        r = ts.fails("score", "-m", model, *args, "-o", out)
        assert "categorical feature" in r.stderr and "SVMlight" in r.stderr and "CSV or TSV" in r.stderr, r
        assert not out.exists()
    r = ts.fails("bench", "-m", model, "-d", svm)
    assert "SVMlight" in r.stderr, r
    r = ts.run("score", "-m", model, "-d", "-")
    assert r.returncode == 1 and "standard input" in r.stderr and "name its format" in r.stderr, r


def write_raw(path, rows):
    """treescore's raw matrix: b"TSRAWF32", u32 version 1, u32 columns, u64 rows, float32 LE."""
    with open(path, "wb") as f:
        f.write(b"TSRAWF32" + struct.pack("<IIQ", 1, len(rows[0]), len(rows)))
        for r in rows:
            f.write(struct.pack(f"<{len(r)}f", *r))


@pytest.mark.parametrize("model", CASES)
def test_raw_ids_scored(ts, tmp_path, model):
    """Raw float32 rows (a program's, holding ids) are scored; the same ids give the same
    scores as the .cbm and JSON forms of the model agree with each other."""
    rows = [[0.5, 0.0, 1.0], [float("nan"), 2.0, 5.0], [1.5, 100.0, -1.0]]
    data = tmp_path / "rows.f32"
    write_raw(data, rows)
    out = ts.succeeds("score", "-m", MODELS / model, "-d", data).stdout.split()
    assert len(out) == 3 and all(float(v) == float(v) for v in out), out
