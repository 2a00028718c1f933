"""test_usage.py: the treescore CLI's help, version and bad-usage exits (status 2)."""
import pytest

from cli_helpers import write_svmlight_ok

SUBCOMMANDS = ["score", "rank", "info", "bench"]


@pytest.mark.parametrize("sub", SUBCOMMANDS)
@pytest.mark.parametrize("flag", ["--help", "-h"])
def test_subcommand_help(ts, sub, flag):
    r = ts.succeeds(sub, flag)
    assert "usage" in r.stdout.lower(), r
    assert sub in r.stdout, r


def test_top_level_help(ts):
    r = ts.succeeds("--help")
    assert "usage" in r.stdout.lower(), r
    for sub in ("score", "rank", "info"):
        assert sub in r.stdout, r


def test_version(ts):
    r = ts.succeeds("--version")
    assert "0.1.0" in r.stdout, r


@pytest.fixture
def ok_data(tmp_path):
    return write_svmlight_ok(tmp_path / "ok.svm", 3)


def usage_error(ts, *args):
    r = ts.fails(*args, status=2)
    assert r.stdout == "" or "usage" in r.stdout.lower(), r
    return r


def test_no_arguments(ts):
    usage_error(ts)


def test_unknown_subcommand(ts):
    r = usage_error(ts, "frobnicate")
    assert "frobnicate" in r.stderr, r


@pytest.mark.parametrize("opt", ["--no-such-option", "-Z", "--engine-typo=qs"])
def test_unknown_option(ts, lgb_model, ok_data, opt):
    r = usage_error(ts, "score", "-m", lgb_model, "-d", ok_data, opt)
    assert opt.split("=")[0] in r.stderr, r


def test_unknown_engine(ts, lgb_model, ok_data):
    r = usage_error(ts, "score", "-m", lgb_model, "-d", ok_data, "--engine", "warp-drive")
    assert "warp-drive" in r.stderr, r


def test_unknown_formats(ts, lgb_model, ok_data):
    usage_error(ts, "score", "-m", lgb_model, "-d", ok_data, "--format", "parquet")
    usage_error(ts, "score", "-m", lgb_model, "-d", ok_data, "--model-format", "pmml")


def test_missing_required_options(ts, lgb_model, ok_data):
    usage_error(ts, "score", "-d", ok_data)
    usage_error(ts, "score", "-m", lgb_model)
    usage_error(ts, "info")
    usage_error(ts, "rank", "-m", lgb_model)


def test_option_missing_its_value(ts, lgb_model):
    usage_error(ts, "score", "-m", lgb_model, "-d")
    usage_error(ts, "info", "-m")


@pytest.mark.parametrize("value", ["-1", "abc", "", "99999999999999999999999"])
def test_bad_numbers(ts, lgb_model, ok_data, value):
    usage_error(ts, "rank", "-m", lgb_model, "-d", ok_data, "--top", value)


@pytest.mark.parametrize("sub,opt", [("rank", "--top"), ("rank", "--ndcg"), ("bench", "--repeat")])
def test_counts_from_one(ts, lgb_model, ok_data, sub, opt):
    """A count that must be at least 1 says so for 0 and for -1 alike (-1 used to be told
    'a whole number from 0 to N', then 0 'must be at least 1')."""
    for value in ("0", "-1"):
        r = usage_error(ts, sub, "-m", lgb_model, "-d", ok_data, opt, value)
        assert f"{opt} needs a whole number from 1 to " in r.stderr, r


@pytest.mark.parametrize("opt", ["-o", "--output=", "-m", "-d", "--query-file", "--feature-names"])
def test_empty_file_names(ts, lgb_model, ok_data, opt, tmp_path, monkeypatch):
    """-o '' created a hidden '.tmp.XXXXXX' in the working directory and then failed with
    "treescore: : cannot rename the finished output into place"; an empty file name is a
    usage error naming the option, and nothing is written."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    args = {"-m": ["-d", ok_data], "-d": ["-m", lgb_model]}.get(opt, ["-m", lgb_model, "-d", ok_data])
    flag = [opt] if opt.endswith("=") else [opt, ""]
    r = usage_error(ts, "score", *args, *flag)
    assert "needs a file name" in r.stderr, r
    assert list(cwd.iterdir()) == [], list(cwd.iterdir())


def test_option_of_another_subcommand(ts, lgb_model):
    usage_error(ts, "info", "-m", lgb_model, "--top", "3")


def test_unexpected_positional(ts, lgb_model, ok_data):
    usage_error(ts, "score", "-m", lgb_model, "-d", ok_data, "stray")


@pytest.mark.parametrize("engine", ["naive", "qs", "vqs", "auto"])
def test_known_engines_accepted(ts, lgb_model, ok_data, engine):
    r = ts.succeeds("score", "-m", lgb_model, "-d", ok_data, "--engine", engine)
    assert len(r.stdout.split()) == 3, r


def test_bench_batch_and_rows_at_their_limits(ts, lgb_model, ok_data):
    """--batch larger than the rows printed 'batch 100000' although every call scored the 3
    rows; the header now shows the rows per call. --rows 0 and --batch 0 mean all rows, as
    the help says."""
    head = lambda *extra: ts.succeeds("bench", "-m", lgb_model, "-d", ok_data, "--engines", "naive", "--repeat",
                                      "1", *extra).stdout.splitlines()[1]
    assert head("--batch", "100000").endswith(", batch 3"), head("--batch", "100000")
    assert head("--batch", "0").endswith(", batch 3")
    assert head("--rows", "0").startswith(f"model {lgb_model}, 3 documents,")
    assert head("--rows", "2", "--batch", "5").endswith(", batch 2")
    help_text = ts.succeeds("bench", "--help").stdout
    assert "0 = all" in help_text and "--rows N" in help_text, help_text


@pytest.mark.parametrize("extra", [["-d", "/nonexistent/rows.svm"], ["--batch", "7"]])
def test_info_plan_options_without_plan(ts, lgb_model, extra):
    """'treescore info -m M -d DATA' printed the summary and ignored DATA (even a missing
    file): -d and --batch only shape --plan's timing. A usage error says so now."""
    r = usage_error(ts, "info", "-m", lgb_model, *extra)
    assert extra[0] in r.stderr and "--plan" in r.stderr, r


def test_help_of_an_unknown_command(ts):
    """'treescore help frobnicate' printed the general usage and exited 0, as if the command
    existed; it is an unknown command (status 2), as 'treescore frobnicate' is."""
    r = usage_error(ts, "help", "frobnicate")
    assert "unknown command 'frobnicate'" in r.stderr, r
    assert ts.succeeds("help", "rank").stdout.startswith("usage: treescore rank")
