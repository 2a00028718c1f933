#!/usr/bin/env python3
# catboost_report.py: the "CatBoost" table and plot of docs/benchmarks.md from a bench/peers.py run on the CatBoost zoo models (treescore against CatBoost's own predict).
"""The CatBoost section's table and plot, from one bench/peers.py JSON file.

    .venv/bin/python bench/zoo.py --catboost --root bench/.cache/zoo-catboost
    .venv/bin/python bench/peers.py --zoo bench/.cache/zoo-catboost \\
        --systems treescore,treescore-py,catboost --engines auto,rapid \\
        --batches 1,10,100,1000 --threads 1 --latency "" --out bench/results/peers-catboost.json
    .venv/bin/python bench/catboost_report.py bench/results/peers-catboost.json [--img docs/img]

Prints a markdown table (us/doc of every system per model and batch, the engine auto
chose, and treescore's speed-up over CatBoost's predict) and writes
docs/img/catboost-peers.png (us/doc against batch size, one panel per model).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

NAMES = {"catboost": "CatBoost predict", "treescore": "treescore (auto)", "treescore:rapid": "treescore rapid",
         "treescore-py": "treescore (Python)"}
STYLE = {"catboost": ("tab:olive", "h"), "treescore": ("black", "o"), "treescore:rapid": ("tab:blue", "s"),
         "treescore-py": ("tab:gray", "*")}


def table(R: dict) -> str:
    T = {(t["model"], t["system"], t["batch"]): t for t in R["timings"] if t["threads"] == 1}
    models = sorted({t["model"] for t in R["timings"]}, key=lambda n: (int(n.split("x")[1]), int(n.split("-")[2].split("x")[0])))
    batches = sorted({t["batch"] for t in R["timings"]})
    systems = [s for s in ("catboost", "treescore", "treescore-py", "treescore:rapid") if any(k[1] == s for k in T)]
    out = ["| model | batch | " + " | ".join(NAMES[s] + " us/doc" for s in systems) +
           " | auto's engine | treescore / CatBoost | Python / CatBoost |",
           "| --- | ---: | " + " | ".join("---:" for _ in systems) + " | --- | ---: | ---: |"]
    for m in models:
        for b in batches:
            cells = []
            for s in systems:
                r = T.get((m, s, b))
                cells.append(f"{r['us_per_doc_median']:.3g}" if r else "-")
            cb, ts, py = T.get((m, "catboost", b)), T.get((m, "treescore", b)), T.get((m, "treescore-py", b))
            ratio = f"{cb['us_per_doc_median'] / ts['us_per_doc_median']:.1f}x" if cb and ts else "-"
            pyr = f"{cb['us_per_doc_median'] / py['us_per_doc_median']:.1f}x" if cb and py else "-"
            eng = ts.get("engine", "?") if ts else "-"
            out.append(f"| {m} | {b:,} | " + " | ".join(cells) + f" | {eng} | {ratio} | {pyr} |")
    return "\n".join(out)


def plot(R: dict, img: Path) -> Path:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    models = sorted({t["model"] for t in R["timings"]}, key=lambda n: (int(n.split("x")[1]), int(n.split("-")[2].split("x")[0])))
    fig, axes = plt.subplots(1, len(models), figsize=(4.2 * len(models), 4.2), sharey=False)
    for ax, m in zip(axes, models):
        for s in ("catboost", "treescore:rapid", "treescore-py", "treescore"):
            pts = sorted((t["batch"], t["us_per_doc_median"]) for t in R["timings"]
                         if t["model"] == m and t["system"] == s and t["threads"] == 1)
            if not pts:
                continue
            c, mk = STYLE[s]
            ax.plot([p[0] for p in pts], [p[1] for p in pts], color=c, marker=mk, lw=2.6 if s == "treescore" else 1.4,
                    label=NAMES[s])
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_title(m)
        ax.set_xlabel("batch size (rows per call)")
        ax.grid(True, which="both", alpha=0.3)
    axes[0].set_ylabel("microseconds per row (median), 1 thread")
    axes[0].legend(fontsize=8)
    cpu = R["machine"].get("cpu_model", "?")
    fig.suptitle(f"CatBoost models (oblivious trees), treescore against CatBoost's predict; {cpu}", fontsize=10)
    fig.tight_layout()
    img.mkdir(parents=True, exist_ok=True)
    path = img / "catboost-peers.png"
    fig.savefig(path, dpi=90)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("json", type=Path)
    ap.add_argument("--img", type=Path, default=Path(__file__).resolve().parent.parent / "docs" / "img")
    a = ap.parse_args()
    R = json.loads(a.json.read_text())
    print(table(R))
    print(f"\nplot: {plot(R, a.img)}")
    sw, mc = R["software"], R["machine"]
    print(f"\nmachine: {mc.get('cpu_model')}, {mc.get('logical_cpus')} CPUs, load {mc.get('loadavg_at_start')}; "
          f"treescore {sw.get('treescore')} (git {sw.get('treescore_git')}), ISA {sw.get('treescore_cpu_isa')}; "
          f"catboost {sw.get('catboost')}; run {R['started']} to {R['finished']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
