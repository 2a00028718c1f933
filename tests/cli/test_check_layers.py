"""test_check_layers.py: scripts/check_layers.py passes on the tree and fails on planted violations.

Each case copies the tree's sources (src/, include/, cli/, python/treescore/) to a temporary
directory, plants one violation and expects the checker to exit 1 naming it: a format calling
another format's loader (the call the LightGBM JSON loader used to make), an engine calling
another engine's own function, an engine or a shared engines/common/ file including an
engine's header, a call up the layers; and the allowances stay allowed (a
dispatcher calling a format, an engine calling a function its shared headers declare). No
binary is needed.
"""
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CHECKER = REPO / "scripts" / "check_layers.py"
FOLDERS = ("src", "include", "cli", "python/treescore")


def run_checker(root):
    return subprocess.run([sys.executable, str(CHECKER), str(root)], capture_output=True, text=True)


@pytest.fixture
def tree(tmp_path):
    for folder in FOLDERS:
        if (REPO / folder).is_dir():
            shutil.copytree(REPO / folder, tmp_path / folder,
                            ignore=shutil.ignore_patterns("*.so", "*.o", "__pycache__"))
    return tmp_path


def plant(root, rel, text):
    path = root / rel
    path.write_text(path.read_text() + "\n" + text + "\n")


def test_tree_is_clean():
    p = run_checker(REPO)
    assert p.returncode == 0, p.stdout + p.stderr


def test_copy_is_clean(tree):
    p = run_checker(tree)
    assert p.returncode == 0, p.stdout + p.stderr


def test_cross_format_call_fails(tree):
    """model_lightgbm_json.c calling model_lightgbm.c's loader (declared by hand, so no
    #include gives it away)."""
    plant(tree, "src/io/model_lightgbm_json.c",
          "ts_status tsio_load_lightgbm(const char *, size_t, const char *, ts_model **, ts_error *);\n"
          "ts_status tsio_planted(const char *d, size_t n, ts_model **m, ts_error *e);\n"
          "ts_status tsio_planted(const char *d, size_t n, ts_model **m, ts_error *e) {\n"
          "    return tsio_load_lightgbm(d, n, \"x\", m, e);\n}")
    p = run_checker(tree)
    assert p.returncode == 1, p.stdout
    assert "src/io/model_lightgbm_json.c" in p.stdout and "tsio_load_lightgbm() of src/io/model_lightgbm.c" in p.stdout
    assert "a format uses another format" in p.stdout, p.stdout


def test_core_calling_a_format_fails(tree):
    plant(tree, "src/io/json.c",
          "int tsj_planted(const char *d, size_t n);\n"
          "int tsj_planted(const char *d, size_t n) { return tsio_is_lightgbm_json(d, n); }")
    p = run_checker(tree)
    assert p.returncode == 1 and "the io core uses the format model_lightgbm_json.c" in p.stdout, p.stdout


def test_engine_calling_another_engines_function_fails(tree):
    """trees-simd calling rapid's own kernel table (rapid.h, not a shared header)."""
    plant(tree, "src/engines/tsimd.c",
          "void *tsimd_planted(void);\n"
          "void *tsimd_planted(void) { return (void *)rs_kernels_for; }")
    p = run_checker(tree)
    assert p.returncode == 1, p.stdout
    assert "rs_kernels_for() of src/engines/rapid.c" in p.stdout and "the engine tsimd" in p.stdout, p.stdout


def test_engine_including_another_engines_header_fails(tree):
    """An engine including another engine's header (as vqs.c included qs.h before the
    shared layout moved to src/engines/common/), and a shared file including an engine's
    header (an arrow back up inside engines/)."""
    plant(tree, "src/engines/tsimd.c", '#include "engines/rapid.h"')
    plant(tree, "src/engines/common/blocks.c", '#include "engines/vqs.h"')
    p = run_checker(tree)
    assert p.returncode == 1, p.stdout
    assert "the engine tsimd includes a header of the engine rapid" in p.stdout, p.stdout
    assert "src/engines/common/blocks.c" in p.stdout and "a shared engines/ file includes a header of the engine vqs" \
        in p.stdout, p.stdout


def test_call_up_the_layers_fails(tree):
    """The model layer calling the scorer, declared by hand."""
    plant(tree, "src/model/forest.c",
          "void ts_scorer_free(ts_scorer *s);\n"
          "void tsm_planted(ts_scorer *s);\n"
          "void tsm_planted(ts_scorer *s) { ts_scorer_free(s); }")
    p = run_checker(tree)
    assert p.returncode == 1 and "points up: model may not use scorer" in p.stdout, p.stdout


def test_allowances(tree):
    """The dispatcher calls formats; an engine calls what a shared engines/ header declares
    (quant.h's tsq_quantizer_for, which rapid.c defines); a struct member named like a
    function is no call."""
    plant(tree, "src/io/model_load.c",
          "int tsio_planted(const char *d, size_t n);\n"
          "int tsio_planted(const char *d, size_t n) { return tsio_is_lightgbm_json(d, n); }")
    plant(tree, "src/engines/tsimd.c",
          "void *tsimd_planted(void);\n"
          "void *tsimd_planted(void) { return (void *)tsq_quantizer_for; }\n"
          "int tsimd_planted2(void *p);\n"
          "int tsimd_planted2(void *p) { return ((struct planted *)p)->tsio_load_lightgbm; }")
    p = run_checker(tree)
    assert p.returncode == 0, p.stdout


def test_design_table_of_public_functions():
    """docs/design.md's table "Where the public API lives" names, for every function of
    include/treescore.h, the file that defines it, and nothing else."""
    import re
    sys.path.insert(0, str(REPO / "scripts"))
    import check_layers
    header = check_layers.blank_comments_and_strings((REPO / "include" / "treescore.h").read_text())
    public = set(re.findall(r"^TS_API\b[^;]*?\b(ts_\w+)\s*\(", header, re.M))
    assert len(public) > 20, public
    defined = {}
    for path in (REPO / "src").rglob("*.c"):
        for name, local in check_layers.definitions(check_layers.blank_comments_and_strings(path.read_text())):
            if name in public and not local:
                defined[name] = path.relative_to(REPO).as_posix()
    design = (REPO / "docs" / "design.md").read_text()
    section = design.split("### Where the public API lives", 1)[1].split("\n#", 1)[0]
    table = {}
    for line in section.splitlines():
        m = re.match(r"\|\s*`([^`]+)`\s*\|(.*)\|\s*$", line)
        if m:
            for name in re.findall(r"`(ts_\w+)`", m.group(2)):
                table[name] = m.group(1)
    missing = sorted(f"{name} ({path})" for name, path in defined.items() if table.get(name) != path)
    extra = sorted(f"{name} ({path})" for name, path in table.items() if defined.get(name) != path)
    assert not missing and not extra, (
        f"docs/design.md, 'Where the public API lives': add {missing or 'nothing'}; "
        f"drop or correct {extra or 'nothing'}")
