#!/usr/bin/env python3
"""repeat_trees.py: a LightGBM text model of N trees made by repeating a real model's trees.

For scaling measurements (threads across trees, GPU) on a machine where LightGBM is not
installed or training 20,000 trees takes too long: the trees of MODEL are written again
and again, renumbered, until there are N of them. Every tree is a real tree of the
trained model (its shape, features and thresholds), so the per-tree cost is that of
the real model; only the scores are not those of a trained 20,000-tree model.

    python3 bench/repeat_trees.py MODEL N OUT        (e.g. bench/.cache/lgb_500x64/model.txt 20000 m20k.txt)

Only models of one tree per iteration (regression, ranking, binary) are accepted.
Standard library only.
"""
import re
import sys


def main(argv):
    if len(argv) != 4:
        sys.stderr.write(__doc__.split("\n\n")[2] + "\n")
        return 2
    src, n, out = argv[1], int(argv[2]), argv[3]
    text = open(src, encoding="utf-8").read()
    first = text.find("\nTree=0\n")
    end = text.find("\nend of trees")
    if first < 0 or end < 0:
        sys.stderr.write(f"repeat_trees: {src}: not a LightGBM text model (no Tree=0 or end of trees)\n")
        return 1
    header = text[: first + 1]
    if not re.search(r"^num_tree_per_iteration=1$", header, re.M):
        sys.stderr.write(f"repeat_trees: {src}: only models of one tree per iteration\n")
        return 1
    # LightGBM's tree_sizes line gives each tree's byte count; it no longer holds.
    header = re.sub(r"^tree_sizes=.*\n", "", header, flags=re.M)
    trees = [t for t in re.split(r"\nTree=\d+\n", "\n" + text[first + 1 : end]) if t.strip()]
    with open(out, "w", encoding="utf-8") as f:
        f.write(header)
        for i in range(n):
            f.write(f"Tree={i}\n{trees[i % len(trees)].strip()}\n\n\n")
        f.write(text[end + 1 :])
    print(f"repeat_trees: {out}: {n} trees from the {len(trees)} of {src}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
