#!/usr/bin/env python3
"""fuzz_cover.py: a small set of corpus files that covers the edges a libFuzzer merge saw (the named seeds, then a greedy set cover of the control file's COV lines, at most MAX_FILES files, or a tenth more than the corpus had: --keep N); prints their paths."""
import os
import sys

MAX_FILES = 400  # past this, each further file adds an edge or two: the corpora stay small
# A corpus that already holds more files (fuzz_model_auto: every loader's edges behind one
# target, 1,190 files) keeps up to its own count and a tenth more (--keep N): a cover
# capped at 400 there dropped 9,314 edges to 8,570, so a merge would have shrunk what the
# corpus covers, and one capped at its own count could not take what a run found.


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


def greedy_cover(files, cov, seeds, max_files=MAX_FILES):
    """The files named in `seeds` (base names), then repeatedly the file with the most
    uncovered PCs (the smaller file on ties), at most max_files in all."""
    size = {i: os.path.getsize(files[i]) for i in cov if os.path.exists(files[i])}
    left = set().union(*(cov[i] for i in size)) if size else set()
    total = len(left)
    chosen = []
    for i in list(size):
        if os.path.basename(files[i]) in seeds:
            chosen.append(files[i])
            left -= cov[i]
            del size[i]
    while left and len(chosen) < max_files:
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
    args = sys.argv[1:]
    max_files = MAX_FILES
    if len(args) >= 2 and args[0] == "--keep":
        if not args[1].isdigit():
            sys.exit(f"fuzz_cover.py: --keep takes a file count, not {args[1]!r}")
        max_files = max(MAX_FILES, int(args[1]) + int(args[1]) // 10)
        args = args[2:]
    if len(args) not in (1, 2):
        sys.exit("usage: fuzz_cover.py [--keep N] MERGE_CONTROL_FILE [SEED_NAMES_FILE]")
    files, cov = read_control(args[0])
    seeds = set()
    if len(args) == 2:
        with open(args[1]) as f:
            seeds = set(f.read().split())
    for path in greedy_cover(files, cov, seeds, max_files):
        print(path)


if __name__ == "__main__":
    main()
