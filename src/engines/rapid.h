/* rapid.h: the layout of the rapid engine (exact feature codes, merged nodes, epitomes) shared by rapid.c and its per-ISA kernels. */
#ifndef TS_ENGINES_RAPID_H
#define TS_ENGINES_RAPID_H

#include <stddef.h>
#include <stdint.h>

#include "engines/engine.h"
#include "engines/quant.h"

/*
 * rapid: RapidScorer (Ye et al., KDD 2018) on exact feature codes (quant.h)
 * --------------------------------------------------------------------------
 * QuickScorer's idea (qs_layout.h): a tree's leaves are bits, all set for a new document;
 * every node the document fails (x > t) clears its left subtree's leaves; the exit leaf
 * is the lowest bit left. rapid changes three things:
 *   - codes: a block of documents is quantized once into per-feature codes of 8 (or 16)
 *     bits, so a node is an integer compare "code > k" of 64 (AVX-512), 32 (AVX2) or 8
 *     (scalar) documents at once, a byte each;
 *   - one compare per node for a whole group: a node is false for the documents whose
 *     code is above its k; equal (feature, threshold) nodes have equal k, and the
 *     compare of a register of codes with a broadcast k costs less than loading a
 *     list of merged nodes would save (measured: RapidScorer's node merging, one compare
 *     per distinct (feature, k) then a loop over its trees, was slower on 64- and
 *     256-leaf LightGBM models: the loops' exits mispredict);
 *   - epitomes and byte-transposed leaf vectors: tree t's leaf bitvector for the group of
 *     documents is B bytes per document, stored as B rows of `lanes` bytes (row j holds
 *     byte j of every document), so one register is one byte of the bitvectors of all the
 *     group's documents. A node clears a contiguous run of leaves: its entry is the
 *     first row it touches, that row's AND mask, the number of rows n it touches, and the
 *     last row's AND mask (rows between are cleared whole). Applying an entry to the
 *     documents whose compare failed is one masked AND per row touched.
 * Exit leaves: per document the first non-zero row and its lowest set bit, found with
 * vector selects row by row; the leaf values are gathered and added in double, tree by
 * tree in order, so scores equal naive's bit for bit.
 *
 * Missing values: NaN has code 0 (it fails no "code > k"), and so does every value in
 * LightGBM's zero range on a feature with zero-is-missing nodes (the quantizer forces
 * it); each feature of a block then has a "missing" list (the nodes that send NaN right)
 * and a "zero" list (those that send 0.0 right), applied under the lane mask of the
 * documents with NaN or a zero-range value, exactly as qs does.
 *
 * Lists of a block: each block feature (ascending slot) owns, in rsl.entries, a "short"
 * list (nodes touching one or two rows), a "long" list (three rows or more), both in
 * ascending k and each ended by a sentinel entry of k = RS_SENTINEL_K, then its missing
 * and zero lists. The kernel applies a list while k < the largest code of the group's
 * documents: an entry with k >= every code fails no document, nor does any after it.
 * A short entry is applied without a branch: its first row, then row first + 1 with the
 * last mask (0xFF when n == 1: a no-op on the next row, which exists: the leaf vectors
 * have one spare row at the end).
 */

#define RS_MAX_BYTES 32768u   /* bytes per tree bitvector: 262,144 leaves, as qs */
#define RS_MAX_DELTA 4096u    /* documents per document block */

#define RS_MAX_ROWS 65535u    /* rows of one tree block (tau * bytes): 16-bit row numbers */
#define RS_SENTINEL_K 65535u  /* above every code (codes are at most TSQ_MAX_THRESHOLDS) */
_Static_assert(TSQ_MAX_THRESHOLDS <= RS_SENTINEL_K, "a sentinel's k is never below a code");

