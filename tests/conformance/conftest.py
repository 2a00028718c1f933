# conftest.py: pytest setup of the conformance suite (engine parametrization, work directory, binary check).
"""Conformance tests: `treescore score` must return the training library's own raw scores.

Environment:
    TS_BIN      the treescore binary (default <repo>/build/treescore). When it is missing
                every test that runs it FAILS with a message saying so (never skips).
    TS_ENGINES  comma-separated engines to test (default: all of them and auto); every engine
                must pass every case.
    TS_THREADS  when set, every `treescore score` run gets --threads TS_THREADS (before
                its own options, so a test that sets --threads itself keeps its value).
    TREESCORE_ISA  read by treescore itself: caps the instruction set (scalar, sse4.2,
                avx2, avx512), so one suite run can test each vqs kernel.

Run: .venv/bin/python -m pytest tests/conformance -q
Trained models are cached in tests/conformance/.cache (git-ignored); delete it to retrain.
"""

import os
import sys
from pathlib import Path

import pytest

# The trainers (LightGBM, XGBoost: OpenMP) run beside another pytest worker on few cores:
# OpenMP's default spin-waiting then starves both (a 1,000-tree XGBoost fit took 128 s
# instead of 5 under `-n 2` on 2 cores). Passive waiting, set before any trainer loads.
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

sys.path.insert(0, str(Path(__file__).resolve().parent))
import tshelpers as H  # noqa: E402


def pytest_generate_tests(metafunc):
    if "engine" in metafunc.fixturenames:
        metafunc.parametrize("engine", H.engines())


def pytest_report_header(config):
    b = H.treescore_bin()
    state = "found" if b.is_file() else "MISSING"
    extra = "".join(f"; {k}={os.environ[k]}" for k in ("TS_THREADS", "TREESCORE_ISA") if os.environ.get(k))
    return [f"treescore binary: {b} ({state}); engines: {','.join(H.engines())}{extra}"]


@pytest.fixture(scope="session")
def workdir(tmp_path_factory) -> Path:
    """Per-session directory for data files written for the CLI."""
    return tmp_path_factory.mktemp("conformance")
