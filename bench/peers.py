#!/usr/bin/env python3
# peers.py: treescore against the tools users would pick instead, side by side in one process on the zoo's models: checked scores, time to first prediction, us/doc.
"""treescore against its peers, side by side, on the models of bench/zoo.py.

    bench/peers.py [--zoo DIR] [--set quick|full|smoke|all] [--models GLOB,...]
                   [--systems NAME,...] [--engines auto,vqs,...]
                   [--batches 1,10,100,1000,10000] [--threads 1,all] [--latency 100,1000]
                   [--repeat 5] [--pass-seconds 0.2] [--compile-timeout S] [--out FILE]
                   [--lib libtreescore.so] [--check-only [--strict --allow NAME,...]] [--quiet]

--set picks the models of one of bench/zoo.py's sets that are in the zoo's cache (the
default, all, takes every cached model); --models narrows further.

Models are grouped by shape (dataset, trees, leaves): the LightGBM, XGBoost and YDF
models of one shape are measured together, every system on every model it can load, in
one process, on the same float32 test rows (the zoo's test.f32; rows are repeated when a
batch is larger than the test set, as for the real data sets).

Systems (a system that is not installed or cannot load a model is reported, not hidden):
  treescore     libtreescore.so through ctypes (ts_model_load_file, ts_scorer_create,
                ts_scorer_score): the --engines, by default auto (the planner, told the
                batch size) and ifelse (compiled; auto considers it once it is compiled);
                one scorer per thread count and batch size
  treescore-py  the Python package (pip install .): treescore.Model(model_file=...,
                threads=T, batch_hint=B, sample=first test rows).predict(X, raw_score=True):
                what a Python user gets, the engines of treescore behind a Python call (one
                Model per thread count and batch size, as treescore's scorers) (lgb, xgb)
  lightgbm      Booster.predict(X, raw_score=True, num_threads=T)            (lgb models)
  xgboost       Booster.inplace_predict(X, predict_type="margin"), nthread=T (xgb models)
  tl2cgen       treelite model -> tl2cgen.export_lib(toolchain="gcc") -> Predictor(nthread=T)
                .predict(DMatrix(X), pred_margin=True)                  (lgb, xgb models)
  lleaves       lleaves.Model.compile(raw_score=True) (LLVM) -> predict(X, n_jobs=T)  (lgb)
  onnxruntime   onnxmltools.convert_lightgbm / convert_xgboost -> InferenceSession with
                intra_op_num_threads=T, spinning off (its idle workers spin by default,
                taking the cores from the system that runs next)         (lgb, xgb models)
  daal4py       oneDAL GBT inference: daal4py.mb.convert_model(booster).predict(X),
                daalinit(T)                                              (lgb, xgb models)
  ydf           YDF's own engines on the YDF model of the shape (a DIFFERENT model of the
                same shape trained on the same rows): predict(columns, num_threads=T)
  catboost      CatBoost's own applier: CatBoost.predict(X, prediction_type="RawFormulaVal",
                thread_count=T)                              (cb models: zoo.py --catboost)
Conversions that need a workaround (the same trees either way, the raw score unchanged):
daal4py refuses ranking objectives ("Ranking objectives are not supported."), and
onnxmltools takes an XGBoost rank:ndcg Booster for a classifier; both get the model with
its objective renamed to a regression one (identity link).

Checks, before timing, on all test rows, against the zoo's references:
  treescore     must be exact: LightGBM models bit for bit equal to predict(raw_score=True);
                XGBoost models bit for bit equal to the double sum of XGBoost's own exit
                leaves (exact.npy: XGBoost itself adds in float32); CatBoost models bit
                for bit equal to predict(prediction_type="RawFormulaVal") (which zoo.py
                found equal to the double sum of its exit leaves, the bias last)
  lgb/xgb peers within bound32: the error a float32 accumulation of the same leaves may
                make (2^-24 x sum over trees of (|running sum| + |leaf|), + 4 |base|): an
                engine that sums in float32 passes, a wrong leaf does not (leaf values
                here are ~1e-3, the bound ~1e-6); bit-exact rows are counted too
  ydf           within 1e-6 x max(1, |score|) of YDF's own predictions made by bench/zoo.py
A system whose scores fail its check is reported with its errors and not timed (unless
--time-disagreeing). Every timed pass is checked again on the rows it scored.

Timing: per (threads, batch) cell, every system is warmed up (one pass), then --repeat
timed passes alternating systems (the order rotates every repetition); a pass scores
consecutive batches for about --pass-seconds (at least one batch); the result is the
median (and min, max) microseconds per document. Python's call overhead is part of every
system's time (a few microseconds per call for ctypes and the compiled peers).

Latency of a single query (--latency, default 100,1000 documents; at each thread count):
every system scores one query of that many consecutive test rows per call, timed call by
call; the systems take turns in rounds of 6 calls each, the first of which (caches cold
after the other systems) is not counted; the median, 99th percentile and minimum
microseconds per query are reported (key "latency" of the JSON).

Preparation, per system and model: "time to first prediction" = load + prepare (+ the
compilation or conversion for tl2cgen, lleaves, onnxruntime, which run in a subprocess
whose wall time and peak resident memory are reported; their outputs are cached under
bench/.cache/peers/ and the recorded compile time is reused, marked cached; a compilation
longer than --compile-timeout is stopped and the system reported as unable to load the
model) + the first
prediction of one row. treescore starts cold (an empty wisdom file and ifelse cache in a
temporary directory): auto's load includes its planner timing the candidates, ifelse's
its compilation.

Installation (bench/requirements.txt says why each pin): everything installs on Python
3.11 here, with three constraints: lleaves 1.3.0 needs llvmlite <= 0.44 (0.45+ dropped
the PassManagerBuilder it calls); the standalone daal4py 2024.7.0 fails to import next to
scikit-learn 1.9, so daal4py comes from scikit-learn-intelex; treelite 4.8.1 is needed for
XGBoost 3.x JSON, although tl2cgen 1.0.0 embeds treelite 4.1.2 (it warns, and works).
A system that fails to import is listed under "systems" with the error.

Output: a JSON file (default bench/results/peers-YYYYmmdd-HHMMSS.json) with the machine
(CPU model, cores, caches, ISA), software versions, systems, checks, preparation costs
and timings; bench/report reads it. A progress bar on stderr.
"""

from __future__ import annotations

import argparse
import ctypes
import fnmatch
import json
import os
import platform
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see zoo.py: shared 2-core machine

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))
import letor_gen  # noqa: E402
import zoo  # noqa: E402  (its sets of model names)

SCHEMA = 1
CACHE = HERE / ".cache" / "peers"
SYSTEMS = ("treescore", "treescore-py", "lightgbm", "xgboost", "sklearn", "tl2cgen", "lleaves", "onnxruntime", "daal4py",
           "ydf", "catboost")
APPLIES = {  # which model libraries each system can run
    "treescore": ("lightgbm", "xgboost", "sklearn", "catboost"),
    "treescore-py": ("lightgbm", "xgboost", "sklearn", "catboost"),
    "lightgbm": ("lightgbm",), "xgboost": ("xgboost",), "sklearn": ("sklearn",),
    "tl2cgen": ("lightgbm", "xgboost"), "lleaves": ("lightgbm",), "onnxruntime": ("lightgbm", "xgboost", "sklearn"),
    "daal4py": ("lightgbm", "xgboost"), "ydf": ("ydf",), "catboost": ("catboost",),
}
TOLERANCE = {
    "treescore": "exact: bit for bit (LightGBM: its predict; XGBoost: the double sum of its own exit leaves)",
    "treescore-py": "exact, as treescore (the same library behind the Python package)",
    "lightgbm": "bound32 (it is the reference of LightGBM models: expected exact)",
    "sklearn": "bound32 (it is the reference of scikit-learn models: expected exact)",
    "xgboost": "bound32 against the exact leaf sum (it adds in float32)",
    "tl2cgen": "bound32", "lleaves": "bound32", "onnxruntime": "bound32", "daal4py": "bound32",
    "ydf": "1e-6 x max(1, |score|) against YDF's own predictions",
    "catboost": "bound32 (it is the reference of CatBoost models: expected exact)",
}


