/* gpu_bench.c: times a GPU engine on a model (tests/gpu/run.sh): kernel only (the rows
 * already on the device, CUDA events) and end to end (ts_scorer_score's path: rows
 * staged through pinned buffers, copies overlapped with scoring), and checks the first
 * rows against naive bit for bit.
 *
 *   gpu_bench MODEL ENGINE ROWS [REPS]    (ENGINE: gpu or gpu-naive)
 *
 * prints one line: model trees leaves_max engine rows kernel_us_per_doc e2e_us_per_doc
 * checked_rows mismatches. Rows are synthetic: each value one of its feature's
 * thresholds, a float above or below it, or NaN (2%), so every split goes both ways. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engines/engine.h"
#include "gpu/gpu.h"
#include "model/forest.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint32_t next_u32(void) {
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return (uint32_t)((rng * 2685821657736338717ull) >> 32);
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: gpu_bench MODEL gpu|gpu-naive ROWS [REPS]\n");
        return 2;
    }
    size_t n = (size_t)strtoull(argv[3], NULL, 10);
    int reps = argc > 4 ? atoi(argv[4]) : 5;
    ts_engine id;
    ts_model *m = NULL;
    ts_error err;
    if (ts_engine_from_name(argv[2], &id) != TS_OK || (id != TS_ENGINE_GPU && id != TS_ENGINE_GPU_NAIVE)) {
        fprintf(stderr, "gpu_bench: engine must be gpu or gpu-naive\n");
        return 2;
    }
    if (ts_model_load_file(argv[1], TS_FORMAT_AUTO, &m, &err) != TS_OK) {
        fprintf(stderr, "gpu_bench: %s\n", err.message);
        return 1;
    }
    if (m->n_outputs != 1 || m->n_catsets) {
        fprintf(stderr, "gpu_bench: one output and no categorical splits only\n");
        return 1;
    }
    /* Thresholds per feature (the first 64 met). */
    uint32_t F = m->n_features, leaves_max = 0;
    float *th = calloc((size_t)F * 64 + 1, sizeof *th);
    uint32_t *nth = calloc((size_t)F + 1, sizeof *nth);
    for (uint32_t t = 0; t < m->n_trees; t++) {
        if (m->trees[t].n_leaves > leaves_max) leaves_max = m->trees[t].n_leaves;
        for (uint32_t i = 0; i < m->trees[t].n_nodes; i++) {
            const tsm_node *nd = &m->trees[t].nodes[i];
            if (nth[nd->feature] < 64) th[(size_t)nd->feature * 64 + nth[nd->feature]++] = nd->threshold;
        }
    }
    float *x = malloc((n * F + 1) * sizeof *x);
    double *out = malloc((n + 1) * sizeof *out), *ref = NULL;
    if (!x || !out || !th || !nth) {
        fprintf(stderr, "gpu_bench: out of memory\n");
        return 1;
    }
    for (size_t r = 0; r < n; r++)
        for (uint32_t f = 0; f < F; f++) {
            uint32_t u = next_u32();
            float v = nth[f] ? th[(size_t)f * 64 + u % nth[f]] : 0.0f;
            if (u % 50 == 0) v = NAN;
            else if ((u >> 8) % 3 == 1) v = nextafterf(v, INFINITY);
            else if ((u >> 8) % 3 == 2) v = nextafterf(v, -INFINITY);
            x[r * F + f] = v;
        }
    const tse_engine *e = tse_engine_get(id);
    tse_config cfg = {TS_ISA_SCALAR, 0, 0, 0, 0};
    tse_layout lay;
    void *state = NULL;
    if (e->prepare(m, &cfg, &state, &lay, &err) != TS_OK) {
        fprintf(stderr, "gpu_bench: %s\n", err.message);
        return 1;
    }
    double kernel_s = 0, e2e_s = 0;
    if (tsg_engine_time(state, x, n, F, out, reps, &kernel_s, &e2e_s) != 0) {
        fprintf(stderr, "gpu_bench: CUDA error while timing\n");
        return 1;
    }
    /* naive on the first rows */
    size_t check = n < 2000 ? n : 2000, bad = 0;
    ref = malloc((check + 1) * sizeof *ref);
    void *nst = NULL;
    if (tse_engine_naive.prepare(m, &cfg, &nst, &lay, &err) == TS_OK) {
        tse_engine_naive.score(nst, x, check, F, ref, NULL);
        for (size_t r = 0; r < check; r++) bad += memcmp(&ref[r], &out[r], sizeof ref[r]) != 0;
        tse_engine_naive.free(nst);
    }
    const char *name = strrchr(argv[1], '/');
    printf("%s %u %u %s %zu %.5f %.5f %zu %zu\n", name ? name + 1 : argv[1], m->n_trees, leaves_max, argv[2], n,
           kernel_s * 1e6 / (double)n, e2e_s * 1e6 / (double)n, check, bad);
    e->free(state);
    ts_model_free(m);
    free(x), free(out), free(ref), free(th), free(nth);
    return bad ? 3 : 0;
}
