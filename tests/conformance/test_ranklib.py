# test_ranklib.py: RankLib LambdaMART, MART and random-forest models against a walker written from RankLib's semantics.
"""RankLib conformance.

RankLib is Java; these tests do not run it. They write models as RankLib's writers do
(RFRanker.model(), LambdaMART.model(): a "##" header, then one <ensemble> per bag, trees
as nested <split>s, Float.toString thresholds and weights, Double.toString outputs) and
score them with a walker written from RankLib's source (Ensemble, Split, RFRanker,
DenseDataPoint):

- every threshold, output and weight is read with Float.parseFloat (correctly rounded to
  float32: `parse_float32` below rounds the exact decimal, it does not go through double);
- feature k reads column k (ids from 1); an absent feature or a NaN ("unknown") reads 0;
- a split sends x left iff x <= threshold;
- Ensemble.eval adds tree.eval(dp) * weight into a float32 sum, tree by tree;
- RFRanker.eval returns (sum over ensembles of their eval, in double) / number of ensembles.

treescore adds the per-tree terms (weight / n_ensembles) * output in double: the exit leaves
are RankLib's, and the sums are compared two ways: bit for bit with that double sum, and
within RankLib's float32 rounding of its own sum.
"""

import re
import xml.etree.ElementTree as ET
from fractions import Fraction

import numpy as np
import pytest

import tshelpers as H

F32 = np.float32
N_FEATURES = 12  # feature ids 1..12; column 0 unused


# ---- writing RankLib files --------------------------------------------------------------------

def java_float(f) -> str:
    """Float.toString: shortest repr, 'E' notation outside [1e-3, 1e7)."""
    f = F32(f)
    if f == 0:
        return "-0.0" if np.signbit(f) else "0.0"
    a = abs(float(f))
    if 1e-3 <= a < 1e7:
        s = np.format_float_positional(f, unique=True, trim="0")
        return s if "." in s else s + ".0"
    m, e = np.format_float_scientific(f, unique=True, trim="0").split("e")
    return (m if "." in m else m + ".0") + "E" + str(int(e))


def java_double(d: float) -> str:
    """Double.toString (shortest repr; 'E' notation outside [1e-3, 1e7))."""
    d = float(d)
    if d == 0:
        return "0.0"
    if 1e-3 <= abs(d) < 1e7:
        s = repr(d)
        return s if "." in s else s + ".0"
    m, e = f"{d:.17e}".split("e")
    m = repr(float(m))
    return m + "E" + str(int(e))


def random_tree(rng, depth, leaves_out, max_depth):
    """A nested dict tree: {"f", "t", "l", "r"} or {"o"}."""
    if depth >= max_depth or (depth > 0 and rng.random() < 0.25):
        return {"o": float(rng.normal()) * (10.0 ** rng.integers(-3, 2))}
    kind = rng.random()
    if kind < 0.1:
        t = 0.0 if rng.random() < 0.5 else -0.0
    elif kind < 0.2:
        t = float(rng.choice([-1e-5, 1e-4, 3e7, -2.5e8]))
    else:
        t = float(rng.normal() * 3)
    return {"f": int(rng.integers(1, N_FEATURES + 1)), "t": F32(t),
            "l": random_tree(rng, depth + 1, leaves_out, max_depth),
            "r": random_tree(rng, depth + 1, leaves_out, max_depth)}


def split_xml(node, indent, out):
    if "o" in node:
        out.append(f"{indent}<output>{java_double(node['o'])} </output>")
        return
    out.append(f"{indent}<feature>{node['f']} </feature>")
    out.append(f"{indent}<threshold> {java_float(node['t'])} </threshold>")
    for pos in ("left", "right"):
        out.append(f'{indent}<split pos="{pos}">')
        split_xml(node["l" if pos == "left" else "r"], indent + "\t", out)
        out.append(f"{indent}</split>")


