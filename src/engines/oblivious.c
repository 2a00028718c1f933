/* oblivious.c: oblivious (CatBoost SymmetricTree) trees on exact feature codes (oblivious.h): the layout builder and the engine that picks the ISA kernel (scalar in oblivious_scalar.c, SIMD ones in x86/). */
#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "engines/oblivious.h"

/* ---- which trees are oblivious ------------------------------------------------------------ */

static int same_split(const tsm_node *a, const tsm_node *b) {
    return a->feature == b->feature && a->threshold == b->threshold && a->flags == b->flags;
}

/* Whether tree tr is oblivious of at most OB_MAX_DEPTH levels (oblivious.h): a complete
 * tree of depth d whose nodes of one level are one split. In canonical preorder the first
 * node of level i is node i (the leftmost path), so every node is compared with that one;
 * level has room for the tree's nodes. A one-leaf tree is oblivious of depth 0. */
static int tree_is_oblivious(const tsm_tree *tr, uint32_t *level) {
    if (tr->n_nodes == 0) return 1;
    const uint32_t d = tr->depth;
    if (d == 0 || d > OB_MAX_DEPTH || tr->n_nodes != (1u << d) - 1) return 0;
    for (uint32_t i = 0; i < tr->n_nodes; i++) level[i] = UINT32_MAX;
    level[0] = 0;
    for (uint32_t i = 0; i < tr->n_nodes; i++) { /* preorder: a node's children come after it */
        const tsm_node *nd = &tr->nodes[i];
        const uint32_t lv = level[i];
        if (lv >= d) return 0;
        const int inner = lv + 1 < d;
        if ((nd->left >= 0) != inner || (nd->right >= 0) != inner) return 0;
        if (inner) {
            if ((uint32_t)nd->left <= i || (uint32_t)nd->right <= i) return 0;
            level[nd->left] = level[nd->right] = lv + 1;
        }
        if (level[lv] != lv || !same_split(&tr->nodes[lv], nd)) return 0;
    }
    return 1;
}

/* ---- layout ------------------------------------------------------------------------------ */

static void obl_free(obl *L) {
    if (!L) return;
    tsc_coder_free(&L->coder);
    free(L->trees);
    free(L->levels);
    free(L->nodes);
    free(L->leaves);
    free(L->planes);
    memset(L, 0, sizeof *L);
}

/* Tree t into the layout: its levels (oblivious) or its nodes (general), on codes. */
static void place_tree(obl *L, const tsm_tree *tr, uint32_t t, int oblivious, uint32_t *n_levels, uint32_t *n_nodes) {
    const tsq *q = &L->coder.t.q;
    ob_tree *T = &L->trees[t];
    if (oblivious) {
        T->depth = tr->n_nodes ? tr->depth : 0;
        T->first = *n_levels;
        for (uint32_t i = 0; i < T->depth; i++) {
            uint32_t k, slot = tsq_tree_node_slot(q, tr, i, &k);
            L->levels[(*n_levels)++] = (ob_level){slot * L->lanes, (k ^ L->flip) & 0xFF};
        }
        return;
    }
    T->depth = OB_GENERAL;
    T->first = *n_nodes;
    for (uint32_t i = 0; i < tr->n_nodes; i++) {
        uint32_t k, slot = tsq_tree_node_slot(q, tr, i, &k);
        const tsm_node *nd = &tr->nodes[i];
        L->nodes[(*n_nodes)++] = (ob_node){slot * L->lanes, (k ^ L->flip) & 0xFF, nd->left, nd->right};
    }
}

