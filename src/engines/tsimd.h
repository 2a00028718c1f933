/* tsimd.h: the layout of the trees-simd engine (SIMD lanes hold trees, not documents) shared by tsimd.c and its per-ISA kernels. */
#ifndef TS_ENGINES_TSIMD_H
#define TS_ENGINES_TSIMD_H

#include <stddef.h>
#include <stdint.h>

#include "engines/common/kernels.h"
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
 * Slot keys (the depth-step kernel, tsimd.c): the same slot values as order-preserving
 * unsigned integers, tss_key (below), -inf's place taken by 0 and NaN's by 0xffffffff,
 * thresholds keyed alike: "v <= t" is exactly "key(t) >= key(v)", so a step is an integer
 * compare and an add with carry (right = key(t) < key(v)). -0 and +0 share a key, as they
 * compare equal.
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

/* An entry of the depth-step layout (tsimd.c "Depth steps"): a node, its children at
 * e + delta (left) and e + delta + 1 (right), or a leaf (slot 0, always left, delta 0:
 * it steps onto itself). 8 bytes, so that a step is one cache line's part. */
typedef struct tss_cnode {
    uint32_t thr;           /* tss_key of the threshold; a leaf: its value's index in lval */
    uint16_t slot;
    uint16_t delta;
} tss_cnode;

#define TSS_PG 16u  /* trees stepped together */
#define TSS_RB 16u  /* rows stepped through one group of trees before the next group */

/* One row's slot keys (tss_slot_keys), and a double row's float-first keys
 * (tsimd.c tss_slot_keys_up: 0 when the row needs the double keys), by an ISA. */
struct tss;
typedef void (*tss_keys_fn)(const struct tss *L, const float *row, uint32_t *k);
typedef int (*tss_keys_up_fn)(const struct tss *L, const double *row, uint32_t *k);
/* R rows' top-level exits (tsimd.c "Top levels"), R <= TSS_TOPR: from row r's slot keys
 * k + ks r, each tree's entry after TSS_TOPK levels, in tree order (n_trees_pad of them),
 * into x + n_trees_pad r, and those whose exit is a node into the work list
 * A + n_trees_pad r (tree << 32 | entry: tsimd.c top_rows), whose length goes to n[r]. */
typedef void (*tss_top_fn)(const struct tss *L, const uint32_t *k, size_t ks, uint32_t R, uint32_t *x,
                           uint64_t *A, uint32_t *n);
/* Calls of more rows (tsimd.c top_rows_chunked): R <= TSS_TOPR rows' codes (tsimd.c
 * "Top levels", TSS_TOPR * 256 bytes at `codes`, row r at codes + 256 r) from their slot
 * keys k + ks r; then, for trees t0 .. t1 - 1 (multiples of 8, t1 <= n_trees_pad) and
 * the R rows whose codes are at `codes`, the rows numbered rt .. rt + R - 1 of a chunk
 * (x index of row q, tree i: (q << lg) + i - t0, below 2^TSS_XI_BITS), each tree's exit
 * entry into x at its index, and those whose exit is a node appended to the work list A
 * at *n as an item (TSS_ITEM), 8 trees at a time, the rows of those 8 side by side; then
 * the steps below the top levels of the n items at A (rounds until each one's entry is a
 * leaf), row q's slot keys at V + q nsp, each item's entries into x. */
#define TSS_XI_BITS 11u
/* An item: row q's slot keys' offset (q nsp, its keys at V + q nsp), the x index and the entry. */
#define TSS_ITEM(q, nsp, xi, e) \
    (((uint64_t)(q) * (nsp) << TSS_XI_BITS | (uint64_t)(xi)) << 32 | (uint32_t)(e))
typedef void (*tss_top_codes_fn)(const struct tss *L, const uint32_t *k, size_t ks, uint32_t R, uint8_t *codes);
typedef void (*tss_top_range_fn)(const struct tss *L, const uint8_t *codes, uint32_t R, uint32_t t0, uint32_t t1,
                                 uint32_t rt, uint32_t lg, size_t nsp, uint32_t *x, uint64_t *A, uint32_t *n);
