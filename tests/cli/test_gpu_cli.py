"""test_gpu_cli.py: the CLI refuses --engine gpu and gpu-naive cleanly where no CUDA device can run them (a build without CUDA, or no GPU), names the GPU or its absence in `treescore info`, and never lets auto pick a GPU engine; on a GPU machine the same commands must score like naive, bit for bit."""
import re

import pytest

from cli_helpers import LETOR, MODELS

GPU_ENGINES = ["gpu", "gpu-naive"]
MODEL = MODELS / "xgb_small_logistic.json"
# a model that reads LETOR's 46 columns (MODEL has 5: the refusal comes before the data)
LETOR_MODEL = MODELS / "rankeval_LightGBM.model.txt"


def gpu_line(ts):
    r = ts.succeeds("info", "-m", MODEL)
    m = re.search(r"^gpu:\s+(.*)$", r.stdout, re.M)
    assert m, f"treescore info has no 'gpu:' line: {r!r}"
    return m.group(1)


def test_info_names_the_gpu_or_says_none(ts):
    line = gpu_line(ts)
    assert line.strip(), line
    if line.startswith("none"):
        assert "CUDA" in line, line


@pytest.mark.parametrize("engine", GPU_ENGINES)
@pytest.mark.parametrize("cmd", ["score", "rank"])
def test_gpu_engine_refused_or_exact(ts, tmp_path, engine, cmd):
    out = tmp_path / "out.txt"
    if gpu_line(ts).startswith("none"):
        r = ts.fails(cmd, "-m", MODEL, "-d", LETOR, "--engine", engine, "-o", out, status=1, out=out)
        assert f"engine {engine}" in r.stderr, r
        assert "needs CUDA" in r.stderr or "needs a CUDA device" in r.stderr, r
        assert r.stdout == "", r
        assert r.stderr.count("\n") <= 2, f"more than a line or two of complaint: {r!r}"
        return
    ref = tmp_path / "ref.txt"
    ts.succeeds(cmd, "-m", LETOR_MODEL, "-d", LETOR, "--engine", "naive", "-o", ref)
    ts.succeeds(cmd, "-m", LETOR_MODEL, "-d", LETOR, "--engine", engine, "-o", out)
    assert out.read_bytes() == ref.read_bytes()


def test_the_gpu_branch_model_scores_the_data(ts, tmp_path):
    """The pair the GPU branch above scores (first run on a GPU, 2026-11-27: MODEL could not
    read LETOR's columns, and nothing here had ever run that branch)."""
    ref, other = tmp_path / "ref.txt", tmp_path / "qs.txt"
    for cmd in ("score", "rank"):
        ts.succeeds(cmd, "-m", LETOR_MODEL, "-d", LETOR, "--engine", "naive", "-o", ref)
        ts.succeeds(cmd, "-m", LETOR_MODEL, "-d", LETOR, "--engine", "qs", "-o", other)
        assert ref.read_bytes() == other.read_bytes() and ref.stat().st_size > 0


def test_engine_list_names_them(ts):
    r = ts.fails("score", "-m", MODEL, "-d", LETOR, "--engine", "no-such-engine", status=2)
    for engine in GPU_ENGINES:
        assert engine in r.stderr, r


def test_auto_never_times_or_picks_a_gpu_engine(ts, tmp_path):
    r = ts.succeeds("info", "-m", MODEL, "--plan", env={"TREESCORE_CACHE_DIR": str(tmp_path)})
    plan = r.stdout[r.stdout.index("\nplan:"):]
    assert "candidate" in plan, r
    assert not re.search(r"\bgpu(-naive)?\b", plan), r
