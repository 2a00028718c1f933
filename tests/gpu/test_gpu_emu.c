/* test_gpu_emu.c: the GPU engines' kernels (src/gpu/kernels.cuh, the very source nvcc
 * compiles) run under the CPU emulation of CUDA (emu.h) and compared bit for bit with
 * the naive engine: random forests with NaN, values on and next to thresholds and the
 * zero range, trees of 1 to 300 leaves (several 64-leaf words, deep chains), every
 * batch size from 1 to 300 and a large one, block shapes and shared-memory budgets that
 * take every path of the gpu kernel (entries staged or read from global memory, columns
 * in shared memory or not), and the model files of tests/data/models. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emu.h"
#include "engines/engine.h"
#include "gpu/gpu_layout.h"
#include "gpu/kernels.cuh"
#include "../unit/random_forest.h"

static void run_naive(const void *a) { tsg_naive_kernel(*(const tsg_naive_params *)a); }
static void run_qs(const void *a) { tsg_qs_kernel(*(const tsg_qs_params *)a); }
static void run_sum(const void *a) { tsg_sum_kernel(*(const tsg_sum_params *)a); }

/* A launch configuration: which kernel (gpu-naive, gpu's QuickScorer or walk variant),
 * threads per block, and for gpu the tree-block size of the layout, the nodes staged in
 * shared memory and whether the block's slot values are. */
typedef struct emu_config {
    const char *name;
    int qs, walk, codes;
    unsigned threads;
    uint32_t block_nodes, smem_nodes;
    uint32_t x_shared;
    uint32_t split; /* the split launch: tree blocks per chunk (0: a plain launch) */
} emu_config;

static const emu_config configs[] = {
    {"gpu-naive 128", 0, 0, 0, 128, 0, 0, 0, 0},
    {"gpu-naive 32", 0, 0, 0, 32, 0, 0, 0, 0},
    {"gpu 128, nodes and slots in shared memory", 1, 0, 0, 128, TSG_BLOCK_NODES, TSG_BLOCK_NODES, 1, 0},
    {"gpu 64, slots from global memory", 1, 0, 0, 64, TSG_BLOCK_NODES, TSG_BLOCK_NODES, 0, 0},
    {"gpu 32, blocks of 40 nodes (larger trees from global)", 1, 0, 0, 32, 40, 40, 1, 0},
    {"gpu 96, no nodes in shared memory", 1, 0, 0, 96, 200, 0, 1, 0},
    {"gpu walk 128, nodes and slots in shared memory", 1, 1, 0, 128, TSG_BLOCK_NODES, TSG_BLOCK_NODES, 1, 0},
    {"gpu walk 32, blocks of 40 nodes, slots from global", 1, 1, 0, 32, 40, 40, 0, 0},
    {"gpu walk 64, no nodes in shared memory", 1, 1, 0, 64, 300, 0, 1, 0},
    {"gpu codes 128, nodes and codes in shared memory", 1, 0, 1, 128, TSG_BLOCK_NODES, TSG_BLOCK_NODES, 1, 0},
    {"gpu codes 32, blocks of 40 nodes, codes from global", 1, 0, 1, 32, 40, 40, 0, 0},
    {"gpu codes 64, no nodes in shared memory", 1, 0, 1, 64, 250, 0, 1, 0},
    {"gpu walk-codes 128, nodes and codes in shared memory", 1, 1, 1, 128, TSG_BLOCK_NODES, TSG_BLOCK_NODES, 1, 0},
    {"gpu walk-codes 32, blocks of 40 nodes, codes from global", 1, 1, 1, 32, 40, 40, 0, 0},
    {"gpu walk-codes 64, no nodes in shared memory", 1, 1, 1, 64, 250, 0, 1, 0},
    {"gpu walk-codes 64, split: chunks of 1 tree block of 40 nodes", 1, 1, 1, 64, 40, 40, 1, 1},
    {"gpu walk 32, split: chunks of 2 tree blocks", 1, 1, 0, 32, 40, 40, 1, 2},
    {"gpu qs 128, split: chunks of 3 tree blocks, slots from global", 1, 0, 0, 128, 100, 100, 0, 3},
    /* the shapes cuda.cu launches a walk in: 256 plain, 128 split */
    {"gpu walk 256, nodes and slots in shared memory", 1, 1, 0, 256, TSG_BLOCK_NODES, TSG_BLOCK_NODES, 1, 0},
    {"gpu walk-codes 256, nodes and codes in shared memory", 1, 1, 1, 256, TSG_BLOCK_NODES, TSG_BLOCK_NODES, 1, 0},
    {"gpu walk-codes 128, split: chunks of 2 tree blocks of 100 nodes", 1, 1, 1, 128, 100, 100, 1, 2},
};
#define N_CONFIGS (sizeof configs / sizeof configs[0])

