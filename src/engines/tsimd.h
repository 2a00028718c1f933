/* tsimd.h: the layout of the trees-simd engine (SIMD lanes hold trees, not documents) shared by tsimd.c and its per-ISA kernels. */
#ifndef TS_ENGINES_TSIMD_H
#define TS_ENGINES_TSIMD_H

#include <stddef.h>
#include <stdint.h>

#include "engines/engine.h"

/*
 * trees-simd: one document at a time, one tree per SIMD lane
 * -----------------------------------------------------------
 * For one document (or a few), engines that put documents in lanes (vqs, rapid) leave
 * most lanes empty. trees-simd puts trees in lanes instead: a block of 16 (AVX-512),
 * 8 (AVX2) trees advances one level per step, each lane gathering its own node and the
 * document's value that node reads.
 *
 * Slots and slot values (exactness): every node "x goes left iff missing ? MISSING_LEFT
 * : x <= t" (forest.h) reads a slot, its feature seen through its missing rule (the
 * node's TSM_MISSING_LEFT and TSM_ZERO_IS_MISSING flags). A document is turned once into
 * one float per slot:
 *     v = x                  when x is not missing for the rule,
 *     v = -inf               when it is and missing goes left,
 *     v = NaN                when it is and missing goes right,
 * and the node is then exactly "v <= t" (t is never NaN: -inf <= t always holds, NaN <= t
 * never does; a value that is not missing compares as it does in naive). Slot 0 is the
 * constant -inf, read by padding nodes: they always go left.
 *
 * Supernodes: each tree is cut into complete binary subtrees of TSM_LEVELS = K levels
 * (2^K - 1 nodes, numbered breadth first: node j's children are 2j + 1 and 2j + 2), so
 * that within one the child index is computed, not loaded. Supernode s owns entries
 * [s * 2^K, (s + 1) * 2^K) of slot[] and thr[] (the last one unused) and of exit[]:
 * after K steps a lane is at position j in [2^K - 1, 2^(K+1) - 1), and exit[s * 2^K + j -
 * (2^K - 1)] is the next supernode's first entry (>= 0), or ~g for the exit leaf, g its
 * index in leaves[] (< 0). Where a tree's leaf is met above the supernode's last level,
 * padding nodes (slot 0: always left) carry the lane down to the leftmost position under
 * it, and every exit under the leaf holds ~g. A lane whose exit is a leaf stops (its
 * lane is masked off); the block steps until every lane has stopped.
 *
 * Score: the exit leaves of a block are stored, then their values (weight * leaf) added
 * one by one in tree order to the document's double score, starting from base_score: the
 * same additions as naive, so the same bits.
 */

#define TSS_LEVELS_MAX 6u
#define TSS_LANES_MAX 16u

/* An entry of the depth-step layout: a node (its children at child and child + 1) or a
 * leaf (slot 0, always left, child = itself). */
typedef struct tss_pnode {
    float thr;
    uint32_t slot;
    uint32_t child;
} tss_pnode;

#define TSS_PG 16u

typedef struct tss_group {
    uint32_t first;         /* in order[] */
    uint32_t count;         /* <= TSS_PG */
    uint32_t depth;         /* steps: the deepest tree's depth */
} tss_group;

typedef struct tss {
    double base_score;
    uint32_t n_trees;
    uint32_t levels;        /* K */
    uint32_t n_slots;       /* slot 0 (-inf) included */
    uint32_t n_slots_pad;   /* n_slots rounded up to TSS_LANES_MAX */
    uint32_t *slot_col;     /* n_slots_pad: the column a slot reads (slot 0 and padding: 0) */
    float *slot_miss;       /* n_slots_pad: -inf (missing goes left) or NaN */
    uint32_t *slot_zero;    /* n_slots_pad: 1 when zero-range values are missing */
    int32_t *root;          /* n_trees rounded up to TSS_LANES_MAX: first entry of the
                               root supernode, or ~g for a one-leaf tree (padding: ~0) */
    uint32_t *slot;         /* n_super * 2^K */
    float *thr;             /* n_super * 2^K */
    uint64_t *node;         /* n_super * 2^K: slot | threshold's bits << 32, one 64-bit
                               gather element per lane */
    int32_t *exit;          /* n_super * 2^K */
    double *leaves;         /* weight * leaf value, all trees */
    uint64_t n_super;
    /* Depth steps (tsimd.c "Depth steps"): */
    tss_pnode *pn;          /* every tree's entries; entry 0: a spare leaf */
    int32_t *leaf_of;       /* per entry: the leaf's index in leaves[] (leaf entries) */
    uint32_t *proot;        /* per tree: its root entry */
    uint32_t *order;        /* trees by depth, deepest first */
    tss_group *groups;      /* TSS_PG trees of `order` at a time */
    uint32_t n_groups;
} tss;

/*
 * A kernel scores n_rows rows. scratch (tss_scratch_bytes) holds one document's slot
 * values (n_slots_pad floats, 64-byte aligned) and a block's exit leaves.
 */
typedef void (*tss_kernel)(const tss *L, const float *x, size_t n_rows, size_t stride, double *out, void *scratch);

typedef struct tss_kernels {
    ts_isa isa;
    uint32_t lanes;
    tss_kernel kernel;
} tss_kernels;

#if defined(__x86_64__) || defined(__i386__)
#define TS_HAVE_TSIMD_X86 1
extern const tss_kernels tse_tsimd_avx2, tse_tsimd_avx512;
#endif

static inline size_t tss_round64(size_t n) { return (n + 63) & ~(size_t)63; }
static inline size_t tss_scratch_bytes(const tss *L) {
    return tss_round64((size_t)L->n_slots_pad * sizeof(float)) + tss_round64(((size_t)L->n_trees + 64) * sizeof(int32_t));
}

/* One document's slot values (see above), scalar. */
static inline void tss_slot_values(const tss *L, const float *row, float *v) {
    v[0] = -__builtin_inff();
    for (uint32_t s = 1; s < L->n_slots; s++) {
        float x = row[L->slot_col[s]];
        int miss = x != x || (L->slot_zero[s] && x >= -TSM_ZERO_RANGE && x <= TSM_ZERO_RANGE);
        v[s] = miss ? L->slot_miss[s] : x;
    }
}

#endif /* TS_ENGINES_TSIMD_H */
