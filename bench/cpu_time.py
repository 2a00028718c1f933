#!/usr/bin/env python3
# cpu_time.py: two libtreescore.so builds and ONNX Runtime on one ONNX model, one thread, alternated in one process, timed in process CPU time (what a loaded machine's preemptions do not change).
"""Two libtreescore.so builds (say main's and a branch's) and ONNX Runtime on one ONNX
file, one thread, in one process: each round a pass of --calls calls of --batch rows per
system, the systems alternated, the time of a pass in process CPU time (time.process_time:
on a machine shared with other work, wall-clock passes include the time slices the other
processes take, and both libraries' and ONNX Runtime's medians move by 2x with the load;
CPU time does not). Prints the median (min) us/doc of each and their ratios; checks that
both libraries give the same bits first.

    bench/cpu_time.py --base /work/main/build/libtreescore.so --lib build/libtreescore.so \\
        --model bench/.cache/peers/msn-srf-500x4096/model.onnx \\
        --data bench/.cache/zoo/data/msn-dense/test.f32 [--engine deep] [--rounds 7]
"""
import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import peers  # noqa: E402  (its ctypes wrapper of the C API)


def read_f32(path: str) -> np.ndarray:
    """A TSRAWF32 file (24-byte header: magic, version, columns, rows) as [rows, cols]."""
    raw = np.fromfile(path, dtype=np.uint8)
    cols, rows = int(raw[12:16].view(np.uint32)[0]), int(raw[16:24].view(np.uint64)[0])
    return raw[24:24 + rows * cols * 4].view(np.float32).reshape(rows, cols)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", required=True, help="the library to compare against (e.g. main's)")
    ap.add_argument("--lib", required=True)
    ap.add_argument("--model", required=True, help="an ONNX file")
    ap.add_argument("--data", required=True, help="a TSRAWF32 file of rows")
    ap.add_argument("--engine", default="deep")
    ap.add_argument("--batch", type=int, default=1000)
    ap.add_argument("--calls", type=int, default=3)
    ap.add_argument("--first-row", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=7)
    a = ap.parse_args()
    import onnxruntime as ort
    X = np.ascontiguousarray(read_f32(a.data)[a.first_row:a.first_row + a.batch * a.calls])
    fns = {}
    for name, path in (("base", a.base), ("lib", a.lib)):
        ts = peers.Treescore(Path(path))
        fns[name] = ts.scorer_fn(ts.scorer(ts.load(Path(a.model)), a.engine, 1, a.batch))
    so = ort.SessionOptions()
    so.intra_op_num_threads = so.inter_op_num_threads = 1
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    sess = ort.InferenceSession(a.model, so, providers=["CPUExecutionProvider"])
    inp = sess.get_inputs()[0].name
    fns["onnxruntime"] = lambda rows: sess.run(None, {inp: rows})[0].reshape(-1)
    if not np.array_equal(fns["base"](X[:a.batch]), fns["lib"](X[:a.batch])):
        print("cpu_time: the two libraries' scores differ")
        return 1
    t = {k: [] for k in fns}
    for _ in range(a.rounds):
        for k, f in fns.items():
            c0 = time.process_time()
            for b in range(0, len(X), a.batch):
                f(X[b:b + a.batch])
            t[k].append((time.process_time() - c0) * 1e6 / len(X))
    med = {k: float(np.median(v)) for k, v in t.items()}
    low = {k: float(np.min(v)) for k, v in t.items()}
    print(f"us/doc median (min) of {a.rounds} rounds: base {med['base']:.2f} ({low['base']:.2f}), "
          f"lib {med['lib']:.2f} ({low['lib']:.2f}), ONNX Runtime {med['onnxruntime']:.1f} ({low['onnxruntime']:.1f}); "
          f"ONNX Runtime / base {med['onnxruntime'] / med['base']:.2f}x, ONNX Runtime / lib "
          f"{med['onnxruntime'] / med['lib']:.2f}x, base / lib {med['base'] / med['lib']:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