/* The configuration's scores of n rows under the emulator. */
static void emu_score(const ts_model *m, const emu_config *c, const float *x, size_t n, size_t stride, double *out) {
    tsg_layout *l = NULL;
    CHECK(tsg_layout_build(m, c->block_nodes, &l) == 0);
    if (!l) return;
    unsigned blocks = (unsigned)((n + c->threads - 1) / c->threads);
    if (!c->qs) {
        tsg_naive_params p;
        tsg_layout_naive_params(l, &p);
        p.x = x, p.n_rows = n, p.stride = stride, p.out = out;
        CHECK(tsg_emu_launch(blocks, c->threads, 0, run_naive, &p) == 0);
    } else {
        tsg_qs_params p;
        tsg_layout_qs_params(l, &p);
        p.x = x, p.n_rows = n, p.stride = stride, p.out = out;
        p.smem_nodes = c->smem_nodes;
        p.x_shared = c->x_shared;
        p.walk = (uint32_t)c->walk;
        p.codes = (uint32_t)c->codes;
        CHECK(!c->codes || l->codes_ok);
        size_t per_doc = c->codes ? (size_t)p.n_bslots : (size_t)p.n_slots * 4;
        p.node_bytes = tsg_node_bytes(p.walk, p.codes);
        size_t smem = (size_t)p.smem_nodes * p.node_bytes + (p.x_shared ? per_doc * c->threads : 0);
        if (!c->split) {
            CHECK(tsg_emu_launch(blocks, c->threads, smem, run_qs, &p) == 0);
        } else {
            /* the split launch, then the sum of its exits (cuda.cu's launch_split) */
            uint32_t chunks = (p.n_blocks + c->split - 1) / c->split;
            /* zeros: an exit the kernel fails to store reads tree 0's first leaf, a wrong
             * score the check reports (garbage would read out of bounds) */
            p.exits = calloc((size_t)n * p.n_trees + 1, sizeof *p.exits);
            p.row_blocks = blocks;
            p.chunk_blocks = c->split;
            CHECK(tsg_emu_launch(blocks * (chunks ? chunks : 1), c->threads, smem, run_qs, &p) == 0);
            tsg_sum_params sp = {p.exits, p.leaves, out, p.base, n, p.n_trees};
            CHECK(tsg_emu_launch((unsigned)((n + 31) / 32), 32, 0, run_sum, &sp) == 0);
            free(p.exits);
        }
    }
    tsg_layout_free(l);
}

/* naive's scores (the engine itself, on this model). */
static void naive_score(const ts_model *m, const float *x, size_t n, size_t stride, double *out) {
    void *state = NULL;
    tse_layout lay;
    tse_config cfg = {.isa = TS_ISA_SCALAR};
    ts_error err;
    CHECK_STATUS(tse_engine_naive.prepare(m, &cfg, &state, &lay, &err), TS_OK);
    if (!state) return;
    tse_engine_naive.score(state, x, n, stride, out, NULL);
    tse_engine_naive.free(state);
}

/* Every configuration (or only those of `which`, a bit per config) on these rows
 * against naive. */