typedef void (*tss_top_steps_fn)(const struct tss *L, const uint32_t *V, uint32_t *x, uint64_t *A, uint32_t n);
/* Rows that go through the top levels together (trees outer, rows inner). */
#ifndef TSS_TOPR
#define TSS_TOPR 8u
#endif

/*
 * Top levels (tsimd.c "Top levels"): the first TSS_TOPK levels of every tree decided by
 * byte compares, 64 nodes a register (x86/tsimd_avx512.c with VBMI). Per tree (tree
 * order) 64 node bytes of each kind (keyset and key index), the levels' 63 nodes placed
 * as tss_top_pos says; where a leaf is met above the last level, padding nodes (keyset
 * 0) go left down to it. After the walk a lane is at position p of the last level, and
 * goes on from entry tbase[t] + p: each tree has a second copy of its entries below
 * the top levels in cn (after the entries from the roots), the 64 of the last level
 * first (a node of level TSS_TOPK, or a leaf), then breadth first (top_steps).
 */
#define TSS_TOPK 6u
/* The entries below the top levels (tsimd.c top_steps): a node's delta field holds its
 * delta (up to TSS_TOP_DELTA) and whether each child is a leaf, whose entry then holds
 * its value (a double) in place of a node. */
#define TSS_TOP_DELTA 0x3fffu
#define TSS_TOP_LEAF_L 0x4000u
#define TSS_TOP_LEAF_R 0x8000u
#define TSS_TOP_BYTES 64u

typedef struct tss_top {
    uint32_t n_top;         /* keysets, <= 256 (keyset 0: padding, code 0) */
    uint32_t n_trees_pad;   /* n_groups * TSS_PG (trees past n_trees: padding, exit 0) */
    uint32_t *tslot;        /* n_top: a slot of the keyset (its slot key gives the code) */
    uint32_t *toff;         /* n_top: its first block of 16 keys in tkeys */
    uint32_t *tkeys;        /* blocks of 16 sorted keys, padded with 0xffffffff; a keyset of
                               c keys has c / 16 + 1 blocks (the last one has padding) */
    uint32_t *tsum;         /* n_top * 16: its blocks' largest keys (0xffffffff past its
                               blocks): the block of a key is the count of those below it */
    uint8_t *nslot;         /* n_trees_pad * 64: node bytes: keyset */
    uint8_t *nidx;          /* n_trees_pad * 64: node bytes: j (tsimd.c "Top levels") */
    uint64_t *mr;           /* n_trees_pad: the nodes whose missing values go right */
    uint32_t *tbase;        /* n_trees_pad: the tree's entry of last-level position 0 in cn
                               (position p: tbase + p) */
    uint32_t *wide;         /* the trees that read a keyset past the first 128 */
    uint8_t *wide8;         /* n_trees_pad / 8: bit k of byte c: tree 8 c + k is wide */
    uint32_t n_wide;
    uint64_t *nodes;        /* n_trees_pad: bit p: last-level position p holds a node */
    uint8_t walk3[128];     /* 3 levels of 7 node bits (breadth first) -> position 0..7 */
} tss_top;

/* The byte of the node at level l < TSS_TOPK, position q, in a tree's 64: the first 3
 * levels' 7 nodes, then under each of their 8 positions a 3-level subtree of 7 nodes
 * (so that 7 contiguous mask bits decide 3 levels: tss_top_walk). */
static inline uint32_t tss_top_pos(uint32_t l, uint32_t q) {
    if (l < 3) return (1u << l) - 1 + q;
    const uint32_t ll = l - 3;
    return 7 + 7 * (q >> ll) + (1u << ll) - 1 + (q & ((1u << ll) - 1));
}

/* A tree's last-level position from its 64-bit mask (bit b: node byte b goes right). */
static inline uint32_t tss_top_walk(const tss_top *T, uint64_t m) {
    const uint32_t a = T->walk3[m & 127];
    return a * 8 + T->walk3[(m >> (7 + 7 * a)) & 127];
}

