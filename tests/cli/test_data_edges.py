"""test_data_edges.py: the ninth adversarial pass: CSV header detection, query files beside the data, standard input twice."""
import pytest

from cli_helpers import EXAMPLE, MODELS

XGB5 = MODELS / "xgb_small_logistic.json"  # 5 features, no feature names
LGB = EXAMPLE / "model.txt"


def _rows(n):
    return [f"{0.1 * i:.2f},{0.5 + i},{i % 3}.25,{2.5 * i},{i}.75" for i in range(1, n + 1)]


# ---- CSV: a first row that mixes numbers and text ----------------------------------------

@pytest.mark.parametrize("marker", ["?", "NULL", "None", "#N/A", "x"])
def test_csv_first_row_with_a_bad_value_is_not_dropped_as_a_header(ts, tmp_path, marker):
    """A first data row with one odd field (an unknown missing marker, a typo) was taken for
    a header and dropped: n - 1 scores for n rows, exit 0, every score on the wrong line."""
    rows = _rows(4)
    fields = rows[0].split(",")
    fields[2] = marker
    rows[0] = ",".join(fields)
    data = tmp_path / "d.csv"
    data.write_text("\n".join(rows) + "\n")
    out = tmp_path / "out.txt"
    r = ts.fails("score", "-m", XGB5, "-d", data, "-o", out, mentions=[data], line=1, out=out)
    assert "--header" in r.stderr and "--no-header" in r.stderr, r
    assert marker in r.stderr, r


def test_csv_first_row_of_whole_numbers_with_a_bad_value_is_not_dropped(ts, tmp_path):
    """Count data: '3,1,?,0,2' has no fraction but is no header either."""
    data = tmp_path / "d.csv"
    data.write_text("3,1,?,0,2\n1,2,3,4,5\n2,2,2,2,2\n")
    out = tmp_path / "out.txt"
    r = ts.fails("score", "-m", XGB5, "-d", data, "-o", out, mentions=[data], line=1, out=out)
    assert "--no-header" in r.stderr, r


@pytest.mark.parametrize("header", ["0,1,2,3,4,y", "y,0,1,2,3,4", "y,1,2,3,4,5", "id,f1,f2,f3,f4,f5"])
def test_csv_header_with_integer_names_is_still_a_header(ts, tmp_path, header):
    """pandas' DataFrame(X) with a label column added: '0,1,2,3,4,y' is a header."""
    data = tmp_path / "d.csv"
    label = header.split(",").index(next(h for h in header.split(",") if h in ("y", "id")))
    rows = [r.split(",") for r in _rows(3)]
    for f in rows:
        f.insert(label, "1")
    data.write_text(header + "\n" + "\n".join(",".join(f) for f in rows) + "\n")
    r = ts.succeeds("score", "-m", XGB5, "-d", data, "--label-column", str(label), "--quiet")
    assert len(r.stdout.split()) == 3, r


def test_csv_text_header_still_detected(ts, tmp_path):
    data = tmp_path / "d.csv"
    data.write_text("a,b,c,d,e\n" + "\n".join(_rows(3)) + "\n")
    r = ts.succeeds("score", "-m", XGB5, "-d", data, "--quiet")
    assert len(r.stdout.split()) == 3, r


def test_csv_mixed_first_row_is_scored_with_no_header(ts, tmp_path):
    """--no-header says which: the row is then an error of its own (a bad value)."""
    rows = _rows(3)
    good = tmp_path / "g.csv"
    good.write_text("\n".join(rows) + "\n")
    ref = ts.succeeds("score", "-m", XGB5, "-d", good, "--quiet").stdout.split()
    mixed = tmp_path / "m.csv"
    mixed.write_text("h1,0.5,h3,h4,h5\n" + "\n".join(rows) + "\n")
    assert ts.succeeds("score", "-m", XGB5, "-d", mixed, "--header", "--quiet").stdout.split() == ref
    ts.fails("score", "-m", XGB5, "-d", mixed, "--no-header", mentions=[mixed], line=1)


