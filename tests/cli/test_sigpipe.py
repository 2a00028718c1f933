"""test_sigpipe.py: `treescore score ... | head -1` ends quietly (status 0 or 141, nothing on stderr), whether SIGPIPE is left default or ignored by the parent; an interrupted `rank -o` leaves no file; a full standard output (/dev/full) is an error."""
import os
import signal
import subprocess
import time

import pytest

from cli_helpers import ENV, EXAMPLE, binary_path

SIGPIPE_STATUSES = (0, 141, -signal.SIGPIPE)


@pytest.fixture(scope="module")
def many_rows(tmp_path_factory):
    """200,000 rows: far more output than a pipe buffers."""
    path = tmp_path_factory.mktemp("sigpipe") / "rows.svm"
    with open(path, "w") as f:
        for i in range(200_000):
            f.write(f"0 qid:{i // 50} 1:{i % 7 * 0.5} 2:{i % 11 * 0.25} 5:{i % 3}\n")
    return path


def run_into_closed_pipe(args, ignore_sigpipe):
    """Runs treescore with its stdout read by a reader that stops after one line."""
    def child_setup():
        signal.signal(signal.SIGPIPE, signal.SIG_IGN if ignore_sigpipe else signal.SIG_DFL)
    proc = subprocess.Popen([str(binary_path())] + [str(a) for a in args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, env=ENV,
                            preexec_fn=child_setup, restore_signals=False)
    first = proc.stdout.readline()
    proc.stdout.close()  # like head -1: the reader is gone
    try:
        err = proc.stderr.read()
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    return first, proc.returncode, err.decode("utf-8", "replace")


@pytest.mark.parametrize("ignore_sigpipe", [False, True])
def test_score_into_closed_pipe_is_quiet(many_rows, ignore_sigpipe):
    first, rc, err = run_into_closed_pipe(["score", "-m", EXAMPLE / "model.txt", "-d", many_rows, "--quiet"],
                                          ignore_sigpipe)
    assert first.strip(), "no first score"
    float(first)
    assert rc in SIGPIPE_STATUSES, (rc, err)
    assert err == "", err


def test_shell_pipe_head(many_rows):
    cmd = f"'{binary_path()}' score -m '{EXAMPLE / 'model.txt'}' -d '{many_rows}' --quiet | head -1; " \
          "echo \"status ${PIPESTATUS[0]}\""
    proc = subprocess.run(["bash", "-c", cmd], capture_output=True, env=ENV, timeout=60)
    out = proc.stdout.decode().splitlines()
    assert len(out) == 2, out
    float(out[0])
    assert out[1] in ("status 0", "status 141"), out
    assert proc.stderr.decode() == ""


def test_rank_interrupted_output_leaves_nothing(tmp_path):
    """`rank -o` writes through the same temporary file as `score -o` (bench writes no
    files): a signal while it waits for input leaves neither OUT nor the temporary."""
    fifo = tmp_path / "data.svm"
    os.mkfifo(fifo)
    out = tmp_path / "ranked.txt"
    proc = subprocess.Popen([str(binary_path()), "rank", "-m", str(EXAMPLE / "model.txt"), "-d", str(fifo),
                             "--format", "svmlight", "-o", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    with open(fifo, "w") as w:
        w.write("1 qid:1 1:0.5 2:0.25\n" * 100)
        w.flush()
        for _ in range(200):  # wait (at most 10 s) for the temporary file to appear
            if any(p.name.startswith("ranked.txt.tmp.") for p in tmp_path.iterdir()):
                break
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=20)
    assert proc.returncode == -signal.SIGTERM, proc.stderr.read()
    left = sorted(p.name for p in tmp_path.iterdir() if p.name != "data.svm")
    assert left == [], f"files left behind: {left}"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full")
@pytest.mark.parametrize("args", [["info", "-m", EXAMPLE / "model.txt"], ["--version"], ["--help"], ["score", "--help"],
                                  ["score", "-m", EXAMPLE / "model.txt", "-d", EXAMPLE / "rank.test"]])
def test_full_device_is_an_error(args):
    """Standard output that cannot be written (a full disk: /dev/full) fails with status 1
    and a message: `info > /dev/full` exited 0 with the summary lost."""
    with open("/dev/full", "w") as full:
        p = subprocess.run([str(binary_path())] + [str(a) for a in args], stdout=full, stderr=subprocess.PIPE,
                           stdin=subprocess.DEVNULL, env=ENV, timeout=60)
    assert p.returncode == 1, p
    assert b"writing standard output" in p.stderr, p
    assert p.stderr.count(b"treescore:") == 1, p