# ---- machine and software --------------------------------------------------------

def machine_info() -> dict:
    info = {"platform": platform.platform(), "machine": platform.machine()}
    try:
        cpu = Path("/proc/cpuinfo").read_text()
        first = cpu.split("\n\n")[0]
        kv = dict((k.strip(), v.strip()) for k, _, v in (l.partition(":") for l in first.splitlines()) if _)
        info.update(cpu_model=kv.get("model name"), cpu_family=kv.get("cpu family"), cpu_model_number=kv.get("model"),
                    cpu_stepping=kv.get("stepping"), cpu_mhz=kv.get("cpu MHz"))
        flags = kv.get("flags", "").split()
        info["isa_flags"] = sorted(f for f in flags if re.match(r"^(sse4_2|avx|avx2|fma|bmi2|avx512\w*|amx\w*|popcnt)$", f))
        info["hypervisor"] = "hypervisor" in flags
    except OSError:
        pass
    info["logical_cpus"] = os.cpu_count()
    info["cpus_available"] = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    caches = []
    for d in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            r = lambda n: (d / n).read_text().strip()  # noqa: E731
            caches.append(dict(level=int(r("level")), type=r("type"), size=r("size"),
                               shared_with_cpus=r("shared_cpu_list")))
        except OSError:
            pass
    info["caches_cpu0"] = caches
    try:
        info["memory_gib"] = round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2 ** 30, 1)
    except (ValueError, OSError):
        pass
    try:
        info["loadavg_at_start"] = list(os.getloadavg())
    except OSError:
        pass
    return info


def pkg_version(dist: str):
    try:
        from importlib.metadata import version
        return version(dist)
    except Exception:  # noqa: BLE001
        return None


def software_info(ts) -> dict:
    sw = {"python": platform.python_version()}
    for d in ("numpy", "lightgbm", "xgboost-cpu", "xgboost", "treelite", "tl2cgen", "lleaves", "llvmlite",
              "onnxruntime", "onnxmltools", "onnx", "scikit-learn-intelex", "daal", "ydf", "catboost"):
        v = pkg_version(d)
        if v:
            sw[d] = v
    try:
        sw["gcc"] = subprocess.run(["gcc", "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        pass
    if ts is not None:
        sw["treescore"] = ts.version
        sw["treescore_lib"] = str(ts.path)
        sw["treescore_cpu_isa"] = ts.cpu_isa
    try:
        sw["treescore_git"] = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                             capture_output=True, text=True).stdout.strip()
        dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True).stdout.strip()
        sw["treescore_git_dirty"] = bool(dirty)
    except OSError:
        pass
    return sw


# ---- treescore through ctypes ----------------------------------------------------

class TsError(ctypes.Structure):
    _fields_ = [("status", ctypes.c_int), ("line", ctypes.c_ulonglong), ("byte", ctypes.c_ulonglong),
                ("message", ctypes.c_char * 1024)]


class TsOptions(ctypes.Structure):
    _fields_ = [("size", ctypes.c_size_t), ("engine", ctypes.c_int), ("n_threads", ctypes.c_uint), ("max_isa", ctypes.c_int),
                ("tau", ctypes.c_uint32), ("delta", ctypes.c_uint32), ("lanes", ctypes.c_uint32),
                ("plan", ctypes.c_int), ("batch_hint", ctypes.c_uint32),
                ("sample", ctypes.POINTER(ctypes.c_float)), ("sample_rows", ctypes.c_size_t),
                ("sample_stride", ctypes.c_size_t), ("reserved", ctypes.c_uint * 2)]


class Treescore:
    """The public C API of libtreescore.so."""

    def __init__(self, path: Path):
        self.path = path
        lib = ctypes.CDLL(str(path))
        vp, sz = ctypes.c_void_p, ctypes.c_size_t
        lib.ts_version_string.restype = ctypes.c_char_p
        lib.ts_model_load_file.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(vp), ctypes.POINTER(TsError)]
        lib.ts_model_free.argtypes = [vp]
        lib.ts_scorer_options_init.argtypes = [ctypes.POINTER(TsOptions)]
        lib.ts_scorer_create.argtypes = [vp, ctypes.POINTER(TsOptions), ctypes.POINTER(vp), ctypes.POINTER(TsError)]
        lib.ts_scorer_free.argtypes = [vp]
        lib.ts_scorer_score.argtypes = [vp, vp, sz, sz, sz, vp, vp]
        lib.ts_scorer_score_f64.argtypes = [vp, vp, sz, sz, sz, vp, vp]
        lib.ts_scorer_engine.argtypes = [vp]
        lib.ts_engine_name.restype = ctypes.c_char_p
        lib.ts_engine_from_name.argtypes = [ctypes.c_char_p, ctypes.POINTER(ctypes.c_int)]
        lib.ts_scorer_plan_report.argtypes = [vp]
        lib.ts_scorer_plan_report.restype = ctypes.c_char_p
        lib.ts_scorer_isa.argtypes = [vp]
        lib.ts_isa_name.restype = ctypes.c_char_p
        lib.ts_cpu_isa.restype = ctypes.c_int
        self.has_divisor = hasattr(lib, "ts_model_output_divisor")
        if self.has_divisor:
            lib.ts_model_output_divisor.argtypes = [vp, ctypes.c_uint32, ctypes.POINTER(ctypes.c_double),
                                                    ctypes.POINTER(TsError)]
        self.lib = lib
        self.version = lib.ts_version_string().decode()
        self.cpu_isa = lib.ts_isa_name(lib.ts_cpu_isa()).decode()

    def load(self, path: Path):
        m, err = ctypes.c_void_p(), TsError()
        if self.lib.ts_model_load_file(str(path).encode(), 0, ctypes.byref(m), ctypes.byref(err)) != 0:
            raise RuntimeError(err.message.decode(errors="replace"))
        return m

    def scorer(self, model, engine: str, threads: int, batch: int, sample=None):
        """sample: rows of the data (float32 C-contiguous) for auto's planner to time on."""
        opts, err, s, e = TsOptions(), TsError(), ctypes.c_void_p(), ctypes.c_int()
        self.lib.ts_scorer_options_init(ctypes.byref(opts))
        if self.lib.ts_engine_from_name(engine.encode(), ctypes.byref(e)) != 0:
            raise RuntimeError(f"unknown engine {engine}")
        opts.engine, opts.n_threads, opts.batch_hint = e.value, threads, batch
        if sample is not None and len(sample):
            opts.sample = sample.ctypes.data_as(ctypes.POINTER(ctypes.c_float))
            opts.sample_rows, opts.sample_stride = sample.shape[0], sample.shape[1]
        if self.lib.ts_scorer_create(model, ctypes.byref(opts), ctypes.byref(s), ctypes.byref(err)) != 0:
            raise RuntimeError(err.message.decode(errors="replace"))
        return s

    def divisor(self, model) -> float:
        """What output 0's mean divides the raw score by (1.0 unless the model averages)."""
        d, err = ctypes.c_double(1.0), TsError()
        if self.has_divisor:
            self.lib.ts_model_output_divisor(model, 0, ctypes.byref(d), ctypes.byref(err))
        return d.value

    def engine_of(self, s) -> str:
        return self.lib.ts_engine_name(self.lib.ts_scorer_engine(s)).decode()

    def scorer_fn(self, s, f64: bool = False):
        """A function X (C-contiguous float32 [rows, cols], or float64 with f64: scored by
        ts_scorer_score_f64) -> float64 scores."""
        score, err = (self.lib.ts_scorer_score_f64 if f64 else self.lib.ts_scorer_score), TsError()
        errp = ctypes.byref(err)
        # A C caller passes its rows' address and its own output buffer: numpy's
        # X.ctypes.data and a new output per call cost about 2.5 us per call here (3.4 us
        # a one-row call in all, against 0.8 for the ctypes call itself), which one-row
        # timings would charge to the library. So each batch (the timing loop scores the
        # same views every pass) has its addresses and output buffer made once, kept with
        # the view itself so that its id cannot be reused while the entry lives. (The
        # output is that batch's own: callers copy or divide it, never write to it.)
        seen = {}

        def run(X):
            e = seen.get(id(X))
            if e is None or e[0] is not X:
                if len(seen) >= 65536:  # a caller that slices anew every call
                    seen.clear()
                out = np.empty(X.shape[0])
                e = seen[id(X)] = (X, X.ctypes.data, X.shape[0], X.shape[1], out, out.ctypes.data)
            if score(s, e[1], e[2], e[3], e[3], e[5], errp) != 0:
                raise RuntimeError(err.message.decode(errors="replace"))
            return e[4]
        return run


