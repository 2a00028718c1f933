/* gpu_bench.c: the benchmark of tests/gpu/run.sh. For one model (a file, or a synthetic
 * forest of exactly TREES trees of LEAVES leaves on FEATURES features) and each batch
 * size, it times
 *   - gpu, its byte-code and walk variants (gpu:codes, gpu:walk) and gpu-naive: kernel only (rows already on the device; CUDA events) and end
 *     to end (ts_scorer_score's path: rows through pinned buffers, copies overlapped
 *     with scoring, scores back), and checks the first rows against naive bit for bit;
 *   - a CPU engine through the public API (default rapid, every core), end to end, on at
 *     most --cpu-rows rows of the batch (its cost per row is flat past a few thousand).
 * Rows are synthetic: each value one of its feature's thresholds, a float above or below
 * it, or NaN (2%), so every split goes both ways.
 *
 *   gpu_bench (--model FILE | --synthetic TREES LEAVES FEATURES) --rows N[,N...]
 *             [--reps R] [--cpu-engine NAME] [--cpu-threads T] [--cpu-rows M] [--seed S]
 *             [--sweep] [--kinds LABEL,...]
 *
 * Kernels: gpu (the engine's choice for the model), gpu:qs, gpu:codes, gpu:walk,
 * gpu:walk-codes (docs/gpu.md), gpu-naive, and gpu:nosplit (gpu without the split launch
 * below a full wave: TREESCORE_GPU_NO_SPLIT=1); --kinds times only those named.
 *
 * --sweep: then, on the largest batch only, every GPU kernel again under other launch
 * settings (the test knobs TREESCORE_GPU_THREADS, _BLOCK_NODES and _SLICE_ROWS: threads
 * per block, nodes per tree block, rows per slice), one line each, the engine named
 * with its settings (e.g. gpu:codes[threads=64]); which settings gpu should default to.
 *
 * Output, one tab-separated line per (batch, engine) after a header line:
 *   model trees leaves features rows engine kernel_us_per_doc e2e_us_per_doc
 *   gpu_speedup_vs_cpu_e2e checked mismatches
 * (kernel_us_per_doc is "-" for the CPU engine). Exit status 3 when any score differs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engines/engine.h"
#include "gpu/gpu.h"
#include "model/forest.h"
#include "platform/config.h"

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint32_t next_u32(void) {
    rng ^= rng >> 12, rng ^= rng << 25, rng ^= rng >> 27;
    return (uint32_t)((rng * 2685821657736338717ull) >> 32);
}
static float next_unit(void) { return (float)(next_u32() >> 8) / 16777216.0f; }

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A forest of exactly n_trees trees of n_leaves leaves: leaves split at random (the
 * shapes of leaf-wise growth, depth about 2 ln L), features uniform, thresholds uniform
 * in (0, 1), missing values left or right at random. */
static ts_model *synthetic(uint32_t n_trees, uint32_t n_leaves, uint32_t n_features) {
    ts_model *m = tsm_model_new(TS_FORMAT_XGBOOST_JSON);
    tsm_node *nodes = malloc(((size_t)n_leaves + 1) * sizeof *nodes);
    double *leaves = malloc(((size_t)n_leaves + 1) * sizeof *leaves);
    int32_t **slots = malloc(((size_t)n_leaves + 1) * sizeof *slots);
    ts_error err;
    if (!m || !nodes || !leaves || !slots) return NULL;
    m->n_features_declared = n_features;
    for (uint32_t t = 0; t < n_trees; t++) {
        int32_t root = ~0;
        uint32_t n_slots = 1;
        slots[0] = &root;
        for (uint32_t i = 0; i + 1 < n_leaves; i++) {
            uint32_t k = next_u32() % n_slots;
            tsm_node *nd = &nodes[i];
            nd->feature = next_u32() % n_features;
            nd->threshold = next_unit();
            nd->flags = next_u32() % 2 ? TSM_MISSING_LEFT : 0;
            *slots[k] = (int32_t)i;
            nd->left = nd->right = ~0;
            slots[k] = &nd->left;
            slots[n_slots++] = &nd->right;
        }
        for (uint32_t j = 0; j < n_slots; j++) *slots[j] = ~(int32_t)j;
        for (uint32_t j = 0; j < n_leaves; j++) leaves[j] = (double)next_unit() - 0.5;
        if (tsm_model_add_tree(m, n_leaves - 1, nodes, n_leaves, leaves, 1.0, &err) != TS_OK) {
            fprintf(stderr, "gpu_bench: %s\n", err.message);
            return NULL;
        }
    }
    free(nodes), free(leaves), free(slots);
    if (tsm_model_finish(m, &err) != TS_OK) {
        fprintf(stderr, "gpu_bench: %s\n", err.message);
        return NULL;
    }
    return m;
}

