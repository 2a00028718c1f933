/* cmd_bench.c: `treescore bench`: engines side by side on the same rows, medians, ratios. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "model/stats.h"

static const char usage[] =
    "usage: treescore bench -m MODEL -d DATA [--engines SPEC,...] [--repeat N] [options]\n"
    "\n"
    "Load up to --rows rows of DATA into memory, prepare MODEL for each listed engine,\n"
    "check that every engine gives the first engine's scores bit for bit, score once\n"
    "per engine to warm up, then run N timed repetitions, alternating engines inside each\n"
    "repetition so that drift of the machine hits them alike. Prints the CPU's best\n"
    "instruction set and thread count, then per engine what it used (instruction set,\n"
    "threads, block of tau trees x delta documents), the microseconds per document\n"
    "(median, min, max over the repetitions), documents per second, and the speedup of\n"
    "the median over the first engine's; then the time each engine took to prepare (for\n"
    "ifelse, generating and compiling the model unless it is cached; for auto, the\n"
    "planner's timing, and which engine it chose), and the mean number of false nodes per\n"
    "document and tree (the nodes QuickScorer visits, over at most 1,000 rows).\n"
    "\n"
    "  -m, --model FILE        model file\n"
    "  -d, --data FILE         data file (SVMlight, CSV, TSV or raw)\n"
    "      --engines SPECS     comma-separated engine specs (default naive,qs,vqs), each\n"
    "                          NAME[:KEY=VALUE]... with NAME one of " CLI_ENGINE_NAMES "\n"
    "                          and KEY one of isa, threads, tau, delta, lanes, planner:\n"
    "                          the setting of the option --KEY for that engine only;\n"
    "                          e.g. --engines qs:tau=all:delta=1,qs,vqs:isa=avx2,vqs\n"
    "  -r, --repeat N          timed repetitions (default 5)\n"
    "      --batch N           rows per scoring call (default 0 = all rows in one call)\n"
    "      --rows N            rows to load (default 0 = all)\n"
    "      --dtype f32|f64     score float32 rows (ts_scorer_score) or float64 rows\n"
    "                          (ts_scorer_score_f64); default: what 'treescore score' uses\n"
    "                          for DATA: f64 for text formats (their values read as doubles),\n"
    "                          f32 for raw float32 files\n"
    CLI_SCORER_HELP
    "  -f, --format table|tsv  output: aligned table (default) or tab-separated rows under\n"
    "                          the header: engine isa threads us_per_doc_median\n"
    "                          us_per_doc_min us_per_doc_max speedup (the other lines go\n"
    "                          to standard error, starting with '# ')\n"
    "      --data-format F     the data's format: auto (default), svmlight, csv, tsv, raw\n"
    "      --model-format F, --query-file F, --one-based, --header, --no-header,\n"
    "      --label-column K, --feature-names FILE, --base-score X\n"
    "                          as for 'treescore score'\n"
    "      --quiet             no progress lines on standard error (long runs print one\n"
    "                          per repetition)\n"
    "  -h, --help              this help\n";

#define MAX_ENGINES 16
#define SPEC_MAX 128
/* The false-node statistic reads at most this many rows, and at most about this many
 * node tests in all (a 20,000-tree model still answers in a fraction of a second). */
#define STATS_MAX_ROWS 1000u
#define STATS_MAX_TESTS 250000000.0
/* A run whose warm-up predicts more seconds than this reports its repetitions on
 * stderr (each one, at most one line a second). */
#define PROGRESS_AFTER_S 10.0

typedef struct matrix {
    float *x;
    double *xd;           /* the rows as doubles (text formats: the values read), or NULL */
    size_t rows, cols;
    int f64;              /* time ts_scorer_score_f64 on xd */
} matrix;

/* One engine as --engines names it: its text and the options with its keys applied. */
typedef struct engine_spec {
    char text[SPEC_MAX];
    ts_engine engine;
    cli_opts o;
} engine_spec;

