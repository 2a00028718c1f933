#!/usr/bin/env python3
# plot_sklearn.py: the scikit-learn / ONNX Runtime / treescore bars of a bench/peers.py JSON (issue 25's models) as one PNG.
"""bench/plot_sklearn.py RESULT.json OUT.png

One panel per scikit-learn model of the result (msn-sgb-500x64, msn-srf-500x4096), one
group of bars per batch size, one bar per system: median microseconds per document
(log scale), the engine treescore used and its speedup over scikit-learn and ONNX
Runtime written on the bars.
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SYSTEMS = ("sklearn", "onnxruntime", "treescore-py", "treescore")
LABELS = {"sklearn": "scikit-learn predict", "onnxruntime": "ONNX Runtime (skl2onnx)",
          "treescore-py": "treescore Python (from_sklearn)", "treescore": "treescore C (ONNX file)"}
COLORS = {"sklearn": "#8c8c8c", "onnxruntime": "#4c72b0", "treescore-py": "#dd8452", "treescore": "#c44e52"}
TITLES = {"msn-sgb-500x64": "GradientBoosting, 500 trees x 64 leaves",
          "msn-srf-500x4096": "RandomForest, 500 fully grown trees x 4,096 leaves"}


def main(src: str, dst: str) -> None:
    d = json.load(open(src))
    rows = [t for t in d["timings"] if t["library"] == "sklearn" and t["threads"] == 1
            and t["system"] in SYSTEMS]
    models = [m for m in TITLES if any(t["model"] == m for t in rows)]
    fig, axes = plt.subplots(1, len(models), figsize=(6.5 * len(models), 4.6), squeeze=False)
    for ax, model in zip(axes[0], models):
        cells = {(t["system"], t["batch"]): t for t in rows if t["model"] == model}
        batches = sorted({b for _, b in cells})
        w = 0.8 / len(SYSTEMS)
        for k, sysname in enumerate(SYSTEMS):
            xs, ys = [], []
            for i, b in enumerate(batches):
                if (sysname, b) in cells:
                    xs.append(i + (k - (len(SYSTEMS) - 1) / 2) * w)
                    ys.append(cells[(sysname, b)]["us_per_doc_median"])
            ax.bar(xs, ys, w, label=LABELS[sysname], color=COLORS[sysname])
            for x, y, b in zip(xs, ys, batches):
                t = cells[(sysname, b)]
                txt = f"{y:.3g}"
                if sysname == "treescore":
                    sk = cells.get(("sklearn", b))
                    ort = cells.get(("onnxruntime", b))
                    txt += f"\n{t.get('engine', '')}"
                    if sk:
                        txt += f"\n{sk['us_per_doc_median'] / y:.1f}x skl"
                    if ort:
                        txt += f"\n{ort['us_per_doc_median'] / y:.1f}x ORT"
                ax.text(x, y * 1.08, txt, ha="center", va="bottom", fontsize=7)
        ax.set_yscale("log")
        ax.set_xticks(range(len(batches)))
        ax.set_xticklabels([f"batch {b:,}" for b in batches])
        ax.set_ylabel("us per document (median), one thread")
        ax.set_title(TITLES[model], fontsize=10)
        ax.set_ylim(top=ax.get_ylim()[1] * 8)
    axes[0][0].legend(fontsize=8, loc="upper left")
    m = d["machine"]
    fig.suptitle(f"scikit-learn models, {m.get('cpu_model', '?')} (Zen 4, AVX-512), one thread; "
                 f"load average at start {m.get('loadavg_at_start', ['?'])[0]:.1f} on {m.get('logical_cpus', '?')} cores",
                 fontsize=9)
    fig.tight_layout()
    fig.savefig(dst, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