/* n rows of the model's width from its own thresholds (first 64 per feature). */
static float *make_rows(const ts_model *m, size_t n) {
    uint32_t F = m->n_features;
    float *th = calloc((size_t)F * 64 + 1, sizeof *th), *x = malloc((n * F + 1) * sizeof *x);
    uint32_t *nth = calloc((size_t)F + 1, sizeof *nth);
    if (!th || !x || !nth) return NULL;
    for (uint32_t t = 0; t < m->n_trees; t++)
        for (uint32_t i = 0; i < m->trees[t].n_nodes; i++) {
            const tsm_node *nd = &m->trees[t].nodes[i];
            if (nth[nd->feature] < 64) th[(size_t)nd->feature * 64 + nth[nd->feature]++] = nd->threshold;
        }
    for (size_t r = 0; r < n; r++)
        for (uint32_t f = 0; f < F; f++) {
            uint32_t u = next_u32();
            float v = nth[f] ? th[(size_t)f * 64 + u % nth[f]] : next_unit();
            if (u % 50 == 0) v = NAN;
            else if ((u >> 8) % 3 == 1) v = nextafterf(v, INFINITY);
            else if ((u >> 8) % 3 == 2) v = nextafterf(v, -INFINITY);
            x[r * F + f] = v;
        }
    free(th), free(nth);
    return x;
}

static int usage(void) {
    fprintf(stderr, "usage: gpu_bench (--model FILE | --synthetic TREES LEAVES FEATURES) --rows N[,N...] [--reps R]\n"
                    "                 [--cpu-engine NAME] [--cpu-threads T] [--cpu-rows M] [--seed S] [--sweep]\n"
                    "                 [--kinds gpu,gpu:qs,gpu:codes,gpu:walk,gpu:walk-codes,gpu-naive,gpu:nosplit]\n");
    return 2;
}

/* gpu (the engine's own choice of kernel for the model), each kernel by name, gpu-naive */
static const int kinds[] = {TSG_ENGINE_KIND_BEST,       TSG_ENGINE_KIND_QS,    TSG_ENGINE_KIND_CODES,
                            TSG_ENGINE_KIND_WALK,       TSG_ENGINE_KIND_WALK_CODES, TSG_ENGINE_KIND_NAIVE,
                            TSG_ENGINE_KIND_BEST};
static const char *const labels[] = {"gpu",           "gpu:qs",    "gpu:codes", "gpu:walk",
                                     "gpu:walk-codes", "gpu-naive", "gpu:nosplit"};
enum { N_KINDS = 7, NOSPLIT_KIND = 6 }; /* gpu:nosplit: gpu with TREESCORE_GPU_NO_SPLIT=1 */
static int use_kind[N_KINDS] = {1, 1, 1, 1, 1, 1, 1}; /* --kinds */

/* kinds[g] prepared (gpu:nosplit under its knob). */
static ts_status prepare_kind(const ts_model *m, int g, void **st, ts_error *err) {
    if (g != NOSPLIT_KIND) return tsg_engine_prepare_kind(m, kinds[g], st, err);
    setenv("TREESCORE_GPU_NO_SPLIT", "1", 1);
    tsr_config_reload();
    ts_status s = tsg_engine_prepare_kind(m, kinds[g], st, err);
    unsetenv("TREESCORE_GPU_NO_SPLIT");
    tsr_config_reload();
    return s;
}