typedef struct rs_entry {
    uint16_t row;     /* first row touched, in the block: local tree * bytes + first byte */
    uint16_t k;       /* the node is false where code > k */
    uint8_t first;    /* AND mask of the first row */
    uint8_t last;     /* AND mask of the last row (0xFF when n == 1) */
    uint16_t n;       /* rows touched (>= 1); rows strictly between first and last clear */
} rs_entry;
_Static_assert(sizeof(rs_entry) == 8, "an entry is 8 bytes: the lists stream through L1");

typedef struct rs_feature {
    uint32_t slot;                   /* the feature's slot in the codes (tsq) */
    uint32_t short_begin;            /* its short list, ended by a sentinel */
    uint32_t long_begin;             /* its long list, ended by a sentinel */
    uint32_t miss_begin, miss_end;   /* entries applied to NaN documents */
    uint32_t zero_begin, zero_end;   /* entries applied to zero-range documents (has_zero) */
    uint32_t has_zero;
} rs_feature;

typedef struct rs_block {
    uint32_t first_tree, n_trees;
    uint32_t n_features;
    const rs_feature *features;     /* into rsl.features */
} rs_block;

typedef struct rsl {
    tsq q;                          /* the codes */
    double base_score;
    uint32_t n_trees;
    uint32_t bytes;                 /* B: bytes of one tree bitvector (widest tree / 8) */
    uint32_t tau, n_blocks;
    rs_block *blocks;
    rs_feature *features;
    rs_entry *entries;
    double *leaves;                 /* weight * leaf value, tree t's at leaf_offset[t] */
    uint32_t *leaf_offset;
    uint64_t n_nodes;
} rsl;

/*
 * A kernel scores n_rows rows, `delta` documents per document block (a multiple of its
 * lanes), with `scratch` of rs_scratch_bytes(L, delta, lanes) bytes:
 *   codes  delta * n_used codes (code_bits): group g's codes of slot j at
 *          ((g * n_used + j) * lanes + lane)
 *   maxc   groups * n_used uint32: the largest code of the group's lanes in each slot
 *   nan    groups * n_used uint64: lanes with NaN; zero: lanes in the zero range
 *   acc    delta doubles
 *   bv     (tau * bytes + 1) * lanes bytes: one group's leaf vectors of one tree block,
 *          and a spare row
 * each part on a 64-byte boundary.
 */
typedef void (*rs_kernel)(const rsl *L, uint32_t delta, const float *x, size_t n_rows, size_t stride, double *out,
                          void *scratch);

typedef struct rs_kernels {
    ts_isa isa;
    uint32_t lanes;
    rs_kernel k8, k16;   /* 8-bit and 16-bit codes */
} rs_kernels;

extern const rs_kernels tse_rapid_scalar;
#if defined(__x86_64__) || defined(__i386__)
#define TS_HAVE_RAPID_X86 1
extern const rs_kernels tse_rapid_avx2, tse_rapid_avx512;
#endif

typedef struct rs_scratch {
    size_t codes, maxc, nan, zero, acc, bv, total;
} rs_scratch;

static inline size_t rs_round64(size_t n) { return (n + 63) & ~(size_t)63; }
static inline rs_scratch rs_scratch_parts(const rsl *L, uint32_t delta, uint32_t lanes) {
    rs_scratch s;
    size_t groups = delta / lanes, nu = L->q.n_used ? L->q.n_used : 1;
    s.codes = 0;
    s.maxc = s.codes + rs_round64((size_t)delta * nu * (L->q.code_bits / 8));
    s.nan = s.maxc + rs_round64(groups * nu * sizeof(uint32_t));
    s.zero = s.nan + rs_round64(groups * nu * sizeof(uint64_t));
    s.acc = s.zero + rs_round64(groups * nu * sizeof(uint64_t));
    s.bv = s.acc + rs_round64((size_t)delta * sizeof(double));
    s.total = s.bv + rs_round64(((size_t)L->tau * L->bytes + 1) * lanes); /* + the spare row */
    return s;
}

#endif /* TS_ENGINES_RAPID_H */
