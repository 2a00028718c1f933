/* options.c: command-line option parsing shared by the treescore subcommands. */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void cli_error(const char *fmt, ...) {
    va_list ap;
    fputs("treescore: ", stderr);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
}

void cli_warn_no_rows(const cli_opts *o) {
    const char *d = strcmp(o->data_path, "-") == 0 ? "<stdin>" : o->data_path;
    fprintf(stderr, "treescore: warning: %s: no rows to score (an empty file, or a header line only)%s\n", d,
            o->output_path ? "; the output file is empty" : "");
}

/* A decimal whole number from 0 to max; -1 (nothing printed) otherwise. */
static int parse_number(const char *s, unsigned long long max, unsigned long long *out) {
    char *end;
    errno = 0;
    if (!s || *s < '0' || *s > '9') return -1; /* no sign, no space */
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end || v > max) return -1;
    *out = v;
    return 0;
}

static int parse_uint(const char *opt, const char *s, unsigned long long max, unsigned long long *out) {
    if (parse_number(s, max, out) == 0) return 0;
    cli_error("%s needs a whole number from 0 to %llu, not '%s'", opt, max, s ? s : "");
    return -1;
}

/* As parse_uint, for counts that must be at least 1 (the message gives that range). */
static int parse_count(const char *opt, const char *s, unsigned long long max, unsigned long long *out) {
    if (parse_number(s, max, out) == 0 && *out >= 1) return 0;
    cli_error("%s needs a whole number from 1 to %llu, not '%s'", opt, max, s ? s : "");
    return -1;
}

int cli_parse_base_score(const char *v, double *out) {
    char *end;
    errno = 0;
    double x = v && *v ? strtod(v, &end) : NAN;
    if (!v || !*v || *end || errno == ERANGE || !isfinite(x)) {
        cli_error("--base-score needs a finite number, not '%s'", v ? v : "");
        return -1;
    }
    *out = x;
    return 0;
}

typedef enum {
    O_MODEL, O_DATA, O_OUTPUT, O_ENGINE, O_ENGINES, O_THREADS, O_FORMAT, O_MODEL_FORMAT, O_QUERY_FILE,
    O_DATA_FORMAT, O_ONE_BASED, O_HEADER, O_NO_HEADER, O_LABEL_COLUMN, O_TOP, O_NDCG, O_PRINT_QUERIES, O_REPEAT, O_BATCH,
    O_ROWS, O_QUIET, O_NO_NAME_CHECK, O_FEATURE_NAMES, O_BASE_SCORE, O_ISA, O_TAU, O_DELTA, O_LANES, O_PLANNER, O_PLAN, O_DTYPE, O_HELP
} opt_id;

typedef struct opt_spec {
    const char *long_name;
    char short_name;
    int takes_value;
    unsigned group;
    opt_id id;
} opt_spec;

