#!/usr/bin/env python3
"""check_layers.py: fails when an #include points up the layer order, or across io/'s formats (docs/design.md).

The layers, lowest first; a file may include its own layer and any lower one, never a
higher one or a sibling of the same height (io and engines know nothing of each other,
nor do cli and python):

    common (and include/treescore.h) <- platform <- model <- io, engines <- scorer <- cli, python

Inside io/ (file names, so that a new format needs no edit here):
    core        every io file that is neither a format nor a dispatcher (the line source,
                the number parser, JSON, UBJSON, the loaders' interface loaders.h,
                *_core.*, ...)
    formats     data_<name>.* and model_<name>.* (a data reader or a model loader)
    dispatchers data_reader.c and model_load.c (pick a format, call it)
the core includes no format and no dispatcher, and a format includes neither another
format nor a dispatcher.

Also: getenv appears in one library file, src/platform/config.c (the configuration
snapshot, platform/config.h).

Usage: scripts/check_layers.py [REPO]   (exit status 0: clean, 1: violations listed)
"""
import re
import sys
from pathlib import Path

LAYERS = [  # (name, folder relative to the repository, height)
    ("common", "include", 0),
    ("common", "src/common", 0),
    ("platform", "src/platform", 1),
    ("model", "src/model", 2),
    ("io", "src/io", 3),
    ("engines", "src/engines", 3),
    ("scorer", "src/scorer", 4),
    ("cli", "cli", 5),
    ("python", "python/treescore", 5),
]
IO_DISPATCHERS = {"data_reader", "model_load"}
IO_FORMAT = re.compile(r"^(data|model)_\w+$")
CONFIG_FILE = "src/platform/config.c"
INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
GETENV = re.compile(r"\bgetenv\s*\(")


def layer_of(repo, path):
    rel = path.relative_to(repo).as_posix()
    for name, folder, height in LAYERS:
        if rel == folder or rel.startswith(folder + "/"):
            return name, height
    return None


def resolve(repo, src, target):
    """The file an #include "target" in src names: next to src, else under src/ or include/."""
    for base in (src.parent, repo / "src", repo / "include"):
        p = (base / target).resolve()
        if p.is_file():
            return p
    return None


def io_role(path):
    stem = path.name.split(".")[0]
    if stem in IO_DISPATCHERS:
        return "dispatcher", stem
    if IO_FORMAT.match(stem) and not stem.endswith("_core"):
        return "format", stem
    return "core", stem


def io_violation(src, dst):
    (src_role, src_stem), (dst_role, dst_stem) = io_role(src), io_role(dst)
    if src_role == "core" and dst_role != "core":
        return f"the io core includes the {dst_role} {dst.name}"
    if src_role == "format" and dst_role == "dispatcher":
        return f"a format includes the dispatcher {dst.name}"
    if src_role == "format" and dst_role == "format" and src_stem != dst_stem:
        return f"a format includes another format, {dst.name}"
    return None


def source_files(repo):
    for _, folder, _ in LAYERS:
        root = repo / folder
        if root.is_dir():
            yield from sorted(p for p in root.rglob("*") if p.suffix in (".c", ".h") and p.is_file())


def check_file(repo, path, problems):
    src_layer = layer_of(repo, path)
    rel = path.relative_to(repo).as_posix()
    for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
        if rel.startswith("src/") and rel != CONFIG_FILE and GETENV.search(line.split("//")[0]) \
                and not line.lstrip().startswith(("*", "/*")):
            problems.append(f"{rel}:{n}: getenv outside {CONFIG_FILE} (read it into platform/config.h)")
        m = INCLUDE.match(line)
        if not m:
            continue
        dst = resolve(repo, path, m.group(1))
        if dst is None:
            problems.append(f'{rel}:{n}: #include "{m.group(1)}" names no file of the repository')
            continue
        dst_layer = layer_of(repo, dst)
        if dst_layer is None:
            problems.append(f'{rel}:{n}: #include "{m.group(1)}" is outside every layer')
        elif dst_layer[0] != src_layer[0] and dst_layer[1] >= src_layer[1]:
            how = "up" if dst_layer[1] > src_layer[1] else "sideways"
            problems.append(f'{rel}:{n}: #include "{m.group(1)}" points {how}: {src_layer[0]} '
                            f'may not include {dst_layer[0]}')
        elif src_layer[0] == "io" and dst_layer[0] == "io":
            why = io_violation(path, dst)
            if why:
                problems.append(f'{rel}:{n}: #include "{m.group(1)}": {why}')


def main():
    repo = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent).resolve()
    problems = []
    files = list(source_files(repo))
    for path in files:
        check_file(repo, path.resolve(), problems)
    for p in problems:
        print(p)
    order = "common <- platform <- model <- io, engines <- scorer <- cli, python"
    if problems:
        print(f"check_layers: {len(problems)} problem(s); the order is {order} (docs/design.md)")
        return 1
    print(f"check_layers: {len(files)} files, every include points down ({order})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
