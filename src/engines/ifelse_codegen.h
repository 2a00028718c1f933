/* ifelse_codegen.h: C source generation for the ifelse engine (each tree as nested if/else) and the generated object's interface. */
#ifndef TS_ENGINES_IFELSE_CODEGEN_H
#define TS_ENGINES_IFELSE_CODEGEN_H

#include <stddef.h>
#include <stdint.h>

#include "engines/common/quant.h"
#include "model/forest.h"
#include "treescore.h"

/* Bumped whenever the generated code or its interface changes: part of the cache key and
 * checked in the loaded object. */
#define TSIF_CODEGEN_VERSION 2u
/* "TSIFELSE" as a little-endian word: the first field of tsif_info. */
#define TSIF_MAGIC 0x45534c4546495354ull

/*
 * The generated shared object
 * ---------------------------
 * The trees are cut into parts of consecutive trees of about TSIF_PART_NODES nodes
 * (internal nodes + leaves). Each part is one function
 *
 *     void tsif_part_K(const unsigned char *c, size_t n, size_t stride, double *acc);
 *
 * that, for every row r < n (its codes at c + r*stride, quant.h), adds the weighted leaf value of each
 * of its trees in tree order to acc[r], in double. Calling the parts in order after
 * acc[r] = base_score therefore adds every tree in tree order: the exact score. A part's
 * code (some 15 bytes a node) stays in the L1 instruction cache while its loop runs over
 * the batch. Measured on 1,000 trees x 64 leaves (gcc -O1, 1 thread): 16 trees a part
 * 13.5 us/doc, 4 trees 14.2, 64 trees 16.8, one function for 143 trees 19.4.
 *
 * A tree bigger than TSIF_PART_NODES, or deeper than TSIF_NEST_MAX, is cut: subtrees
 * become functions `double tsif_s<tree>_<node>(const unsigned char *c)` that return the
 * leaf value, called where the subtree was (`a += tsif_s3_17(c);`, the same double
 * addition).
 * So no function is bigger than TSIF_PART_NODES nodes or nests deeper than TSIF_NEST_MAX,
 * and compile time and memory stay linear in the model.
 *
 * Parts and subtree functions ("units") are written in order into C files of a bounded
 * number of nodes, compiled in parallel; a last file holds the table of parts and the
 * one exported symbol, `tsif_info` (struct tsif_info below), checked after dlopen: a
 * stale or foreign object (other magic, version or key) is rejected.
 *
 * Each split reads the row's exact codes (quant.h, made by the ISA quantizer for the
 * CPU: coder.h tsc_code_rows) and becomes `c[slot] <= k`, one byte compare with an
 * immediate, exactly tsm_node_goes_left with NaN and the zero range folded into the
 * codes; leaf values are hex double literals of weight * leaf, the product naive uses.
 * Measured against the float tests of version 1 (`x <= T`, with a NaN test for most
 * nodes): the traversal 0.60-0.71x on msn's 1,000-tree models (docs/benchmarks.md).
 */
typedef void (*tsif_part_fn)(const unsigned char *c, size_t n, size_t stride, double *acc);

typedef struct tsif_info {
    uint64_t magic;          /* TSIF_MAGIC */
    uint64_t version;        /* TSIF_CODEGEN_VERSION */
    uint64_t key[2];         /* the cache key the object was generated for */
    uint64_t n_parts;
    uint64_t n_trees;
    const tsif_part_fn *parts; /* n_parts functions, in tree order */
} tsif_info;

#define TSIF_PART_NODES 2048u
#define TSIF_NEST_MAX 256u

/* A function to generate: a part (node < 0: trees tree .. end-1) or the subtree of
 * `tree` rooted at internal node `node`. */
typedef struct tsif_unit {
    uint32_t tree, end;
    int32_t node;
    uint32_t part;           /* a part's index */
    uint64_t nodes;          /* nodes written in this function (a cut subtree counts 1) */
} tsif_unit;

typedef struct tsif_plan {
    uint32_t n_parts;
    uint32_t n_units;
    tsif_unit *units;        /* in file order: each part followed by its trees' subtrees */
    uint32_t n_files;
    uint32_t *file_first;    /* units of file f: file_first[f] .. file_first[f+1]-1 */
    uint8_t **cuts;          /* per tree: NULL (no cut) or n_nodes flags, 1 = subtree function */
    uint64_t n_nodes;        /* all units' nodes */
    uint32_t n_trees_;       /* entries of cuts */
    const tsq *q;            /* the codes the splits read: set by the caller before writing */
} tsif_plan;

/* Plan the functions and the files (about file_nodes nodes each; at least one unit)
 * for m. A model without trees has no parts and no files. */
ts_status tsif_plan_make(const ts_model *m, uint64_t file_nodes, tsif_plan *out, ts_error *err);
void tsif_plan_free(tsif_plan *p);

/* Write C file `file` of the plan to path. Adds the bytes written to *bytes. TS_ERR_IO
 * (naming the path) when the file cannot be written. */
ts_status tsif_write_file(const char *path, const ts_model *m, const tsif_plan *p, uint32_t file, uint64_t *bytes,
                          ts_error *err);

/* Write the file with the table of parts and tsif_info (n_trees trees, `key`). */
ts_status tsif_write_main(const char *path, const tsif_plan *p, uint32_t n_trees, const uint64_t key[2],
                          uint64_t *bytes, ts_error *err);

/* The exact hexadecimal C literal of a double (no locale dependence, "0x1.8p+3",
 * "-0x0p+0", subnormals as "0x0.0...p-1022"); v must be finite. out has >= 32 bytes. */
void tsif_hex_double(double v, char *out);

#endif /* TS_ENGINES_IFELSE_CODEGEN_H */