static const opt_spec specs[] = {
    {"model", 'm', 1, OPT_MODEL, O_MODEL},
    {"data", 'd', 1, OPT_DATA, O_DATA},
    {"output", 'o', 1, OPT_OUTPUT, O_OUTPUT},
    {"engine", 'e', 1, OPT_ENGINE, O_ENGINE},
    {"engines", 0, 1, OPT_BENCH, O_ENGINES},
    {"threads", 't', 1, OPT_SCORER, O_THREADS},
    {"isa", 0, 1, OPT_SCORER, O_ISA},
    {"tau", 0, 1, OPT_SCORER, O_TAU},
    {"delta", 0, 1, OPT_SCORER, O_DELTA},
    {"lanes", 0, 1, OPT_SCORER, O_LANES},
    {"planner", 0, 1, OPT_SCORER, O_PLANNER},
    {"plan", 0, 0, OPT_INFO, O_PLAN},
    {"format", 'f', 1, OPT_DATA_FORMAT | OPT_BENCH, O_FORMAT},
    {"data-format", 0, 1, OPT_DATA_FORMAT | OPT_BENCH, O_DATA_FORMAT},
    {"model-format", 0, 1, OPT_MODEL, O_MODEL_FORMAT},
    {"feature-names", 0, 1, OPT_MODEL, O_FEATURE_NAMES},
    {"base-score", 0, 1, OPT_MODEL, O_BASE_SCORE},
    {"query-file", 'q', 1, OPT_READER, O_QUERY_FILE},
    {"one-based", 0, 0, OPT_READER, O_ONE_BASED},
    {"header", 0, 0, OPT_READER, O_HEADER},
    {"no-header", 0, 0, OPT_READER, O_NO_HEADER},
    {"label-column", 0, 1, OPT_READER, O_LABEL_COLUMN},
    {"top", 'k', 1, OPT_RANK, O_TOP},
    {"ndcg", 0, 1, OPT_RANK, O_NDCG},
    {"print-queries", 0, 1, OPT_RANK, O_PRINT_QUERIES},
    {"repeat", 'r', 1, OPT_BENCH, O_REPEAT},
    {"batch", 0, 1, OPT_BENCH | OPT_INFO, O_BATCH},
    {"rows", 0, 1, OPT_BENCH, O_ROWS},
    {"dtype", 0, 1, OPT_BENCH, O_DTYPE},
    {"quiet", 0, 0, OPT_QUIET, O_QUIET},
    {"no-name-check", 0, 0, OPT_READER, O_NO_NAME_CHECK},
    {"help", 'h', 0, ~0u, O_HELP},
};

static const opt_spec *find_spec(const char *arg, const char **inline_value) {
    *inline_value = NULL;
    if (arg[0] == '-' && arg[1] == '-') {
        const char *name = arg + 2, *eq = strchr(name, '=');
        size_t len = eq ? (size_t)(eq - name) : strlen(name);
        for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
            if (strlen(specs[i].long_name) == len && strncmp(specs[i].long_name, name, len) == 0) {
                if (eq) *inline_value = eq + 1;
                return &specs[i];
            }
        return NULL;
    }
    /* -m FILE, or -mFILE for options that take a value */
    if (arg[0] == '-' && arg[1] && arg[1] != '-')
        for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++)
            if (specs[i].short_name == arg[1]) {
                if (arg[2] == '\0') return &specs[i];
                if (!specs[i].takes_value) return NULL;
                *inline_value = arg + 2;
                return &specs[i];
            }
    return NULL;
}

int cli_set_tuning(cli_opts *o, const char *key, const char *v) {
    unsigned long long n;
    char opt[32];
    snprintf(opt, sizeof opt, "--%s", key);
    if (strcmp(key, "threads") == 0) {
        if (parse_uint(opt, v, CLI_MAX_THREADS, &n)) return -1;
        o->threads = (unsigned)n;
    } else if (strcmp(key, "isa") == 0) {
        if (ts_isa_from_name(v, &o->isa) != TS_OK) {
            cli_error("%s: unknown instruction set '%s' (" CLI_ISA_NAMES ")", opt, v);
            return -1;
        }
    } else if (strcmp(key, "tau") == 0) {
        if (strcmp(v, "all") == 0) {
            o->tau = TS_BLOCK_ALL;
        } else if (parse_number(v, TS_BLOCK_ALL - 1u, &n) == 0) {
            o->tau = (uint32_t)n;
        } else {
            cli_error("%s needs a number of trees per block (0 = auto) or 'all', not '%s'", opt, v);
            return -1;
        }
    } else if (strcmp(key, "delta") == 0) {
        if (parse_uint(opt, v, CLI_MAX_DELTA, &n)) return -1;
        o->delta = (uint32_t)n;
    } else if (strcmp(key, "lanes") == 0) {
        if (parse_uint(opt, v, 64, &n)) return -1;
        o->lanes = (uint32_t)n;
    } else if (strcmp(key, "planner") == 0) {
        if (strcmp(v, "measure") == 0) o->plan = TS_PLAN_MEASURE;
        else if (strcmp(v, "rule") == 0) o->plan = TS_PLAN_RULE;
        else {
            cli_error("%s: 'measure' or 'rule', not '%s'", opt, v);
            return -1;
        }
    } else {
        cli_error("unknown setting '%s' (isa, threads, tau, delta, lanes, planner)", key);
        return -1;
    }
    return 0;
}

