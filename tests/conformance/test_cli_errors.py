# test_cli_errors.py: bad input to `treescore score` gives a message on stderr and a non-zero exit, never a crash.
"""Error paths of the CLI contract: message on stderr, non-zero exit status (and not a
signal: a negative return code from subprocess means the process crashed)."""

import numpy as np
import pytest

import tshelpers as H
import tsmodels as M


def expect_error(args, *needles):
    p = H.run_cli(args, timeout=60)
    cmd = "treescore " + " ".join(str(a) for a in args)
    assert p.returncode > 0, f"{cmd}: expected an error exit, got status {p.returncode}\nstderr: {p.stderr}"
    assert p.stderr.strip(), f"{cmd}: failed without a message on stderr"
    for n in needles:
        assert str(n) in p.stderr, f"{cmd}: stderr does not mention {n!r}:\n{p.stderr}"


@pytest.fixture(scope="module")
def model():
    return M.lightgbm_model("rank31")[0]


def test_missing_model(workdir):
    raw = workdir / "err-ok.f32"
    H.letor_gen.write_raw(raw, np.zeros((2, M.N_FEATURES), np.float32))
    missing = workdir / "no-such-model.txt"
    expect_error(["score", "-m", missing, "-d", raw], missing.name)


def test_missing_data(model, workdir):
    missing = workdir / "no-such-data.f32"
    expect_error(["score", "-m", model, "-d", missing], missing.name)


def test_too_few_columns(model, workdir):
    raw = workdir / "err-narrow.f32"
    H.letor_gen.write_raw(raw, np.zeros((3, M.N_FEATURES - 5), np.float32))
    expect_error(["score", "-m", model, "-d", raw, "--format", "raw"])


def test_truncated_raw(model, workdir):
    raw = workdir / "err-trunc.f32"
    H.letor_gen.write_raw(raw, np.zeros((4, M.N_FEATURES), np.float32))
    raw.write_bytes(raw.read_bytes()[:-7])
    expect_error(["score", "-m", model, "-d", raw, "--format", "raw"])


def test_bad_engine_name(model, workdir):
    raw = workdir / "err-ok.f32"
    H.letor_gen.write_raw(raw, np.zeros((2, M.N_FEATURES), np.float32))
    expect_error(["score", "-m", model, "-d", raw, "--engine", "no-such-engine"])


def test_garbage_model(workdir):
    bad = workdir / "garbage-model.txt"
    bad.write_text("tree\nversion=v4\nnum_class=1\nTree=0\nnum_leaves=3\nsplit_feature=0 zz\n")
    raw = workdir / "err-ok.f32"
    H.letor_gen.write_raw(raw, np.zeros((2, M.N_FEATURES), np.float32))
    expect_error(["score", "-m", bad, "-d", raw, "--model-format", "lightgbm"], bad.name)


def test_bad_csv_value(model, workdir):
    csv = workdir / "err-bad.csv"
    row = ",".join(["1"] * M.N_FEATURES)
    csv.write_text(row + "\n" + row.replace("1", "1x", 1) + "\n")
    expect_error(["score", "-m", model, "-d", csv, "--format", "csv", "--no-header"], csv.name)
