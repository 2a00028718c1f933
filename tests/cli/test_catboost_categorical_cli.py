"""test_catboost_categorical_cli.py: a CatBoost model with categorical features is refused on text data (whose categories the readers cannot map to the model's ids: no silent wrong scores) and scored from raw float32 rows of ids."""
import struct
from pathlib import Path

import pytest

MODELS = Path(__file__).resolve().parents[1] / "data" / "models"
CASES = ["cb_small_onehot.cbm", "cb_small_ctr.json"]


@pytest.mark.parametrize("model", CASES)
@pytest.mark.parametrize("cmd", ["score", "rank", "bench"])
def test_text_data_refused(ts, tmp_path, model, cmd):
    data = tmp_path / "rows.csv"
    data.write_text("0.5,3,1\n0.25,red,2\n")
    out = tmp_path / "out.txt"
    args = [cmd, "-m", MODELS / model, "-d", data]
    if cmd != "bench":
        args += ["-o", out]
    r = ts.fails(*args)
    assert "categorical feature" in r.stderr and "ts_model_category_id" in r.stderr, r
    assert not out.exists() or out.read_bytes() == b""


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