/* The bench subcommand's --format names its output table; the others' name the data. */
static int set_format(cli_opts *o, unsigned accepted, const char *v) {
    if ((accepted & OPT_BENCH) && !(accepted & OPT_DATA_FORMAT)) {
        if (strcmp(v, "tsv") == 0) o->tsv = 1;
        else if (strcmp(v, "table") == 0) o->tsv = 0;
        else {
            cli_error("bench: --format names the output, 'table' or 'tsv', not '%s' (the data's format is "
                      "--data-format)", v);
            return -1;
        }
        return 0;
    }
    if (tsio_data_format_from_name(v, &o->data_format) != TS_OK) {
        cli_error("unknown data format '%s' (auto, svmlight, csv, tsv, raw)", v);
        return -1;
    }
    return 0;
}

static int apply(cli_opts *o, unsigned accepted, opt_id id, const char *v) {
    unsigned long long n;
    switch (id) {
    case O_MODEL: o->model_path = v; return 0;
    case O_DATA: o->data_path = v; return 0;
    case O_OUTPUT: o->output_path = v; return 0;
    case O_QUERY_FILE: o->query_file = v; return 0;
    case O_ENGINES: o->engines = v; return 0;
    case O_ENGINE:
        if (ts_engine_from_name(v, &o->engine) == TS_OK) return 0;
        cli_error("unknown engine '%s' (" CLI_ENGINE_NAMES ")", v);
        return -1;
    case O_MODEL_FORMAT:
        if (ts_model_format_from_name(v, &o->model_format) == TS_OK) return 0;
        {
            /* every format, by the names of ts_model_format_name: none can be left out */
            char names[512];
            size_t len = 0;
            for (int f = 0; f < TS_FORMAT_COUNT && len < sizeof names; f++) {
                int k = snprintf(names + len, sizeof names - len, "%s%s", f ? ", " : "",
                                 ts_model_format_name((ts_model_format)f));
                if (k < 0) break;
                len += (size_t)k;
            }
            cli_error("unknown model format '%s' (%s; ubjson = xgboost-ubjson)", v, names);
        }
        return -1;
    case O_FORMAT: return set_format(o, accepted, v);
    case O_DATA_FORMAT:
        if (tsio_data_format_from_name(v, &o->data_format) == TS_OK) return 0;
        cli_error("unknown data format '%s' (auto, svmlight, csv, tsv, raw)", v);
        return -1;
    case O_THREADS: return cli_set_tuning(o, "threads", v);
    case O_ISA: return cli_set_tuning(o, "isa", v);
    case O_TAU: return cli_set_tuning(o, "tau", v);
    case O_DELTA: return cli_set_tuning(o, "delta", v);
    case O_LANES: return cli_set_tuning(o, "lanes", v);
    case O_PLANNER: return cli_set_tuning(o, "planner", v);
    case O_PLAN: o->show_plan = 1; return 0;
    case O_ONE_BASED: o->one_based = 1; return 0;
    case O_HEADER: o->header = 1; return 0;
    case O_NO_HEADER: o->header = 0; return 0;
    case O_LABEL_COLUMN: if (parse_uint("--label-column", v, 1u << 24, &n)) return -1; o->label_column = (int)n; return 0;
    case O_TOP:
    case O_NDCG:
        if (parse_count(id == O_TOP ? "--top" : "--ndcg", v, 1u << 30, &n)) return -1;
        *(id == O_TOP ? &o->top : &o->ndcg_k) = (unsigned)n;
        return 0;
    case O_PRINT_QUERIES:
        if (parse_uint("--print-queries", v, 1u << 30, &n)) return -1;
        o->print_queries = (long)n;
        return 0;
    case O_REPEAT:
        if (parse_count("--repeat", v, 100000, &n)) return -1;
        o->repeat = (unsigned)n;
        return 0;
    case O_BATCH: if (parse_uint("--batch", v, 1u << 30, &n)) return -1; o->batch = (unsigned)n; return 0;
    case O_ROWS: if (parse_uint("--rows", v, ~0ull, &n)) return -1; o->max_rows = n; return 0;
    case O_DTYPE:
        if (strcmp(v, "f32") && strcmp(v, "f64")) {
            cli_error("--dtype must be f32 or f64, not '%s'", v);
            return -1;
        }
        o->dtype = v[1] == '6' ? 64 : 32;
        return 0;
    case O_QUIET: o->quiet = 1; return 0;
    case O_NO_NAME_CHECK: o->no_name_check = 1; return 0;
    case O_FEATURE_NAMES: o->feature_names_path = v; return 0;
    case O_BASE_SCORE: o->has_base_score = 1; return cli_parse_base_score(v, &o->base_score);
    case O_HELP: o->help = 1; return 0;
    }
    return -1;
}

