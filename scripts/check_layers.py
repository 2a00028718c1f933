#!/usr/bin/env python3
"""check_layers.py: fails when an #include or a call points up the layer order, across io/'s formats, or from one engine into another (docs/design.md).

The layers, lowest first; a file may include its own layer and any lower one, never a
higher one or a sibling of the same height (io and engines know nothing of each other,
nor do cli and python):

    common (and include/treescore.h) <- platform, model <- io, engines <- data, scorer <- cli, python

(platform and model know nothing of each other; data: the CLI's data readers, on io's
reader core; they and the scorer know nothing of each other.) Inside io/ and data/ (file names, so that a new format needs no edit here):
    core        every file that is neither a format nor a dispatcher (the line source,
                the number parser, JSON, UBJSON, LightGBM's semantics, the loaders'
                interface loaders.h, data.h, *_core.*, ...)
    formats     data_<name>.* and model_<name>.* (a data reader or a model loader)
    dispatchers data_reader.c and model_load.c (pick a format, call it)
the core includes no format and no dispatcher, and a format includes neither another
format nor a dispatcher.

Calls as well as includes: every non-static function defined in a .c file of these
folders is mapped to its file (a regex over the sources, comments and strings blanked),
and every use of its name in another file is checked like an #include of the defining
file (so a forward declaration written by hand does not get around the include rule):
no use up or sideways across layers, the io rules above (a format using a function of
another format, e.g. model_lightgbm_json.c calling model_lightgbm.c's loader, fails),
and inside src/engines/: a file of one engine may neither include another engine's
header nor use a function of another engine's files unless that function is declared in
a shared header. An engine is the stem of the file defining `tse_engine_<id>` (qs, vqs,
rapid, tsimd, ...); its files are that stem and <stem>_* (x86/ and templates/ included:
x86/rapid_avx2.c and templates/rapid_template.h are rapid's; src/gpu/ is the gpu
engines' family). Every other engines/ file is shared: engine.h and registry.c, and
src/engines/common/ (codes and the quantizer interface, block sizing, the
layouts and the scalar QuickScorer kernel that an engine and its variant both use, the
kernels per ISA), whatever its name; a shared file includes no engine's header either
(no arrow back up), and the functions declared in a shared header are the engines'
common interface.
The dispatchers are the one documented allowance: they call every format (that is what
they are for), as their includes already say.

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
    ("model", "src/model", 1),       # beside platform: neither knows the other
    ("io", "src/io", 3),
    ("engines", "src/engines", 3),
    ("engines", "src/gpu", 3),       # the GPU engines: a folder of their own, one engine family
    ("data", "src/data", 4),
    ("scorer", "src/scorer", 4),
    ("cli", "cli", 5),
    ("python", "python/treescore", 5),
]
IO_DISPATCHERS = {"data_reader", "model_load"}
FORMAT_LAYERS = ("io", "data")  # folders of formats: core <- formats <- dispatchers
# What engines share (a layout an engine and its variant both use included) lives here,
# never in one engine's files (docs/design.md).
ENGINES_SHARED = "src/engines/common/"
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


def io_violation(src, dst, layer="io"):
    (src_role, src_stem), (dst_role, dst_stem) = io_role(src), io_role(dst)
    if src_role == "core" and dst_role != "core":
        return f"the {layer} core includes the {dst_role} {dst.name}"
    if src_role == "format" and dst_role == "dispatcher":
        return f"a format includes the dispatcher {dst.name}"
    if src_role == "format" and dst_role == "format" and src_stem != dst_stem:
        return f"a format includes another format, {dst.name}"
    return None


def blank_comments_and_strings(text):
    """The C text with comments, string and character literals replaced by spaces
    (newlines kept, so line numbers stay)."""
    out, i, n = [], 0, len(text)
    while i < n:
        ch = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif ch in "\"'":
            j = i + 1
            while j < n and text[j] != ch and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(ch + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + (ch if j - 1 > i else ""))
            i = j
        else:
            out.append(ch)
            i += 1
    return "".join(out)


DEF_START = re.compile(r"^(?!typedef\b|extern\b|return\b|if\b|else\b|while\b|for\b|switch\b|do\b)"
                       r"([A-Za-z_][\w \t\*]*?)\b([A-Za-z_]\w*)\s*\(", re.M)
# static, or a macro standing for it (VPL_ALWAYS_INLINE, ...): the function is the file's own
FILE_LOCAL = re.compile(r"\b(static|inline|[A-Z_]*(INLINE|STATIC)[A-Z_]*)\b")
WORD = re.compile(r"\b[A-Za-z_]\w*\b")


def definitions(text):
    """(name, file-local) of the functions defined in a blanked C text: a line starting
    with a type and NAME(, whose parameter list's closing parenthesis is followed by
    '{' (attribute macros between them allowed); file-local: static or inline."""
    names = []
    for m in DEF_START.finditer(text):
        depth, i = 0, m.end() - 1
        while i < len(text):
            if text[i] == "(":
                depth += 1
            elif text[i] == ")":
                depth -= 1
                if depth == 0:
                    break
            elif text[i] in ";{}":
                break
            i += 1
        rest = text[i + 1:i + 200].lstrip()
        while rest[:1] not in ("{", ";", "") and re.match(r"\w+\s*\(", rest):  # TS_PRINTF(...) and the like
            close = rest.find(")")
            rest = rest[close + 1:].lstrip() if close >= 0 else ""
        if rest.startswith("{"):
            names.append((m.group(2), bool(FILE_LOCAL.search(m.group(1)))))
    return names


def declared_names(text):
    """Names declared (or called) as functions in a blanked header."""
    return set(re.findall(r"\b([A-Za-z_]\w*)\s*\(", text))


def engine_owner(repo, path, engines):
    """The engine whose files these are (None: a shared engines/ file, or not in engines/)."""
    rel = path.relative_to(repo).as_posix()
    if rel.startswith("src/gpu/"):
        return "gpu"  # gpu and gpu-naive share their layout: one family
    if not rel.startswith("src/engines/") or rel.startswith(ENGINES_SHARED):
        return None
    stem = path.name.split(".")[0]
    best = None
    for e in engines:
        if (stem == e or stem.startswith(e + "_")) and (best is None or len(e) > len(best)):
            best = e
    return best


def engine_stems(repo, texts):
    """The engines: the stems of the engines/ .c files defining a tse_engine_<id>."""
    engines = set()
    for p, t in texts.items():
        if p.relative_to(repo).as_posix().startswith("src/engines/") and p.suffix == ".c":
            if re.search(r"\btse_engine\s+tse_engine_\w+\s*=", t):
                engines.add(p.name.split(".")[0])
    return engines


def check_calls(repo, texts, engines, problems):
    defined = {}  # function name -> set of the .c files defining it (not static)
    own = {}      # file -> every function name it defines (static too): a use of it there is its own
    for p, t in texts.items():
        for name, local in definitions(t):
            own.setdefault(p, set()).add(name)
            if p.suffix == ".c" and not local:
                defined.setdefault(name, set()).add(p)
    shared_decls = set()
    for p, t in texts.items():
        if p.suffix == ".h" and p.relative_to(repo).as_posix().startswith("src/engines/") \
                and engine_owner(repo, p, engines) is None:
            shared_decls |= declared_names(t)
    for src, t in texts.items():
        # Uses in .c files and in the templates they include (*_template.h); a header's
        # declarations are its includers' business, checked on their #include lines.
        if src.suffix != ".c" and not src.name.split(".")[0].endswith("_template"):
            continue
        src_layer = layer_of(repo, src)
        rel = src.relative_to(repo).as_posix()
        seen = set(own.get(src, ()))
        for m in WORD.finditer(t):
            name = m.group(0)
            if name not in defined or src in defined[name] or name in seen:
                continue
            if re.search(r"(\.|->)\s*$", t[max(0, m.start() - 8):m.start()]):
                continue  # a struct member of that name, not the function
            seen.add(name)
            line = t.count("\n", 0, m.start()) + 1
            for dst in sorted(defined[name]):
                dst_layer = layer_of(repo, dst)
                dst_rel = dst.relative_to(repo).as_posix()
                where = f"{rel}:{line}: uses {name}() of {dst_rel}"
                if dst_layer[0] != src_layer[0] and dst_layer[1] >= src_layer[1]:
                    how = "up" if dst_layer[1] > src_layer[1] else "sideways"
                    problems.append(f"{where}: points {how}: {src_layer[0]} may not use {dst_layer[0]}")
                elif src_layer[0] == dst_layer[0] and src_layer[0] in FORMAT_LAYERS:
                    why = io_violation(src, dst, src_layer[0])
                    if why:
                        problems.append(f"{where}: {why.replace('includes', 'uses')}")
                elif src_layer[0] == "engines" and dst_layer[0] == "engines":
                    a, b = engine_owner(repo, src, engines), engine_owner(repo, dst, engines)
                    if b is not None and a != b and name not in shared_decls:
                        who = f"the engine {a}" if a else "a shared engines/ file"
                        problems.append(f"{where}: {who} uses a function of the engine {b} "
                                        f"(share it through a module of its own, docs/design.md)")
    return len(defined)


def source_files(repo):
    for _, folder, _ in LAYERS:
        root = repo / folder
        if root.is_dir():
            yield from sorted(p for p in root.rglob("*") if p.suffix in (".c", ".h") and p.is_file())


def check_file(repo, path, engines, problems):
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
        elif src_layer[0] == dst_layer[0] and src_layer[0] in FORMAT_LAYERS:
            why = io_violation(path, dst, src_layer[0])
            if why:
                problems.append(f'{rel}:{n}: #include "{m.group(1)}": {why}')
        elif src_layer[0] == dst_layer[0] == "engines":
            a, b = engine_owner(repo, path, engines), engine_owner(repo, dst, engines)
            if b is not None and a != b:
                who = f"the engine {a}" if a else "a shared engines/ file"
                problems.append(f'{rel}:{n}: #include "{m.group(1)}": {who} includes a header of the engine {b} '
                                f'(share it through a module of src/engines/common/, docs/design.md)')


def main():
    repo = Path(sys.argv[1] if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent).resolve()
    problems = []
    files = [p.resolve() for p in source_files(repo)]
    texts = {p: blank_comments_and_strings(p.read_text(encoding="utf-8", errors="replace")) for p in files}
    engines = engine_stems(repo, texts)
    for path in files:
        check_file(repo, path, engines, problems)
    n_functions = check_calls(repo, texts, engines, problems)
    for p in problems:
        print(p)
    order = "common <- platform, model <- io, engines <- data, scorer <- cli, python"
    if problems:
        print(f"check_layers: {len(problems)} problem(s); the order is {order} (docs/design.md)")
        return 1
    print(f"check_layers: {len(files)} files, {n_functions} functions: every include and call points down "
          f"({order})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