# ---- rank: DATA.query is an input too -----------------------------------------------------

def test_rank_output_onto_the_query_file_beside_the_data_is_refused(ts, tmp_path):
    """rank reads DATA.query when -q is not given; -o DATA.query replaced it with the ranking."""
    lines = (EXAMPLE / "rank.test").read_text().splitlines()[:20]
    data = tmp_path / "r.svm"
    data.write_text("\n".join(lines) + "\n")
    query = tmp_path / "r.svm.query"
    query.write_text("5\n15\n")
    r = ts.fails("rank", "-m", LGB, "-d", data, "-o", query)
    assert "query file" in r.stderr, r
    assert query.read_text() == "5\n15\n"


# ---- standard input given twice ------------------------------------------------------------

@pytest.mark.parametrize("cmd", ["score", "rank"])
def test_data_and_query_file_both_from_standard_input_is_a_usage_error(ts, tmp_path, cmd):
    """-d - -q -: the query file read the same stream: 'query sizes add up to 0 rows'."""
    r = ts.fails(cmd, "-m", LGB, "-d", "-", "-q", "-", status=2)
    assert "standard input" in r.stderr, r


# ---- query files ---------------------------------------------------------------------------

def test_query_file_with_a_utf8_bom(ts, tmp_path):
    """The data and --feature-names files skip a UTF-8 byte order mark; the query file refused it."""
    lines = (EXAMPLE / "rank.test").read_text().splitlines()[:20]
    data = tmp_path / "r.svm"
    data.write_text("\n".join(lines) + "\n")
    q = tmp_path / "q"
    q.write_text("5\n15\n")
    qb = tmp_path / "qb"
    qb.write_bytes(b"\xef\xbb\xbf5\r\n15\r\n")
    ref = ts.succeeds("rank", "-m", LGB, "-d", data, "-q", q, "--quiet").stdout
    assert ts.succeeds("rank", "-m", LGB, "-d", data, "-q", qb, "--quiet").stdout == ref


def test_query_sizes_that_wrap_past_2_64_are_refused(ts, tmp_path):
    """Sizes whose sum wraps around 2^64 back to the row count passed the check."""
    lines = (EXAMPLE / "rank.test").read_text().splitlines()[:20]
    data = tmp_path / "r.svm"
    data.write_text("\n".join(lines) + "\n")
    q = tmp_path / "q"
    big = 2 ** 63
    q.write_text(f"5\n15\n{big}\n{big}\n")
    ts.fails("score", "-m", LGB, "-d", data, "-q", q, mentions=[q])


# ---- CSV/TSV read with the wrong separator -------------------------------------------------

@pytest.mark.parametrize("name,text", [("semi.csv", "1;2;3;4;5\n6;7;8;9;10\n"),
                                       ("euro.csv", "0,5;1,5;2,5;3,5;4,5\n1,5;2,5;3,5;4,5;5,5\n"),
                                       ("comma.tsv", "a,b,c,d,e\n1,2,3,4,5\n")])
def test_one_field_lines_name_the_separator(ts, tmp_path, name, text):
    """A ';'-separated file (a European spreadsheet's CSV) or a CSV named .tsv failed with
    'bad value '6;7;8;9;10' in column 0 ('1;2;3;4;5')', nothing said the separator."""
    data = tmp_path / name
    data.write_text(text)
    r = ts.fails("score", "-m", XGB5, "-d", data, mentions=[data], line=1 if name == "euro.csv" else 2)
    assert "separator" in r.stderr, r


# ---- closed standard descriptors -----------------------------------------------------------