static void defaults(cli_opts *o) {
    memset(o, 0, sizeof *o);
    o->model_format = TS_FORMAT_AUTO;
    o->data_format = TSIO_DATA_AUTO;
    o->engine = TS_ENGINE_AUTO;
    o->isa = TS_ISA_AUTO;
    o->header = -1;
    o->label_column = -1;
    o->top = 10;
    o->print_queries = -1;
    o->repeat = 5;
}

int cli_start(int argc, char **argv, unsigned accepted, const char *usage, int need_data, cli_opts *o) {
    int rc = cli_parse(argc, argv, accepted, o);
    if (rc != CLI_OK) return rc;
    if (o->help) {
        fputs(usage, stdout);
        return CLI_OK;
    }
    if ((o->model_path && strcmp(o->model_path, "-") == 0) ||
        (o->feature_names_path && strcmp(o->feature_names_path, "-") == 0)) {
        /* was "-: cannot open: No such file or directory" */
        cli_error("%s: %s is read from a file, not standard input: save it to a file first", argv[0],
                  o->model_path && strcmp(o->model_path, "-") == 0 ? "the model (-m)" : "--feature-names");
        return CLI_USAGE;
    }
    if (o->data_path && o->query_file && strcmp(o->data_path, "-") == 0 && strcmp(o->query_file, "-") == 0) {
        /* both read the one stream: "query sizes add up to 0 rows but <stdin> has more" */
        cli_error("%s: -d - and -q - cannot both read standard input: give the query file as a file", argv[0]);
        return CLI_USAGE;
    }
    if (!o->model_path || (need_data && !o->data_path)) {
        cli_error("%s: -m MODEL%s %s required (see 'treescore %s --help')", argv[0], need_data ? " and -d DATA" : "",
                  need_data ? "are" : "is", argv[0]);
        return CLI_USAGE;
    }
    return -1;
}

int cli_parse(int argc, char **argv, unsigned accepted, cli_opts *o) {
    defaults(o);
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *value;
        const opt_spec *s = find_spec(arg, &value);
        if (!s || !(s->group & accepted)) {
            if (arg[0] == '-' && arg[1])
                cli_error("%s: unknown option '%s' (see 'treescore %s --help')", argv[0], arg, argv[0]);
            else
                cli_error("%s: unexpected argument '%s' (see 'treescore %s --help')", argv[0], arg, argv[0]);
            return CLI_USAGE;
        }
        if (s->takes_value && !value) {
            if (i + 1 >= argc) {
                cli_error("%s: option '%s' needs a value", argv[0], arg);
                return CLI_USAGE;
            }
            value = argv[++i];
        } else if (!s->takes_value && value) {
            cli_error("%s: option '--%s' takes no value", argv[0], s->long_name);
            return CLI_USAGE;
        }
        if (value && *value == '\0' && (s->id == O_MODEL || s->id == O_DATA || s->id == O_OUTPUT || s->id == O_QUERY_FILE ||
                                s->id == O_FEATURE_NAMES)) {
            /* -o '' wrote a hidden ".tmp.XXXXXX" in the working directory, then failed as
             * "treescore: : cannot rename the finished output into place" */
            cli_error("%s: option '--%s' needs a file name, not an empty string", argv[0], s->long_name);
            return CLI_USAGE;
        }
        if (apply(o, accepted, s->id, value)) return CLI_USAGE;
    }
    return CLI_OK;
}
