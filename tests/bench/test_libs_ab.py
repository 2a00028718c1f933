# test_libs_ab.py: bench/libs_ab.c (two library builds side by side) builds, runs two engines of one build on the same rows, agrees bit for bit, and refuses bad arguments with a message.
"""Not a speed test: the program must build, load a library twice, score, and report."""

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def tool(tmp_path_factory):
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        pytest.skip("no C compiler")
    exe = tmp_path_factory.mktemp("libs_ab") / "libs_ab"
    p = subprocess.run([cc, "-O2", "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra", "-Werror", "-I", REPO / "include",
                        REPO / "bench" / "libs_ab.c", "-ldl", "-o", exe], capture_output=True, text=True)
    assert p.returncode == 0, p.stderr
    return exe


@pytest.fixture(scope="module")
def lib():
    build = Path(os.environ.get("TS_BUILD_DIR", REPO / "build"))
    path = Path(os.environ.get("TREESCORE_LIB", build / "libtreescore.so"))
    assert path.is_file(), f"{path}: not built (make build)"
    return path


@pytest.fixture(scope="module")
def raw(tmp_path_factory):
    """64 rows of the example model's 301 columns, some NaN, as a TSRAWF32 file."""
    rng = np.random.default_rng(7)
    x = rng.normal(size=(64, 301)).astype(np.float32)
    x[rng.random(x.shape) < 0.1] = np.nan
    path = tmp_path_factory.mktemp("raw") / "rows.f32"
    with open(path, "wb") as f:
        f.write(b"TSRAWF32" + np.uint32(1).tobytes() + np.uint32(301).tobytes() + np.uint64(64).tobytes())
        f.write(x.tobytes())
    return path


def test_two_engines_agree(tool, lib, raw):
    model = REPO / "data" / "example" / "model.txt"
    for dtype in ("f32", "f64"):
        p = subprocess.run([tool, model, raw, "4", "64", "2", dtype, f"{lib}:trees-simd:a", f"{lib}:naive:b"],
                           capture_output=True, text=True)
        assert p.returncode == 0, p.stderr
        lines = p.stdout.splitlines()
        assert lines[0].startswith("a ") and lines[1].startswith("b ") and "DIFFERENT" not in p.stdout
        assert "the fastest of the others (b)" in lines[2]


def test_auto_says_its_engine(tool, lib, raw):
    """An auto pair ends the output with the engine its calls took after the run."""
    model = REPO / "data" / "example" / "model.txt"
    p = subprocess.run([tool, model, raw, "4", "64", "2", "f32", f"{lib}:auto:a", f"{lib}:naive:b"],
                       capture_output=True, text=True, env=dict(os.environ, TREESCORE_WISDOM="off"))
    assert p.returncode == 0, p.stderr
    last = p.stdout.splitlines()[-1]
    assert last.startswith("a: engine for calls of 4 rows: ") and "DIFFERENT" not in p.stdout, p.stdout
    assert last.split()[-1] != "auto", last


@pytest.mark.parametrize("bad", ["nolib:naive", "{lib}", "{lib}:no-such-engine"])
def test_bad_pairs_are_refused(tool, lib, raw, bad):
    p = subprocess.run([tool, REPO / "data" / "example" / "model.txt", raw, "4", "64", "1", "f32",
                        bad.format(lib=lib)], capture_output=True, text=True)
    assert p.returncode == 1 and p.stderr.startswith("libs_ab: "), (p.returncode, p.stderr)


def test_usage(tool):
    p = subprocess.run([tool], capture_output=True, text=True)
    assert p.returncode == 2 and "usage: libs_ab" in p.stderr
