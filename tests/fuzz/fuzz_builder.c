/* fuzz_builder.c: libFuzzer target for the public model builder (ts_model_builder): random arrays in, a clean error or a model every engine scores as the arrays say. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "treescore.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * The input is read as a little program of bytes (running out of bytes reads zeros):
 *   header: n_features (1..8), n_outputs (1..3), input type, aggregation, tree count (1..4);
 *   per tree: n_nodes (1..64), then per node: left and right child (a byte: 0xFF is -1,
 *   else byte % (n_nodes + 2) - 1, so ids out of range, cycles and unreachable nodes all
 *   occur), feature (byte % (n_features + 1): one past the end too), threshold (8 raw
 *   bytes: NaN, infinities, subnormals, the zero range), comparison (byte % 7: 6 is
 *   invalid), missing direction, category set; leaf values (a byte scaled, or raw
 *   doubles), values per leaf, output, weight; two category sets of 2 words.
 * Contracts:
 *   - a failing call returns the status it stores in err with a non-empty message, and
 *     finish leaves *out NULL;
 *   - a finished model is scored by naive, qs, vpred and rapid on rows made of the
 *     thresholds, their float neighbours, NaN and small integers, float and double rows:
 *     every engine gives the same bits as a direct evaluation of the arrays (the rules of
 *     treescore.h: float32 input rounds x first; GT/GE/LT as written; NaN follows
 *     missing_left; categories exact (2.5 is none), non-members the other way).
 */

typedef struct reader {
    const uint8_t *p;
    size_t n;
} reader;

static uint8_t byte(reader *r) {
    if (r->n == 0) return 0;
    r->n--;
    return *r->p++;
}

static double raw_double(reader *r) {
    uint8_t b[8];
    for (int i = 0; i < 8; i++) b[i] = byte(r);
    double d;
    memcpy(&d, b, sizeof d);
    return d;
}

static void die(const char *what, const ts_error *err) {
    fprintf(stderr, "fuzz contract violation: %s\n", what);
    if (err) fprintf(stderr, "  %s: %s\n", ts_status_name(err->status), err->message);
    abort();
}

static void check_failure(ts_status st, const ts_error *err) {
    if (st == TS_OK) return;
    if (err->status != st) die("the status returned differs from err.status", err);
    if (err->message[0] == '\0' || !memchr(err->message, '\0', sizeof err->message)) die("empty or unterminated message", err);
}

#define MAX_NODES 64
#define MAX_TREES 4
#define MAX_K 3
#define MAX_F 8

typedef struct tree {
    uint32_t n;
    int64_t left[MAX_NODES], right[MAX_NODES], feature[MAX_NODES], set[MAX_NODES];
    double thr[MAX_NODES], values[MAX_NODES * MAX_K];
    uint8_t cmp[MAX_NODES], miss[MAX_NODES];
    uint32_t words[4];
    uint32_t n_values, output, added;
    double weight;
} tree;

static uint32_t leaf_of(const tree *t, int input, const double *x, int as_double) {
    uint32_t i = 0;
    while (t->left[i] != -1) {
        double v = x[t->feature[i]];
        if (!as_double || input == TS_INPUT_FLOAT32) v = (double)(float)v;
        int left;
        if (t->cmp[i] >= TS_CMP_IN) {
            int member = 0;
            if (v == v && v >= 0 && v < 16777216.0) {
                uint32_t c = (uint32_t)v; /* exact: 2.5 is no category */
                member = (double)c == v && c / 32 < 2 && ((t->words[t->set[i] * 2 + c / 32] >> (c % 32)) & 1u);
            }
            left = t->cmp[i] == TS_CMP_IN ? member : !member;
        } else if (v != v) {
            left = t->miss[i];
        } else {
            double th = t->thr[i];
            left = t->cmp[i] == TS_CMP_LE ? v <= th : t->cmp[i] == TS_CMP_LT ? v < th : t->cmp[i] == TS_CMP_GE ? v >= th : v > th;
        }
        i = (uint32_t)(left ? t->left[i] : t->right[i]);
    }
    return i;
}

