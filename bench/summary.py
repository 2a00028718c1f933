#!/usr/bin/env python3
# summary.py: one command, one run: where treescore stands against its peers today (float32 and float64 rows, batch 1 to 10,000), as the table atop docs/benchmarks.md and its plots.
"""Where treescore stands today, in one run.

    .venv/bin/python bench/summary.py [--quick] [--models NAME,...] [--batches 1,16,1000,10000]
                                      [--threads 1] [--repeat 5] [--pass-seconds 0.2]
                                      [--lleaves-max-leaves 64] [--out-md FILE] [--img DIR]

For each model (default: msn-lgb-1000x64, msn-xgb-1000x64 and msn-lgb-1000x256 of
bench/zoo.py's full set, trained and cached under bench/.cache/zoo/ when missing, about
3 minutes on 2 cores), every peer that bench/peers.py knows and that is installed in
this Python (LightGBM, XGBoost, TL2cgen, lleaves, ONNX Runtime, daal4py; YDF is left out:
it scores a different model of the shape) is prepared and checked exactly as
bench/peers.py does (its classes, checks and timing loop: warm-up, then --repeat
alternating passes of --pass-seconds, medians), then timed beside treescore's default,
`auto` (the planner, told the batch size, planning on the data's rows), at each batch
size, on float32 rows and on float64 rows holding the same values:

  treescore     float32: ts_scorer_score; float64: ts_scorer_score_f64 (scored as the
                library scores doubles, no conversion)
  peers         float64 rows as the peer takes them: LightGBM, XGBoost, lleaves and daal4py
                read them directly; TL2cgen (its predictor of a float32 model takes a
                float32 DMatrix) and ONNX Runtime (a float input) get X.astype(float32)
                in each call, as their users must

Every cell's scores are checked (a peer with wrong scores is reported, not timed).
lleaves is skipped on models with more than --lleaves-max-leaves leaves per tree (its
LLVM compilation of a 1,000 x 256 model took over 10 minutes and 3.5 GB). Compiled peers
are cached in bench/.cache/peers/ (the first run compiles them: minutes).

Writes:
  bench/results/summary-DATE-TIME.json    everything peers.py records (machine, software,
                                          checks, preparation, timings with their "dtype")
  bench/results/summary-DATE-TIME.md      the summary (machine, table, notes) to paste atop
                                          docs/benchmarks.md (--out-md to choose; also on stdout)
  docs/img/summary-MODEL.png (--img)      us/doc against batch size, float32 and float64
                                          panels, one colour and marker per system

--quick: the smoke models (msn-{lgb,xgb}-20x32, seconds to train), batches 1,16,1000,
one pass of 0.02 s: a check that the whole pipeline runs (about a minute once the peers
are compiled), written under build/summary-quick/ unless --out-md/--img are given.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
import peers  # noqa: E402  (its systems, checks and timing loop)
import zoo  # noqa: E402

DEFAULT_MODELS = "msn-lgb-1000x64,msn-xgb-1000x64,msn-lgb-1000x256"
QUICK_MODELS = "msn-lgb-20x32,msn-xgb-20x32"
PEERS = ("lightgbm", "xgboost", "lleaves", "onnxruntime", "tl2cgen", "daal4py", "catboost")
PEER_NAMES = {"lightgbm": "LightGBM", "xgboost": "XGBoost", "lleaves": "lleaves", "onnxruntime": "ONNX Runtime",
              "tl2cgen": "TL2cgen", "daal4py": "daal4py", "catboost": "CatBoost", "treescore": "treescore (auto)",
              "treescore-py": "treescore (Python)"}
DTYPES = (("float32", np.float32), ("float64", np.float64))
# (colour, marker) per system: distinct in both, so the plots read in grey too
STYLE = {"treescore": ("black", "o"), "lightgbm": ("tab:blue", "s"), "xgboost": ("tab:orange", "D"),
         "lleaves": ("tab:green", "^"), "onnxruntime": ("tab:red", "v"), "tl2cgen": ("tab:purple", "P"),
         "daal4py": ("tab:brown", "X"), "treescore-py": ("tab:gray", "*"), "catboost": ("tab:olive", "h")}


class Float64Rows(peers.System):
    """A prepared system fed float64 rows: treescore through ts_scorer_score_f64, ONNX
    Runtime through a float32 copy per call (its input is float), the others as they are."""

    def __init__(self, inner):
        self.inner = inner
        self.name, self.model, self.args, self.note = inner.name, inner.model, inner.args, inner.note
        self.compile = inner.compile
        if hasattr(inner, "engines_used"):
            self.engines_used = inner.engines_used

    def label(self):
        return self.inner.label()

    def runner(self, threads, batch):
        fn = self.inner.runner(threads, batch)
        if isinstance(self.inner, peers.TreescoreSys):
            return self.inner.ts.scorer_fn(self.inner.scorers[(threads, batch)], f64=True)
        if self.name in ("onnxruntime", "tl2cgen"):   # float32 input only: the user's conversion, per call
            return lambda X: fn(X.astype(np.float32))
        return fn


def ensure_models(names: list, root: Path) -> None:
    for n in zoo.order_for_cutting(names):
        print("summary: " + zoo.build(root, n, 2, False), file=sys.stderr, flush=True)


def run(a) -> dict:
    libpath = a.lib or Path(os.environ.get("TREESCORE_LIB", REPO / "build" / "libtreescore.so"))
    run_dir = Path(tempfile.mkdtemp(prefix="ts-summary-"))
    os.environ["TREESCORE_WISDOM"] = str(run_dir / "wisdom")      # the planner starts cold, as in peers.py
    os.environ["TREESCORE_CACHE_DIR"] = str(run_dir / "cache")
    ts = peers.Treescore(libpath)
    a.ts_error = ""
    a.time_disagreeing = False
    names = [n.strip() for n in a.models.split(",") if n.strip()]
    ensure_models(names, a.zoo)
    models = [m for m in peers.load_models(a.zoo, names) if m["name"] in names]
    avail = {}
    for s in ("treescore-py",) + PEERS:
        try:
            __import__(peers.IMPORTS[s])
            avail[s] = dict(available=True)
        except Exception as e:  # noqa: BLE001
            avail[s] = dict(available=False, error=f"{type(e).__name__}: {e}"[:300])
    result = dict(schema=peers.SCHEMA, kind="summary", started=time.strftime("%Y-%m-%dT%H:%M:%S"), command=sys.argv,
                  machine=peers.machine_info(), software=peers.software_info(ts),
                  settings=dict(batches=a.batch_list, threads=a.thread_list, repeat=a.repeat,
                                pass_seconds=a.pass_seconds, engines=["auto"], warmup_passes=1,
                                timing="median of alternating passes", rows=["float32", "float64"]),
                  systems=avail, models=[], checks=[], prepare=[], timings=[], skipped=[])
    ncpu = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    for m in models:
        peers.attach_data(m)
        g = f"{m['dataset']}-{m['trees']}x{m['leaves']}"
        result["models"].append(dict(name=m["name"], library=m["library"], trees=m["trees"], leaves=m["leaves"],
                                     features=m["features"], test_rows=int(m["X"].shape[0])))
        cands = [peers.TreescoreSys(m, a, ts, "auto")]
        for s in ("treescore-py",) * a.python + PEERS:
            if m["library"] not in peers.APPLIES[s]:
                continue
            if not avail[s]["available"]:
                result["checks"].append(dict(model=m["name"], system=s, status="unavailable", note=avail[s]["error"]))
                continue
            if s == "lleaves" and m["leaves"] > a.lleaves_max_leaves:
                result["skipped"].append(dict(model=m["name"], system=s,
                                              note=f"more than {a.lleaves_max_leaves} leaves per tree (compile cost)"))
                continue
            cands.append(peers.CLASSES[s](m, a))
        entries = []
        for so in cands:
            print(f"summary: {m['name']}: preparing {so.label()}", file=sys.stderr, flush=True)
            e = peers.prepare_and_check(so, m, result, ncpu)
            if e is not None and e[1]:
                entries.append(so)
        for dname, dt in DTYPES:
            md = dict(m, X=np.ascontiguousarray(m["X"], dtype=dt))
            work = [(md, so if dt is np.float32 else Float64Rows(so)) for so in entries]
            for t in a.thread_list:
                for b in a.batch_list:
                    print(f"summary: {m['name']} {dname} t={t} b={b}", file=sys.stderr, flush=True)
                    n0, c0 = len(result["timings"]), len(result["checks"])
                    peers.time_cell(g, work, t, b, a, result)
                    for r in result["timings"][n0:]:
                        r["dtype"] = dname
                    for c in result["checks"][c0:]:
                        c["dtype"] = dname
        for key in ("X", "reference", "exact", "bound32"):
            m.pop(key, None)
    shutil.rmtree(run_dir, ignore_errors=True)
    result["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    result["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    try:
        result["loadavg_at_end"] = list(os.getloadavg())
    except OSError:
        pass
    return result


# ---- the table -------------------------------------------------------------------------

def fx(x: float) -> str:
    return f"{x:.1f}x" if x < 100 else f"{x:.0f}x"


def fus(x: float) -> str:
    return f"{x:.3g}"


def markdown(R: dict, json_path: Path) -> str:
    mc, sw = R["machine"], R["software"]
    batches, threads = R["settings"]["batches"], R["settings"]["threads"]
    T = {(r["model"], r["system"], r["dtype"], r["threads"], r["batch"]): r for r in R["timings"]}
    isa = ", ".join(f for f in mc.get("isa_flags", []) if f.startswith("avx512")) or ", ".join(mc.get("isa_flags", []))
    caches = ", ".join(f"L{c['level']}{'d' if c['type'] == 'Data' else 'i' if c['type'] == 'Instruction' else ''} "
                       f"{c['size']}" for c in mc.get("caches_cpu0", []))
    load = R["machine"].get("loadavg_at_start")
    out = []
    out.append(f"Machine: {mc.get('cpu_model')} (family {mc.get('cpu_family')} model {mc.get('cpu_model_number')}"
               f"{', virtual machine' if mc.get('hypervisor') else ''}), {mc.get('logical_cpus')} logical CPUs; "
               f"{caches}; treescore's dispatch: {sw.get('treescore_cpu_isa')} ({isa}). "
               f"treescore {sw.get('treescore')} (git {sw.get('treescore_git')}{', uncommitted changes' if sw.get('treescore_git_dirty') else ''}), "
               f"gcc Release build; Python {sw.get('python')}, " +
               ", ".join(f"{k} {sw[k]}" for k in ("lightgbm", "xgboost-cpu", "lleaves", "onnxruntime", "tl2cgen",
                                                    "scikit-learn-intelex") if k in sw) + ".")
    out.append("")
    out.append(f"Run {R['started']} to {R['finished']}: {', '.join(f'{t} thread' + ('s' if t > 1 else '') for t in threads)}; "
               f"per cell a warm-up, then {R['settings']['repeat']} alternating passes of "
               f"{R['settings']['pass_seconds']} s per system, median us/doc. Load average "
               f"{', '.join(f'{x:.1f}' for x in load) if load else '?'} at the start"
               f"{', ' + ', '.join(f'{x:.1f}' for x in R['loadavg_at_end']) + ' at the end' if R.get('loadavg_at_end') else ''}"
               f" (a shared machine: single cells move by 10% or more between runs). Raw results: `{json_path.name}`.")
    out.append("")
    cols = [(d, b) for d, _ in DTYPES for b in batches]
    head = "| model | peer | " + " | ".join(f"{d}, batch {b:,}" for d, b in cols) + " |"
    for t in threads:
        if len(threads) > 1:
            out.append(f"**{t} thread{'s' if t > 1 else ''}**")
            out.append("")
        out.append("Speed-up of treescore's default (`auto`) over each peer: the peer's us/doc divided by "
                   "treescore's, on the same rows; treescore's own us/doc and the engine `auto` chose in the "
                   "first row of each model. float64 rows hold the same values as the float32 ones.")
        out.append("")
        out.append(head)
        out.append("| --- | --- | " + " | ".join("---:" for _ in cols) + " |")
        for mo in R["models"]:
            name = mo["name"]
            cells = []
            for d, b in cols:
                r = T.get((name, "treescore", d, t, b))
                cells.append(f"{fus(r['us_per_doc_median'])} us ({r.get('engine') or '?'})" if r else "-")
            out.append(f"| {name} | treescore us/doc | " + " | ".join(cells) + " |")
            systems = sorted({r["system"] for r in R["timings"] if r["model"] == name and r["system"] != "treescore"},
                             key=lambda s: (PEERS + ("treescore-py",)).index(s) if s in PEERS + ("treescore-py",) else 99)
            for s in systems:
                cells = []
                for d, b in cols:
                    r, base = T.get((name, s, d, t, b)), T.get((name, "treescore", d, t, b))
                    cells.append(fx(r["us_per_doc_median"] / base["us_per_doc_median"]) if r and base else "-")
                out.append(f"| {name} | {PEER_NAMES.get(s, s)} | " + " | ".join(cells) + " |")
        out.append("")
    notes, seen = [], set()
    for c in R["checks"]:
        if c["status"] in ("wrong", "error", "cannot-load"):
            note = (c.get("note") or "").splitlines()[0][:200] if c.get("note") else ""
            key = (c["system"], c["model"], c.get("dtype"), note)
            if key in seen:
                continue
            seen.add(key)
            notes.append(f"{PEER_NAMES.get(c['system'], c['system'])} on {c['model']}"
                         f"{' (' + c['dtype'] + ' rows)' if c.get('dtype') else ''}: {c['status']}"
                         f"{' (' + note + ')' if note else ''}, not timed")
    for s in R.get("skipped", []):
        notes.append(f"{PEER_NAMES.get(s['system'], s['system'])} on {s['model']}: skipped, {s['note']}")
    for s, v in R["systems"].items():
        if not v.get("available"):
            notes.append(f"{PEER_NAMES.get(s, s)}: not installed ({v.get('error')})")
    if notes:
        out.append("Not in the table: " + "; ".join(notes) + ".")
        out.append("")
    return "\n".join(out)


# ---- the plots -------------------------------------------------------------------------

def plots(R: dict, img: Path) -> list:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib import ticker
    img.mkdir(parents=True, exist_ok=True)
    batches, written = R["settings"]["batches"], []
    t = R["settings"]["threads"][0]
    for mo in R["models"]:
        name = mo["name"]
        rows = [r for r in R["timings"] if r["model"] == name and r["threads"] == t]
        if not rows:
            continue
        fig, axes = plt.subplots(1, 2, figsize=(11, 4.8), sharey=True)
        for ax, (d, _) in zip(axes, DTYPES):
            systems = sorted({r["system"] for r in rows}, key=lambda s: list(STYLE).index(s) if s in STYLE else 99)
            for s in systems:
                pts = sorted((r["batch"], r["us_per_doc_median"]) for r in rows if r["system"] == s and r["dtype"] == d)
                if not pts:
                    continue
                colour, marker = STYLE.get(s, ("tab:pink", "h"))
                ax.plot(*zip(*pts), color=colour, marker=marker, ms=7 if s == "treescore" else 6,
                        lw=2.6 if s == "treescore" else 1.4, label=PEER_NAMES.get(s, s))
                if s == "treescore":   # the engine auto chose, beside each point
                    for r in rows:
                        if r["system"] == s and r["dtype"] == d and r.get("engine"):
                            ax.annotate(r["engine"], (r["batch"], r["us_per_doc_median"]), textcoords="offset points",
                                        xytext=(0, -14), ha="center", fontsize=7)
            ax.set_xscale("log")
            ax.set_yscale("log")
            ax.xaxis.set_major_locator(ticker.FixedLocator(batches))
            ax.xaxis.set_major_formatter(ticker.FixedFormatter([f"{b:,}" for b in batches]))
            ax.xaxis.set_minor_locator(ticker.NullLocator())
            ax.yaxis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
            ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
            ax.yaxis.set_minor_locator(ticker.NullLocator())
            ax.set_xlim(min(batches) / 1.6, max(batches) * 1.6)
            ax.set_xlabel("batch size (rows per call)")
            ax.set_title(f"{d} rows")
            ax.grid(True, which="major", alpha=0.3)
        axes[0].set_ylabel(f"microseconds per row (median), {t} thread{'s' if t > 1 else ''}")
        fig.suptitle(f"{name}: {mo['trees']:,} trees x {mo['leaves']} leaves, {mo['features']} features "
                     f"(lower is better)")
        h, lab = axes[0].get_legend_handles_labels()
        fig.legend(h, lab, loc="lower center", ncol=min(len(lab), 7), fontsize=9, frameon=False)
        fig.tight_layout(rect=(0, 0.08, 1, 1))
        p = img / f"summary-{name}.png"
        fig.savefig(p, dpi=90)
        plt.close(fig)
        written.append(p)
    return written


def main() -> int:
    ap = argparse.ArgumentParser(description="treescore's auto against its peers, float32 and float64 rows: "
                                             "the summary table of docs/benchmarks.md and its plots.")
    ap.add_argument("--quick", action="store_true", help="smoke models, short passes: a check that it runs")
    ap.add_argument("--models", help=f"zoo model names (default {DEFAULT_MODELS}; --quick: {QUICK_MODELS})")
    ap.add_argument("--zoo", type=Path, default=zoo.DEFAULT_ROOT)
    ap.add_argument("--batches", default=None, help="default 1,16,1000,10000 (--quick: 1,16,1000)")
    ap.add_argument("--threads", default="1", help="comma-separated thread counts (default 1)")
    ap.add_argument("--repeat", type=int, default=None, help="timed passes per cell (default 5; --quick 1)")
    ap.add_argument("--pass-seconds", type=float, default=None, help="length of a pass (default 0.2; --quick 0.02)")
    ap.add_argument("--python", action="store_true", help="also time the Python package (treescore-py)")
    ap.add_argument("--lleaves-max-leaves", type=int, default=64)
    ap.add_argument("--compile-timeout", type=float, default=900.0, help="seconds per compiled peer and model")
    ap.add_argument("--lib", type=Path, default=None, help="libtreescore.so (default $TREESCORE_LIB or build/)")
    ap.add_argument("--out-md", type=Path, default=None, help="default: the JSON file's name with .md")
    ap.add_argument("--img", type=Path, default=None, help="default docs/img")
    ap.add_argument("--json", type=Path, default=None, help="default bench/results/summary-DATE-TIME.json")
    a = ap.parse_args()
    quick_dir = REPO / "build" / "summary-quick"
    a.models = a.models or (QUICK_MODELS if a.quick else DEFAULT_MODELS)
    a.batch_list = [int(x) for x in (a.batches or ("1,16,1000" if a.quick else "1,16,1000,10000")).split(",")]
    ncpu = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    a.thread_list = [ncpu if x.strip() == "all" else int(x) for x in a.threads.split(",")]
    a.repeat = a.repeat or (1 if a.quick else 5)
    a.pass_seconds = a.pass_seconds or (0.02 if a.quick else 0.2)
    a.python = int(a.python)
    img = a.img or (quick_dir / "img" if a.quick else REPO / "docs" / "img")
    jpath = a.json or ((quick_dir if a.quick else HERE / "results") / f"summary-{time.strftime('%Y%m%d-%H%M%S')}.json")
    out_md = a.out_md or jpath.with_suffix(".md")
    R = run(a)
    jpath.parent.mkdir(parents=True, exist_ok=True)
    jpath.write_text(json.dumps(R, indent=1, default=str) + "\n")
    md = markdown(R, jpath)
    out_md.parent.mkdir(parents=True, exist_ok=True)
    out_md.write_text(md + "\n")
    written = plots(R, img)
    print(md)
    print(f"summary: wrote {jpath}, {out_md}, " + ", ".join(str(p) for p in written), file=sys.stderr)
    bad = [c for c in R["checks"] if c["system"].startswith("treescore") and c["status"] not in ("exact",)]
    if bad:
        print(f"summary: treescore's scores failed {len(bad)} checks", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
