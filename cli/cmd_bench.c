/* cmd_bench.c: `treescore bench`: engines side by side on the same rows, medians, ratios. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "usage: treescore bench -m MODEL -d DATA [--engines naive,qs] [--repeat N] [options]\n"
    "\n"
    "Load up to --rows rows of DATA into memory, prepare MODEL for each listed engine,\n"
    "check that every engine gives the first engine's scores bit for bit, score once\n"
    "per engine to warm up, then run N timed repetitions, alternating engines inside each\n"
    "repetition so that drift of the machine hits them alike. Prints per engine the\n"
    "microseconds per document (median, min, max over the repetitions), documents per\n"
    "second, and the speedup of the median over the first engine's.\n"
    "\n"
    "  -m, --model FILE        model file\n"
    "  -d, --data FILE         data file (SVMlight, CSV, TSV or raw)\n"
    "      --engines LIST      comma-separated engines (default naive,qs)\n"
    "  -r, --repeat N          timed repetitions (default 5)\n"
    "      --batch N           rows per scoring call (default: all rows in one call)\n"
    "      --rows N            rows to load (default: all)\n"
    "  -t, --threads N         threads (accepted; single-threaded in this version)\n"
    "  -f, --format table|tsv  output: aligned table (default) or tab-separated rows under\n"
    "                          the header: engine isa threads us_per_doc_median\n"
    "                          us_per_doc_min us_per_doc_max speedup\n"
    "      --data-format F     the data's format: auto (default), svmlight, csv, tsv, raw\n"
    "      --model-format F, --query-file F, --one-based, --header, --no-header,\n"
    "      --label-column K    as for 'treescore score'\n"
    "  -h, --help              this help\n";

#define MAX_ENGINES 16

typedef struct matrix {
    float *x;
    size_t rows, cols;
} matrix;

static int load_rows(const cli_opts *o, const ts_model *m, matrix *mx) {
    tsio_reader *r = cli_open_data(o, m, 0, 0);
    size_t cap = 0;
    int rc = -1;
    if (!r) return -1;
    mx->x = NULL;
    mx->rows = 0;
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
        if (mx->rows + take > cap) {
            size_t ncap = cap ? cap * 2 : 4096;
            while (ncap < mx->rows + take) ncap *= 2;
            float *nx = realloc(mx->x, ncap * mx->cols * sizeof *nx);
            if (!nx) {
                cli_error("out of memory loading %s", o->data_path);
                break;
            }
            mx->x = nx;
            cap = ncap;
        }
        memcpy(mx->x + mx->rows * mx->cols, c.x, take * mx->cols * sizeof *c.x);
        mx->rows += take;
    }
    tsio_reader_close(r);
    if (rc == 0 && mx->rows == 0) {
        cli_error("%s: no rows to benchmark", o->data_path);
        rc = -1;
    }
    return rc;
}

static int parse_engines(const char *list, ts_engine *out, int *n) {
    char buf[256];
    *n = 0;
    if ((size_t)snprintf(buf, sizeof buf, "%s", list ? list : "naive,qs") >= sizeof buf) {
        cli_error("--engines list too long");
        return -1;
    }
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (*n == MAX_ENGINES) {
            cli_error("at most %d engines", MAX_ENGINES);
            return -1;
        }
        if (ts_engine_from_name(tok, &out[*n]) != TS_OK) {
            cli_error("unknown engine '%s' (auto, naive, qs)", tok);
            return -1;
        }
        (*n)++;
    }
    if (*n == 0) {
        cli_error("--engines lists no engine");
        return -1;
    }
    return 0;
}

/* Score all rows; seconds taken. */
static double run_once(ts_scorer *s, const matrix *mx, size_t batch, double *out) {
    ts_error err;
    double t0 = cli_now();
    for (size_t r = 0; r < mx->rows; r += batch) {
        size_t n = mx->rows - r < batch ? mx->rows - r : batch;
        ts_scorer_score(s, mx->x + r * mx->cols, n, mx->cols, mx->cols, out + r, &err);
    }
    return cli_now() - t0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef struct result {
    ts_engine engine;
    double med, min, max; /* microseconds per document */
} result;

static void print_results(const cli_opts *o, const result *res, int n, size_t rows) {
    if (o->tsv) {
        printf("engine\tisa\tthreads\tus_per_doc_median\tus_per_doc_min\tus_per_doc_max\tspeedup\n");
        for (int e = 0; e < n; e++)
            printf("%s\tscalar\t1\t%.4f\t%.4f\t%.4f\t%.3f\n", ts_engine_name(res[e].engine), res[e].med, res[e].min,
                   res[e].max, res[0].med / res[e].med);
        return;
    }
    printf("model %s, %zu documents, %u repetitions\n", o->model_path, rows, o->repeat);
    printf("%-10s %-7s %7s %14s %12s %12s %14s %9s\n", "engine", "isa", "threads", "us/doc median", "min", "max",
           "docs/s", "speedup");
    for (int e = 0; e < n; e++)
        printf("%-10s %-7s %7d %14.4f %12.4f %12.4f %14.0f %8.2fx\n", ts_engine_name(res[e].engine), "scalar", 1,
               res[e].med, res[e].min, res[e].max, 1e6 / res[e].med, res[0].med / res[e].med);
}

static int bench_engines(const cli_opts *o, const ts_model *m, const matrix *mx, const ts_engine *engines, int n) {
    ts_scorer *sc[MAX_ENGINES] = {0};
    double *out = malloc(mx->rows * sizeof *out), *ref = malloc(mx->rows * sizeof *ref);
    double *times = malloc((size_t)n * o->repeat * sizeof *times);
    size_t batch = o->batch ? o->batch : mx->rows;
    result res[MAX_ENGINES];
    int rc = CLI_FAILED;
    if (!out || !ref || !times) goto done;
    for (int e = 0; e < n; e++)
        if (!(sc[e] = cli_create_scorer(m, o, engines[e]))) goto done;
    for (int e = 0; e < n; e++) { /* warm-up and exactness check */
        run_once(sc[e], mx, batch, e ? out : ref);
        if (e && memcmp(out, ref, mx->rows * sizeof *out) != 0) {
            cli_error("engine %s does not give the same scores as %s: refusing to time it",
                      ts_engine_name(engines[e]), ts_engine_name(engines[0]));
            goto done;
        }
    }
    for (unsigned rep = 0; rep < o->repeat; rep++)
        for (int e = 0; e < n; e++) times[(size_t)e * o->repeat + rep] = run_once(sc[e], mx, batch, out);
    for (int e = 0; e < n; e++) {
        double *t = times + (size_t)e * o->repeat;
        qsort(t, o->repeat, sizeof *t, cmp_double);
        double med = o->repeat % 2 ? t[o->repeat / 2] : (t[o->repeat / 2 - 1] + t[o->repeat / 2]) / 2;
        double per = 1e6 / (double)mx->rows;
        res[e] = (result){engines[e], med * per, t[0] * per, t[o->repeat - 1] * per};
    }
    print_results(o, res, n, mx->rows);
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
    ts_engine engines[MAX_ENGINES];
    int n_engines;
    int rc = cli_start(argc, argv, OPT_MODEL | OPT_DATA | OPT_THREADS | OPT_READER | OPT_BENCH, usage, 1, &o);
    if (rc >= 0) return rc;
    if (parse_engines(o.engines, engines, &n_engines)) return CLI_USAGE;
    ts_model *m = cli_load_model(&o);
    if (!m) return CLI_FAILED;
    matrix mx = {0};
    rc = CLI_FAILED;
    if (load_rows(&o, m, &mx) == 0) rc = bench_engines(&o, m, &mx, engines, n_engines);
    free(mx.x);
    ts_model_free(m);
    return rc;
}