#define TSS_GAPS_ANY 65536u

/* An entry of tss.gaps: key (j + 1) << 32 | bits of F (0: empty), the D range. */
typedef struct tss_gap {
    uint64_t key;
    double lo, hi;
} tss_gap;

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
    /* Depth steps (tsimd.c "Depth steps"); cn is NULL where a tree or the slots do not
     * fit its 16-bit fields (the supernode kernels score then): */
    tss_cnode *cn;          /* every tree's entries, in tree order; entry 0: a spare leaf;
                               then, with top, the entries below the top levels (tree order) */
    double *lval;           /* weight * leaf value: 0 (the spare leaves), then every tree's leaves;
                               a leaf's entry holds its index as thr (its step compares it to slot
                               0's key 0: never right) */
    uint64_t n_cn;          /* entries from the roots (the top levels' copies come after) */
    uint32_t n_groups;      /* groups of TSS_PG trees: n_trees / TSS_PG rounded up */
    /* The walks from the roots (tsimd.c "Tree order"): TSS_PG trees in tree order at a
     * time, group g's trees g TSS_PG .. (each tree's root entry, padded to whole groups
     * with the spare leaf 0); tdepth[g], the deepest of them; tcut[g] <= tdepth[g], the
     * steps before the walks check whether every lane is at a leaf. */
    uint32_t *troot;
    uint32_t *tdepth;
    uint32_t *tcut;
    /* Double rows (tsimd.c "Double keys"): set for a model that compares doubles
     * (LightGBM) whose double codes exist (quant.h "Double codes"), else NULL: */
    tss_cnode *cnd;         /* cn's entries with thr = the node's double-threshold index k */
    void *qd;               /* the double codes (tsq), owned */
    uint32_t *slot_j;       /* n_slots_pad: a slot's feature in qd (slot 0: unused) */
    int f64_floats;         /* double rows may take cn and float keys, float first (tsimd.c) */
    struct tss_gap *gaps;   /* with f64_floats: per (feature j, float F) of a double threshold D
                             * that is not F, the least and largest such D; open addressing
                             * (tsimd.c "Float first") */
    uint32_t gaps_bits;     /* log2 of its size */
    tss_keys_fn keys;       /* the ISA's key functions for the depth steps, or NULL (scalar) */
    tss_keys_up_fn keys_up;
    uint64_t *gaps_any;     /* TSS_GAPS_ANY bits: bit (hash >> (64 - 16)) set for each key of
                             * gaps (a filter in L1 before the table: no bit, no entry) */
    tss_top *top;           /* the top levels by byte masks, or NULL (tsimd.c "Top levels") */
    tss_top_fn top_exits;   /* with top: the ISA's function */
    tss_top_codes_fn top_codes;  /* with top: the ISA's functions for calls of more rows */
    tss_top_range_fn top_range;
    tss_top_steps_fn top_steps;
} tss;

/*
 * A kernel scores n_rows rows. scratch (tss_scratch_bytes) holds the slot values or keys
 * (n_slots_pad per row, 64-byte aligned) and the exit leaves (tss_scratch_bytes).
 */
typedef void (*tss_kernel)(const tss *L, const float *x, size_t n_rows, size_t stride, double *out, void *scratch);

typedef struct tss_kernels {
    ts_isa isa;
    uint32_t lanes;
    tss_kernel kernel;
    tss_keys_fn keys;        /* NULL: the scalar tss_slot_keys */
    tss_keys_up_fn keys_up;  /* NULL: the scalar tss_slot_keys_up */
    tss_top_fn top_exits;    /* NULL: no top levels by byte masks (needs VBMI) */
    tss_top_codes_fn top_codes;
    tss_top_range_fn top_range;
    tss_top_steps_fn top_steps;
} tss_kernels;

/* The kernels per ISA (tse_tsimd_avx2, tse_tsimd_avx512) and tsk_tsimd, which picks
 * one: common/kernels.h. */

