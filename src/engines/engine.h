/* engine.h: the one small interface every traversal engine implements. */
#ifndef TS_ENGINES_ENGINE_H
#define TS_ENGINES_ENGINE_H

#include <stddef.h>

#include "model/forest.h"
#include "platform/cpu.h"
#include "treescore.h"

/* What the scorer asks of an engine: resolved options (isa is never TS_ISA_AUTO and is
 * supported by this CPU; tau and delta may be 0 = the engine's choice from cache sizes). */
typedef struct tse_config {
    ts_isa isa;
    uint32_t tau, delta;
    uint32_t lanes;         /* vpred, block-vpred: documents interleaved; 0 = engine's choice */
    int no_build;           /* 1: never start a build (ifelse: load a cached object or fail
                               with TS_ERR_ENGINE_UNAVAILABLE); the planner sets it */
    const float *sample;    /* rows of the caller's data as the engine reads rows (row r at
                               sample + r * sample_stride, the model's columns readable), or
                               NULL; read during prepare only. An engine may shape its layout
                               by them (rapid: rapid.h "Leaf order"), never its scores */
    size_t sample_rows, sample_stride;
} tse_config;

/* What the engine reports back from prepare. */
typedef struct tse_layout {
    ts_isa isa;             /* the instruction set its kernel uses (<= config isa) */
    uint32_t tau, delta;    /* block sizes used (0, 0 when the engine does not block) */
    size_t scratch_bytes;   /* working memory one score call needs, any n_rows */
    size_t rows_per_chunk;  /* the smallest batch worth a thread of its own */
    uint32_t lanes;         /* documents interleaved (vpred, block-vpred), else 0 */
} tse_layout;

/*
 * An engine turns a finished ts_model into its own read-only layout (prepare), scores
 * batches from that layout (score), and frees it. Contract:
 *   - prepare copies what it needs: the model may be freed afterwards;
 *   - score is called concurrently from many threads on one state: it must not write
 *     to the state, take locks, or allocate; its working memory is `scratch`, which has
 *     layout.scratch_bytes bytes, 64-byte aligned, private to the call (NULL when 0);
 *   - rows have at least model->n_features readable floats (row r at x + r*row_stride);
 *   - out[r] = base_score + sum over trees in tree order of weight*leaf, in double, so
 *     that every engine returns the same bits as tsm_tree_exit_leaf-based reference
 *     scoring, whatever the batch, block sizes, ISA or thread count.
 */
typedef struct tse_engine {
    ts_engine id;
    const char *name;
    ts_status (*prepare)(const ts_model *model, const tse_config *cfg, void **state, tse_layout *layout,
                         ts_error *err);
    void (*score)(const void *state, const float *x, size_t n_rows, size_t row_stride, double *out, void *scratch);
    void (*free)(void *state);
    /* Whether the planner (TS_ENGINE_AUTO) times this engine for this model and config:
     * 1 yes, 0 no. Cheap and side-effect free: it runs no compiler and builds nothing,
     * so an engine with a build step answers 1 only when its artefact is ready (ifelse:
     * its object is in the cache). NULL: never a candidate. tse_plan_always for an
     * engine that is always worth timing. */
    int (*plan_candidate)(const ts_model *model, const tse_config *cfg);
    /* Optional (NULL: not offered): double rows, scored as the model's library decides
     * them, from the caller's rows without a float copy: for a model whose library
     * compares double inputs with double thresholds (model->compares_double: LightGBM;
     * tsp_f64_score_row in src/scorer/f64.c is the reference), or one that converts its
     * input to float32 first (XGBoost, scikit-learn, ONNX: each value (float)v, then as
     * score). Rows have at least n_features readable doubles; otherwise score's rules
     * (concurrent, no writes to state, scratch of scratch_bytes, out[r] the same bits as
     * the reference). Returns 1 when it scored, 0 (having written nothing) when this
     * prepared state cannot: the scorer then rounds the rows to floats for score
     * (src/scorer/f64.c). rapid: its codes computed from the double values
     * (engines/common/quant.h "Double codes"), or from each value's nearest float on the
     * quantizer's way (rapid.h kernel_near); trees-simd: its depth steps on the same
     * double codes as keys (tsimd.c "Double keys"), and only those. */
    int (*score_f64)(const void *state, const double *x, size_t n_rows, size_t row_stride, double *out, void *scratch);
    /* Optional (NULL: not offered): one row's trees split across threads. The scorer
     * asks each thread for the contributions of some groups of trees and adds them
     * itself, in tree order, to the base score, so the sum is the same bits as score's.
     * tree_groups(state) is how many groups of consecutive trees the engine cuts its
     * trees into; tree_group_first(state, g) is the first tree of group g (0 <= g <=
     * tree_groups; g == tree_groups gives the tree count). tree_values writes, for the one row at x,
     * vals[t - tree_group_first(g0)] = tree t's contribution (weight * leaf value, the
     * double that score adds) for every tree t of groups [g0, g1); it adds nothing.
     * Same rules as score (concurrent, no writes to state, scratch of scratch_bytes). */
    uint32_t (*tree_groups)(const void *state);
    uint32_t (*tree_group_first)(const void *state, uint32_t g);
    void (*tree_values)(const void *state, const float *x, uint32_t g0, uint32_t g1, double *vals, void *scratch);
} tse_engine;

