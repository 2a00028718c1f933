/* rapid.h: the layout of the rapid engine (exact feature codes, byte-transposed leaf vectors built row by row in registers) shared by rapid.c and its per-ISA kernels. */
#ifndef TS_ENGINES_RAPID_H
#define TS_ENGINES_RAPID_H

#include <stddef.h>
#include <stdint.h>

#include "engines/engine.h"
#include "engines/common/kernels.h"
#include "engines/common/quant.h"

/*
 * rapid: RapidScorer's data layout (Ye et al., KDD 2018) on exact feature codes
 * -----------------------------------------------------------------------------
 * QuickScorer's idea (qs_layout.h): a tree's leaves are bits, all set for a new document;
 * every node the document fails (x > t) clears its left subtree's leaves; the exit leaf
 * is the lowest bit left. rapid keeps that, with RapidScorer's layout:
 *   - codes: a block of documents is quantized once into 8-bit codes per slot (quant.h:
 *     a feature seen through a node's missing-value rule and threshold segment), so that every node
 *     is exactly the integer compare "code > k", for 64 (AVX-512BW), 32 (AVX2) or 8
 *     (scalar) documents at once, a byte each, with no separate missing-value pass;
 *   - byte-transposed leaf vectors: tree t's leaf bitvector for a group of documents is
 *     B = ceil(leaves / 8) bytes per document, as B rows of `lanes` bytes (row j holds
 *     byte j of every document's bitvector), so one register is one byte of the
 *     bitvectors of all the group's documents;
 *   - epitomes: a node clears a contiguous run of leaves, so it touches only the rows
 *     from its first byte to its last (bytes between are cleared whole).
 * Where RapidScorer applies the nodes feature by feature to leaf vectors in memory (each
 * a load, AND, store of a row, and rows rewritten by many nodes form chains through
 * memory), rapid builds each row in a register: the row's entries are the nodes that
 * touch it, each with that row's AND mask, and
 *     row = 0xFF..; for each entry: row &= (code[slot] > k) ? mask : 0xFF
 * Rows are built in order and the exit leaf of a lane is in its first non-zero row, so a
 * tree stops as soon as every lane of the group has met one: rows past the last exit
 * row of the group are never computed. The exit leaf is 8 * row + the lowest set bit of
 * that byte; the leaf values are gathered and added in double, tree by tree in order,
 * so scores equal naive's bit for bit. Measured on 64- and 256-leaf LightGBM models:
 * 2-2.6x faster than the in-memory RapidScorer (docs/benchmarks.md). RapidScorer's node
 * merging (one compare per distinct (feature, k) of a tree block) does not fit rows built
 * one at a time; a compare costs one instruction there.
 *
 * Entries: the model's rows are numbered tree by tree (tree t's rows are
 * [tree_row[t], tree_row[t + 1])), and row r's entries are
 * [row_first[r], row_first[r + 1]) in rsl.entries, in node order.
 *
 * Skips: in trees of at most 32 rows (256 leaves), a node whose left leaves [a, b) run
 * over more than one row has a single entry, a skip entry in its first row ra (row r's
 * are [skip_first[r], skip_first[r + 1]) in rsl.skips): it ANDs its mask into row ra as
 * any entry, and where a lane fails it raises the lane's skip (a byte per lane, 0 at the
 * start of each tree) to z = b. A row j then starts with 0 in the bits of leaves below
 * the lane's skip and 0xFF in the others, instead of 0xFF: exactly what the node's
 * entries in rows ra + 1 .. would have cleared (leaves 8 (ra + 1) .. b - 1), since every
 * leaf of those rows below b is a leaf of the node's left subtree. The skip is the
 * largest z of the nodes that failed, so a lane's leaves below it are the union of
 * their cleared leaves in the rows after theirs; a node first met in row j raises it only
 * after row j has started, so it clears nothing of row j but through its mask. b <= 255
 * (the last leaf is in no left subtree), so z fits a byte. Every node is then one
 * entry: on msn-lgb-1000x256, 255 entries per tree instead of 346.
 *
 * Tree blocks: trees in blocks of tau, all groups of a document block scored one tree
 * block at a time, so the block's entries stay in L2 while every group reads them.
 *
 * Leaf order: a group's tree stops at the row where its last lane meets its exit leaf,
 * so the leaves its documents reach most should come first. Given rows of the caller's
 * data (tse_config.sample: the CLI's and Python's scorers have them), each tree is
 * reordered before it is laid out: a node's children swap where the second subtree's
 * leaves are reached more often per leaf than the first's (counted over up to
 * RS_ORDER_ROWS sample rows: 64 already order as well), then the leaves are numbered
 * left to right again and their values move with them. A swapped node clears its new
 * first child (its old right subtree) where the document goes left, code <= k: it reads
 * a complement slot (255 - code, XOR 0xFF of the slot's codes, written after the
 * quantizer: rs_complement) with k' = 254 - k, so that the kernels' compare "code > k"
 * stays the only one (255 - code > 254 - k is code <= k; missing values keep their
 * side, as their codes complement too). Every order gives the same exit leaf, so the
 * same bits. A tree keeps its order unless the new one saves a group of 64 documents a
 * quarter of a row or more (expected from the sample's exit rows), and a model keeps
 * all of its trees' unless its rows average RS_PAD_MEAN plain entries or more (LightGBM's
 * and scikit-learn's leaf-wise trees; msn-xgb-1000x64's, 4.8 entries and 3.1 skip
 * entries a row, measured 1.0-1.15x slower ordered although its groups built 21% fewer
 * rows: not understood). Intel Emerald Rapids, libs_ab, the models' test rows, 256
 * sample rows: msn-lgb-1000x64 1.19-1.20x at 16 rows (5.3 -> 3.4 rows a tree), 1.05-1.09x
 * at 1,000; msn-sgb-500x64 1.26x and 1.12x; msn-lgb-1000x256 1.07x and 1.03x; the dev
 * model 1.03-1.07x at 16 rows. The LightGBM models' training counts (leaf_count)
 * ordered no better than the file's order there: their leaves' counts barely correlate
 * with the test rows'. docs/benchmarks.md "Twenty-seventh session".
 */