/* --kinds gpu,gpu:walk,...: only these; 0, or -1 when a name is unknown. */
static int select_kinds(const char *list) {
    for (int g = 0; g < N_KINDS; g++) use_kind[g] = 0;
    for (const char *p = list; *p;) {
        size_t len = strcspn(p, ",");
        int found = 0;
        for (int g = 0; g < N_KINDS; g++)
            if (strlen(labels[g]) == len && !strncmp(p, labels[g], len)) use_kind[g] = found = 1;
        if (!found) return -1;
        p += len + (p[len] == ',');
    }
    return 0;
}

/* Times state g's kernel on n rows and prints its line; returns the mismatches against
 * ref (the first `check` rows), or (size_t)-1 on a CUDA error. */
static size_t time_kind(const char *name, const ts_model *m, uint32_t leaves_max, void *st, const char *label,
                        const float *x, size_t n, int reps, double *out, const double *ref, size_t check,
                        double cpu_us) {
    uint32_t F = m->n_features;
    double kernel_s = 0, e2e_s = 0;
    for (size_t r = 0; r < n; r++) out[r] = -1.0;
    if (tsg_engine_time(st, x, n, F, out, reps, &kernel_s, &e2e_s) != 0) {
        fprintf(stderr, "gpu_bench: %s: CUDA error while timing\n", label);
        return (size_t)-1;
    }
    size_t checked = n < check ? n : check, bad = 0;
    for (size_t r = 0; r < checked; r++) bad += memcmp(&out[r], &ref[r], sizeof ref[r]) != 0;
    double e2e_us = e2e_s * 1e6 / (double)n;
    printf("%s\t%u\t%u\t%u\t%zu\t%s\t%.5f\t%.5f\t%.1f\t%zu\t%zu\n", name, m->n_trees, leaves_max, F, n, label,
           kernel_s * 1e6 / (double)n, e2e_us, cpu_us > 0 ? cpu_us / e2e_us : 0.0, checked, bad);
    fflush(stdout);
    return bad;
}

/* --sweep: each GPU kernel under other launch settings, on n rows. Returns 1 when any
 * score differs from ref or a CUDA error happened. */
static int sweep(const char *name, const ts_model *m, uint32_t leaves_max, const float *x, size_t n, int reps,
                 double *out, const double *ref, size_t check) {
    static const char *const settings[][3] = {
        /* threads, block nodes, slice rows ("" = default) */
        {"32", "", ""},   {"64", "", ""},   {"256", "", ""},   {"512", "", ""},  {"", "256", ""},
        {"", "512", ""},  {"", "2048", ""}, {"", "4096", ""},  {"64", "512", ""}, {"", "", "15488"},
        {"", "", "131072"},
    };
    static const char *const vars[3] = {"TREESCORE_GPU_THREADS", "TREESCORE_GPU_BLOCK_NODES", "TREESCORE_GPU_SLICE_ROWS"};
    static const char *const keys[3] = {"threads", "block_nodes", "slice"};
    int any_bad = 0;
    for (size_t s = 0; s < sizeof settings / sizeof settings[0]; s++) {
        char tag[96] = "";
        for (int v = 0; v < 3; v++) {
            if (settings[s][v][0]) {
                setenv(vars[v], settings[s][v], 1);
                snprintf(tag + strlen(tag), sizeof tag - strlen(tag), "%s%s=%s", tag[0] ? ":" : "", keys[v],
                         settings[s][v]);
            } else {
                unsetenv(vars[v]);
            }
        }
        tsr_config_reload();
        for (int g = 0; g < N_KINDS; g++) {
            /* the naive kernel has no tree blocks: only its thread and slice settings */
            if (!use_kind[g] || (kinds[g] == TSG_ENGINE_KIND_NAIVE && settings[s][1][0])) continue;
            void *st = NULL;
            ts_error err;
            if (prepare_kind(m, g, &st, &err) != TS_OK) {
                fprintf(stderr, "gpu_bench: sweep %s: %s: %s\n", tag, labels[g], err.message);
                any_bad = 1;
                continue;
            }
            char label[160], desc[160];
            snprintf(label, sizeof label, "%s[%s]", labels[g], tag);
            tsg_engine_launch_desc(st, desc, sizeof desc);
            fprintf(stderr, "# %s: %s: %s\n", name, label, desc);
            size_t bad = time_kind(name, m, leaves_max, st, label, x, n, reps, out, ref, check, 0.0);
            any_bad |= bad != 0;
            tse_engine_gpu.free(st);
        }
    }
    for (int v = 0; v < 3; v++) unsetenv(vars[v]);
    tsr_config_reload();
    return any_bad;
}