/* plan_candidate for engines with no build step and no better sibling. */
int tse_plan_always(const ts_model *model, const tse_config *cfg);

/* Whether engines whose work per tree grows with its leaves (QuickScorer's bitvectors: qs,
 * vqs; rapid's rows) are worth timing: not for forests of more than TSE_BITVECTOR_LEAVES
 * leaves per tree on average, where they measured 5-45x slower than the best engine
 * (200 x 1,024 leaves: rapid 16, vqs 57, qs 147 against trees-simd 3.3 us/doc at 1,000
 * rows; msn-srf-500x4096: 13-18x), while preparing them took 3.1 s of the planner's 13 s
 * before a first prediction on msn-srf-500x4096 (Zen 3). */
#define TSE_BITVECTOR_LEAVES 512u
int tse_plan_bitvectors(const ts_model *model);

/* A forest of deep trees: more than TSE_DEEP_LEAVES leaves per tree on average (scikit-
 * learn's fully grown forests), where deep is a candidate (elsewhere rapid, vqs and
 * trees-simd are faster) and the plain walks are not: naive and block-naive walk the same
 * paths one at a time, which deep interleaves, and trees-simd takes the small batches
 * (msn-srf-500x4096, Zen 3: both 2-9x slower than the best engine in every batch range,
 * and their timings took about 0.6 s of a cold plan). */
#define TSE_DEEP_LEAVES 256u
int tse_model_deep(const ts_model *model);
/* plan_candidate of naive and block-naive: every model but a deep forest. */
int tse_plan_plain_walks(const ts_model *model, const tse_config *cfg);

/* A model of at least 1,000 nodes: one where quantizing a document (rapid's codes) costs
 * little beside scoring it (below that, about as much as its trees). rapid's candidacy
 * and the planner's rule of thumb both read it. */
int tse_model_big(const ts_model *model);

extern const tse_engine tse_engine_naive;
extern const tse_engine tse_engine_qs;
extern const tse_engine tse_engine_vqs;
extern const tse_engine tse_engine_ifelse;
extern const tse_engine tse_engine_vpred;
extern const tse_engine tse_engine_block_naive;
extern const tse_engine tse_engine_block_vpred;
extern const tse_engine tse_engine_rapid;
extern const tse_engine tse_engine_trees_simd;
extern const tse_engine tse_engine_oblivious;
extern const tse_engine tse_engine_gpu_naive; /* src/gpu/gpu.c */
extern const tse_engine tse_engine_gpu;
extern const tse_engine tse_engine_deep;

/* The engine with this id, or NULL (TS_ENGINE_AUTO is resolved by the scorer). */
const tse_engine *tse_engine_get(ts_engine id);

/* The registry's i-th engine (0 <= i < tse_engine_count()), in registry order: the
 * order in which the planner times its candidates. */
size_t tse_engine_count(void);
const tse_engine *tse_engine_at(size_t i);

#endif /* TS_ENGINES_ENGINE_H */