def ensemble_xml(trees, weights):
    out = ["<ensemble>"]
    for i, (t, w) in enumerate(zip(trees, weights)):
        out.append(f'\t<tree id="{i + 1}" weight="{java_float(w)}">')
        out.append("\t\t<split>")
        split_xml(t, "\t\t\t", out)
        out.append("\t\t</split>")
        out.append("\t</tree>")
    out.append("</ensemble>")
    return "\n".join(out) + "\n"


def write_model(path, kind, bags, trees_per_bag, weight, seed, max_depth=5):
    rng = np.random.default_rng(seed)
    ensembles = [[random_tree(rng, 0, None, max_depth) for _ in range(trees_per_bag)] for _ in range(bags)]
    if kind == "rf":
        head = (f"## Random Forests\n## No. of bags = {bags}\n## Sub-sampling = 1.0\n## Feature-sampling = 0.3\n"
                f"## No. of trees = {trees_per_bag}\n## No. of leaves = 32\n## No. of threshold candidates = 256\n"
                f"## Learning rate = {java_float(weight)}\n\n")
    else:
        assert bags == 1
        head = (f"## {kind}\n## No. of trees = {trees_per_bag}\n## No. of leaves = 32\n"
                f"## No. of threshold candidates = 256\n## Learning rate = {java_float(weight)}\n"
                f"## Stop early = 100\n\n")
    body = "\n".join(ensemble_xml(e, [weight] * len(e)) for e in ensembles)
    path.write_text(head + body)
    return path


# ---- the walker ---------------------------------------------------------------------------------

def parse_float32(s: str) -> np.float32:
    """Float.parseFloat: the decimal rounded once, to the nearest float32 (ties to even)."""
    s = s.strip()
    f = F32(float(s))
    if not np.isfinite(f):
        return f
    q = Fraction(s.replace("E", "e"))
    cands = [np.nextafter(f, F32(-np.inf)), f, np.nextafter(f, F32(np.inf))]
    best = min(cands, key=lambda c: (abs(Fraction(float(c)) - q), int(c.view(np.uint32)) & 1))
    return F32(-0.0) if best == 0 and s.startswith("-") else best


def read_ranklib(path):
    """[ensembles][trees] as (tshelpers.Tree with float32 outputs, float32 weight), read as
    RankLib does: lines starting with "##" skipped, one DOM per <ensemble>."""
    text = "\n".join(l for l in path.read_text().splitlines() if not l.strip().startswith("##"))
    ensembles = []
    for block in re.findall(r"<ensemble>.*?</ensemble>", text, re.S):
        trees = []
        for t in ET.fromstring(block).findall("tree"):
            feat, T, left, right, leaves = [], [], [], [], []

            def build(node):
                out = node.find("output")
                if out is not None:
                    leaves.append(float(parse_float32(out.text)))
                    return -len(leaves)
                i = len(feat)
                feat.append(int(node.find("feature").text))
                T.append(parse_float32(node.find("threshold").text))
                left.append(0)
                right.append(0)
                kids = {s.get("pos"): s for s in node.findall("split")}
                left[i] = build(kids["left"])
                right[i] = build(kids["right"])
                return i

            build(t.find("split"))
            trees.append((H.Tree(np.array(feat, int), np.array(T, F32), np.array(left, int), np.array(right, int),
                                 np.array(leaves, np.float64), 1.0, rule="quickrank"),
                          parse_float32(t.get("weight"))))
        ensembles.append(trees)
    return ensembles


def ranklib_values(X):
    """DenseDataPoint.getFeatureValue: NaN ("unknown") reads 0."""
    return np.where(np.isnan(X), F32(0), X).astype(F32)


def ranklib_score(ensembles, X):
    """RFRanker.eval (one ensemble: LambdaMART/MART eval): float32 sums per ensemble."""
    V = ranklib_values(X)
    total = np.zeros(X.shape[0], dtype=np.float64)
    for trees in ensembles:
        s = np.zeros(X.shape[0], dtype=F32)
        for t, w in trees:
            s = (s.astype(np.float64) + t.leaf_value[H.exit_leaves(t, V)] * float(w)).astype(F32)
        total += s.astype(np.float64)
    return total / len(ensembles)