static void check_rows(const ts_model *m, const float *x, size_t n, size_t stride, unsigned which, const char *what) {
    double *ref = malloc((n + 1) * sizeof *ref), *got = malloc((n + 1) * sizeof *got);
    naive_score(m, x, n, stride, ref);
    for (size_t c = 0; c < N_CONFIGS; c++) {
        if (!(which >> c & 1u)) continue;
        for (size_t r = 0; r <= n; r++) got[r] = -12345.0;
        emu_score(m, &configs[c], x, n, stride, got);
        size_t bad = 0;
        for (size_t r = 0; r < n; r++)
            if (memcmp(&got[r], &ref[r], sizeof got[r]) != 0 && bad++ < 3)
                fprintf(stderr, "%s, %s: row %zu of %zu: %.17g != naive %.17g\n", what, configs[c].name, r, n, got[r],
                        ref[r]);
        CHECK_MSG(bad == 0, "%s, %s: %zu of %zu rows differ", what, configs[c].name, bad, n);
        CHECK_MSG(got[n] == -12345.0, "%s, %s: wrote past the last row", what, configs[c].name);
    }
    free(ref);
    free(got);
}

static float *random_rows(size_t n, size_t stride) {
    float *x = malloc((n * stride + 1) * sizeof *x);
    for (size_t i = 0; i < n * stride; i++) x[i] = random_value();
    return x;
}

#define ALL_CONFIGS ((1u << N_CONFIGS) - 1u)

/* Every batch size from 1 to 300: each kernel in the shapes cuda.cu launches (128
 * threads for gpu-naive and QuickScorer, 256 for a plain walk, 128 for a split walk;
 * nodes and slots or codes staged), and one other configuration in turn, so that every
 * configuration sees sizes of every residue around its block size. */
#define DEFAULT_SHAPES (1u << 0 | 1u << 2 | 1u << 9 | 1u << 18 | 1u << 19 | 1u << 20)
static void test_every_batch_size(void) {
    n_features = 12;
    ts_model *m = random_model(12, 1, 70, 4);
    const size_t stride = n_features + 3;
    float *x = random_rows(300, stride);
    char what[64];
    for (size_t n = 1; n <= 300; n++) {
        snprintf(what, sizeof what, "batch %zu", n);
        check_rows(m, x + (300 - n) * stride, n, stride, DEFAULT_SHAPES | 1u << (n % N_CONFIGS), what);
    }
    free(x);
    ts_model_free(m);
}

/* Trees of every size from 1 to 300 leaves (every third deep: long chains whose left
 * subtrees span several words), one model. */
static void test_tree_sizes(void) {
    n_features = 20;
    ts_model *m = tsm_model_new(TS_FORMAT_LIGHTGBM);
    tsm_node *nodes = malloc(300 * sizeof *nodes);
    double *leaves = malloc(300 * sizeof *leaves);
    for (uint32_t L = 1; L <= 300; L++) {
        random_tree(L, L % 3 == 0, nodes, leaves);
        ts_error err;
        CHECK_STATUS(tsm_model_add_tree(m, L - 1, nodes, L, leaves, L % 7 ? 1.0 : 0.1, &err), TS_OK);
    }
    m = finish_random_model(m, nodes, leaves);
    const size_t stride = n_features;
    float *x = random_rows(161, stride);
    check_rows(m, x, 161, stride, ALL_CONFIGS, "trees of 1..300 leaves");
    free(x);
    ts_model_free(m);
}

/* Random forests of several shapes, including a forest of one-leaf trees and an empty one. */
static void test_random_forests(void) {
    static const uint32_t shapes[][4] = {
        {40, 2, 8, 0}, {25, 30, 64, 0}, {10, 60, 140, 3}, {6, 1, 1, 0}, {0, 1, 1, 0}, {8, 200, 260, 2},
    };
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        n_features = 9 + (uint32_t)i * 7;
        ts_model *m = shapes[i][0] ? random_model(shapes[i][0], shapes[i][1], shapes[i][2], shapes[i][3])
                                   : finish_random_model(tsm_model_new(TS_FORMAT_LIGHTGBM), NULL, NULL);
        const size_t stride = n_features + 1;
        float *x = random_rows(333, stride);
        char what[64];
        snprintf(what, sizeof what, "forest %zu (%u trees)", i, m->n_trees);
        check_rows(m, x, 333, stride, ALL_CONFIGS, what);
        free(x);
        ts_model_free(m);
    }
}

