/* registry.c: the table of engines and their names. */
#include <string.h>

#include "engines/engine.h"

/* Every engine, one line each (its descriptor is declared in engine.h). The order is
 * the order in which the planner times its candidates (tse_engine.plan_candidate): the
 * usual winners first, the compiled one last. */
static const tse_engine *const engines[] = {
    &tse_engine_oblivious, /* a candidate only for models whose trees are all oblivious */
    &tse_engine_rapid,
    &tse_engine_vqs,
    &tse_engine_qs,
    &tse_engine_vpred,
    &tse_engine_block_vpred,
    &tse_engine_naive,
    &tse_engine_block_naive,
    &tse_engine_ifelse,
    &tse_engine_trees_simd,
    &tse_engine_deep,
    &tse_engine_gpu_naive, /* src/gpu/: never planner candidates (plan_candidate NULL) */
    &tse_engine_gpu,
};

size_t tse_engine_count(void) { return sizeof engines / sizeof engines[0]; }

const tse_engine *tse_engine_at(size_t i) { return i < tse_engine_count() ? engines[i] : NULL; }

int tse_plan_always(const ts_model *model, const tse_config *cfg) {
    (void)model;
    (void)cfg;
    return 1;
}

/* The leaves of all trees. */
static uint64_t all_leaves(const ts_model *model) {
    uint64_t leaves = 0;
    for (uint32_t t = 0; t < model->n_trees; t++) leaves += model->trees[t].n_leaves;
    return leaves;
}

int tse_model_deep(const ts_model *model) {
    return model->n_trees && all_leaves(model) > (uint64_t)TSE_DEEP_LEAVES * model->n_trees;
}

int tse_plan_plain_walks(const ts_model *model, const tse_config *cfg) {
    (void)cfg;
    return !tse_model_deep(model);
}

int tse_model_big(const ts_model *model) {
    uint64_t nodes = 0;
    for (uint32_t t = 0; t < model->n_trees; t++) nodes += model->trees[t].n_nodes;
    return nodes >= 1000;
}

int tse_plan_bitvectors(const ts_model *model) {
    return all_leaves(model) <= (uint64_t)TSE_BITVECTOR_LEAVES * model->n_trees;
}

const tse_engine *tse_engine_get(ts_engine id) {
    for (size_t i = 0; i < sizeof engines / sizeof engines[0]; i++)
        if (engines[i]->id == id) return engines[i];
    return NULL;
}

const char *ts_engine_name(ts_engine e) {
    if (e == TS_ENGINE_AUTO) return "auto";
    const tse_engine *eng = tse_engine_get(e);
    return eng ? eng->name : "unknown";
}

ts_status ts_engine_from_name(const char *name, ts_engine *out) {
    if (!name || !out) return TS_ERR_INVALID_ARGUMENT;
    if (strcmp(name, "auto") == 0) {
        *out = TS_ENGINE_AUTO;
        return TS_OK;
    }
    for (size_t i = 0; i < sizeof engines / sizeof engines[0]; i++)
        if (strcmp(engines[i]->name, name) == 0) {
            *out = engines[i]->id;
            return TS_OK;
        }
    return TS_ERR_INVALID_ARGUMENT;
}
