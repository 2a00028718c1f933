"""test_signals.py: an interrupted `treescore score -o OUT` leaves no OUT and no temporary file behind."""
import os
import signal
import subprocess
import time

import pytest

from cli_helpers import ENV, EXAMPLE, binary_path


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupted_output_leaves_nothing(tmp_path, sig):
    # The data comes through a FIFO that we keep open: the CLI has created its temporary
    # output and is blocked reading when the signal arrives.
    fifo = tmp_path / "data.svm"
    os.mkfifo(fifo)
    out = tmp_path / "scores.txt"
    proc = subprocess.Popen([str(binary_path()), "score", "-m", str(EXAMPLE / "model.txt"), "-d", str(fifo),
                             "--format", "svmlight", "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    with open(fifo, "w") as w:
        w.write("1 qid:1 1:0.5 2:0.25\n" * 100)
        w.flush()
        for _ in range(200):  # wait (at most 10 s) for the temporary file to appear
            if any(p.name.startswith("scores.txt.tmp.") for p in tmp_path.iterdir()):
                break
            time.sleep(0.05)
        proc.send_signal(sig)
        proc.wait(timeout=20)
    assert proc.returncode == -sig, proc.stderr.read()
    left = sorted(p.name for p in tmp_path.iterdir() if p.name != "data.svm")
    assert left == [], f"files left behind: {left}"