# ---- subprocess compilation with peak memory -------------------------------------

def run_measured(code: str, timeout: float) -> dict:
    """Runs python code in a child process; wall seconds, peak RSS (MiB, the largest
    process of its tree: the child or a compiler it waited for), exit status, stderr."""
    t0 = time.perf_counter()
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        out, errtext = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, errtext = p.communicate()
        return dict(ok=False, seconds=round(time.perf_counter() - t0, 2), error=f"timed out after {timeout:.0f} s")
    wall = time.perf_counter() - t0
    # p.communicate() reaped the child; its rusage is in RUSAGE_CHILDREN only as a maximum
    # over all children so far, so the child reports its own (and its children's) peak.
    res = dict(ok=p.returncode == 0, seconds=round(wall, 4))
    m = re.search(r"^PEAK_RSS_KIB=(\d+)$", out, re.M)
    if m:
        res["peak_rss_mib"] = round(int(m.group(1)) / 1024, 1)
    if p.returncode != 0:
        res["error"] = (errtext.strip().splitlines() or ["exit status %d" % p.returncode])[-1][:500]
    return res


# The child's own peak is VmHWM of /proc/self/status: ru_maxrss of RUSAGE_SELF would carry
# the parent's peak over the fork (Linux keeps it across execve), which made every
# compile look like the big parent (768 MiB). Compilers the child waited for come from
# RUSAGE_CHILDREN (they were forked from the small child).
PEAK_TAIL = ("\nimport re as _re, resource\n"
             "_hwm = int(_re.search(r'VmHWM:\\s+(\\d+)', open('/proc/self/status').read()).group(1))\n"
             "print('PEAK_RSS_KIB=%d' % max(_hwm, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss))\n")


def cached_compile(kind: str, model: dict, artifact: Path, code: str, timeout: float) -> dict:
    """Compile once into `artifact` (cached with a record of its cost, keyed by the model
    file's size and mtime and the package versions)."""
    rec_path = artifact.with_suffix(artifact.suffix + ".json")
    mf = model["model_path"]
    st = mf.stat() if mf.is_file() else None
    key = dict(kind=kind, model=str(mf), size=st.st_size if st else None, mtime=st.st_mtime if st else None,
               versions={d: pkg_version(d) for d in ("treelite", "tl2cgen", "lleaves", "llvmlite", "onnxmltools",
                                                     "lightgbm", "xgboost-cpu")})
    if artifact.exists() and rec_path.exists():
        rec = json.loads(rec_path.read_text())
        if rec.get("key") == key and rec.get("ok"):
            rec["cached"] = True
            return rec
    artifact.parent.mkdir(parents=True, exist_ok=True)
    if artifact.exists():
        artifact.unlink()
    rec = run_measured(code + PEAK_TAIL, timeout)
    rec.update(key=key, cached=False)
    if rec["ok"] and artifact.exists():
        rec["artifact_bytes"] = artifact.stat().st_size
    elif rec["ok"]:
        rec.update(ok=False, error=f"{artifact} was not written")
    rec_path.write_text(json.dumps(rec, indent=2) + "\n")
    return rec


# ---- model helpers -----------------------------------------------------------------

def lgb_as_regression(path: Path):
    """The LightGBM model with its objective renamed lambdarank -> regression (daal4py)."""
    import lightgbm as lgb
    s = path.read_text()
    s = re.sub(r"(?m)^objective=.*$", "objective=regression", s)
    s = re.sub(r"\[objective: [^\]]*\]", "[objective: regression]", s)
    return lgb.Booster(model_str=s)


def xgb_as_regression(path: Path):
    """The XGBoost model with its objective renamed rank:* -> reg:squarederror (identity
    link: the same margin) for converters that accept only regression or classification."""
    import xgboost as xgb
    j = json.loads(path.read_text())
    j["learner"]["objective"] = {"name": "reg:squarederror", "reg_loss_param": {"scale_pos_weight": "1"}}
    b = xgb.Booster()
    b.load_model(bytearray(json.dumps(j).encode()))
    return b


# ---- systems -------------------------------------------------------------------------

class Unavailable(Exception):
    """The system cannot run here (not installed) or cannot load this model."""


class System:
    """One peer on one model: prepare() loads it, runner(threads, batch) gives X -> scores."""
    name = "?"

    def __init__(self, model: dict, args):
        self.model, self.args = model, args
        self.compile = None      # dict from cached_compile, for compiled peers
        self.note = ""

    def prepare(self) -> None:
        raise NotImplementedError

    def runner(self, threads: int, batch: int):
        raise NotImplementedError

    def label(self) -> str:
        return self.name