static int same(double a, double b) { return memcmp(&a, &b, sizeof a) == 0 || (a != a && b != b); }

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    reader r = {data, size};
    static tree trees[MAX_TREES];
    uint32_t nf = 1 + byte(&r) % MAX_F, K = 1 + byte(&r) % MAX_K;
    int input = byte(&r) & 1;
    ts_aggregation agg = (byte(&r) & 1) ? TS_AGG_MEAN : TS_AGG_SUM;
    uint32_t n_trees = 1 + byte(&r) % MAX_TREES;
    ts_error err;
    ts_model_builder *b = NULL;
    ts_status st = ts_model_builder_create(nf, K, &b, &err);
    check_failure(st, &err);
    if (st != TS_OK) die("create failed", &err);
    st = ts_model_builder_set_aggregation(b, agg, &err);
    check_failure(st, &err);
    double base[MAX_K];
    for (uint32_t k = 0; k < K; k++) base[k] = (double)(int8_t)byte(&r) / 4.0;
    st = ts_model_builder_set_base_scores(b, base, K, &err);
    check_failure(st, &err);
    for (uint32_t t = 0; t < n_trees; t++) {
        tree *u = &trees[t];
        memset(u, 0, sizeof *u);
        u->n = 1 + byte(&r) % MAX_NODES;
        int raw_values = byte(&r) == 0xAB;
        for (uint32_t i = 0; i < u->n; i++) {
            uint8_t l = byte(&r), rr = byte(&r);
            u->left[i] = l == 0xFF ? -1 : (int64_t)(l % (u->n + 2)) - 1;
            u->right[i] = rr == 0xFF ? -1 : (int64_t)(rr % (u->n + 2)) - 1;
            u->feature[i] = byte(&r) % (nf + 1);
            uint8_t tk = byte(&r);
            u->thr[i] = tk < 0xF0 ? (double)(tk % 16) / 4.0 - 1.0 : raw_double(&r);
            if (tk >= 0xE0 && tk < 0xF0) u->thr[i] = nextafter(u->thr[i], tk & 1 ? INFINITY : -INFINITY);
            u->cmp[i] = byte(&r) % 7;
            u->miss[i] = byte(&r) & 1;
            u->set[i] = byte(&r) % 3; /* 2 is out of range */
        }
        for (uint32_t i = 0; i < u->n * MAX_K; i++)
            u->values[i] = raw_values ? raw_double(&r) : (double)(int8_t)byte(&r);
        u->n_values = (byte(&r) & 1) ? K : 1;
        u->output = byte(&r) % (K + 1);
        u->weight = (byte(&r) & 1) ? 0.5 : 1.0;
        for (int w = 0; w < 4; w++) u->words[w] = (uint32_t)byte(&r) * 0x01010101u;
        ts_tree_arrays a;
        ts_tree_arrays_init(&a);
        a.n_nodes = u->n;
        a.children_left = u->left;
        a.children_right = u->right;
        a.feature = u->feature;
        a.threshold = u->thr;
        a.compares = u->cmp;
        a.missing_left = u->miss;
        a.input = (ts_input_type)input;
        a.values = u->values;
        a.n_values = u->n_values;
        a.output = u->output;
        a.weight = u->weight;
        a.category_set = u->set;
        a.category_words = u->words;
        a.n_category_sets = 2;
        a.category_set_words = 2;
        st = ts_model_builder_add_tree(b, &a, &err);
        check_failure(st, &err);
        u->added = st == TS_OK;
    }
    ts_model *m = (ts_model *)&err; /* must become NULL on failure */
    st = ts_model_builder_finish(b, &m, &err);
    check_failure(st, &err);
    ts_model_builder_free(b);
    if (st != TS_OK) {
        if (m) die("finish failed but *out is not NULL", &err);
        return 0;
    }

    /* rows: thresholds and their neighbours, NaN, small integers */
    enum { ROWS = 16 };
    double xd[ROWS * MAX_F];
    float xf[ROWS * MAX_F];
    double xfd[ROWS * MAX_F];
    for (uint32_t i = 0; i < ROWS * nf; i++) {
        const tree *u = &trees[byte(&r) % n_trees];
        double v = u->thr[byte(&r) % u->n];
        switch (byte(&r) % 6) {
        case 0: v = nextafter(v, INFINITY); break;
        case 1: v = nextafter(v, -INFINITY); break;
        case 2: v = (double)nextafterf((float)v, INFINITY); break;
        case 3: v = NAN; break;
        case 4: v = (double)(byte(&r) % 80); break;
        default: break;
        }
        xd[i] = v;
        xf[i] = (float)v;
        xfd[i] = (double)xf[i];
    }
    double ref[2][ROWS * MAX_K];
    for (int dbl = 0; dbl < 2; dbl++)
        for (uint32_t row = 0; row < ROWS; row++)
            for (uint32_t k = 0; k < K; k++) {
                double s = base[k];
                for (uint32_t t = 0; t < n_trees; t++) {
                    const tree *u = &trees[t];
                    if (!u->added || (u->n_values == 1 && u->output != k)) continue;
                    uint32_t leaf = leaf_of(u, input, (dbl ? xd : xfd) + row * nf, dbl);
                    s += u->weight * u->values[leaf * u->n_values + (u->n_values == 1 ? 0 : k)];
                }
                ref[dbl][row * K + k] = s;
            }
    static const ts_engine engines[] = {TS_ENGINE_NAIVE, TS_ENGINE_QS, TS_ENGINE_VPRED, TS_ENGINE_RAPID};
    for (size_t e = 0; e < sizeof engines / sizeof engines[0]; e++) {
        ts_scorer_options o;
        ts_scorer_options_init(&o);
        o.engine = engines[e];
        o.n_threads = 1;
        ts_scorer *s = NULL;
        st = ts_scorer_create(m, &o, &s, &err);
        check_failure(st, &err);
        if (st != TS_OK) continue; /* qs refuses trees past its leaf limit, never here */
        double out[ROWS * MAX_K];
        for (int dbl = 0; dbl < 2; dbl++) {
            st = dbl ? ts_scorer_score_f64(s, xd, ROWS, nf, nf, out, &err) : ts_scorer_score(s, xf, ROWS, nf, nf, out, &err);
            if (st != TS_OK) die("scoring failed", &err);
            for (uint32_t i = 0; i < ROWS * K; i++)
                if (!same(out[i], ref[dbl][i])) {
                    fprintf(stderr, "%s %s row %u output %u: %.17g, the arrays say %.17g\n", ts_engine_name(engines[e]),
                            dbl ? "double" : "float", i / K, i % K, out[i], ref[dbl][i]);
                    die("an engine differs from the arrays' semantics", NULL);
                }
        }
        ts_scorer_free(s);
    }
    double d;
    if (ts_model_output_divisor(m, 0, &d, &err) != TS_OK || !(d >= 1.0)) die("bad divisor", &err);
    ts_model_free(m);
    return 0;
}
