#!/usr/bin/env python3
"""planner_default_check.py [LIB]: the default user's planner check (issue 23): auto as
`Model(model_file=...)` and `ts_scorer_create` with default options get it (planned on
synthetic rows, no sample; contested ranges decided by their first calls: scorer/trial.h),
timed on the real rows beside every likely engine by bench/libs_ab.c (one process,
repetitions interleaved, minima), one thread. For each model and batch size prints the
engine `treescore info --plan` planned, the engine auto ended on after the run (libs_ab:
ts_scorer_engine_for), the fastest engine and the ended-on engine's time over it; then how
many cells are within 5%. (bench/planner_check.sh checks the plan on the caller's rows,
as `treescore bench` and `treescore score` make it.)

Needs build/treescore, /tmp/libs_ab (cc -O2 -std=c11 -D_GNU_SOURCE -Iinclude
bench/libs_ab.c -ldl -o /tmp/libs_ab) and the zoo models (bench/zoo.py; the scikit-learn
ones as ONNX files from bench/peers.py). Environment: ONLY (comma-separated model names),
BATCHES (default "1 7 11 16 20 27 45 90 1000"), REPS (libs_ab repetitions, default 15;
REPS_SRF for the 4,096-leaf forest, default 5). LIB: the library to check (default
build/libtreescore.so.0.1.0). About 6 minutes on 2 cores.
"""
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(ROOT, "build", "treescore")
LIB = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "libtreescore.so.0.1.0")
AB = os.environ.get("LIBS_AB", "/tmp/libs_ab")
Z = os.path.join(ROOT, "bench", ".cache", "zoo")
P = os.path.join(ROOT, "bench", ".cache", "peers")
MODELS = [
    ("dev", f"{ROOT}/bench/.cache/lgb_500x64/model.txt", f"{ROOT}/bench/.cache/lgb_500x64/test.f32"),
    ("msn-lgb-1000x64", f"{Z}/models/msn-lgb-1000x64/model.txt", f"{Z}/data/msn/test.f32"),
    ("msn-lgb-1000x256", f"{Z}/models/msn-lgb-1000x256/model.txt", f"{Z}/data/msn/test.f32"),
    ("msn-xgb-1000x64", f"{Z}/models/msn-xgb-1000x64/model.json", f"{Z}/data/msn/test.f32"),
    ("msn-sgb-500x64", f"{P}/msn-sgb-500x64/model.onnx", f"{Z}/data/msn-dense/test.f32"),
    ("msn-srf-500x4096", f"{P}/msn-srf-500x4096/model.onnx", f"{Z}/data/msn-dense/test.f32"),
]
ENGINES = ["rapid", "trees-simd", "vqs", "vpred"]


def planned(model):
    """Range (first, last) -> engine from `treescore info --plan` (no sample, no wisdom)."""
    env = dict(os.environ, TREESCORE_WISDOM="off")
    out = subprocess.run([BIN, "info", "-m", model, "--plan"], capture_output=True, text=True, env=env).stdout
    table = {}
    for line in out[out.find("plan: rows per call"):].splitlines()[1:]:
        m = re.match(r"\s+(\d+)(?:-(\d+)|(\+))?\s+([a-z-]+)", line)
        if not m:
            break
        lo = int(m.group(1))
        hi = int(m.group(2)) if m.group(2) else (10 ** 9 if m.group(3) else lo)
        table[(lo, hi)] = m.group(4)
    return table


def main():
    only = os.environ.get("ONLY")
    batches = [int(b) for b in os.environ.get("BATCHES", "1 7 11 16 20 27 45 90 1000").split()]
    ok = total = 0
    for name, model, data in MODELS:
        if (only and name not in only.split(",")) or not os.path.exists(model):
            continue
        table = planned(model)
        deep = "srf" in name
        for b in batches:
            pick = next((e for (lo, hi), e in table.items() if lo <= b <= hi), None)
            engines = ENGINES + (["deep"] if deep else [])
            if pick and pick not in engines:
                engines.append(pick)
            rows = max(b, (320 if b < 1000 else 1000) if deep else (960 if b < 1000 else 3000))
            rows -= rows % b
            reps = os.environ.get("REPS_SRF", "5") if deep else os.environ.get("REPS", "15")
            args = [AB, model, data, str(b), str(rows), reps, "f32", f"{LIB}:auto:auto"]
            args += [f"{LIB}:{e}:{e}" for e in engines]
            out = subprocess.run(args, capture_output=True, text=True,
                                 env=dict(os.environ, TREESCORE_WISDOM="off")).stdout
            t, final = {}, None
            for line in out.splitlines():
                m = re.match(r"(\S+)\s+([\d.]+) us/doc", line)
                if m:
                    t[m.group(1)] = float(m.group(2))
                m = re.match(r"auto: engine for calls of \d+ rows: (\S+)", line)
                if m:
                    final = m.group(1)
            if final not in t:
                print(f"{name} batch {b}: no time for auto's engine {final}: {out[-200:]}")
                continue
            best = min((e for e in t if e != "auto"), key=t.get)
            ratio = t[final] / t[best]
            total += 1
            ok += ratio <= 1.05
            print(f"{name:18s} batch {b:5d}  planned {pick or '?':10s}  ended on {final:10s} {t[final]:9.3f}  "
                  f"fastest {best:10s} {t[best]:9.3f}  {ratio:.3f}  (auto itself {t['auto']:.3f})", flush=True)
    print(f"{ok} of {total} cells: the engine auto ended on within 5% of the fastest")


if __name__ == "__main__":
    main()
