"""test_zero_rows.py: score and rank on data without rows (an empty file, a header-only CSV) succeed, with a warning on stderr."""
import pytest

EMPTY = [("empty.svm", b"", "svmlight"), ("empty.csv", b"", "csv"), ("empty.txt", b"", "auto"),
         ("header.csv", b"f0,f1,f2\n", "auto"), ("header.csv", b"f0,f1,f2\n", "csv"),
         ("header.tsv", b"f0\tf1\tf2\r\n", "tsv")]


@pytest.mark.parametrize("cmd", ["score", "rank"])
@pytest.mark.parametrize("name,content,fmt", EMPTY)
def test_no_rows_warns_and_succeeds(ts, lgb_model, tmp_path, cmd, name, content, fmt):
    data = tmp_path / name
    data.write_bytes(content)
    out = tmp_path / "out.txt"
    extra = ["--header"] if content and fmt != "auto" else []
    r = ts.succeeds(cmd, "-m", lgb_model, "-d", data, "--format", fmt, *extra, "-o", out)
    assert "warning" in r.stderr and "no rows" in r.stderr and name in r.stderr, r
    assert out.read_bytes() == b""
    # --quiet silences progress, not warnings; without -o nothing reaches stdout
    r = ts.succeeds(cmd, "-m", lgb_model, "-d", data, "--format", fmt, *extra, "--quiet")
    assert r.stdout == "" and "no rows" in r.stderr, r


def test_rows_give_no_warning(ts, lgb_model, tmp_path):
    data = tmp_path / "one.svm"
    data.write_text("1 qid:1 1:0.5 5:2\n")
    for cmd in ("score", "rank"):
        r = ts.succeeds(cmd, "-m", lgb_model, "-d", data)
        assert "no rows" not in r.stderr, r