class TreescoreSys(System):
    name = "treescore"

    def __init__(self, model, args, ts, engine="auto"):
        super().__init__(model, args)
        self.ts, self.engine = ts, engine
        self.scorers = {}
        self.engines_used = {}

    def label(self):
        return "treescore" if self.engine == "auto" else f"treescore:{self.engine}"

    def prepare(self):
        if self.ts is None:
            raise Unavailable(self.args.ts_error)
        # the model is kept for the scorers of the timed cells (one per threads x batch);
        # scikit-learn models have no file of their own: skl2onnx's ONNX file
        path = self.model["model_path"]
        if self.model["library"] == "sklearn":
            path = sklearn_onnx(self.model, self.args)
            self.note = "the skl2onnx ONNX file (checked against its own exact sum: it rounds scikit-learn's doubles)"
            if "onnx_exact" not in self.model:  # the check's reference, not treescore's work: untimed
                t0 = time.perf_counter()
                self.model["onnx_exact"] = onnx_exact(path, self.model["X"])
                self.untimed_s = time.perf_counter() - t0
        try:
            self.m = self.ts.load(path)
        except Exception as e:  # a library without the ONNX loader
            if self.model["library"] != "sklearn":
                raise
            raise Unavailable(f"cannot load the ONNX file: {e}")
        # auto's planner times the engines on rows of the data, as the CLI does
        X = self.model.get("X")
        self.sample = None if X is None else np.ascontiguousarray(X[:4096], dtype=np.float32)
        self.first = self.ts.scorer(self.m, self.engine, 0, 1000, self.sample)
        # a forest's mean (ONNX AVERAGE): the raw sum divided once, as scikit-learn does
        self.div = self.ts.divisor(self.m) if self.model["library"] == "sklearn" else 1.0

    def _fn(self, s):
        fn, div = self.ts.scorer_fn(s), self.div
        if div == 1.0:
            return fn
        return lambda X: np.divide(fn(X), div)

    def runner(self, threads, batch):
        key = (threads, batch)
        if key not in self.scorers:
            self.scorers[key] = self.ts.scorer(self.m, self.engine, threads, batch, self.sample)
            self.engines_used[f"{threads}x{batch}"] = self.ts.engine_of(self.scorers[key])
        return self._fn(self.scorers[key])

    def first_runner(self):
        return self._fn(self.first)


class TreescorePySys(System):
    """The Python package, as its users call it (float32 rows: scored in place), given
    what the C system is given: the thread count, the batch size and sample rows for the
    planner (one Model per cell, as treescore has one scorer per cell)."""
    name = "treescore-py"

    def prepare(self):
        import treescore
        self.ts = treescore
        X = self.model.get("X")
        self.sample = None if X is None else X[:4096]
        self.est = None
        if self.model["library"] == "sklearn":   # Model.from_sklearn on the estimator itself
            import pickle
            self.est = pickle.loads(Path(self.model["model_path"]).read_bytes())
            self.note = "Model.from_sklearn(estimator); predict (the forest's mean)"
        self.mod = self._model(0, 1000)
        self.mods = {}
        self.engines_used = {}

    def _model(self, threads, batch):
        if self.est is not None:
            return self.ts.Model.from_sklearn(self.est, threads=threads, batch_hint=batch, sample=self.sample)
        return self.ts.Model(model_file=str(self.model["model_path"]), threads=threads, batch_hint=batch,
                             sample=self.sample)

    def _predict(self, mod):
        # scikit-learn models: predict is est.predict (a forest's mean, not its raw sum)
        if self.est is not None:
            return lambda X: mod.predict(X)
        return lambda X: mod.predict(X, raw_score=True)

    def runner(self, threads, batch):
        key = (threads, batch)
        if key not in self.mods:
            self.mods[key] = self._model(threads, batch)
            self.engines_used[f"{threads}x{batch}"] = self.mods[key].engine
        return self._predict(self.mods[key])

    def first_runner(self):
        return self._predict(self.mod)


class LightgbmSys(System):
    name = "lightgbm"

    def prepare(self):
        import lightgbm as lgb
        self.b = lgb.Booster(model_file=str(self.model["model_path"]))

    def runner(self, threads, batch):
        b = self.b
        return lambda X: b.predict(X, raw_score=True, num_threads=threads)


class XgboostSys(System):
    name = "xgboost"

    def prepare(self):
        import xgboost as xgb
        self.b = xgb.Booster(model_file=str(self.model["model_path"]))
        self.threads = None

    def runner(self, threads, batch):
        b = self.b

        def run(X):
            if self.threads != threads:
                b.set_param({"nthread": threads})
                self.threads = threads
            return b.inplace_predict(X, predict_type="margin")
        return run