/* Rows of nothing but NaN, nothing but the model's thresholds, and their neighbours. */
static void test_nan_and_thresholds(void) {
    n_features = 10;
    ts_model *m = random_model(30, 2, 90, 5);
    const size_t stride = n_features, n = 257;
    float *x = random_rows(n, stride);
    for (size_t i = 0; i < n * stride; i++) x[i] = NAN;
    check_rows(m, x, n, stride, ALL_CONFIGS, "all NaN");
    for (int pass = 0; pass < 3; pass++) {
        for (size_t r = 0; r < n; r++)
            for (size_t f = 0; f < stride; f++) {
                const tsm_tree *tr = &m->trees[rnd_below(m->n_trees)];
                float t = tr->n_nodes ? tr->nodes[rnd_below(tr->n_nodes)].threshold : 0.0f;
                x[r * stride + f] = pass == 0 ? t : nextafterf(t, pass == 1 ? INFINITY : -INFINITY);
            }
        check_rows(m, x, n, stride, ALL_CONFIGS, pass == 0 ? "on thresholds" : "next to thresholds");
    }
    free(x);
    ts_model_free(m);
}

/* Features of more than 255 distinct thresholds: the byte-code variant's segments of
 * 255 (codes clamped to [0, 255] per byte slot), on thresholds and between them. */
static void test_many_thresholds(void) {
    n_features = 3;
    ts_model *m = random_model(150, 20, 40, 0);
    for (uint32_t t = 0; t < m->n_trees; t++)
        for (uint32_t i = 0; i < m->trees[t].n_nodes; i++) {
            tsm_node *nd = &m->trees[t].nodes[i];
            if (nd->flags & TSM_ZERO_IS_MISSING) continue; /* keep the zero-range invariant */
            nd->threshold = (float)((int)rnd_below(1400) - 700) / 64.0f;
            nd->flags = TSM_MISSING_LEFT; /* one slot per feature gets them all */
        }
    const size_t n = 301, stride = n_features;
    float *x = random_rows(n, stride);
    for (size_t i = 0; i < n * stride; i++)
        if (rnd_below(4)) {
            float v = (float)((int)rnd_below(1440) - 720) / 64.0f;
            x[i] = rnd_below(3) == 0 ? v : nextafterf(v, rnd_below(2) ? INFINITY : -INFINITY);
        }
    check_rows(m, x, n, stride, ALL_CONFIGS, "features of ~1,000 thresholds");
    tsg_layout *l = NULL;
    CHECK(tsg_layout_build(m, 0, &l) == 0);
    if (l) {
        CHECK_MSG(l->n_bslots > l->n_slots, "%u byte slots for %u slots", l->n_bslots, l->n_slots);
        tsg_layout_free(l);
    }
    free(x);
    ts_model_free(m);
}

/* One large batch (many blocks), the default CUDA shapes of both kernels. */
static void test_large_batch(void) {
    n_features = 16;
    ts_model *m = random_model(8, 2, 80, 3);
    const size_t stride = n_features + 5, n = 20011;
    float *x = random_rows(n, stride);
    check_rows(m, x, n, stride, 1u << 0 | 1u << 2 | 1u << 4 | 1u << 6 | 1u << 9 | 1u << 12 | 1u << 15, "20,011 rows");
    free(x);
    ts_model_free(m);
}

/* The model files of tests/data/models: every output's view (categorical splits become
 * columns of 0.0 / 1.0, which random rows fill like any other). */
