/* fuzz_cli_options.c: libFuzzer target for the CLI's option parsing (cli/options.c: cli_start, cli_parse, cli_set_tuning). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * Input layout: byte 0 picks the subcommand (its accepted options, as cmd_*.c pass them:
 * byte0 & 3 = score, rank, info, bench; bit 2 = need_data); the rest is argv[1..], its
 * arguments separated by NUL bytes (a trailing part without NUL is the last argument).
 * argv[0] is the subcommand's name, as main.c passes it.
 *
 * The parser must never crash or exit, return CLI_OK, CLI_USAGE or -1 (go on), and on
 * success leave every setting inside the bounds options.c promises. Messages go to
 * /dev/null (the parser prints each problem); contract violations to the real stderr.
 */

static FILE *real_stderr;

int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    real_stderr = stderr;
    FILE *null = fopen("/dev/null", "w");
    if (null) {
        stderr = null; /* glibc: stderr and stdout are assignable */
        stdout = null;
    }
    return 0;
}

static void die(const char *what) {
    fprintf(real_stderr ? real_stderr : stderr, "fuzz contract violation: %s\n", what);
    abort();
}

#define MAX_ARGS 64

static const unsigned accepted_sets[4] = {
    OPT_MODEL | OPT_DATA | OPT_OUTPUT | OPT_ENGINE | OPT_SCORER | OPT_DATA_FORMAT | OPT_READER | OPT_QUIET,
    OPT_MODEL | OPT_DATA | OPT_OUTPUT | OPT_ENGINE | OPT_SCORER | OPT_DATA_FORMAT | OPT_READER | OPT_RANK | OPT_QUIET,
    OPT_MODEL | OPT_INFO | OPT_SCORER | OPT_DATA | OPT_DATA_FORMAT | OPT_READER,
    OPT_MODEL | OPT_DATA | OPT_SCORER | OPT_READER | OPT_BENCH | OPT_QUIET,
};
static const char *const names[4] = {"score", "rank", "info", "bench"};

/* A string option is NULL or one of the argument strings (or points inside one). */
static void check_in_args(const char *p, char *buf, size_t len) {
    if (p && (p < buf || p > buf + len)) die("a path option points outside argv");
}

static void check_opts(const cli_opts *o, char *buf, size_t len) {
    if (o->threads > CLI_MAX_THREADS) die("--threads above CLI_MAX_THREADS");
    if (o->delta > CLI_MAX_DELTA) die("--delta above CLI_MAX_DELTA");
    if (o->lanes > 64) die("--lanes above 64");
    if (o->top < 1 || o->top > (1u << 30)) die("--top outside 1..2^30");
    if (o->ndcg_k > (1u << 30)) die("--ndcg above 2^30");
    if (o->repeat < 1 || o->repeat > 100000) die("--repeat outside 1..100000");
    if (o->batch > (1u << 30)) die("--batch above 2^30");
    if (o->print_queries < -1 || o->print_queries > (1l << 30)) die("--print-queries outside -1..2^30");
    if (o->label_column < -1 || o->label_column > (1 << 24)) die("--label-column outside -1..2^24");
    if (o->header < -1 || o->header > 1) die("header not -1, 0 or 1");
    if (o->has_base_score && !isfinite(o->base_score)) die("--base-score not finite");
    if ((unsigned)o->engine >= TS_ENGINE_COUNT) die("engine out of range");
    if (o->tsv != 0 && o->tsv != 1) die("tsv not 0 or 1");
    check_in_args(o->model_path, buf, len);
    check_in_args(o->data_path, buf, len);
    check_in_args(o->output_path, buf, len);
    check_in_args(o->query_file, buf, len);
    check_in_args(o->engines, buf, len);
    check_in_args(o->feature_names_path, buf, len);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1 || size > 4096) return 0;
    unsigned pick = data[0] & 3;
    int need_data = (data[0] >> 2) & 1;
    size_t len = size - 1;
    char *buf = malloc(len + 1);
    if (!buf) return 0;
    memcpy(buf, data + 1, len);
    buf[len] = '\0';
    char *argv[MAX_ARGS + 2];
    char name[8];
    snprintf(name, sizeof name, "%s", names[pick]);
    int argc = 0;
    argv[argc++] = name;
    for (size_t i = 0; i < len && argc <= MAX_ARGS;) {
        argv[argc++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    argv[argc] = NULL;
    cli_opts o;
    int rc = cli_start(argc, argv, accepted_sets[pick], "usage\n", need_data, &o);
    if (rc != -1 && rc != CLI_OK && rc != CLI_USAGE) die("cli_start returned an unknown status");
    if (rc == -1 && (!o.model_path || (need_data && !o.data_path))) die("went on without -m (or -d)");
    if (rc == CLI_OK && !o.help) die("CLI_OK without --help");
    check_opts(&o, buf, len); /* a failed parse may have applied some options: still bounded */
    /* bench's engine specs set the same fields through cli_set_tuning */
    if (argc >= 3) {
        int t = cli_set_tuning(&o, argv[1], argv[2]);
        if (t != 0 && t != -1) die("cli_set_tuning returned neither 0 nor -1");
        check_opts(&o, buf, len);
    }
    free(buf);
    return 0;
}