class Tl2cgenSys(System):
    name = "tl2cgen"

    def prepare(self):
        import tl2cgen  # noqa: F401
        import treelite  # noqa: F401
        m = self.model
        so = CACHE / m["name"] / "tl2cgen.so"
        loader = ("treelite.frontend.load_lightgbm_model" if m["library"] == "lightgbm"
                  else "treelite.frontend.load_xgboost_model")
        parts = max(2, min(64, m["trees"] * m["leaves"] // 16000))
        code = (f"import treelite, tl2cgen\nm = {loader}({str(m['model_path'])!r})\n"
                f"tl2cgen.export_lib(m, toolchain='gcc', libpath={str(so)!r}, "
                f"params={{'parallel_comp': {parts}}}, nthread={os.cpu_count()})\n")
        self.compile = cached_compile("tl2cgen", m, so, code, self.args.compile_timeout)
        if not self.compile["ok"]:
            raise Unavailable("compile failed: " + self.compile.get("error", "?"))
        self.note = f"gcc, parallel_comp={parts}"
        self.so = so
        self.preds = {}

    def runner(self, threads, batch):
        import tl2cgen
        if threads not in self.preds:
            self.preds[threads] = tl2cgen.Predictor(str(self.so), nthread=threads)
        p = self.preds[threads]
        return lambda X: p.predict(tl2cgen.DMatrix(X, dtype="float32"), pred_margin=True).reshape(-1)


class LleavesSys(System):
    name = "lleaves"

    def prepare(self):
        import lleaves
        m = self.model
        so = CACHE / m["name"] / "lleaves.so"
        code = (f"import lleaves\nm = lleaves.Model(model_file={str(m['model_path'])!r})\n"
                f"m.compile(cache={str(so)!r}, raw_score=True)\n")
        self.compile = cached_compile("lleaves", m, so, code, self.args.compile_timeout)
        if not self.compile["ok"]:
            raise Unavailable("compile failed: " + self.compile.get("error", "?"))
        self.mod = lleaves.Model(model_file=str(m["model_path"]))
        self.mod.compile(cache=str(so), raw_score=True)

    def runner(self, threads, batch):
        mod = self.mod
        return lambda X: mod.predict(X, n_jobs=threads)


def sklearn_onnx(m: dict, args) -> Path:
    """skl2onnx's ONNX file of a scikit-learn model (cached), converted in a subprocess."""
    path = CACHE / m["name"] / "model.onnx"
    code = ("import pickle\nfrom skl2onnx import convert_sklearn\n"
            "from skl2onnx.common.data_types import FloatTensorType\n"
            f"est = pickle.loads(open({str(m['model_path'])!r}, 'rb').read())\n"
            f"om = convert_sklearn(est, initial_types=[('input', FloatTensorType([None, {m['features']}]))], "
            "target_opset={'': 17, 'ai.onnx.ml': 3})\n"
            f"open({str(path)!r}, 'wb').write(om.SerializeToString())\n")
    comp = cached_compile("skl2onnx", m, path, code, args.compile_timeout)
    if not comp["ok"]:
        raise Unavailable("skl2onnx conversion failed: " + comp.get("error", "?"))
    return path


def onnx_exact(path: Path, X: np.ndarray) -> np.ndarray:
    """The exact score of a TreeEnsembleRegressor file (one target) on float32 rows: its
    float32 thresholds and leaf weights as ONNX Runtime stores them, the weights added in
    double in tree order from the base (what treescore computes for the file; ONNX Runtime
    adds in float32); AVERAGE: the sum divided by the tree count. The reference of
    treescore on a converted scikit-learn model (the file rounds scikit-learn's doubles)."""
    import onnx
    from onnx import numpy_helper
    g = onnx.load(str(path)).graph
    node = next(n for n in g.node if n.op_type == "TreeEnsembleRegressor")
    at = {}
    for a in node.attribute:
        v = onnx.helper.get_attribute_value(a)
        at[a.name] = numpy_helper.to_array(v) if isinstance(v, onnx.TensorProto) else v
    f32 = lambda k: np.asarray(at.get(k, at.get(k + "_as_tensor", [])), dtype=np.float32)
    tids, nids = np.asarray(at["nodes_treeids"]), np.asarray(at["nodes_nodeids"])
    feat, thr = np.asarray(at["nodes_featureids"]), f32("nodes_values")
    modes = [m.decode() if isinstance(m, bytes) else m for m in at["nodes_modes"]]
    tru, fal = np.asarray(at["nodes_truenodeids"]), np.asarray(at["nodes_falsenodeids"])
    miss = np.asarray(at.get("nodes_missing_value_tracks_true", [0] * len(tids)))
    w_t, w_n, w = np.asarray(at["target_treeids"]), np.asarray(at["target_nodeids"]), f32("target_weights")
    base = f32("base_values")
    s = np.full(X.shape[0], float(base[0]) if base.size else 0.0)
    trees = np.unique(tids)
    for t in trees:
        sel = np.flatnonzero(tids == t)
        n = int(nids[sel].max()) + 1
        F, T, M = np.zeros(n, np.int64), np.zeros(n, np.float32), np.full(n, "LEAF", dtype=object)
        TR, FA, MI = np.zeros(n, np.int64), np.zeros(n, np.int64), np.zeros(n, bool)
        F[nids[sel]], T[nids[sel]], TR[nids[sel]], FA[nids[sel]] = feat[sel], thr[sel], tru[sel], fal[sel]
        MI[nids[sel]] = miss[sel] != 0
        for i in sel:
            M[nids[i]] = modes[i]
        W = np.zeros(n)
        ws = np.flatnonzero(w_t == t)
        np.add.at(W, w_n[ws], w[ws].astype(np.float64))
        idx = np.zeros(X.shape[0], np.int64)
        while True:
            live = np.flatnonzero(M[idx] != "LEAF")
            if live.size == 0:
                break
            k = idx[live]
            x, th, md = X[live, F[k]], T[k], M[k]
            c = np.where(md == "BRANCH_LEQ", x <= th, np.where(md == "BRANCH_LT", x < th,
                         np.where(md == "BRANCH_GTE", x >= th, x > th)))
            c = np.where(np.isnan(x), MI[k], c)
            idx[live] = np.where(c, TR[k], FA[k])
        s = s + W[idx]
    if at.get("aggregate_function", b"SUM") in (b"AVERAGE", "AVERAGE"):
        s = s / len(trees)
    return s


class SklearnSys(System):
    """scikit-learn's own predict (a forest's n_jobs = the thread count)."""
    name = "sklearn"

    def prepare(self):
        import pickle
        self.est = pickle.loads(Path(self.model["model_path"]).read_bytes())

    def runner(self, threads, batch):
        est = self.est
        if hasattr(est, "n_jobs"):
            est.n_jobs = threads
        return lambda X: est.predict(X)


class OnnxSys(System):
    name = "onnxruntime"

    def prepare(self):
        import onnxruntime  # noqa: F401
        m = self.model
        path = CACHE / m["name"] / "model.onnx"
        feats = m["features"]
        if m["library"] == "sklearn":
            self.path = sklearn_onnx(m, self.args)
            self.sessions = {}
            self.note = "skl2onnx: TreeEnsembleRegressor (ai.onnx.ml 3), float32 thresholds and sums"
            self._session(os.cpu_count())
            return
        if m["library"] == "lightgbm":
            conv = (f"import lightgbm as lgb\nb = lgb.Booster(model_file={str(m['model_path'])!r})\n"
                    f"om = onnxmltools.convert_lightgbm(b, initial_types=[('input', FloatTensorType([None, {feats}]))])\n")
        else:
            conv = (f"import sys; sys.path.insert(0, {str(HERE)!r}); import peers\n"
                    f"b = peers.xgb_as_regression(peers.Path({str(m['model_path'])!r}))\n"
                    f"om = onnxmltools.convert_xgboost(b, initial_types=[('input', FloatTensorType([None, {feats}]))])\n")
        code = ("import onnxmltools\nfrom onnxmltools.convert.common.data_types import FloatTensorType\n" + conv +
                f"open({str(path)!r}, 'wb').write(om.SerializeToString())\n")
        self.compile = cached_compile("onnxmltools", m, path, code, self.args.compile_timeout)
        if not self.compile["ok"]:
            raise Unavailable("conversion failed: " + self.compile.get("error", "?"))
        self.path = path
        self.sessions = {}
        self.note = "TreeEnsembleRegressor (ai.onnx.ml): float32 thresholds and sums"
        self._session(os.cpu_count())

    def _session(self, threads):
        import onnxruntime as ort
        if threads not in self.sessions:
            so = ort.SessionOptions()
            so.intra_op_num_threads = threads
            so.inter_op_num_threads = 1
            # ONNX Runtime's worker threads spin after every call by default: with systems
            # taking turns on a small machine they took the cores from the next system
            # (treescore on 2 threads measured 1.7x slower after ORT's pass). Off, as a
            # service sharing its cores would set it.
            so.add_session_config_entry("session.intra_op.allow_spinning", "0")
            self.sessions[threads] = ort.InferenceSession(str(self.path), so, providers=["CPUExecutionProvider"])
        return self.sessions[threads]

    def runner(self, threads, batch):
        s = self._session(threads)
        name = s.get_inputs()[0].name
        return lambda X: s.run(None, {name: X})[0].reshape(-1)


class DaalSys(System):
    name = "daal4py"

    def prepare(self):
        import daal4py as d4p
        m = self.model
        b = lgb_as_regression(m["model_path"]) if m["library"] == "lightgbm" else xgb_as_regression(m["model_path"])
        self.dm = d4p.mb.convert_model(b)
        self.d4p = d4p
        self.note = "objective renamed to regression for the converter (same trees, same raw score)"

    def runner(self, threads, batch):
        self.d4p.daalinit(threads)
        dm = self.dm
        return lambda X: dm.predict(X)


class YdfSys(System):
    name = "ydf"

    def prepare(self):
        import ydf
        self.m = ydf.load_model(str(self.model["model_path"]))
        self.note = "engines: " + ",".join(str(e) for e in self.m.list_compatible_engines())

    def runner(self, threads, batch):
        m = self.m

        def run(X):
            return m.predict({f"f{j}": X[:, j] for j in range(X.shape[1])}, num_threads=threads)
        return run


class CatboostSys(System):
    """CatBoost's own predict on its .cbm model: the raw score (RawFormulaVal), as treescore's."""
    name = "catboost"

    def prepare(self):
        from catboost import CatBoost
        self.m = CatBoost()
        self.m.load_model(str(self.model["model_path"]))

    def runner(self, threads, batch):
        m = self.m
        return lambda X: m.predict(X, prediction_type="RawFormulaVal", thread_count=threads)


CLASSES = {"treescore-py": TreescorePySys, "lightgbm": LightgbmSys, "xgboost": XgboostSys, "sklearn": SklearnSys,
           "tl2cgen": Tl2cgenSys, "lleaves": LleavesSys, "onnxruntime": OnnxSys, "daal4py": DaalSys, "ydf": YdfSys,
           "catboost": CatboostSys}
IMPORTS = {"treescore-py": "treescore", "lightgbm": "lightgbm", "xgboost": "xgboost", "sklearn": "sklearn",
           "tl2cgen": "tl2cgen", "lleaves": "lleaves", "onnxruntime": "onnxruntime", "daal4py": "daal4py", "ydf": "ydf",
           "catboost": "catboost"}


# ---- checking --------------------------------------------------------------------------

def check(system: str, model: dict, got: np.ndarray, rows: np.ndarray) -> dict:
    """Compares scores of the test rows `rows` with the model's references."""
    ref = model["reference"][rows]
    got = np.asarray(got, dtype=np.float64).reshape(-1)
    res = dict(rows=int(rows.size))
    if got.shape != ref.shape or not np.all(np.isfinite(got)):
        return dict(res, status="wrong", note=f"shape {got.shape} or non-finite values")
    if model["library"] == "ydf":
        err = np.abs(got - ref)
        tol = 1e-6 * np.maximum(1.0, np.abs(ref))
        res.update(max_abs_err=float(err.max()), bit_exact_rows=int((got == ref).sum()))
        ok = bool((err <= tol).all())
        res["status"] = "exact" if res["bit_exact_rows"] == rows.size else ("within-tolerance" if ok else "wrong")
        return res
    exact = model["exact"][rows]
    bound = model["bound32"][rows]
    # treescore on LightGBM models and each library on its own models: the library's
    # scores; treescore on XGBoost models and every other peer: the exact leaf sum
    own = (system, model["library"]) in (("lightgbm", "lightgbm"), ("xgboost", "xgboost"), ("sklearn", "sklearn"),
                                         ("catboost", "catboost"))
    ours = system in ("treescore", "treescore-py")
    target = ref if own or (ours and model["library"] in ("lightgbm", "sklearn", "catboost")) else exact
    if system == "treescore" and model.get("onnx_exact") is not None:   # the ONNX file's own exact sum
        target = model["onnx_exact"][rows]
    err_t = np.abs(got - target)
    err_e = np.abs(got - exact)
    res.update(max_abs_err=float(err_t.max()), bit_exact_rows=int((got == target).sum()),
               max_err_over_bound32=float((err_e / bound).max()))
    if res["bit_exact_rows"] == rows.size:
        res["status"] = "exact"
    elif ours:
        res["status"] = "wrong"   # treescore must be exact
        res["note"] = f"{rows.size - res['bit_exact_rows']} rows not bit-exact"
    elif (err_e <= bound).all():
        res["status"] = "within-bound32"
    else:
        bad = int((err_e > bound).sum())
        res["status"] = "wrong"
        res["note"] = f"{bad} of {rows.size} rows beyond the float32 accumulation bound"
    return res


# ---- timing ----------------------------------------------------------------------------

def batches_of(X: np.ndarray, batch: int, n_calls: int, start: int):
    """Views of n_calls consecutive batches of the (tiled) rows, from row `start`."""
    n = X.shape[0]
    out = []
    for c in range(n_calls):
        a = (start + c * batch) % n
        if a + batch > n:
            a = 0
        out.append((a, X[a:a + batch]))
    return out


def one_pass(fn, bl) -> float:
    t0 = time.perf_counter()
    for _, xb in bl:
        fn(xb)
    return time.perf_counter() - t0


class Bar:
    def __init__(self, total, quiet):
        self.bar = None
        if not quiet and sys.stderr.isatty():   # else one line per cell (logs stay readable)
            try:
                from tqdm import tqdm
                self.bar = tqdm(total=total, file=sys.stderr, unit="cell", dynamic_ncols=True)
            except ImportError:
                pass
        self.total, self.n, self.quiet = total, 0, quiet

    def step(self, desc):
        self.n += 1
        if self.bar is not None:
            self.bar.set_description(desc[:60])
            self.bar.update(1)
        elif not self.quiet:
            print(f"[{self.n}/{self.total}] {desc}", file=sys.stderr, flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()


# ---- main --------------------------------------------------------------------------------

def load_models(zoo: Path, pats: list) -> list:
    models = []
    for mf in sorted((zoo / "models").glob("*/manifest.json")):
        m = json.loads(mf.read_text())
        if pats and not any(fnmatch.fnmatch(m["name"], p) for p in pats):
            continue
        d = mf.parent
        m["dir"] = d
        m["model_path"] = d / m["model"]
        m["test_path"] = (d / m["test_rows"]).resolve()
        models.append(m)
    return models


def attach_data(m: dict) -> None:
    d = m["dir"]
    m["X"] = np.ascontiguousarray(letor_gen.read_raw(m["test_path"]))
    m["reference"] = np.load(d / m["reference"])
    if m.get("exact"):
        m["exact"] = np.load(d / m["exact"])
        m["bound32"] = np.load(d / m["bound32"])


def tiled(X: np.ndarray, rows: int) -> np.ndarray:
    if rows <= X.shape[0]:
        return X
    reps = -(-rows // X.shape[0])
    return np.ascontiguousarray(np.tile(X, (reps, 1))[:rows])


def main() -> int:
    global CACHE
    ap = argparse.ArgumentParser(description="treescore against its peers on the zoo's models.")
    ap.add_argument("--zoo", type=Path, default=HERE / ".cache" / "zoo")
    ap.add_argument("--set", default="all", choices=("all",) + tuple(zoo.SETS),
                    help="only the models of this set of bench/zoo.py (default all: every model in the zoo)")
    ap.add_argument("--models", default="", help="comma-separated names or globs (default: every model of --set)")
    ap.add_argument("--systems", default=",".join(SYSTEMS), help="comma-separated: " + ",".join(SYSTEMS))
    ap.add_argument("--engines", default="auto,ifelse",
                    help="treescore engines, e.g. auto,vqs,vpred (default auto,ifelse: the planner, and the "
                         "compiled engine, which the planner considers only once it is compiled)")
    ap.add_argument("--batches", default="1,10,100,1000,10000")
    ap.add_argument("--threads", default="1,all", help="comma-separated counts; 'all' = the CPUs of this process")
    ap.add_argument("--latency", default="100,1000",
                    help="query sizes (documents) of the single-query latency run; empty: none")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--pass-seconds", type=float, default=0.2, help="length of one timed pass (default 0.2 s)")
    ap.add_argument("--cache", type=Path, default=CACHE,
                    help="compiled peers and treescore's cache directory (default bench/.cache/peers)")
    ap.add_argument("--compile-timeout", type=float, default=1800.0,
                    help="seconds a compiled peer may take to compile one model (default 1800)")
    ap.add_argument("--lib", type=Path, default=None,
                    help="libtreescore.so (default $TREESCORE_LIB, else build/libtreescore.so)")
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--time-disagreeing", action="store_true", help="time systems whose scores fail the check too")
    ap.add_argument("--check-only", action="store_true",
                    help="load every system on every model and check its scores; no timing (a smoke test)")
    ap.add_argument("--strict", action="store_true",
                    help="exit status 1 when a check fails: wrong scores, an error, or an installed system "
                         "that cannot load a model (see --allow)")
    ap.add_argument("--allow", default="", help="with --strict: systems whose failed checks are reported but "
                                                 "do not fail the run (e.g. daal4py)")
    ap.add_argument("--quiet", action="store_true")
    a = ap.parse_args()
    CACHE = a.cache.resolve()

    ncpu = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    threads = sorted({ncpu if t.strip() == "all" else int(t) for t in a.threads.split(",")})
    batches = [int(b) for b in a.batches.split(",")]
    lat_sizes = [int(q) for q in a.latency.split(",") if q.strip()]
    systems = [s.strip() for s in a.systems.split(",") if s.strip()]
    for s in systems:
        if s not in SYSTEMS:
            ap.error(f"unknown system {s}")
    engines = [e.strip() for e in a.engines.split(",") if e.strip()]

    libpath = a.lib or Path(os.environ.get("TREESCORE_LIB", REPO / "build" / "libtreescore.so"))
    run_dir = Path(tempfile.mkdtemp(prefix="ts-peers-"))
    # treescore starts cold: the planner's wisdom and ifelse's compiled objects live in this
    # run's directory, so ifelse's time to first prediction includes its compilation
    os.environ["TREESCORE_WISDOM"] = str(run_dir / "wisdom")
    os.environ["TREESCORE_CACHE_DIR"] = str(run_dir / "cache")
    ts = None
    a.ts_error = ""
    if "treescore" in systems:
        try:
            ts = Treescore(libpath)
        except OSError as e:
            a.ts_error = f"cannot load {libpath}: {e}"

    models = load_models(a.zoo, [p.strip() for p in a.models.split(",") if p.strip()])
    if a.set != "all":
        members = set(zoo.SETS[a.set]())
        models = [m for m in models if m["name"] in members]
    if not models:
        print(f"peers: no models in {a.zoo}{'' if a.set == 'all' else ' of the set ' + a.set}"
              f" (run bench/zoo.py{'' if a.set == 'all' else ' --' + a.set} first)", file=sys.stderr)
        return 1
    groups = {}
    for m in models:
        groups.setdefault(f"{m['dataset']}-{m['trees']}x{m['leaves']}", []).append(m)

    availability = {}
    for s in systems:
        if s == "treescore":
            availability[s] = dict(available=ts is not None, error=a.ts_error or None,
                                   version=ts.version if ts else None)
            continue
        try:
            mod = __import__(IMPORTS[s])
            availability[s] = dict(available=True, version=getattr(mod, "__version__", None))
        except Exception as e:  # noqa: BLE001
            availability[s] = dict(available=False, error=f"{type(e).__name__}: {e}"[:300])
        availability[s]["tolerance"] = TOLERANCE[s]
    if "treescore" in availability:
        availability["treescore"]["tolerance"] = TOLERANCE["treescore"]

    result = dict(schema=SCHEMA, started=time.strftime("%Y-%m-%dT%H:%M:%S"), command=sys.argv,
                  machine=machine_info(), software=software_info(ts),
                  settings=dict(batches=batches, threads=threads, repeat=a.repeat, pass_seconds=a.pass_seconds,
                                engines=engines, warmup_passes=1, timing="median of alternating passes",
                                latency_docs=lat_sizes, zoo_set=a.set, compile_timeout_s=a.compile_timeout),
                  systems=availability, models=[], checks=[], prepare=[], timings=[], latency=[])

    n_cells = sum(len(threads) * (len(batches) + len(lat_sizes)) for _ in groups)
    bar = Bar(n_cells, a.quiet)
    for g, ms in groups.items():
        entries = []   # (model, System) prepared and checked
        for m in ms:
            attach_data(m)
            result["models"].append(dict(name=m["name"], group=g, dataset=m["dataset"], library=m["library"],
                                         trees=m["trees"], leaves=m["leaves"], features=m["features"],
                                         grown=m["grown"], test_rows=int(m["X"].shape[0]), train=m["train"]))
            cands = []
            for s in systems:
                if m["library"] not in APPLIES[s]:
                    continue
                if s == "treescore":
                    cands += [TreescoreSys(m, a, ts, e) for e in engines]
                elif availability[s]["available"]:
                    cands.append(CLASSES[s](m, a))
                else:
                    result["checks"].append(dict(model=m["name"], system=s, status="unavailable",
                                                 note=availability[s]["error"]))
            for sysobj in cands:
                entry = prepare_and_check(sysobj, m, result, ncpu)
                if entry is not None and (entry[1] or a.time_disagreeing):
                    entries.append((m, sysobj))
        for t in threads:
            for b in batches:
                bar.step(f"{g} t={t} b={b}")
                if not a.check_only:
                    time_cell(g, entries, t, b, a, result)
            for q in lat_sizes:
                bar.step(f"{g} t={t} query of {q}")
                if not a.check_only:
                    time_latency(g, entries, t, q, a, result)
        for m in ms:
            for key in ("X", "reference", "exact", "bound32"):
                m.pop(key, None)
        # the treescore scorers' engines per cell, for the report
        for m2, so in entries:
            if hasattr(so, "engines_used"):
                for c in result["checks"]:
                    if c["model"] == m2["name"] and c["system"] == so.label():
                        c["engines_used"] = so.engines_used
    bar.close()
    shutil.rmtree(run_dir, ignore_errors=True)
    result["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    result["peak_rss_mib"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    out = a.out or HERE / "results" / f"peers-{time.strftime('%Y%m%d-%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=1, default=str) + "\n")
    print_summary(result)
    print(f"peers: wrote {out}")
    allowed = {x.strip() for x in a.allow.split(",") if x.strip()}
    failed = [c for c in result["checks"] if c["status"] in ("wrong", "error", "cannot-load")
              and c["system"].split(":")[0] not in allowed]
    if failed:
        print(f"peers: {len(failed)} failed checks: " +
              ", ".join(f"{c['system']} on {c['model']} ({c['status']})" for c in failed[:12]), file=sys.stderr)
    return 1 if (a.strict and failed) else 0


def prepare_and_check(sysobj: System, m: dict, result: dict, ncpu: int):
    """Loads (compiles) the system on the model, times the first prediction, checks all
    test rows. Returns (system, agrees) or None when it could not run."""
    label = sysobj.label()
    rec = dict(model=m["name"], system=label)
    X = m["X"]
    try:
        t0 = time.perf_counter()
        sysobj.prepare()
        t1 = time.perf_counter()
        fn = sysobj.first_runner() if hasattr(sysobj, "first_runner") else sysobj.runner(ncpu, 1)
        fn(X[:1])
        t2 = time.perf_counter()
    except Unavailable as e:
        result["checks"].append(dict(model=m["name"], system=label, status="cannot-load", note=str(e)))
        return None
    except Exception as e:  # noqa: BLE001
        result["checks"].append(dict(model=m["name"], system=label, status="cannot-load",
                                     note=f"{type(e).__name__}: {e}"[:500]))
        return None
    comp = sysobj.compile or {}
    compile_s = comp.get("seconds") or 0.0
    # prepare() ran the compilation unless it was cached: count it once, as compile_s
    load_s = max(0.0, (t1 - t0) - (0.0 if comp.get("cached", True) else compile_s) - getattr(sysobj, "untimed_s", 0.0))
    rec.update(compile_s=comp.get("seconds"), compile_peak_rss_mib=comp.get("peak_rss_mib"),
               compile_cached=comp.get("cached"), artifact_bytes=comp.get("artifact_bytes"),
               load_prepare_s=round(load_s, 4), first_prediction_s=round(t2 - t1, 6),
               time_to_first_prediction_s=round(compile_s + load_s + (t2 - t1), 4))
    if isinstance(sysobj, TreescoreSys):
        rec["plan"] = sysobj.ts.lib.ts_scorer_plan_report(sysobj.first).decode(errors="replace")
        rec["engine"] = sysobj.ts.engine_of(sysobj.first)
    result["prepare"].append(rec)
    try:
        got = sysobj.runner(ncpu, X.shape[0])(X)
        c = check(sysobj.name, m, got, np.arange(X.shape[0]))
    except Exception as e:  # noqa: BLE001
        c = dict(status="error", note=f"{type(e).__name__}: {e}"[:500])
    c.update(model=m["name"], system=label)
    if sysobj.note:
        c["system_note"] = sysobj.note
    result["checks"].append(c)
    return sysobj, c["status"] in ("exact", "within-bound32", "within-tolerance")


def time_cell(g: str, entries: list, t: int, b: int, a, result: dict) -> None:
    """Warm-up then alternating timed passes of every entry at t threads, batch b."""
    work = []
    for m, so in entries:
        X = tiled(m["X"], b)
        try:
            fn = so.runner(t, b)
            # warm-up: a few batches, which also sizes the pass and checks the cell's scores
            n0 = max(1, min(50, 2000 // b))
            bl = batches_of(X, b, n0, 0)
            t0 = time.perf_counter()
            outs = [fn(xb) for _, xb in bl]
            dt = (time.perf_counter() - t0) / n0
            rows = np.concatenate([(np.arange(a0, a0 + b) % m["X"].shape[0]) for a0, _ in bl])
            c = check(so.name, m, np.concatenate([np.asarray(o, dtype=np.float64).reshape(-1) for o in outs]), rows)
            if c["status"] not in ("exact", "within-bound32", "within-tolerance") and not a.time_disagreeing:
                result["checks"].append(dict(c, model=m["name"], system=so.label(), cell=f"t={t} b={b}"))
                continue
        except Exception as e:  # noqa: BLE001
            result["checks"].append(dict(model=m["name"], system=so.label(), status="error", cell=f"t={t} b={b}",
                                         note=f"{type(e).__name__}: {e}"[:500]))
            continue
        calls = max(1, int(a.pass_seconds / max(dt, 1e-9)))
        calls = min(calls, max(1, 100000 // b))
        work.append(dict(m=m, so=so, fn=fn, bl=batches_of(X, b, calls, 0), times=[], calls=calls))
    for w in work:   # one untimed pass each, at the pass's real length
        one_pass(w["fn"], w["bl"])
    for r in range(a.repeat):
        k = r % max(1, len(work))
        for w in work[k:] + work[:k]:
            w["times"].append(one_pass(w["fn"], w["bl"]))
    for w in work:
        docs = w["calls"] * b
        us = np.array(w["times"]) / docs * 1e6
        rec = dict(group=g, model=w["m"]["name"], library=w["m"]["library"], system=w["so"].label(),
                   threads=t, batch=b, us_per_doc_median=round(float(np.median(us)), 4),
                   us_per_doc_min=round(float(us.min()), 4), us_per_doc_max=round(float(us.max()), 4),
                   repeat=len(us), calls_per_pass=w["calls"], tiled=b > w["m"]["X"].shape[0])
        if hasattr(w["so"], "engines_used"):
            rec["engine"] = w["so"].engines_used.get(f"{t}x{b}")
        result["timings"].append(rec)


LAT_BLOCK = 6   # calls per system per round of the latency run (the first one warms up)


def time_latency(g: str, entries: list, t: int, q: int, a, result: dict) -> None:
    """Single-query latency at t threads: calls of one query of q consecutive rows, timed one
    by one, the systems alternating call by call (the start row moves on every round, so no
    system sees a row the others did not)."""
    work = []
    failed = {(c["model"], c["system"], c["cell"]) for c in result["checks"] if "cell" in c}
    for m, so in entries:
        if (m["name"], so.label(), f"t={t} b={q}") in failed:
            continue   # failed the cell's check in time_cell
        try:
            fn = so.runner(t, q)
            X = tiled(m["X"], q)
            fn(X[:q])  # warm-up
        except Exception as e:  # noqa: BLE001
            result["checks"].append(dict(model=m["name"], system=so.label(), status="error",
                                         cell=f"t={t} query={q}", note=f"{type(e).__name__}: {e}"[:500]))
            continue
        work.append(dict(m=m, so=so, fn=fn, X=X, times=[]))
    if not work:
        return
    # Rounds of LAT_BLOCK consecutive calls per system, the systems taking turns (the order
    # rotates every round); the first call of a block warms the caches after the other
    # systems ran and is not counted: a service scoring query after query is warm.
    # About --pass-seconds x --repeat per system, at least 20 and at most 2,000 queries.
    t0 = time.perf_counter()
    for w in work:
        w["fn"](w["X"][:q])
    per_call = max(1e-6, time.perf_counter() - t0)   # one call of every system
    rounds = int(min(2000, max(20, a.pass_seconds * a.repeat / per_call * len(work))) // (LAT_BLOCK - 1)) + 1
    for r in range(rounds):
        k = r % len(work)
        for w in work[k:] + work[:k]:
            for c in range(LAT_BLOCK):
                a0 = ((r * LAT_BLOCK + c) * q) % max(1, w["X"].shape[0] - q + 1)
                xb = w["X"][a0:a0 + q]
                c0 = time.perf_counter()
                w["fn"](xb)
                if c:
                    w["times"].append(time.perf_counter() - c0)
    for w in work:
        us = np.array(w["times"]) * 1e6
        rec = dict(group=g, model=w["m"]["name"], library=w["m"]["library"], system=w["so"].label(), threads=t,
                   docs=q, queries=len(us), us_per_query_median=round(float(np.median(us)), 2),
                   us_per_query_p99=round(float(np.percentile(us, 99)), 2), us_per_query_min=round(float(us.min()), 2))
        if hasattr(w["so"], "engines_used"):
            rec["engine"] = w["so"].engines_used.get(f"{t}x{q}")
        result["latency"].append(rec)


def print_summary(result: dict) -> None:
    """A compact table on stdout: us/doc per system, model, threads, batch."""
    print("\nchecks:")
    for c in result["checks"]:
        if "cell" in c and c["status"] in ("exact", "within-bound32", "within-tolerance"):
            continue
        extra = f" max_abs_err={c['max_abs_err']:.3g}" if "max_abs_err" in c else ""
        print(f"  {c['model']:28s} {c['system']:22s} {c['status']}{extra}"
              f"{' (' + c['note'] + ')' if c.get('note') else ''}{' [' + c['cell'] + ']' if 'cell' in c else ''}")
    print("\nprepare (s): compile | load+prepare | first prediction | time to first prediction")
    for p in result["prepare"]:
        comp = "-" if p["compile_s"] is None else f"{p['compile_s']:.2f}{'*' if p['compile_cached'] else ''}"
        print(f"  {p['model']:28s} {p['system']:22s} {comp:>9s} {p['load_prepare_s']:9.4f} "
              f"{p['first_prediction_s']:9.5f} {p['time_to_first_prediction_s']:9.3f}")
    print("\nus/doc (median):")
    cells = sorted({(t["threads"], t["batch"]) for t in result["timings"]})
    rows = sorted({(t["model"], t["system"]) for t in result["timings"]})
    print(f"  {'model':28s} {'system':22s} " + " ".join(f"{f't{t}/b{b}':>10s}" for t, b in cells))
    idx = {(t["model"], t["system"], t["threads"], t["batch"]): t for t in result["timings"]}
    for mo, sy in rows:
        vals = []
        for t, b in cells:
            r = idx.get((mo, sy, t, b))
            vals.append(f"{r['us_per_doc_median']:10.3f}" if r else f"{'-':>10s}")
        print(f"  {mo:28s} {sy:22s} " + " ".join(vals))
    if result.get("latency"):
        print("\nsingle-query latency, us per query: median (p99)")
        for r in result["latency"]:
            print(f"  {r['model']:28s} {r['system']:22s} t={r['threads']} docs={r['docs']:<5d} "
                  f"{r['us_per_query_median']:10.1f} ({r['us_per_query_p99']:.1f})")


if __name__ == "__main__":
    sys.exit(main())