/* The byte planes of the trees of 1 .. 8 levels (oblivious.h "Byte planes"). */
static ts_status build_planes(obl *L, ts_error *err) {
    size_t total = 0;
    for (uint32_t t = 0; t < L->n_trees; t++) {
        const uint32_t d = L->trees[t].depth;
        if (d >= 1 && d <= 8) total += 8 * ob_plane_bytes(d);
    }
    if (total / 64 >= UINT32_MAX) return ts_fail(err, TS_ERR_LIMIT, "oblivious: more than 256 GiB of byte planes");
    L->planes = aligned_alloc(64, total + 64);
    if (!L->planes) return ts_fail(err, TS_ERR_NO_MEMORY, "oblivious: out of memory (%zu bytes of byte planes)", total);
    memset(L->planes, 0, total + 64);
    size_t at = 0;
    for (uint32_t t = 0; t < L->n_trees; t++) {
        ob_tree *T = &L->trees[t];
        if (T->depth < 1 || T->depth > 8) continue;
        const size_t P = ob_plane_bytes(T->depth);
        T->plane = (uint32_t)(at / 64);
        for (uint32_t i = 0; i < (1u << T->depth); i++) {
            uint8_t b[8];
            memcpy(b, &L->leaves[T->leaf + i], 8);
            for (int j = 0; j < 8; j++) L->planes[at + (size_t)j * P + i] = b[j]; /* little-endian: x86 */
        }
        at += 8 * P;
    }
    return TS_OK;
}

static ts_status obl_build(obl *L, const ts_model *m, const tse_config *cfg, const ob_kernels *k, ts_error *err) {
    memset(L, 0, sizeof *L);
    uint32_t max_nodes = 1;
    uint64_t n_leaves = 0, n_nodes = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        if (m->trees[t].n_nodes > max_nodes) max_nodes = m->trees[t].n_nodes;
        n_leaves += m->trees[t].n_leaves;
        n_nodes += m->trees[t].n_nodes;
    }
    if (n_leaves >= UINT32_MAX || n_nodes >= UINT32_MAX)
        return ts_fail(err, TS_ERR_LIMIT, "oblivious: the model has more than 2^32 leaves");
    ts_status st = tsc_coder_init(&L->coder, m, cfg->isa, err);
    if (st != TS_OK) {
        tsc_coder_free(&L->coder);
        return st;
    }
    if (L->coder.k.lanes != k->lanes) { /* kernels.h: the same levels as rapid's quantizers */
        obl_free(L);
        return ts_fail(err, TS_ERR_GENERIC, "oblivious: the %s kernel has %u lanes, the quantizer %u",
                       ts_isa_name(k->isa), k->lanes, L->coder.k.lanes);
    }
    L->base_score = m->base_score;
    L->n_trees = m->n_trees;
    L->lanes = k->lanes;
    L->flip = L->coder.t.flip;
    L->trees = calloc((size_t)m->n_trees + 1, sizeof *L->trees);
    L->levels = malloc(((size_t)n_nodes + 1) * sizeof *L->levels);
    L->nodes = malloc(((size_t)n_nodes + 1) * sizeof *L->nodes);
    L->leaves = calloc((size_t)n_leaves + 64, sizeof *L->leaves); /* kernels may read 64 from any tree's */
    uint32_t *offset = malloc(((size_t)m->n_trees + 1) * sizeof *offset);
    uint32_t *level = malloc((size_t)max_nodes * sizeof *level);
    if (!L->trees || !L->levels || !L->nodes || !L->leaves || !offset || !level)
        st = ts_fail(err, TS_ERR_NO_MEMORY, "oblivious: out of memory preparing %u trees", m->n_trees);
    if (st == TS_OK) {
        uint32_t n_lv = 0, n_nd = 0;
        tsm_model_weighted_leaves(m, L->leaves, offset);
        for (uint32_t t = 0; t < m->n_trees; t++) {
            const int obl_tree = tree_is_oblivious(&m->trees[t], level);
            place_tree(L, &m->trees[t], t, obl_tree, &n_lv, &n_nd);
            L->trees[t].leaf = offset[t];
            L->n_oblivious += obl_tree;
        }
    }
    free(offset);
    free(level);
    if (st == TS_OK && k->planes) st = build_planes(L, err);
    if (st != TS_OK) obl_free(L);
    return st;
}

/* ---- the engine ------------------------------------------------------------------------- */

typedef struct oblivious_state {
    obl L;
    uint32_t delta;
    ob_kernel kernel;
    ob_kernel_f64 kernel_near; /* double rows where the model converts its input to float32
                                  and the coder has quantize_near; else NULL */
} oblivious_state;

static void oblivious_free(void *p) {
    oblivious_state *s = p;
    if (!s) return;
    obl_free(&s->L);
    free(s);
}

