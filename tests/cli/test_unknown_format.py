"""test_unknown_format.py: a model file of no known format, and an unknown --model-format, are refused with every format named."""
import re

from cli_helpers import REPO

# The canonical names (ts_model_format_name), one per ts_model_format value but auto.
FORMATS = ["lightgbm", "lightgbm-json", "xgboost", "xgboost-ubjson", "xgboost-dump", "quickrank", "ranklib",
           "catboost", "catboost-json", "onnx"]


def test_every_format_is_listed_here():
    """This list covers the enum: a new format must be added here (and to the messages)."""
    header = (REPO / "include" / "treescore.h").read_text()
    count = int(re.search(r"#define TS_FORMAT_COUNT (\d+)", header).group(1))
    assert len(FORMATS) == count - 1


def test_undetected_model_names_every_format(ts, tmp_path):
    model = tmp_path / "mystery.model"
    model.write_text("hello world\n")
    r = ts.fails("info", "-m", model, mentions=[model], line=1)
    assert "unknown model format" in r.stderr, r
    for name in FORMATS:
        assert re.search(rf"\b{re.escape(name)} \(", r.stderr), f"{name} missing: {r!r}"
    assert "UBJSON" in r.stderr and "RankLib" in r.stderr and "CBM1" in r.stderr, r


def test_unknown_model_format_option_names_every_format(ts, lgb_model, tmp_path):
    r = ts.run("score", "-m", lgb_model, "-d", tmp_path / "x.svm", "--model-format", "pmml")
    assert r.returncode == 2 and "unknown model format 'pmml'" in r.stderr, r
    listed = re.search(r"\(([^)]*)\)", r.stderr).group(1)
    for name in FORMATS + ["auto"]:
        assert re.search(rf"(^|, ){re.escape(name)}(,|;|$)", listed), f"{name} missing: {r!r}"


def test_xgboost_text_dump_is_named(ts, tmp_path):
    """get_dump()/dump_model() in the default text format was 'unknown model format' with a list
    of formats, none of which it is: the message now says what it is and what to write instead."""
    model = tmp_path / "dump.txt"
    model.write_text("booster[0]:\n0:[f0<0.5] yes=1,no=2,missing=1\n\t1:leaf=0.1\n\t2:leaf=-0.2\n")
    r = ts.fails("info", "-m", model, mentions=[model], line=1)
    assert "XGBoost text dump" in r.stderr and "dump_format='json'" in r.stderr, r


def test_python_pickle_and_compressed_files_are_named(ts, tmp_path):
    cases = {"model.pkl": (b"\x80\x04\x95\x10\x00\x00\x00\x00\x00\x00\x00", "pickle"),
             "model.txt.gz": (b"\x1f\x8b\x08\x00\x00\x00\x00\x00", "gzip"),
             "model.zip": (b"PK\x03\x04\x14\x00\x00\x00", "zip")}
    for name, (data, what) in cases.items():
        model = tmp_path / name
        model.write_bytes(data + b"\x00" * 32)
        r = ts.fails("info", "-m", model, mentions=[model])
        assert what in r.stderr and "unknown model format" not in r.stderr, r


def test_lightgbm_first_line_with_trailing_blanks(ts, lgb_model, tmp_path):
    """'tree ' (an editor that pads lines) was 'unknown model format' though the message said
    LightGBM files start with 'tree': it is read as LightGBM text now, as 'tree\\r' was."""
    model = tmp_path / "padded.txt"
    text = lgb_model.read_text()
    assert text.startswith("tree\n")
    model.write_text("tree  \t\n" + text[5:])
    assert ts.succeeds("info", "-m", model).stdout == ts.succeeds("info", "-m", lgb_model).stdout.replace(
        str(lgb_model), str(model))


def test_utf16_model_is_named(ts, lgb_model, tmp_path):
    """A LightGBM model re-saved as UTF-16 (Windows Notepad's 'Unicode') was 'unknown model
    format' with the ten formats listed; the message now says it is UTF-16 text."""
    for bom, codec in ((b"\xff\xfe", "utf-16-le"), (b"\xfe\xff", "utf-16-be")):
        model = tmp_path / f"{codec}.txt"
        model.write_bytes(bom + lgb_model.read_text()[:2000].encode(codec))
        r = ts.fails("info", "-m", model, mentions=[model])
        assert "UTF-16" in r.stderr and "UTF-8" in r.stderr and "unknown model format" not in r.stderr, r
