#!/usr/bin/env python3
"""fuzz_cover.py: a small set of corpus files that covers the edges a libFuzzer merge saw (the named seeds, then a greedy set cover of the control file's COV lines, at most MAX_FILES files); prints their paths."""
import os
import sys

MAX_FILES = 400  # past this, each further file adds an edge or two: the corpora stay small


def read_control(path):
    """Files and, per file index, the set of covered PCs (libFuzzer -merge_control_file)."""
    with open(path) as f:
        lines = f.read().split("\n")
    n_files = int(lines[0])
    files = lines[2:2 + n_files]
    cov = {}
    for line in lines[2 + n_files:]:
        parts = line.split()
        if len(parts) >= 2 and parts[0] == "COV":
            cov.setdefault(int(parts[1]), set()).update(parts[2:])
    return files, cov


def greedy_cover(files, cov, seeds):
    """The files named in `seeds` (base names), then repeatedly the file with the most
    uncovered PCs (the smaller file on ties)."""
    size = {i: os.path.getsize(files[i]) for i in cov if os.path.exists(files[i])}
    left = set().union(*(cov[i] for i in size)) if size else set()
    total = len(left)
    chosen = []
    for i in list(size):
        if os.path.basename(files[i]) in seeds:
            chosen.append(files[i])
            left -= cov[i]
            del size[i]
    while left and len(chosen) < MAX_FILES:
        best = max(size, key=lambda i: (len(cov[i] & left), -size[i]))
        gain = cov[best] & left
        if not gain:
            break
        chosen.append(files[best])
        left -= gain
        del size[best]
    print(f"fuzz_cover: {len(chosen)} files cover {total - len(left)} of {total} edges", file=sys.stderr)
    return chosen


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit("usage: fuzz_cover.py MERGE_CONTROL_FILE [SEED_NAMES_FILE]")
    files, cov = read_control(sys.argv[1])
    seeds = set()
    if len(sys.argv) == 3:
        with open(sys.argv[2]) as f:
            seeds = set(f.read().split())
    for path in greedy_cover(files, cov, seeds):
        print(path)


if __name__ == "__main__":
    main()