#define RS_MAX_BYTES 32768u   /* bytes per tree bitvector: 262,144 leaves, as qs */
#define RS_MAX_DELTA 4096u    /* documents per document block */

typedef struct rs_entry {
    uint32_t off;     /* the codes read: the slot's byte offset in a group's codes
                         (slot * lanes, for the kernel's lanes) */
    uint32_t k4;      /* k + 1 (k within the slot's segment) in every byte: a document
                         passes the node where code < k + 1; XOR 0x80 for AVX2's signed
                         compare (rsl.flip); one 32-bit broadcast loads it */
    uint32_t m4;      /* the row's AND mask in every byte */
} rs_entry;

typedef struct rs_skip {
    rs_entry e;       /* as any entry of its row */
    uint32_t z4;      /* z (the node's left leaves end, "Skips" above) in every byte */
} rs_skip;

/* Most rows of a tree with skip entries (z fits a byte; the kernels' trees of at most
 * 256 leaves, whose rows are built in registers). */
#define RS_SKIP_ROWS 32u

typedef struct rs_block {
    uint32_t first_tree, n_trees;
} rs_block;

/*
 * Pairs (a kernel with pair_lanes = RS_PAIR_LANES: AVX2, AVX-512): a call of at most 16
 * rows fills a quarter or half of a group's register, and a row entry costs the same for
 * 16 lanes as for all. The pair layout puts two trees in one 32-byte register instead,
 * byte 2i tree A's document i and byte 2i + 1 tree B's (the same documents). The call's
 * codes are copied once into the pair codes (rs_scratch.pcodes): slot s at 64 s, its
 * "even copy" (byte 2i document i's code, byte 2i + 1 zero) then its "odd copy" (the
 * other way round), each code XOR 0x80 so that a signed byte compare decides (whatever
 * the kernel's flip). A pair entry ORs A's even copy with B's odd copy, and compares it
 * with its k word broadcast (A's k + 1 XOR 0x80 in the even bytes, B's in the odd ones),
 * then ANDs its m word (A's mask, B's mask) into the lanes that fail: three or four
 * instructions where the 16 lanes of one tree took two or three (rapid_avx2.c,
 * rapid_avx512.c "Pairs"). Pair row j zips row j of A with row j of B, entry by entry,
 * the shorter padded with no-op entries (mask 0xFF, the other tree's offset: codes that
 * are always written); a tree of fewer rows than its partner has met its exit leaf before
 * its rows end, so the rows past them change nothing of it. Skips pair the same way (a
 * no-op skip: mask 0xFF, z 0). The exit rows, leaf indices and skips are per byte lane,
 * as for one tree; the leaf values are added A's then B's, so every score keeps its order
 * of additions. Pairs are formed inside each tree block, trees 2i and 2i + 1 of it; a
 * block's odd last tree, and a pair with a tree of more than RS_SKIP_ROWS rows, stays a
 * "single" (n_rows 0: the one-tree path, on the kernel's own codes).
 */