int main(int argc, char **argv) {
    const char *model_path = NULL, *rows_list = NULL, *cpu_name = "rapid";
    uint32_t syn[3] = {0, 0, 0};
    int reps = 3;
    unsigned cpu_threads = 0;
    size_t cpu_rows = 100000;
    int do_sweep = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--model") && i + 1 < argc) model_path = argv[++i];
        else if (!strcmp(argv[i], "--synthetic") && i + 3 < argc)
            for (int k = 0; k < 3; k++) syn[k] = (uint32_t)strtoul(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--rows") && i + 1 < argc) rows_list = argv[++i];
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cpu-engine") && i + 1 < argc) cpu_name = argv[++i];
        else if (!strcmp(argv[i], "--cpu-threads") && i + 1 < argc) cpu_threads = (unsigned)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--cpu-rows") && i + 1 < argc) cpu_rows = (size_t)strtoull(argv[++i], NULL, 10);
        else if (!strcmp(argv[i], "--sweep")) do_sweep = 1;
        else if (!strcmp(argv[i], "--kinds") && i + 1 < argc) {
            if (select_kinds(argv[++i])) return usage();
        }
        else if (!strcmp(argv[i], "--seed") && i + 1 < argc) rng ^= strtoull(argv[++i], NULL, 10) * 0x9E3779B97F4A7C15ull;
        else return usage();
    }
    if ((!model_path && !syn[0]) || !rows_list || reps < 1) return usage();
    ts_model *m = NULL;
    ts_error err;
    char name[256];
    if (model_path) {
        if (ts_model_load_file(model_path, TS_FORMAT_AUTO, &m, &err) != TS_OK) {
            fprintf(stderr, "gpu_bench: %s\n", err.message);
            return 1;
        }
        if (m->n_outputs != 1 || m->n_catsets) {
            fprintf(stderr, "gpu_bench: models of one output without categorical splits only\n");
            return 1;
        }
        const char *slash = strrchr(model_path, '/');
        snprintf(name, sizeof name, "%s", slash ? slash + 1 : model_path);
    } else {
        if (!syn[1] || !syn[2]) return usage();
        if (!(m = synthetic(syn[0], syn[1], syn[2]))) return 1;
        snprintf(name, sizeof name, "synthetic-%ux%u-f%u", syn[0], syn[1], syn[2]);
    }
    uint32_t leaves_max = 0;
    for (uint32_t t = 0; t < m->n_trees; t++)
        if (m->trees[t].n_leaves > leaves_max) leaves_max = m->trees[t].n_leaves;
    ts_engine cpu_id;
    if (ts_engine_from_name(cpu_name, &cpu_id) != TS_OK) return usage();

    /* The largest batch's rows; smaller batches are its prefixes. */
    size_t max_rows = 0;
    for (const char *p = rows_list; *p;) {
        size_t n = (size_t)strtoull(p, NULL, 10);
        if (n > max_rows) max_rows = n;
        p = strchr(p, ',') ? strchr(p, ',') + 1 : p + strlen(p);
    }
    float *x = make_rows(m, max_rows);
    double *out = malloc((max_rows + 1) * sizeof *out), *ref = malloc(2001 * sizeof *ref);
    if (!x || !out || !ref) {
        fprintf(stderr, "gpu_bench: out of memory\n");
        return 1;
    }
    uint32_t F = m->n_features;
    size_t check = max_rows < 2000 ? max_rows : 2000;
    tse_config cfg = {.isa = TS_ISA_SCALAR};
    tse_layout lay;
    void *nst = NULL;
    if (tse_engine_naive.prepare(m, &cfg, &nst, &lay, &err) != TS_OK) {
        fprintf(stderr, "gpu_bench: naive: %s\n", err.message);
        return 1;
    }
    tse_engine_naive.score(nst, x, check, F, ref, NULL);
    tse_engine_naive.free(nst);

    /* The GPU kernels, each prepared once (the model uploaded once): gpu (QuickScorer),
     * its byte-code and walk variants, gpu-naive. */
    void *gst[N_KINDS] = {NULL};
    for (int g = 0; g < N_KINDS; g++) {
        if (!use_kind[g]) continue;
        double t0 = now_s();
        if (prepare_kind(m, g, &gst[g], &err) != TS_OK) {
            fprintf(stderr, "gpu_bench: %s\n", err.message);
            return 1;
        }
        char desc[160];
        tsg_engine_launch_desc(gst[g], desc, sizeof desc);
        fprintf(stderr, "# %s: %s prepared (layout and upload) in %.3f s; %s\n", name, labels[g], now_s() - t0, desc);
    }
    /* The CPU engine through the public API. */
    ts_scorer_options o;
    ts_scorer_options_init(&o);
    o.engine = cpu_id;
    o.n_threads = cpu_threads;
    ts_scorer *cpu = NULL;
    if (ts_scorer_create(m, &o, &cpu, &err) != TS_OK) {
        fprintf(stderr, "gpu_bench: %s: %s\n", cpu_name, err.message);
        return 1;
    }
    printf("model\ttrees\tleaves\tfeatures\trows\tengine\tkernel_us_per_doc\te2e_us_per_doc\tspeedup_vs_cpu\tchecked\t"
           "mismatches\n");
    int any_bad = 0;
    for (const char *p = rows_list; *p;) {
        size_t n = (size_t)strtoull(p, NULL, 10);
        p = strchr(p, ',') ? strchr(p, ',') + 1 : p + strlen(p);
        if (!n) continue;
        /* CPU: end to end on at most cpu_rows rows, best of reps. */
        size_t nc = n < cpu_rows ? n : cpu_rows;
        double cpu_s = 1e300;
        ts_scorer_score(cpu, x, nc, F, F, out, &err); /* warm-up */
        for (int r = 0; r < reps; r++) {
            double t0 = now_s();
            if (ts_scorer_score(cpu, x, nc, F, F, out, &err) != TS_OK) {
                fprintf(stderr, "gpu_bench: %s\n", err.message);
                return 1;
            }
            double dt = now_s() - t0;
            if (dt < cpu_s) cpu_s = dt;
        }
        size_t cpu_bad = 0, cpu_checked = nc < check ? nc : check;
        for (size_t r = 0; r < cpu_checked; r++) cpu_bad += memcmp(&out[r], &ref[r], sizeof ref[r]) != 0;
        double cpu_us = cpu_s * 1e6 / (double)nc;
        char cpu_label[64];
        snprintf(cpu_label, sizeof cpu_label, "%s:%uthreads", ts_engine_name(ts_scorer_engine(cpu)),
                 ts_scorer_n_threads(cpu));
        printf("%s\t%u\t%u\t%u\t%zu\t%s\t-\t%.5f\t1\t%zu\t%zu\n", name, m->n_trees, leaves_max, F, n, cpu_label, cpu_us,
               cpu_checked, cpu_bad);
        any_bad |= cpu_bad != 0;
        for (int g = 0; g < N_KINDS; g++) {
            if (!use_kind[g]) continue;
            size_t bad = time_kind(name, m, leaves_max, gst[g], labels[g], x, n, reps, out, ref, check, cpu_us);
            if (bad == (size_t)-1) return 1;
            any_bad |= bad != 0;
        }
    }
    for (int g = 0; g < N_KINDS; g++)
        if (gst[g]) tse_engine_gpu.free(gst[g]);
    if (do_sweep) any_bad |= sweep(name, m, leaves_max, x, max_rows, reps, out, ref, check);
    ts_scorer_free(cpu);
    ts_model_free(m);
    free(x), free(out), free(ref);
    return any_bad ? 3 : 0;
}