def test_closed_stderr_does_not_write_warnings_into_the_output(ts, tmp_path):
    """With stderr closed (2>&-) and the data on standard input, the output file took
    descriptor 2: a warning (here a bad TREESCORE_PLAN) became the file's first line."""
    import subprocess
    lines = (EXAMPLE / "rank.test").read_text().splitlines()[:20]
    data = tmp_path / "r.svm"
    data.write_text("\n".join(lines) + "\n")
    ref = ts.succeeds("score", "-m", LGB, "-d", data, "--quiet").stdout
    out = tmp_path / "out.txt"
    cmd = f'"{ts.path}" score -m "{LGB}" -d - -o "{out}" --quiet < "{data}" 2>&-'
    p = subprocess.run(["sh", "-c", cmd], env=dict(TREESCORE_PLAN="bogus", PATH="/usr/bin:/bin", LC_ALL="C"),
                       timeout=60)
    assert p.returncode == 0
    assert out.read_text() == ref


def test_closed_stdin_is_a_read_error(ts, tmp_path):
    """-d - with standard input closed (<&-) is an error, as for cat, not an empty input."""
    import subprocess
    p = subprocess.run(["sh", "-c", f'"{ts.path}" score -m "{LGB}" -d - <&-'], capture_output=True, timeout=60)
    assert p.returncode == 1 and b"<stdin>" in p.stderr, p


# ---- --one-based with models whose feature ids count from 1 ---------------------------------

@pytest.mark.parametrize("model", ["msn_lambdamart_10trees_quickrank.xml", "rankeval_quickrank.model.xml"])
@pytest.mark.parametrize("cmd", ["score", "rank"])
def test_one_based_with_a_quickrank_model_is_refused(ts, tmp_path, model, cmd):
    """A QuickRank (or RankLib) model's feature k reads SVMlight id k, both counting from 1 as
    in LETOR files; --one-based moved id k to column k - 1, which the model reads as
    feature k - 1: every feature shifted by one, scores silently wrong."""
    data = tmp_path / "d.svm"
    data.write_text("".join(f"{i % 3} qid:1 1:{i * 0.1:.2f} 2:{i * 0.3:.2f} 3:0.5 8:{i}\n" for i in range(1, 6)))
    out = tmp_path / "out.txt"
    r = ts.fails(cmd, "-m", MODELS / model, "-d", data, "--one-based", "-o", out, mentions=[model], out=out)
    assert "--one-based" in r.stderr, r
    ts.succeeds(cmd, "-m", MODELS / model, "-d", data, "--quiet")


# ---- signals that end the run leave no temporary output -----------------------------------

def test_sigpipe_on_stderr_leaves_no_temporary_output(ts, tmp_path):
    """stderr a pipe nobody reads any more (a dead log reader, '2>&1 | head'): the first
    warning's SIGPIPE ended the run and left OUT.tmp.XXXXXX beside -o's file."""
    import os
    import subprocess
    lines = (EXAMPLE / "rank.test").read_text().splitlines()[:20]
    d = tmp_path / "dir"
    d.mkdir()
    data = d / "r.svm"
    data.write_text("\n".join(lines) + "\n")
    r, w = os.pipe()
    os.close(r)
    try:
        p = subprocess.run([str(ts.path), "score", "-m", str(LGB), "-d", str(data), "-o", str(d / "out.txt")],
                           stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=w, timeout=60,
                           env=dict(os.environ, TREESCORE_PLAN="bogus", LC_ALL="C"))
    finally:
        os.close(w)
    assert p.returncode in (0, -13), p
    assert sorted(x.name for x in d.iterdir()) in (["r.svm"], ["out.txt", "r.svm"]), list(d.iterdir())


def test_file_size_limit_leaves_no_temporary_output(ts, tmp_path):
    """ulimit -f: SIGXFSZ ended the run inside a write and left OUT.tmp.XXXXXX behind."""
    import subprocess
    d = tmp_path / "dir"
    d.mkdir()
    data = d / "r.svm"
    data.write_text("".join(f"{i % 3} qid:{i // 50} 1:{i * 0.01:.3f} 7:{i % 17}\n" for i in range(20000)))
    cmd = f'ulimit -f 8; exec "{ts.path}" score -m "{LGB}" -d "{data}" -o "{d / "out.txt"}" --quiet'
    p = subprocess.run(["bash", "-c", cmd], capture_output=True, timeout=60)
    assert p.returncode != 0, p
    assert sorted(x.name for x in d.iterdir()) == ["r.svm"], list(d.iterdir())


