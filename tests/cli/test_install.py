"""test_install.py: `cmake --install BUILD --prefix DIR` gives a treescore.pc that points at DIR, and examples/embed.c builds against it (pkg-config, shared and static)."""
import os
import shutil
import subprocess

import pytest

from cli_helpers import EXAMPLE, REPO, binary_path


@pytest.fixture(scope="module")
def prefix(tmp_path_factory):
    build = binary_path().parent
    if not (build / "cmake_install.cmake").is_file() or not shutil.which("cmake"):
        pytest.skip(f"{build} is not a CMake build directory")
    if not shutil.which("pkg-config") or not shutil.which("cc"):
        pytest.skip("needs pkg-config and cc")
    cache = (build / "CMakeCache.txt").read_text(errors="replace") if (build / "CMakeCache.txt").is_file() else ""
    if any(f"{opt}:BOOL=ON" in cache for opt in ("TS_SANITIZE", "TS_TSAN", "TS_FUZZ")):
        # make test's ASan stage runs tests/cli on build-asan: its library needs the
        # sanitizer runtime, which a plain cc link of embed.c does not bring
        pytest.skip(f"{build} is a sanitizer build")
    dest = tmp_path_factory.mktemp("prefix")
    subprocess.run(["cmake", "--install", str(build), "--prefix", str(dest)], check=True,
                   stdout=subprocess.DEVNULL, timeout=60)
    return dest


def pkg_config(prefix, *args):
    env = dict(os.environ, PKG_CONFIG_PATH=str(prefix / "lib" / "pkgconfig"), PKG_CONFIG_LIBDIR="")
    return subprocess.run(["pkg-config", *args, "treescore"], check=True, capture_output=True, text=True,
                          env=env, timeout=20).stdout.split()


def test_pc_points_at_the_install_prefix(prefix):
    # the prefix was fixed at configure time (CMAKE_INSTALL_PREFIX, /usr/local): an install
    # elsewhere with --prefix gave -I/usr/local/include, the wrong or no header
    real = os.path.realpath(prefix)
    flags = [os.path.realpath(f[2:]) for f in pkg_config(prefix, "--cflags", "--libs") if f[:2] in ("-I", "-L")]
    assert os.path.join(real, "include") in flags and os.path.join(real, "lib") in flags, flags


@pytest.mark.parametrize("static", [False, True])
def test_embed_builds_against_the_install(prefix, tmp_path, static):
    exe = tmp_path / "embed"
    if static:  # the archive, and what it needs (Libs.private)
        libs = [str(prefix / "lib" / "libtreescore.a")] + [
            f for f in pkg_config(prefix, "--static", "--libs") if f != "-ltreescore"]
    else:
        libs = pkg_config(prefix, "--libs") + [f"-Wl,-rpath,{prefix / 'lib'}"]
    subprocess.run(["cc", "-O1", str(REPO / "examples" / "embed.c"), *pkg_config(prefix, "--cflags"), *libs,
                    "-lm", "-o", str(exe)], check=True, timeout=120)
    out = subprocess.run([str(exe), str(EXAMPLE / "model.txt"), "3"], check=True, capture_output=True,
                         text=True, timeout=20).stdout.splitlines()
    scores = [float(line) for line in out if not line.startswith("#")]
    assert len(scores) == 3, out


def test_sdist_holds_the_sources_only(tmp_path):
    # sdist.include's patterns were unanchored ("include", "src"): they matched at any
    # depth and pulled .venv's site-packages/*/include and build/'s object directories in
    build_sdist = pytest.importorskip("scikit_build_core.build").build_sdist
    cwd = os.getcwd()
    os.chdir(REPO)
    try:
        name = build_sdist(str(tmp_path))
    finally:
        os.chdir(cwd)
    import tarfile
    with tarfile.open(tmp_path / name) as tar:
        top = {m.split("/")[1] for m in tar.getnames() if m.count("/") >= 1}
    assert {"src", "include", "cli", "python", "CMakeLists.txt", "pyproject.toml", "treescore.pc.in"} <= top, top
    assert not top & {".venv", "build", "bench", "data", "docs", "tests"}, top