#define RS_PAIR_LANES 16u
#define RS_PAIR_SLOT 64u  /* bytes of a slot's pair codes */

typedef struct rs_pair {
    uint32_t off[2];  /* A's even copy (RS_PAIR_SLOT * its slot) and B's odd copy (+ 32) */
    uint32_t k;       /* bytes: A's k + 1, B's k + 1, A's, B's (each XOR 0x80) */
    uint32_t m;       /* bytes: A's mask, B's mask, A's, B's */
} rs_pair;

typedef struct rs_pair_skip {
    rs_pair e;
    uint32_t z;       /* bytes: A's z, B's z, A's, B's */
} rs_pair_skip;

typedef struct rs_ptree {
    uint32_t tree, n_trees;  /* the first tree and 1 or 2 */
    uint32_t row, n_rows;    /* the first pair row and the count; 0: single trees */
} rs_ptree;

typedef struct rs_pairs {
    uint32_t *block_first;   /* n_blocks + 1: block b's ptrees */
    rs_ptree *trees;
    uint32_t *row_first;     /* pair rows + 1, into entries */
    uint32_t *skip_first;    /* pair rows + 1, into skips */
    rs_pair *entries;
    rs_pair_skip *skips;
    uint32_t padded;         /* 1: the rows padded ("Padded rows") */
} rs_pairs;

/* Padded rows: each pair row's entries run in a loop whose count changes from row to row
 * (LightGBM's leaf-wise trees: 4 to 8 entries and 0 to 9 skips), and on models of 1,000
 * trees and more the branch predictor no longer learns the counts: a mispredicted loop
 * end or two per row. Where every row has at most RS_PAD_ENTRIES entries and the
 * rows RS_PAD_MEAN or more on average, each row gets exactly RS_PAD_ENTRIES
 * (unrolled, no loop) and at least RS_PAD_SKIPS skips (unrolled, then a loop for the
 * rest), padded with no-ops (mask 0xFF, z 0; slot 0's codes). Intel Emerald Rapids,
 * libs_ab, 16 rows: msn-lgb-1000x64 1.13-1.18x faster, msn-lgb-1000x256 1.37x; the dev
 * model (500 trees: predicted already) within noise; XGBoost's depth-wise trees (rows of
 * 5.3 entries on average) are left unpadded (padded: 4-13% slower). */
#define RS_PAD_ENTRIES 8u
#define RS_PAD_SKIPS 3u
#define RS_PAD_MEAN 6u

/* The one-tree rows padded the same way (a copy of entries and skips), for calls of one
 * group of documents (block1: 1-64 rows where the pairs do not take them, a call's last
 * group, a pair block's single trees), where a loop end costs as much as the row's
 * entries: msn-lgb-1000x64, 32 rows 1.08x, 64 rows 1.13x (eight groups at once share each
 * entry, and padded they measured 1.33x slower at 1,000 rows: they keep the loops). Row r
 * of a tree of at most RS_SKIP_ROWS rows has its entries at entries + RS_PAD_ENTRIES r,
 * its skips [skip_first[r], skip_first[r + 1]); wider trees' rows are empty (the kernels'
 * wide path reads the unpadded layout). */
typedef struct rs_padded {
    rs_entry *entries;       /* RS_PAD_ENTRIES per row; NULL: not padded */
    rs_skip *skips;
    uint32_t *skip_first;    /* rows + 1 */
} rs_padded;

typedef struct rsl {
    tsq_tables tables;              /* the codes, and the flip (0 or 0x80) that codes and
                                       k are stored XOR */
    double base_score;
    uint32_t n_trees;
    uint32_t max_bytes;             /* B of the widest tree */
    uint32_t lanes;                 /* the kernel's lanes (entries' offsets are for them) */
    uint32_t tau, n_blocks;
    rs_block *blocks;
    uint32_t *tree_row;             /* n_trees + 1 */
    uint32_t *row_first;            /* rows + 1 */
    rs_entry *entries;
    uint32_t *skip_first;           /* rows + 1 */
    rs_skip *skips;
    double *leaves;                 /* weight * leaf value, tree t's at leaf_offset[t] */
    uint32_t *leaf_offset;
    float *leaves_f;                /* the same values as floats, where every one is a
                                       float exactly and no tree has more than 64 leaves
                                       (XGBoost's leaves are floats, ONNX's weights):
                                       "Float leaves"; else NULL */
    uint64_t n_nodes, n_entries, n_skips;
    rs_pairs pairs;                 /* "Pairs": built for a kernel with pair_lanes, else
                                       all NULL */
    rs_padded pad;                  /* the one-tree rows padded (rs_padded), or all NULL */
    uint32_t n_comp;                /* complement slots ("Leaf order"): a group's codes hold
                                       q.n_slots + n_comp slots, slot q.n_slots + i the
                                       codes of slot comp[i] XOR 0xFF */
    uint32_t *comp;
    uint32_t order_rows;            /* the sample rows the leaves were ordered by (0: the
                                       model's order) */
    uint64_t n_flipped;             /* nodes whose children the order swapped */
} rsl;

