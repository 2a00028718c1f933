/* oblivious.h: the layout of the oblivious engine (oblivious trees as d byte compares whose results are the leaf index) shared by oblivious.c and its per-ISA kernels. */
#ifndef TS_ENGINES_OBLIVIOUS_H
#define TS_ENGINES_OBLIVIOUS_H

#include <stddef.h>
#include <stdint.h>

#include "engines/coder.h"
#include "engines/common/kernels.h"
#include "engines/engine.h"

/*
 * oblivious: CatBoost's symmetric trees on exact feature codes
 * ------------------------------------------------------------
 * An oblivious tree of depth d tests one (feature, threshold, missing rule) per level:
 * every node of level i is the same node. In the IR's canonical form (leaves numbered
 * left to right) a document's leaf is then the number whose bits, root level first, say
 * where it went right:
 *     leaf = sum over levels i of [x fails level i] << (d - 1 - i)
 * On exact codes (quant.h: the node "x <= t" is "code[slot] <= k") a level is one byte
 * compare of `lanes` documents' codes with k, so a tree is d compares and d shifts/adds of
 * bytes for a whole group (64 documents per AVX-512 register, 32 AVX2, 8 scalar), then
 * one leaf value per document, added in double in tree order (so scores equal naive's).
 *
 * Codes come from the coder (coder.h): the quantizer of the ISA kernels, a group of
 * `lanes` documents at a time, slot s of document l at codes[s * lanes + l], XOR flip;
 * a group of few documents (a single row) codes its lanes with the scalar search instead.
 *
 * Trees that are not oblivious (a Depthwise or Lossguide model, a tree whose levels
 * differ, or deeper than OB_MAX_DEPTH) are kept as nodes on codes and walked lane by lane,
 * in their place in tree order: the engine scores every model exactly, and the planner
 * times it only on models whose trees are all oblivious (oblivious.c).
 *
 * Trees: tree t is levels [first, first + depth) of `levels` (oblivious: depth <= 16) or
 * nodes [first, first + n_nodes) of `nodes` (general: depth = OB_GENERAL); its weighted
 * leaf values (weight * value, the product naive adds) from leaves[leaf] on. A document
 * block of `delta` documents is coded once, then every tree is applied to all its
 * groups before the next tree (a tree's levels and leaf values stay in L1 while the
 * groups read their codes from L2).
 */

#define OB_MAX_DEPTH 16u        /* deeper oblivious trees take the general walk */
#define OB_GENERAL 0xFFFFFFFFu  /* ob_tree.depth of a tree walked node by node */
#define OB_MAX_DELTA 4096u

typedef struct ob_level {
    uint32_t off;   /* the slot's codes in a group: slot * lanes */
    uint32_t k;     /* code > k: the document goes right (bit set); stored XOR the flip */
} ob_level;

typedef struct ob_node {
    uint32_t off, k;        /* as ob_level (k XOR flip) */
    int32_t left, right;    /* the IR's children: >= 0 a node of the tree, < 0 leaf ~c */
} ob_node;

typedef struct ob_tree {
    uint32_t depth;         /* levels, or OB_GENERAL */
    uint32_t first;         /* its first level or node */
    uint32_t leaf;          /* its first value in leaves */
    uint32_t plane;         /* kernels with byte planes, trees of 1 .. 8 levels: its planes from
                               planes + 64 * plane on ("Byte planes" below) */
} ob_tree;

typedef struct obl {
    tsc_coder coder;        /* codes (coder.t) and the ISA quantizer (coder.k) */
    double base_score;
    uint32_t n_trees, lanes, flip;
    uint32_t n_oblivious;   /* trees with depth != OB_GENERAL */
    ob_tree *trees;         /* n_trees + 1: a last one-leaf tree (value 0.0) that is never scored,
                               so that kernels may look at the next tree's */
    ob_level *levels;
    ob_node *nodes;
    double *leaves;         /* padded with 64 zeros: kernels may read a whole register of values */
    uint8_t *planes;        /* byte planes (64-byte aligned), for kernels that ask for them */
} obl;

/*
 * Byte planes (the AVX-512 VBMI kernel): a tree of d = 1 .. 8 levels keeps its weighted leaf
 * values also as 8 planes of P = max(64, 2^d) bytes, plane j holding byte j (little-endian)
 * of every value: 64 documents' values are then 8 byte lookups (vpermb: 64 entries;
 * vpermi2b: 128; two and a blend: 256) whose results, transposed from bytes to 8-byte
 * lanes by unpacks, are the doubles themselves.
 */
static inline size_t ob_plane_bytes(uint32_t depth) { return depth <= 6 ? 64 : (size_t)1 << depth; }

/*
 * A kernel scores n_rows rows, `delta` documents per block (a multiple of its lanes), with
 * scratch of ob_scratch_parts(L, delta).total bytes:
 *   codes  delta * n_slots bytes: group g's codes of slot s at ((g * n_slots + s) * lanes + lane)
 *   acc    delta doubles
 * each on a 64-byte boundary.
 */
typedef void (*ob_kernel)(const obl *L, uint32_t delta, const float *x, size_t n_rows, size_t stride, double *out,
                          void *scratch);

/* The same for double rows of a model that converts its input to float32 (CatBoost):
 * each value converted to the nearest float on its way into the codes (the coder's
 * quantize_near, which the caller checks exists; a few rows by the scalar search on
 * (float)v). */
typedef void (*ob_kernel_f64)(const obl *L, uint32_t delta, const double *x, size_t n_rows, size_t stride,
                              double *out, void *scratch);

typedef struct ob_kernels {
    ts_isa isa;
    uint32_t lanes;         /* must be the coder's quantizer's */
    ob_kernel kernel;
    int planes;             /* reads byte planes (obl.planes) */
    ob_kernel_f64 kernel_near;
} ob_kernels;

typedef struct ob_scratch {
    size_t codes, acc, total;
} ob_scratch;

static inline size_t ob_round64(size_t n) { return (n + 63) & ~(size_t)63; }
static inline ob_scratch ob_scratch_parts(const obl *L, uint32_t delta) {
    ob_scratch s;
    const size_t ns = L->coder.t.q.n_slots ? L->coder.t.q.n_slots : 1;
    s.codes = 0;
    s.acc = ob_round64((size_t)delta * ns);
    s.total = s.acc + ob_round64((size_t)delta * sizeof(double));
    return s;
}

/* Leaf values of deep trees (9 .. 16 levels), lane by lane: the index's high byte from
 * levels [0, d - 8), its low byte from the last 8 (ix_hi, ix_lo: n lanes). */
static inline void ob_add_deep(const double *v, const uint8_t *ix_hi, const uint8_t *ix_lo, size_t n, double *acc) {
    for (size_t l = 0; l < n; l++) acc[l] += v[(size_t)ix_hi[l] << 8 | ix_lo[l]];
}

/* The kernels per ISA (tse_oblivious_scalar, ...) and the rule that picks one,
 * tsk_oblivious: common/kernels.h. */

#endif /* TS_ENGINES_OBLIVIOUS_H */