static void test_model_files(void) {
    DIR *d = opendir(TS_TEST_DATA_DIR "/models");
    CHECK(d != NULL);
    if (!d) return;
    struct dirent *e;
    int n_models = 0;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.') continue;
        char path[1024];
        snprintf(path, sizeof path, "%s/models/%s", TS_TEST_DATA_DIR, e->d_name);
        ts_model *m = NULL;
        ts_error err;
        if (ts_model_load_file(path, TS_FORMAT_AUTO, &m, &err) != TS_OK) {
            fprintf(stderr, "skipped %s: %s\n", e->d_name, err.message);
            continue;
        }
        n_models++;
        for (uint32_t k = 0; k < m->n_outputs && k < 3; k++) {
            ts_model *v = NULL;
            CHECK_STATUS(tsm_model_view(m, k, &v, &err), TS_OK);
            if (!v) continue;
            size_t stride = v->n_features, n = 300;
            float *x = malloc((n * stride + 1) * sizeof *x);
            /* Values around the model's own thresholds, NaN and zeros. */
            for (size_t i = 0; i < n * stride; i++) {
                const tsm_tree *tr = v->n_trees ? &v->trees[rnd_below(v->n_trees)] : NULL;
                float t = tr && tr->n_nodes ? tr->nodes[rnd_below(tr->n_nodes)].threshold : 0.0f;
                switch (rnd_below(5)) {
                case 0: x[i] = t; break;
                case 1: x[i] = nextafterf(t, INFINITY); break;
                case 2: x[i] = nextafterf(t, -INFINITY); break;
                case 3: x[i] = NAN; break;
                default: x[i] = random_value();
                }
            }
            char what[300];
            snprintf(what, sizeof what, "%s output %u", e->d_name, k);
            check_rows(v, x, n, stride, ALL_CONFIGS, what);
            free(x);
            tsm_view_free(v);
        }
        ts_model_free(m);
    }
    closedir(d);
    CHECK(n_models >= 5);
}

/* The emulator itself: __syncthreads is a real barrier and votes see the whole warp. */
static int *probe_out;
static void probe_kernel(const void *a) {
    (void)a;
    TSG_DYNAMIC_SHARED(smem);
    int *s = (int *)(void *)smem;
    unsigned t = threadIdx.x;
    s[t] = (int)t;
    __syncthreads();
    int sum = 0;
    for (unsigned i = 0; i < blockDim.x; i++) sum += s[i];
    unsigned ballot = __ballot_sync(TSG_FULL_WARP, t % 3u == 0);
    unsigned from = __shfl_sync(TSG_FULL_WARP, t * 10u, (int)(t ^ 1u) % 32);
    probe_out[blockIdx.x * blockDim.x + t] = sum + (int)(ballot % 1000u) + (int)from * 1000000;
}

static void test_emulator(void) {
    enum { B = 3, T = 64 };
    int out[B * T];
    probe_out = out;
    CHECK(tsg_emu_launch(B, T, T * sizeof(int), probe_kernel, NULL) == 0);
    for (unsigned i = 0; i < B * T; i++) {
        unsigned t = i % T, lane = t % 32u, ballot = 0;
        for (unsigned l = 0; l < 32; l++)
            if ((t - lane + l) % 3u == 0) ballot |= 1u << l;
        int want = T * (T - 1) / 2 + (int)(ballot % 1000u) + (int)((t - lane + (lane ^ 1u)) * 10u) * 1000000;
        CHECK_MSG(out[i] == want, "thread %u: %d, expected %d", i, out[i], want);
    }
    CHECK(tsg_emu_launch(1, 48, 0, probe_kernel, NULL) == -1);
}

int main(void) {
    RUN_TEST(test_emulator);
    RUN_TEST(test_every_batch_size);
    RUN_TEST(test_tree_sizes);
    RUN_TEST(test_random_forests);
    RUN_TEST(test_nan_and_thresholds);
    RUN_TEST(test_many_thresholds);
    RUN_TEST(test_large_batch);
    RUN_TEST(test_model_files);
    fprintf(stderr, "emulator: %llu fiber switches\n", (unsigned long long)tsg_emu_switches());
    return check_summary("test_gpu_emu");
}