/* Slots of a group's codes: the quantizer's and the complements ("Leaf order"). */
static inline size_t rs_code_slots(const rsl *L) {
    const size_t n = (size_t)L->tables.q.n_slots + L->n_comp;
    return n ? n : 1;
}

/* The complement slots of one group's codes (`lanes` bytes a slot), from its quantized ones. */
static inline void rs_complement(const rsl *L, uint8_t *codes, size_t lanes) {
    const size_t ns = L->tables.q.n_slots;
    for (uint32_t i = 0; i < L->n_comp; i++) {
        const uint8_t *src = codes + (size_t)L->comp[i] * lanes;
        uint8_t *dst = codes + (ns + i) * lanes;
        for (size_t l = 0; l < lanes; l++) dst[l] = (uint8_t)~src[l];
    }
}

/*
 * A kernel scores n_rows rows, `delta` documents per document block (a multiple of its
 * lanes), with `scratch` of rs_scratch_parts(L, delta, lanes).total bytes:
 *   codes  delta * n_slots codes of a byte: group g's codes of slot s at
 *          ((g * n_slots + s) * lanes + lane)
 *   acc    delta doubles
 *   rows   max_bytes * lanes bytes: the rows of a tree wider than 256 leaves
 *   pcodes n_slots * RS_PAIR_SLOT bytes where the pair layout exists: the pair codes ("Pairs")
 * each part on a 64-byte boundary.
 */
typedef void (*rs_kernel)(const rsl *L, uint32_t delta, const float *x, size_t n_rows, size_t stride, double *out,
                          void *scratch);

/* The same for double rows, under double codes (L->tables.q.doubles: quant.h "Double codes"):
 * each code computed from the double value against the double thresholds, so the
 * rows, entries and everything after the codes are the float kernel's. */
typedef void (*rs_kernel_f64)(const rsl *L, uint32_t delta, const double *x, size_t n_rows, size_t stride,
                              double *out, void *scratch);

typedef struct rs_kernels {
    ts_isa isa;
    uint32_t lanes;
    int flip;            /* codes and k stored XOR 0x80 (signed compares) */
    rs_kernel kernel;
    tsq_quantizer quantize;  /* also the coder's (coder.h, through tsq_quantizer_for) */
    rs_kernel_f64 kernel_f64;
    uint32_t pair_lanes; /* RS_PAIR_LANES: calls of at most this many rows take the pair
                            layout ("Pairs"); 0: none */
    rs_kernel_f64 kernel_near; /* double rows of a model that converts its input to float32
                                  first (!ts_model.compares_double: float codes), each
                                  value converted to the nearest float on its way into the
                                  codes (the rows are not copied); NULL: none (the scorer
                                  converts the rows into a buffer first) */
    tsq_quantizer_f64 quantize_near; /* its quantizer (quant.h), also the coder's */
} rs_kernels;

/* The kernels per ISA (tse_rapid_scalar, tse_rapid_avx2, ...) and the rule that picks
 * one, tsk_rapid: common/kernels.h. rs_kernels_for: tsk_rapid with rapid.c's choice of
 * the GFNI kernel at AVX-512 (rs_use_gfni). */
const rs_kernels *rs_kernels_for(ts_isa isa);

typedef struct rs_scratch {
    size_t codes, acc, rows, pcodes, total;
} rs_scratch;

static inline size_t rs_round64(size_t n) { return (n + 63) & ~(size_t)63; }
static inline rs_scratch rs_scratch_parts(const rsl *L, uint32_t delta, uint32_t lanes) {
    rs_scratch s;
    size_t ns = rs_code_slots(L);
    s.codes = 0;
    s.acc = s.codes + rs_round64((size_t)delta * ns);
    s.rows = s.acc + rs_round64((size_t)delta * sizeof(double));
    s.pcodes = s.rows + rs_round64((size_t)L->max_bytes * lanes);
    s.total = s.pcodes + (L->pairs.trees ? (size_t)ns * RS_PAIR_SLOT : 0);
    return s;
}

#endif /* TS_ENGINES_RAPID_H */