static inline size_t tss_round64(size_t n) { return (n + 63) & ~(size_t)63; }
/* Scratch: the supernode kernels use one row's slot values and n_trees + 64 exit leaves;
 * depth steps TSS_RB rows' slot keys, then a part of TSS_RB (n_trees + 64) doubles that
 * the split's top levels use (tsimd.c split_top: the wide trees renumbered), then the top
 * levels' exits and work lists. */
static inline size_t tss_scratch_bytes(const tss *L) {
    return tss_round64((size_t)TSS_RB * L->n_slots_pad * sizeof(float)) +
           tss_round64((size_t)TSS_RB * ((size_t)L->n_trees + 64) * sizeof(double)) +
           (L->top ? tss_round64((size_t)TSS_TOPR * L->top->n_trees_pad * (sizeof(uint32_t) + sizeof(uint64_t)) + 64) : 0);
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

/* An order-preserving unsigned key of a float that is not NaN (-0 and +0: the same key):
 * a <= b exactly when tss_key(a) <= tss_key(b). */
static inline uint32_t tss_key(float f) {
    union { float f; uint32_t u; } c = {f == 0.0f ? 0.0f : f};
    return c.u & 0x80000000u ? ~c.u : c.u | 0x80000000u;
}

/* One document's slot keys: tss_key of the slot value (above), with missing left -> 0
 * (below every threshold's key: -inf's is 0x007fffff) and missing right -> 0xffffffff
 * (above every threshold's key: +inf's is 0xff800000). Slot 0: 0, always left. */
/* Slot s's key of the value x (above). */
static inline uint32_t tss_slot_key(const tss *L, uint32_t s, float x) {
    int miss = x != x || (L->slot_zero[s] && x >= -TSM_ZERO_RANGE && x <= TSM_ZERO_RANGE);
    return miss ? (L->slot_miss[s] != L->slot_miss[s] ? 0xffffffffu : 0u) : tss_key(x);
}

static inline void tss_slot_keys(const tss *L, const float *row, uint32_t *k) {
    k[0] = 0;
    for (uint32_t s = 1; s < L->n_slots; s++) k[s] = tss_slot_key(L, s, row[L->slot_col[s]]);
}

/* tsimd.c "Float first": the key of (feature j, float F) in L->gaps, its hash, and its
 * bit in L->gaps_any. */
static inline uint64_t tss_gap_key(uint32_t j, float f) {
    union { float f; uint32_t u; } c = {f};
    return (uint64_t)(j + 1) << 32 | c.u;
}
static inline uint64_t tss_gap_mix(uint64_t key) { return key * 0x9e3779b97f4a7c15ull; }
static inline uint32_t tss_gap_any_bit(uint64_t key) { return (uint32_t)(tss_gap_mix(key) >> 48); }

/* The gap entry of (feature j, F = d), or NULL. */
static inline const tss_gap *tss_gap_of(const tss *L, uint32_t j, float d) {
    const uint64_t key = tss_gap_key(j, d);
    const uint32_t b = tss_gap_any_bit(key), mask = (1u << L->gaps_bits) - 1;
    if (!(L->gaps_any[b / 64] >> (b % 64) & 1)) return NULL;
    for (uint32_t h = (uint32_t)(tss_gap_mix(key) >> (64 - L->gaps_bits));; h = (h + 1) & mask) {
        if (L->gaps[h].key == key) return &L->gaps[h];
        if (!L->gaps[h].key) return NULL;
    }
}

/* Slot s's float-first key of a double v that is not a float, between the floats d < u
 * around it: *k, and 0 when the double keys must decide (tsimd.c "Float first"). */
static inline int tss_slot_key_up(const tss *L, uint32_t s, double v, float u, float d, uint32_t *k) {
    const tss_gap *g = tss_gap_of(L, L->slot_j[s], d);
    *k = tss_slot_key(L, s, g && v <= g->lo ? d : u);
    return !(u == -TSM_ZERO_RANGE || (g && v > g->lo && v <= g->hi));
}

#endif /* TS_ENGINES_TSIMD_H */