static int load_rows(const cli_opts *o, const ts_model *m, matrix *mx) {
    tsio_reader *r = cli_open_data(o, m, 0, 1);
    size_t cap = 0;
    int rc = -1;
    if (!r) return -1;
    mx->x = NULL;
    mx->xd = NULL;
    mx->rows = 0;
    int doubles = -1; /* whether the chunks come with doubles (text formats) */
    mx->cols = tsio_reader_n_cols(r);
    cli_chunks it;
    tsio_chunk c;
    int got;
    cli_chunks_init(&it, o, m, r);
    for (;;) {
        if ((got = cli_chunks_next(&it, &c)) < 0) break;
        if (got == 0 || (o->max_rows && mx->rows >= o->max_rows)) {
            rc = 0;
            break;
        }
        size_t take = c.n_rows;
        if (o->max_rows && mx->rows + take > o->max_rows) take = (size_t)(o->max_rows - mx->rows);
        if (doubles < 0) doubles = c.xd != NULL;
        if (mx->rows + take > cap) {
            size_t ncap = cap ? cap * 2 : 4096;
            while (ncap < mx->rows + take) ncap *= 2;
            float *nx = realloc(mx->x, ncap * mx->cols * sizeof *nx);
            if (nx) mx->x = nx;
            double *nd = nx && doubles ? realloc(mx->xd, ncap * mx->cols * sizeof *nd) : NULL;
            if (nd) mx->xd = nd;
            if (!nx || (doubles && !nd)) {
                cli_error("out of memory loading %s", o->data_path);
                break;
            }
            cap = ncap;
        }
        if (c.x) {
            memcpy(mx->x + mx->rows * mx->cols, c.x, take * mx->cols * sizeof *c.x);
        } else { /* doubles only (text read as doubles): their floats */
            for (size_t i = 0; i < take * mx->cols; i++) mx->x[mx->rows * mx->cols + i] = (float)c.xd[i];
        }
        if (doubles) {
            for (size_t i = 0; i < take * mx->cols; i++)
                mx->xd[mx->rows * mx->cols + i] = c.xd ? c.xd[i] : (double)c.x[i];
        }
        mx->rows += take;
    }
    tsio_reader_close(r);
    if (rc == 0 && mx->rows == 0) {
        cli_error("%s: no rows to benchmark", o->data_path);
        rc = -1;
    }
    /* --dtype, else as `treescore score` reads DATA: doubles from text, floats from raw */
    mx->f64 = o->dtype ? o->dtype == 64 : doubles > 0;
    if (rc == 0 && mx->f64 && !mx->xd) {
        if (!(mx->xd = malloc(mx->rows * mx->cols * sizeof *mx->xd))) {
            cli_error("out of memory loading %s", o->data_path);
            return -1;
        }
        for (size_t i = 0; i < mx->rows * mx->cols; i++) mx->xd[i] = (double)mx->x[i];
    }
    return rc;
}

static void spec_error(const char *text, const char *problem) {
    cli_error("bench: --engines: bad engine spec '%s': %s (NAME[:isa=LEVEL][:threads=N][:tau=N|all][:delta=N][:lanes=N][:planner=MODE], "
              "NAME one of " CLI_ENGINE_NAMES ")",
              text, problem);
}

/* One spec, NAME[:KEY=VALUE]..., whose text is already in sp->text; sp->o holds the
 * global options on entry. */
static int parse_spec(engine_spec *sp) {
    char buf[SPEC_MAX];
    memcpy(buf, sp->text, sizeof buf);
    char *next = strchr(buf, ':');
    if (next) *next++ = '\0';
    if (ts_engine_from_name(buf, &sp->engine) != TS_OK) {
        char problem[SPEC_MAX + 32];
        snprintf(problem, sizeof problem, "unknown engine '%s'", buf);
        spec_error(sp->text, problem);
        return -1;
    }
    while (next) {
        char *key = next, *eq;
        if ((next = strchr(key, ':'))) *next++ = '\0';
        if (!(eq = strchr(key, '=')) || eq == key) {
            spec_error(sp->text, "each setting after the engine's name is KEY=VALUE");
            return -1;
        }
        *eq = '\0';
        if (cli_set_tuning(&sp->o, key, eq + 1)) {
            spec_error(sp->text, "see the message above");
            return -1;
        }
    }
    return 0;
}