# ---- --feature-names against the width of CSV/TSV/raw data ----------------------------------

def test_feature_names_count_must_match_the_csv_columns(ts, tmp_path):
    """--feature-names lists one name per data column; a CSV with one column more (an id in
    front) was scored with the id read as the first feature and the last column dropped,
    exit 0 (without --feature-names the same file is refused for its width)."""
    model = MODELS / "lgb_small_lambdarank.txt"  # 5 features, named Column_0..Column_4
    names = tmp_path / "names.txt"
    names.write_text("".join(f"Column_{j}\n" for j in range(5)))
    data = tmp_path / "id.csv"
    data.write_text("id,a,b,c,d,e\n7,0.1,0.2,0.3,0.4,0.5\n8,0.5,0.4,0.3,0.2,0.1\n")
    out = tmp_path / "out.txt"
    r = ts.fails("score", "-m", model, "-d", data, "--feature-names", names, "-o", out, mentions=[data, names],
                 out=out)
    assert "6" in r.stderr and "5" in r.stderr, r
    ok = tmp_path / "ok.csv"
    ok.write_text("a,b,c,d,e\n0.1,0.2,0.3,0.4,0.5\n")
    ts.succeeds("score", "-m", model, "-d", ok, "--feature-names", names, "--no-name-check", "--quiet")


# ---- rank: a qid that comes back -----------------------------------------------------------

def test_rank_warns_when_a_qid_comes_back(ts, tmp_path):
    """Rows of a qid that comes back after other qids form another query (as LightGBM reads
    them); an unsorted file was ranked and its NDCG averaged over split queries with no word."""
    lines = (EXAMPLE / "rank.test").read_text().splitlines()[:9]
    qids = [1, 1, 1, 2, 2, 2, 1, 1, 3]
    data = tmp_path / "r.svm"
    data.write_text("".join(f"{ln.split(' ', 1)[0]} qid:{q} {ln.split(' ', 1)[1]}\n" for ln, q in zip(lines, qids)))
    r = ts.succeeds("rank", "-m", LGB, "-d", data)
    assert "warning" in r.stderr and "qid 1" in r.stderr and "row 7" in r.stderr, r
    assert [ln.split("\t")[0] for ln in r.stdout.splitlines()] == ["1"] * 3 + ["2"] * 3 + ["1"] * 2 + ["3"], r
    assert "4 queries" in r.stderr, r
    ok = tmp_path / "s.svm"
    ok.write_text("".join(f"{ln.split(' ', 1)[0]} qid:{q} {ln.split(' ', 1)[1]}\n"
                          for ln, q in zip(lines, sorted(qids))))
    r = ts.succeeds("rank", "-m", LGB, "-d", ok)
    assert "warning" not in r.stderr, r


@pytest.mark.parametrize("name,sep", [("letor.csv", " "), ("letor.tsv", "\t")])
def test_svmlight_named_csv_or_tsv_says_svmlight(ts, tmp_path, name, sep):
    """An SVMlight/LETOR file named .csv or .tsv failed on its ID:VALUE fields (with the
    --header/--no-header question for the .tsv) and nothing named SVMlight."""
    lines = (EXAMPLE / "rank.test").read_text().splitlines()[:3]
    data = tmp_path / name
    data.write_text("".join(sep.join(ln.split(" ")) + "\n" for ln in lines))
    r = ts.fails("score", "-m", LGB, "-d", data, mentions=[data])
    assert "--format svmlight" in r.stderr, r


@pytest.mark.parametrize("opt", ["-m", "--feature-names"])
def test_model_or_feature_names_from_standard_input_is_a_usage_error(ts, tmp_path, opt):
    """'-m -' (a model piped in) said '-: cannot open: No such file or directory'."""
    args = ["-m", LGB, "--feature-names", "-"] if opt == "--feature-names" else ["-m", "-"]
    r = ts.fails("score", *args, "-d", EXAMPLE / "rank.test", status=2)
    assert "standard input" in r.stderr, r