def double_score(ensembles, X):
    """treescore's definition: sum in tree order of (weight / n_ensembles) * output, in double."""
    V = ranklib_values(X)
    acc = np.zeros(X.shape[0], dtype=np.float64)
    for trees in ensembles:
        for t, w in trees:
            acc = acc + (float(w) / len(ensembles)) * t.leaf_value[H.exit_leaves(t, V)]
    return acc


def float32_bound(ensembles, X):
    """|RankLib's float32 ensemble sums - the exact sums| / n, per row, plus double roundings."""
    V = ranklib_values(X)
    b = np.zeros(X.shape[0])
    for trees in ensembles:
        s = np.zeros(X.shape[0])
        for t, w in trees:
            s = s + t.leaf_value[H.exit_leaves(t, V)] * float(w)
            b += np.abs(s)
    return (2.0 ** -24 * b * 1.01 + 1e-15 * np.abs(ranklib_score(ensembles, X))) / len(ensembles)


# ---- cases --------------------------------------------------------------------------------------

MODELS = {  # name -> (kind, bags, trees per bag, weight, seed)
    "rf3x4": ("rf", 3, 4, 0.1, 1),
    "rf5x1": ("rf", 5, 1, 1.0, 2),
    "rf4x3": ("rf", 4, 3, 0.05, 3),
    "lambdamart": ("LambdaMART", 1, 25, 0.1, 4),
    "mart": ("MART", 1, 10, 0.1, 5),
}


def scoring_rows(ensembles, seed):
    rng = np.random.default_rng(seed)
    X = (rng.normal(size=(1500, N_FEATURES + 1)) * 3).astype(F32)
    X[rng.random(X.shape) < 0.1] = np.nan
    X[rng.random(X.shape) < 0.05] = 0.0
    X[rng.random(X.shape) < 0.02] = -0.0
    X[rng.random(X.shape) < 0.01] = np.inf
    X[rng.random(X.shape) < 0.01] = -np.inf
    X[:, 0] = np.nan  # column 0 is never read
    trees = [t for e in ensembles for t, _ in e]
    Xt, tags = H.threshold_rows(trees, X, seed=seed, max_nodes=600)
    return np.vstack([X, Xt]).astype(F32), [f"row {i}" for i in range(len(X))] + tags


@pytest.fixture(scope="session")
def rl_case(workdir):
    cases = {}

    def get(name):
        if name not in cases:
            kind, bags, per_bag, w, seed = MODELS[name]
            path = write_model(workdir / f"ranklib-{name}.txt", kind, bags, per_bag, w, seed)
            ens = read_ranklib(path)
            assert len(ens) == bags and all(len(e) == per_bag for e in ens)
            X, tags = scoring_rows(ens, seed + 100)
            raw = workdir / f"ranklib-{name}.f32"
            H.letor_gen.write_raw(raw, X)
            cases[name] = dict(model=path, ens=ens, X=X, tags=tags, raw=raw, exact=double_score(ens, X),
                               ranklib=ranklib_score(ens, X), bound=float32_bound(ens, X))
        return cases[name]

    return get


def test_parse_float32_is_correctly_rounded():
    """The walker's Float.parseFloat: halfway and near-halfway decimals round once."""
    # exactly halfway between 1 and the next float (1 + 2^-24): ties to even, 1.0
    assert parse_float32("1.000000059604644775390625") == F32(1.0)
    # just above that halfway point: a double would round it down to the halfway point,
    # then to 1.0; Float.parseFloat rounds up
    s = "1.00000005960464477539062500000001"
    assert parse_float32(s) == np.nextafter(F32(1), F32(2))
    assert parse_float32("0.1") == F32(0.1) and parse_float32("1.0E-4") == F32(1e-4)