/* The comma-separated specs of --engines (default naive,qs,vqs); empty specs are errors. */
static int parse_engines(const cli_opts *o, engine_spec *out, int *n) {
    const char *list = o->engines ? o->engines : "naive,qs,vqs";
    *n = 0;
    for (const char *p = list;; p++) {
        size_t len = strcspn(p, ",");
        if (len == 0) {
            cli_error("bench: --engines '%s' has an empty engine spec (specs are separated by single commas)",
                      list);
            return -1;
        }
        if (*n == MAX_ENGINES) {
            cli_error("bench: --engines: at most %d engines", MAX_ENGINES);
            return -1;
        }
        if (len >= SPEC_MAX) {
            cli_error("bench: --engines: engine spec '%.*s' is longer than %d characters", (int)len, p,
                      SPEC_MAX - 1);
            return -1;
        }
        engine_spec *sp = &out[(*n)++];
        memcpy(sp->text, p, len);
        sp->text[len] = '\0';
        sp->o = *o;
        if (parse_spec(sp)) return -1;
        p += len;
        if (*p == '\0') return 0;
    }
}

/* Score all rows; seconds taken, or -1 (printed) when a call fails. */
static double run_once(ts_scorer *s, const matrix *mx, size_t batch, double *out) {
    ts_error err;
    double t0 = cli_now();
    for (size_t r = 0; r < mx->rows; r += batch) {
        size_t n = mx->rows - r < batch ? mx->rows - r : batch;
        double *o = out + r * ts_scorer_n_outputs(s);
        ts_status st = mx->f64 ? ts_scorer_score_f64(s, mx->xd + r * mx->cols, n, mx->cols, mx->cols, o, &err)
                               : ts_scorer_score(s, mx->x + r * mx->cols, n, mx->cols, mx->cols, o, &err);
        if (st != TS_OK) {
            cli_error("bench: scoring failed: %s", err.message);
            return -1;
        }
    }
    return cli_now() - t0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct result {
    const char *spec;
    ts_isa isa;
    unsigned threads;
    uint32_t tau, delta;
    ts_engine engine;     /* what the scorer uses (auto resolved) */
    double prepare_ms;    /* ts_scorer_create */
    double med, min, max; /* microseconds per document */
} result;

static int is_gpu(ts_engine e) { return e == TS_ENGINE_GPU || e == TS_ENGINE_GPU_NAIVE; }

static void fill_setup(result *r, const engine_spec *sp, const ts_scorer *s) {
    r->spec = sp->text;
    r->isa = ts_scorer_isa(s);
    r->engine = ts_scorer_engine(s);
    /* a GPU engine takes each batch whole on the calling thread */
    r->threads = is_gpu(r->engine) ? 1 : ts_scorer_n_threads(s);
    ts_scorer_blocking(s, &r->tau, &r->delta);
}

/* The isa column: the instruction set, or "cuda" for the GPU engines. */
static const char *isa_label(const result *r) { return is_gpu(r->engine) ? "cuda" : ts_isa_name(r->isa); }

/* "prepare ms: naive 0.4, auto (chose vqs) 130.2, ifelse 2113.0". To stdout in table
 * mode, to stderr after '# ' in tsv. */
static void print_prepare(const cli_opts *o, const result *res, int n) {
    FILE *f = o->tsv ? stderr : stdout;
    fprintf(f, "%sprepare ms (time to first prediction, after loading):", o->tsv ? "# " : "");
    for (int e = 0; e < n; e++) {
        int is_auto = strncmp(res[e].spec, "auto", 4) == 0;
        fprintf(f, "%s %s", e ? "," : "", res[e].spec);
        if (is_auto) fprintf(f, " (chose %s for this batch)", ts_engine_name(res[e].engine));
        fprintf(f, " %.1f", res[e].prepare_ms);
    }
    fputc('\n', f);
}

/* "1000/16", "all/16", or "-" for an engine without blocks. */
static void format_blocks(char *buf, size_t size, uint32_t tau, uint32_t delta) {
    if (tau == 0 && delta == 0) snprintf(buf, size, "-");
    else if (tau == TS_BLOCK_ALL) snprintf(buf, size, "all/%u", delta);
    else snprintf(buf, size, "%u/%u", tau, delta);
}

static void print_table(const cli_opts *o, const result *res, int n, size_t rows, int mx_f64, size_t batch) {
    int w = 10;
    for (int e = 0; e < n; e++)
        if ((int)strlen(res[e].spec) > w) w = (int)strlen(res[e].spec);
    printf("cpu: %s, %u threads available\n", ts_isa_name(ts_cpu_isa()), ts_cpu_count());
    printf("model %s, %zu documents, %u repetitions, %s rows, batch %zu\n", o->model_path, rows, o->repeat,
           mx_f64 ? "float64" : "float32", batch);
    printf("%-*s %-7s %7s %12s %14s %12s %12s %14s %9s\n", w, "engine", "isa", "threads", "tau/delta",
           "us/doc median", "min", "max", "docs/s", "speedup");
    for (int e = 0; e < n; e++) {
        char blocks[32];
        format_blocks(blocks, sizeof blocks, res[e].tau, res[e].delta);
        printf("%-*s %-7s %7u %12s %14.4f %12.4f %12.4f %14.0f %8.2fx\n", w, res[e].spec, isa_label(&res[e]),
               res[e].threads, blocks, res[e].med, res[e].min, res[e].max, 1e6 / res[e].med,
               res[0].med / res[e].med);
    }
}

static void print_tsv(const result *res, int n) {
    printf("engine\tisa\tthreads\tus_per_doc_median\tus_per_doc_min\tus_per_doc_max\tspeedup\n");
    for (int e = 0; e < n; e++)
        printf("%s\t%s\t%u\t%.4f\t%.4f\t%.4f\t%.3f\n", res[e].spec, isa_label(&res[e]), res[e].threads,
               res[e].med, res[e].min, res[e].max, res[0].med / res[e].med);
}

/* The false-node line: evenly spaced rows, at most STATS_MAX_ROWS and about
 * STATS_MAX_TESTS node tests. To stdout in table mode, to stderr after '# ' in tsv. */
static void print_false_nodes(const cli_opts *o, const ts_model *m, const matrix *mx) {
    ts_model_info info;
    ts_model_get_info(m, &info, NULL);
    if (info.n_trees == 0) return;
    double per_row = info.n_internal_nodes ? (double)info.n_internal_nodes : 1.0;
    size_t want = STATS_MAX_ROWS;
    if ((double)want * per_row > STATS_MAX_TESTS) want = (size_t)(STATS_MAX_TESTS / per_row);
    if (want < 1) want = 1;
    size_t step = (mx->rows + want - 1) / want;
    if (step < 1) step = 1;
    size_t n = (mx->rows + step - 1) / step;
    double fn = tsm_false_nodes_per_tree(m, mx->x, n, step * mx->cols, o->keep, o->n_keep);
    char over[96];
    if (n == mx->rows) snprintf(over, sizeof over, "mean over %zu rows", n);
    else snprintf(over, sizeof over, "mean over %zu of the %zu rows, evenly spaced", n, mx->rows);
    fprintf(o->tsv ? stderr : stdout, "%sfalse nodes per document per tree (QuickScorer's visits): %.1f of %.4g "
            "internal nodes (%s)\n", o->tsv ? "# " : "", fn, (double)info.n_internal_nodes / info.n_trees, over);
}

/* Median, min and max of one engine's repetitions, in microseconds per document. */
static void summarize(result *r, double *t, unsigned repeat, size_t rows) {
    qsort(t, repeat, sizeof *t, cmp_double);
    double med = repeat % 2 ? t[repeat / 2] : (t[repeat / 2 - 1] + t[repeat / 2]) / 2;
    double per = 1e6 / (double)rows;
    r->med = med * per;
    r->min = t[0] * per;
    r->max = t[repeat - 1] * per;
}

/* Warm-up, which also checks every engine against the first bit for bit. Seconds the
 * warm-up took (an estimate of one repetition), or -1 on failure (printed). */
static double warm_up(ts_scorer **sc, const engine_spec *specs, int n, const matrix *mx, size_t batch,
                      double *ref, double *out) {
    double total = 0;
    for (int e = 0; e < n; e++) {
        double t = run_once(sc[e], mx, batch, e ? out : ref);
        if (t < 0) return -1;
        total += t;
        if (e && memcmp(out, ref, mx->rows * ts_scorer_n_outputs(sc[e]) * sizeof *out) != 0) {
            cli_error("engine %s does not give the same scores as %s: refusing to time it", specs[e].text,
                      specs[0].text);
            return -1;
        }
    }
    return total;
}

/* Warm-up and check, then o->repeat repetitions of every engine in turn: times[e *
 * repeat + rep] in seconds. Nonzero on failure (printed). */
static int timed_runs(const cli_opts *o, ts_scorer **sc, const engine_spec *specs, int n, const matrix *mx,
                      size_t batch, double *ref, double *out, double *times) {
    double one_rep = warm_up(sc, specs, n, mx, batch, ref, out), t0 = cli_now(), last = 0;
    if (one_rep < 0) return -1;
    int progress = !o->quiet && one_rep * o->repeat > PROGRESS_AFTER_S;
    for (unsigned rep = 0; rep < o->repeat; rep++) {
        for (int e = 0; e < n; e++)
            if ((times[(size_t)e * o->repeat + rep] = run_once(sc[e], mx, batch, out)) < 0) return -1;
        double spent = cli_now() - t0;
        if (progress && (spent - last >= 1.0 || rep + 1 == o->repeat)) { /* at most one line a second */
            last = spent;
            fprintf(stderr, "treescore: bench: repetition %u of %u done, about %.0f s left\n", rep + 1, o->repeat,
                    spent / (rep + 1) * (o->repeat - rep - 1));
        }
    }
    return 0;
}

static int bench_engines(const cli_opts *o, const ts_model *m, const matrix *mx, const engine_spec *specs, int n) {
    ts_scorer *sc[MAX_ENGINES] = {0};
    ts_model_info mi;
    size_t k = ts_model_get_info(m, &mi, NULL) == TS_OK && mi.n_outputs ? mi.n_outputs : 1; /* scores per row */
    double *out = malloc(mx->rows * k * sizeof *out), *ref = malloc(mx->rows * k * sizeof *ref);
    double *times = malloc((size_t)n * o->repeat * sizeof *times);
    size_t batch = o->batch && o->batch < mx->rows ? o->batch : mx->rows; /* the rows of each call */
    result res[MAX_ENGINES];
    int rc = CLI_FAILED;
    if (!out || !ref || !times) {
        cli_error("out of memory");
        goto done;
    }
    for (int e = 0; e < n; e++) {
        cli_opts so = specs[e].o;
        /* auto: the default scorer (every range planned, each call's engine by its rows);
         * auto:planner=... the same. An explicit engine needs no hint. */
        so.batch_hint = CLI_ALL_BATCHES;
        so.sample = mx->x; /* auto: the planner times the engines on these rows */
        so.sample_rows = mx->rows;
        so.sample_stride = mx->cols;
        double t0 = cli_now();
        if (!(sc[e] = cli_create_scorer(m, &so, specs[e].engine))) goto done;
        fill_setup(&res[e], &specs[e], sc[e]);
        res[e].engine = ts_scorer_engine_for(sc[e], batch); /* auto: this batch's */
        res[e].prepare_ms = 1e3 * (cli_now() - t0);
    }
    if (timed_runs(o, sc, specs, n, mx, batch, ref, out, times)) goto done;
    for (int e = 0; e < n; e++) summarize(&res[e], times + (size_t)e * o->repeat, o->repeat, mx->rows);
    if (o->tsv) print_tsv(res, n);
    else print_table(o, res, n, mx->rows, mx->f64, batch);
    print_prepare(o, res, n);
    print_false_nodes(o, m, mx);
    rc = CLI_OK;
done:
    for (int e = 0; e < n; e++) ts_scorer_free(sc[e]);
    free(out);
    free(ref);
    free(times);
    return rc;
}

int cmd_bench(int argc, char **argv) {
    cli_opts o;
    engine_spec specs[MAX_ENGINES];
    int n_engines;
    int rc = cli_start(argc, argv, OPT_MODEL | OPT_DATA | OPT_SCORER | OPT_READER | OPT_BENCH | OPT_QUIET, usage, 1,
                       &o);
    if (rc >= 0) return rc;
    if (parse_engines(&o, specs, &n_engines)) return CLI_USAGE;
    ts_model *m = cli_load_model(&o);
    if (!m) return CLI_FAILED;
    if (cli_refuse_hashed_categories(&o, m)) {
        ts_model_free(m);
        return CLI_FAILED;
    }
    matrix mx = {0};
    rc = CLI_FAILED;
    if (cli_choose_columns(&o, m) == 0 && load_rows(&o, m, &mx) == 0) rc = bench_engines(&o, m, &mx, specs, n_engines);
    free(mx.x);
    free(mx.xd);
    free(o.keep);
    ts_model_free(m);
    return rc;
}