/* Documents per block: 1,024 (cfg->delta when given), fewer when their codes would pass
 * 256 KiB (a quarter of a Zen 4 L2: every tree reads them), a multiple of the lanes. */
static uint32_t block_docs(const obl *L, const tse_config *cfg) {
    const size_t ns = L->coder.t.q.n_slots ? L->coder.t.q.n_slots : 1;
    size_t d = cfg->delta ? cfg->delta : 1024;
    if (!cfg->delta && d * ns > (256u << 10)) d = (256u << 10) / ns;
    if (d > OB_MAX_DELTA) d = OB_MAX_DELTA;
    d = (d + L->lanes - 1) / L->lanes * L->lanes;
    return (uint32_t)(d ? d : L->lanes);
}

/* The VBMI kernel where the CPU has VBMI, unless cfg->lanes is 1 (the AVX-512BW kernel:
 * tests and benchmarks compare both). */
static int use_vbmi(const tse_config *cfg) {
    return cfg->lanes != 1 && (tsr_cpu_features() & TSR_CPU_AVX512VBMI) != 0;
}

static ts_status oblivious_prepare(const ts_model *m, const tse_config *cfg, void **out, tse_layout *layout,
                                   ts_error *err) {
    const ob_kernels *k = tsk_oblivious(cfg->isa, use_vbmi(cfg));
    oblivious_state *s = calloc(1, sizeof *s);
    if (!s) return ts_fail(err, TS_ERR_NO_MEMORY, "oblivious: out of memory");
    ts_status st = obl_build(&s->L, m, cfg, k, err);
    if (st != TS_OK) {
        free(s);
        return st;
    }
    s->delta = block_docs(&s->L, cfg);
    s->kernel = k->kernel;
    s->kernel_near = !m->compares_double && s->L.coder.k.quantize_near ? k->kernel_near : NULL;
    uint64_t nodes = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) nodes += m->trees[t].n_nodes;
    size_t chunk = (size_t)(1u << 22) / (nodes + 1) + 1;
    if (chunk < k->lanes) chunk = k->lanes;
    *layout = (tse_layout){k->isa, 0, s->delta, ob_scratch_parts(&s->L, s->delta).total, chunk, k->lanes};
    *out = s;
    return TS_OK;
}

static void oblivious_score(const void *p, const float *x, size_t n_rows, size_t stride, double *out, void *scratch) {
    const oblivious_state *s = p;
    s->kernel(&s->L, s->delta, x, n_rows, stride, out, scratch);
}

/* Double rows of a model that converts its input to float32 (CatBoost), each value to
 * the nearest float on its way into the codes; 0 for a model that compares doubles, or
 * without the ISA quantizer's quantize_near (the scorer converts the rows first). */
static int oblivious_score_f64(const void *p, const double *x, size_t n_rows, size_t stride, double *out,
                               void *scratch) {
    const oblivious_state *s = p;
    if (!s->kernel_near) return 0;
    s->kernel_near(&s->L, s->delta, x, n_rows, stride, out, scratch);
    return 1;
}

/* The planner times it on models whose trees are all oblivious (CatBoost's default
 * SymmetricTree) with at least one split: elsewhere it walks trees lane by lane. */
static int oblivious_plan_candidate(const ts_model *m, const tse_config *cfg) {
    (void)cfg;
    uint32_t max_nodes = 0;
    int any = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        if (m->trees[t].n_nodes > max_nodes) max_nodes = m->trees[t].n_nodes;
        any |= m->trees[t].n_nodes > 0;
    }
    if (!any) return 0;
    uint32_t *level = malloc((size_t)max_nodes * sizeof *level);
    int ok = level != NULL;
    for (uint32_t t = 0; ok && t < m->n_trees; t++) ok = tree_is_oblivious(&m->trees[t], level);
    free(level);
    return ok;
}

const tse_engine tse_engine_oblivious = {
    .id = TS_ENGINE_OBLIVIOUS, .name = "oblivious", .prepare = oblivious_prepare, .score = oblivious_score,
    .free = oblivious_free, .plan_candidate = oblivious_plan_candidate, .score_f64 = oblivious_score_f64,
};
