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
