/* deep.h: the top levels of the deep engine's trees, decided for 64 documents at once by the per-ISA kernels (deep.c, x86/deep_avx512.c). */
#ifndef TS_ENGINES_DEEP_H
#define TS_ENGINES_DEEP_H

#include <stddef.h>
#include <stdint.h>

#include "treescore.h"

/*
 * A tree's top K levels (deep.c "Top levels") as a complete binary tree in heap order:
 * node h (0 .. 2^K - 2) has the children 2h + 1 and 2h + 2; a document goes right at h
 * iff its key in h's column is above thr[h]. Where a leaf is met above level K the
 * nodes below it are padding that always goes left (thr = UINT32_MAX, which no key
 * exceeds). A document's exit is the number e (0 .. 2^K - 1) of the node it reaches at
 * level K (heap node 2^K - 1 + e), whose bits, root level first, say where it went right.
 *
 * The kernel: for the 64 documents of a group, their keys column by column
 * (ck[c * 64 + j]: the key of column copy c of document j), the K levels of one tree
 * (col[h]: c * 64, the offset of node h's column in ck), writes exits[j] for j < 64;
 * and where starts is not NULL (K <= 5 only, ex then 16 readable entries for K < 5),
 * starts[j] = ex[exits[j]] (the tree's exit slots) for j < 64.
 */
#define DEEP_TOP_MAX 8u  /* most levels: 255 nodes, 256 exits */
#define DEEP_GROUP 64u   /* documents of a kernel call */
#define DEEP_WALK_MAX_DOCS 4096u /* documents of a walk (its leaf list packs them in 12 bits) */

/*
 * The walk (x86/deep_avx512.c, "The gathered walk"): documents docs[0 .. n) (docs NULL:
 * 0 .. n - 1; n at most DEEP_WALK_MAX_DOCS), their keys at keys + d * n_cols (n * n_cols
 * below 2^31), each from its slot starts[i]
 * (starts NULL: the root, slot 0) down tree sl (8-byte slots if narrow, else 16: deep.c
 * "Slots"; its root internal) to its leaf, whose value it adds to out[d]. ldoc and lslot
 * hold n + 16 entries each (the kernel's leaf list). Each pass of its loop prefetches
 * pf_lines cache lines from pf on, up to pf_end (the next tree).
 */
typedef struct deep_kernels {
    ts_isa isa;
    void (*top)(const uint32_t *ck, const uint32_t *col, const uint32_t *thr, uint32_t k, uint8_t *exits,
                const uint32_t *ex, uint32_t *starts);
    void (*walk)(const uint64_t *sl, int narrow, const uint32_t *keys, uint32_t n_cols, size_t n,
                 const uint32_t *docs, const uint32_t *starts, double *out, uint32_t *ldoc, uint32_t *lslot,
                 const char *pf, const char *pf_end, uint32_t pf_lines);
} deep_kernels;

#endif /* TS_ENGINES_DEEP_H */