@pytest.mark.parametrize("name", list(MODELS))
def test_walker_agrees_with_float32_sums(name, rl_case):
    """The double sum and RankLib's float32 sums differ by no more than float32 rounding
    (else the suite's premise, the same exit leaves, is wrong)."""
    c = rl_case(name)
    H.assert_within(c["exact"], c["ranklib"], c["bound"], c["X"], c["tags"], f"{name}: double vs float32 sums")


@pytest.mark.parametrize("name", list(MODELS))
def test_scores(name, engine, rl_case):
    c = rl_case(name)
    ours = H.score(c["model"], c["raw"], len(c["X"]), engine, "--format", "raw")
    H.assert_exact(ours, c["exact"], c["X"], c["tags"], f"ranklib {name}, engine {engine}")
    H.assert_within(ours, c["ranklib"], c["bound"], c["X"], c["tags"], f"ranklib {name} vs RankLib's float32 sums")


def test_svmlight_absent_is_zero(engine, rl_case, workdir):
    """SVMlight entries absent from a line read 0, as RankLib's missingZero / unknown values."""
    c = rl_case("rf3x4")
    X = c["X"][:800].copy()
    rng = np.random.default_rng(9)
    present = rng.random(X.shape) > 0.3
    svm = workdir / "ranklib-rf3x4.svm"
    if not svm.exists():
        H.write_svmlight(svm, X, np.zeros(len(X)), qid=np.arange(len(X)) // 20, present=present)
    Xa = np.where(present & ~np.isnan(X), X, F32(0)).astype(F32)
    Xa = np.array([[F32(float(H.fmt_f32(v))) for v in row] for row in Xa], dtype=F32)
    ours = H.score(c["model"], svm, len(X), engine)
    H.assert_exact(ours, double_score(c["ens"], Xa), Xa, None, f"SVMlight, engine {engine}")


# ---- format detection, flags, info --------------------------------------------------------------

def run(*args):
    return H.run_cli([str(a) for a in args])


def info_format(path, *extra):
    p = run("info", "-m", path, *extra)
    assert p.returncode == 0, p.stderr
    return re.search(r"format:\s+(\S+)", p.stdout).group(1)


def test_detection(rl_case, workdir):
    for name in MODELS:
        assert info_format(rl_case(name)["model"]) == "ranklib", name
    # QuickRank imitates RankLib's header but prints the learning rate with "%f"
    assert info_format(H.DATA_DIR / "models" / "msn_lambdamart_10trees_quickrank.xml") == "quickrank"
    assert info_format(H.DATA_DIR / "models" / "rankeval_quickrank.model.xml") == "quickrank"
    assert info_format(H.DATA_DIR / "models" / "rankeval_quickrank.model.xml", "--model-format", "ranklib") == \
        "ranklib"
    # several ensembles are RankLib's only
    p = run("info", "-m", rl_case("rf3x4")["model"], "--model-format", "quickrank")
    assert p.returncode == 1 and "second <ensemble>" in p.stderr, p.stderr


def test_crlf_and_no_header(engine, rl_case, workdir):
    """CRLF line ends (auto-detected); a body without the "##" header needs the flag."""
    c = rl_case("rf4x3")
    text = c["model"].read_text()
    crlf = workdir / "ranklib-rf4x3-crlf.txt"
    crlf.write_bytes(text.replace("\n", "\r\n").encode())
    ours = H.score(crlf, c["raw"], len(c["X"]), engine, "--format", "raw")
    H.assert_exact(ours, c["exact"], c["X"], c["tags"], f"CRLF, engine {engine}")
    bare = workdir / "ranklib-rf4x3-bare.txt"
    bare.write_text(text[text.index("<ensemble>"):])
    ours = H.score(bare, c["raw"], len(c["X"]), engine, "--format", "raw", "--model-format", "ranklib")
    H.assert_exact(ours, c["exact"], c["X"], c["tags"], f"no header, --model-format ranklib, engine {engine}")


def test_model_format_flag(engine, rl_case):
    c = rl_case("lambdamart")
    ours = H.score(c["model"], c["raw"], len(c["X"]), engine, "--format", "raw", "--model-format", "ranklib")
    H.assert_exact(ours, c["exact"], c["X"], c["tags"], f"--model-format ranklib, engine {engine}")


def test_hand_worked_example(engine, workdir):
    """The LambdaMART example of the Elasticsearch LTR documentation's style (old RankLib
    writes "<feature> 1 </feature>"), worked by hand; NaN reads 0."""
    model = workdir / "ranklib-hand.txt"
    model.write_text(
        "## LambdaMART\n## No. of trees = 2\n## No. of leaves = 10\n## No. of threshold candidates = 256\n"
        "## Learning rate = 0.1\n## Stop early = 100\n\n<ensemble>\n"
        ' <tree id="1" weight="0.1">\n  <split>\n   <feature> 1 </feature>\n   <threshold> 0.45867884 </threshold>\n'
        '   <split pos="left">\n    <feature> 2 </feature>\n    <threshold> -0.5 </threshold>\n'
        '    <split pos="left">\n     <output> -2.0 </output>\n    </split>\n'
        '    <split pos="right">\n     <output> -1.3413081169128418 </output>\n    </split>\n   </split>\n'
        '   <split pos="right">\n    <output> 3.0 </output>\n   </split>\n  </split>\n </tree>\n'
        ' <tree id="2" weight="0.1">\n  <split>\n   <output> 0.25 </output>\n  </split>\n </tree>\n</ensemble>\n')
    X = np.array([[0, 0.45867884, -0.5], [0, 0.45867884, -0.4], [0, 0.46, 0], [0, np.nan, np.nan],
                  [0, np.nan, -1]], dtype=F32)
    w = float(F32(0.1))
    leaf = float(F32(-1.3413081169128418))
    want = np.array([w * -2.0, w * leaf, w * 3.0, w * leaf, w * -2.0]) + w * 0.25
    raw = workdir / "ranklib-hand.f32"
    H.letor_gen.write_raw(raw, X)
    H.assert_exact(H.score(model, raw, len(X), engine, "--format", "raw"), want, X, None, f"engine {engine}")


# ---- bad input ------------------------------------------------------------------------------------

def fails(path, *mentions):
    p = run("info", "-m", path)
    assert p.returncode == 1, (p.returncode, p.stderr)
    for m in (str(path),) + mentions:
        assert m in p.stderr, f"{m!r} not in {p.stderr!r}"


def test_bad_input(rl_case, tmp_path):
    text = rl_case("rf3x4")["model"].read_text()
    bad = tmp_path / "feature0.txt"
    bad.write_text(re.sub(r"<feature>\d+ </feature>", "<feature>0 </feature>", text, count=1))
    fails(bad, "feature id 0 (RankLib feature ids start at 1)")
    bad = tmp_path / "weight.txt"
    bad.write_text(text.replace('weight="0.1"', 'weight="abc"', 1))
    fails(bad, "bad weight 'abc'")
    for cut in (len(text) // 3, len(text) // 2, text.rindex("</tree>")):
        bad = tmp_path / f"cut{cut}.txt"
        bad.write_text(text[:cut])
        fails(bad, "truncated?")
    bad = tmp_path / "coordinate-ascent.txt"  # a RankLib linear model
    bad.write_text("## Coordinate Ascent\n## Restart = 5\n## MaxIteration = 25\n1:0.5 2:0.25 3:-0.125\n")
    fails(bad, "a RankLib Coordinate Ascent model is not a tree ensemble")
    bad = tmp_path / "header-only.txt"
    bad.write_text(text[: text.index("<ensemble>")])
    fails(bad, "no <ensemble>", "RankLib")
