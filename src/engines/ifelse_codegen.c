/* ifelse_codegen.c: writes the C source of the ifelse engine: parts of consecutive trees as nested if/else, subtree functions for big trees, the exported table. */
#include "engines/ifelse_codegen.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

/* ---- Literals ----------------------------------------------------------------------- */

void tsif_hex_double(double v, char *out) {
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    int exp_bits = (int)((b >> 52) & 0x7ff);
    uint64_t frac = b & ((1ull << 52) - 1);
    char *p = out;
    if (b >> 63) *p++ = '-';
    if (exp_bits == 0 && frac == 0) {
        strcpy(p, "0x0p+0");
        return;
    }
    /* normal: 1.frac * 2^(e-1023); subnormal: 0.frac * 2^-1022 */
    p += sprintf(p, "0x%d", exp_bits ? 1 : 0);
    if (frac) {
        *p++ = '.';
        for (int shift = 48; shift >= 0 && frac; shift -= 4) {
            *p++ = "0123456789abcdef"[(frac >> shift) & 0xf];
            frac &= (1ull << shift) - 1;
        }
    }
    sprintf(p, "p%+d", exp_bits ? exp_bits - 1023 : -1022);
}

/* A double constant: a hex literal, or the exact bits of an infinity or NaN. */
static void double_literal(double v, char *out) {
    if (isfinite(v)) {
        tsif_hex_double(v, out);
        return;
    }
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    sprintf(out, "((const union tsif_du){0x%016llxull}).d", (unsigned long long)b);
}

/* The test "x goes left" of a node on the row's codes c (quant.h): exactly
 * tsm_node_goes_left, NaN and LightGBM's zero range included, as one unsigned byte
 * compare with an immediate. */
static void left_test(const tsq *q, const tsm_node *n, char *out, size_t size) {
    uint32_t k, slot = tsq_node_slot(q, n, &k);
    snprintf(out, size, "c[%u] <= %u", slot, k);
}

/* ---- Plan: parts, subtree functions, files ---------------------------------------------- */

/* Mark the subtrees of tr that become functions of their own, so that every function has
 * at most TSIF_PART_NODES nodes and nests at most TSIF_NEST_MAX deep (a cut child counts
 * as one node of depth 0). Nodes are in preorder, so children come after their parent:
 * one backward sweep sees every child before its parent. rs[i] = nodes left in node i's
 * function below and including i. Returns the flags (NULL when nothing is cut). */
static ts_status cut_tree(const tsm_tree *tr, uint8_t **cuts_out, uint32_t **rs_out, ts_error *err) {
    *cuts_out = NULL;
    *rs_out = NULL;
    if ((uint64_t)tr->n_nodes + tr->n_leaves <= TSIF_PART_NODES && tr->depth <= TSIF_NEST_MAX) return TS_OK;
    uint8_t *cut = calloc(tr->n_nodes, 1);
    uint32_t *rs = malloc(tr->n_nodes * sizeof *rs), *rh = malloc(tr->n_nodes * sizeof *rh);
    if (!cut || !rs || !rh) {
        free(cut);
        free(rs);
        free(rh);
        return ts_fail(err, TS_ERR_NO_MEMORY, "ifelse: out of memory planning code");
    }
    for (uint32_t i = tr->n_nodes; i-- > 0;) {
        int32_t c[2] = {tr->nodes[i].left, tr->nodes[i].right};
        for (;;) {
            uint32_t s[2], h[2];
            for (int k = 0; k < 2; k++) {
                int kept = c[k] >= 0 && !cut[c[k]];
                s[k] = kept ? rs[c[k]] : 1;
                h[k] = kept ? rh[c[k]] : 0;
            }
            rs[i] = 1 + s[0] + s[1];
            rh[i] = 1 + (h[0] > h[1] ? h[0] : h[1]);
            if (rs[i] <= TSIF_PART_NODES && rh[i] <= TSIF_NEST_MAX) break;
            /* cut the child that weighs most (both are internal and uncut when needed) */
            int k = rs[i] > TSIF_PART_NODES ? (s[1] > s[0]) : (h[1] > h[0]);
            cut[c[k]] = 1;
        }
    }
    free(rh);
    *cuts_out = cut;
    *rs_out = rs;
    return TS_OK;
}

static ts_status add_unit(tsif_plan *p, uint32_t *cap, tsif_unit u, ts_error *err) {
    if (p->n_units == *cap) {
        uint32_t n = *cap ? 2 * *cap : 64;
        tsif_unit *grown = realloc(p->units, n * sizeof *grown);
        if (!grown) return ts_fail(err, TS_ERR_NO_MEMORY, "ifelse: out of memory planning code");
        p->units = grown;
        *cap = n;
    }
    p->units[p->n_units++] = u;
    p->n_nodes += u.nodes;
    return TS_OK;
}

/* Parts of consecutive uncut trees up to TSIF_PART_NODES; a cut tree is a part alone,
 * followed by its subtree functions in preorder. */
static ts_status plan_units(const ts_model *m, tsif_plan *p, ts_error *err) {
    uint32_t cap = 0;
    tsif_unit open = {0, 0, -1, 0, 0};
    for (uint32_t t = 0; t < m->n_trees; t++) {
        const tsm_tree *tr = &m->trees[t];
        uint32_t *rs = NULL;
        TS_TRY(cut_tree(tr, &p->cuts[t], &rs, err));
        uint64_t size = rs ? rs[0] : (uint64_t)tr->n_nodes + tr->n_leaves;
        ts_status st = TS_OK;
        if (open.end > open.tree && (rs || open.nodes + size > TSIF_PART_NODES)) {
            open.part = p->n_parts++;
            st = add_unit(p, &cap, open, err);
            open = (tsif_unit){t, t, -1, 0, 0};
        }
        if (open.end == open.tree) open.tree = t;
        open.end = t + 1;
        open.nodes += size;
        if (rs && st == TS_OK) {
            open.part = p->n_parts++;
            st = add_unit(p, &cap, open, err);
            open = (tsif_unit){t + 1, t + 1, -1, 0, 0};
            for (uint32_t i = 1; i < tr->n_nodes && st == TS_OK; i++)
                if (p->cuts[t][i]) st = add_unit(p, &cap, (tsif_unit){t, t + 1, (int32_t)i, 0, rs[i]}, err);
        }
        free(rs);
        if (st != TS_OK) return st;
    }
    if (open.end > open.tree) {
        open.part = p->n_parts++;
        TS_TRY(add_unit(p, &cap, open, err));
    }
    return TS_OK;
}

static ts_status plan_files(tsif_plan *p, uint64_t file_nodes, ts_error *err) {
    p->file_first = malloc(((size_t)p->n_units + 1) * sizeof *p->file_first);
    if (!p->file_first) return ts_fail(err, TS_ERR_NO_MEMORY, "ifelse: out of memory planning code");
    uint64_t in_file = 0;
    for (uint32_t u = 0; u < p->n_units; u++) {
        if (p->n_files == 0 || (in_file > 0 && in_file + p->units[u].nodes > file_nodes)) {
            p->file_first[p->n_files++] = u;
            in_file = 0;
        }
        in_file += p->units[u].nodes;
    }
    p->file_first[p->n_files] = p->n_units;
    return TS_OK;
}

ts_status tsif_plan_make(const ts_model *m, uint64_t file_nodes, tsif_plan *out, ts_error *err) {
    memset(out, 0, sizeof *out);
    out->cuts = calloc((size_t)m->n_trees + 1, sizeof *out->cuts);
    if (!out->cuts) return ts_fail(err, TS_ERR_NO_MEMORY, "ifelse: out of memory planning code");
    out->n_trees_ = m->n_trees;
    ts_status st = plan_units(m, out, err);
    if (st == TS_OK) st = plan_files(out, file_nodes, err);
    if (st != TS_OK) tsif_plan_free(out);
    return st;
}

void tsif_plan_free(tsif_plan *p) {
    if (p->cuts)
        for (uint32_t t = 0; t < p->n_trees_; t++) free(p->cuts[t]);
    free(p->cuts);
    free(p->units);
    free(p->file_first);
    memset(p, 0, sizeof *p);
}

/* ---- Functions -------------------------------------------------------------------------- */

static void indent(FILE *f, uint32_t depth) {
    static const char spaces[] = "                                        ";
    fwrite(spaces, 1, 6 + 2 * (depth < 16 ? depth : 16), f);
}

/* What a leaf or a cut subtree does: add to a (in a part) or return (in a subtree
 * function). */
static void emit_exit(FILE *f, const tsm_tree *tr, uint32_t t, int32_t ref, int ret, uint32_t depth) {
    indent(f, depth);
    if (ref < 0) {
        char v[64];
        double_literal(tr->weight * tr->leaf_values[~ref], v);
        fprintf(f, ret ? "return %s;\n" : "a += %s;\n", v);
    } else if (ret) {
        fprintf(f, "{ TSIF_HIDDEN double tsif_s%u_%d(const unsigned char *); return tsif_s%u_%d(c); }\n", t, ref, t,
                ref);
    } else {
        fprintf(f, "{ TSIF_HIDDEN double tsif_s%u_%d(const unsigned char *); a += tsif_s%u_%d(c); }\n", t, ref, t,
                ref);
    }
}

enum { ITEM_REF, ITEM_ELSE, ITEM_CLOSE };
typedef struct item {
    int32_t kind, ref;
    uint32_t depth;
} item;

/* The subtree at root (a child reference) as nested blocks `if (test) { left } else
 * { right }`, down to leaves and cut subtrees; an explicit stack of at most 3 entries a
 * level (the nesting is at most TSIF_NEST_MAX). */
static ts_status emit_subtree(FILE *f, const tsq *q, const tsm_tree *tr, uint32_t t, int32_t root,
                              const uint8_t *cuts, int ret, ts_error *err) {
    uint32_t depth = tr->depth < TSIF_NEST_MAX ? tr->depth : TSIF_NEST_MAX;
    item *stack = malloc(3 * ((size_t)depth + 2) * sizeof *stack);
    if (!stack) return ts_fail(err, TS_ERR_NO_MEMORY, "ifelse: out of memory generating code");
    size_t top = 0;
    char test[256];
    stack[top++] = (item){ITEM_REF, root, 0};
    while (top) {
        item it = stack[--top];
        if (it.kind != ITEM_REF) {
            indent(f, it.depth);
            fputs(it.kind == ITEM_ELSE ? "} else {\n" : "}\n", f);
        } else if (it.ref < 0 || (it.ref != root && cuts && cuts[it.ref])) {
            emit_exit(f, tr, t, it.ref, ret, it.depth);
        } else {
            const tsm_node *n = &tr->nodes[it.ref];
            left_test(q, n, test, sizeof test);
            indent(f, it.depth);
            fprintf(f, "if (%s) {\n", test);
            stack[top++] = (item){ITEM_CLOSE, 0, it.depth};
            stack[top++] = (item){ITEM_REF, n->right, it.depth + 1};
            stack[top++] = (item){ITEM_ELSE, 0, it.depth};
            stack[top++] = (item){ITEM_REF, n->left, it.depth + 1};
        }
    }
    free(stack);
    return TS_OK;
}

static ts_status emit_part(FILE *f, const ts_model *m, const tsif_plan *p, const tsif_unit *u, ts_error *err) {
    fprintf(f, "TSIF_HIDDEN void tsif_part_%u(const unsigned char *cs, size_t n, size_t stride, double *acc);\n",
            u->part);
    fprintf(f, "void tsif_part_%u(const unsigned char *cs, size_t n, size_t stride, double *acc) {\n", u->part);
    fputs("    for (size_t r = 0; r < n; r++) {\n"
          "      const unsigned char *c = cs + r * stride;\n"
          "      double a = acc[r];\n",
          f);
    ts_status st = TS_OK;
    for (uint32_t t = u->tree; t < u->end && st == TS_OK; t++) {
        fprintf(f, "      /* tree %u */\n", t);
        st = emit_subtree(f, p->q, &m->trees[t], t, m->trees[t].n_nodes ? 0 : -1, p->cuts[t], 0, err);
    }
    fputs("      acc[r] = a;\n    }\n}\n", f);
    return st;
}

static ts_status emit_cut(FILE *f, const ts_model *m, const tsif_plan *p, const tsif_unit *u, ts_error *err) {
    fprintf(f, "TSIF_HIDDEN double tsif_s%u_%d(const unsigned char *c);\n", u->tree, u->node);
    fprintf(f, "double tsif_s%u_%d(const unsigned char *c) {\n", u->tree, u->node);
    ts_status st = emit_subtree(f, p->q, &m->trees[u->tree], u->tree, u->node, p->cuts[u->tree], 1, err);
    fputs("}\n", f);
    return st;
}

/* ---- Files --------------------------------------------------------------------------- */

static const char PRELUDE[] =
    "#include <stddef.h>\n"
    "#if defined(__FLT_EVAL_METHOD__) && __FLT_EVAL_METHOD__ > 0\n"
    "#error \"treescore ifelse needs float and double arithmetic without excess precision\"\n"
    "#endif\n"
    "#if defined(__GNUC__)\n"
    "#define TSIF_HIDDEN __attribute__((visibility(\"hidden\")))\n"
    "#else\n"
    "#define TSIF_HIDDEN\n"
    "#endif\n"
    "union tsif_du { unsigned long long u; double d; };\n";

static FILE *open_out(const char *path, ts_error *err) {
    FILE *f = fopen(path, "wb");
    if (!f) {
        ts_fail(err, TS_ERR_IO, "ifelse: cannot create %s: %s", path, strerror(errno));
        return NULL;
    }
    setvbuf(f, NULL, _IOFBF, 1 << 20);
    return f;
}

static ts_status close_out(FILE *f, const char *path, uint64_t *bytes, ts_error *err) {
    long len = ftell(f);
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) return ts_fail(err, TS_ERR_IO, "ifelse: cannot write %s: %s", path, strerror(errno));
    if (bytes && len > 0) *bytes += (uint64_t)len;
    return TS_OK;
}

ts_status tsif_write_file(const char *path, const ts_model *m, const tsif_plan *p, uint32_t file, uint64_t *bytes,
                          ts_error *err) {
    FILE *f = open_out(path, err);
    if (!f) return TS_ERR_IO;
    uint32_t first = p->file_first[file], end = p->file_first[file + 1];
    fprintf(f, "/* treescore ifelse v%u, generated: file %u of %u */\n", TSIF_CODEGEN_VERSION, file + 1, p->n_files);
    fputs(PRELUDE, f);
    ts_status st = TS_OK;
    for (uint32_t u = first; u < end && st == TS_OK; u++)
        st = p->units[u].node < 0 ? emit_part(f, m, p, &p->units[u], err) : emit_cut(f, m, p, &p->units[u], err);
    if (st != TS_OK) {
        fclose(f);
        return st;
    }
    return close_out(f, path, bytes, err);
}

ts_status tsif_write_main(const char *path, const tsif_plan *p, uint32_t n_trees, const uint64_t key[2],
                          uint64_t *bytes, ts_error *err) {
    FILE *f = open_out(path, err);
    if (!f) return TS_ERR_IO;
    fprintf(f, "/* treescore ifelse v%u, generated: the table of %u parts */\n", TSIF_CODEGEN_VERSION, p->n_parts);
    fputs("#include <stddef.h>\n#include <stdint.h>\n"
          "typedef void (*tsif_part_fn)(const unsigned char *, size_t, size_t, double *);\n",
          f);
    for (uint32_t i = 0; i < p->n_parts; i++)
        fprintf(f, "void tsif_part_%u(const unsigned char *, size_t, size_t, double *);\n", i);
    fputs("static const tsif_part_fn parts[] = {\n", f);
    for (uint32_t i = 0; i < p->n_parts; i++) fprintf(f, "    tsif_part_%u,\n", i);
    if (p->n_parts == 0) fputs("    0\n", f);
    fputs("};\n"
          "struct tsif_info {\n"
          "    uint64_t magic, version, key[2], n_parts, n_trees;\n"
          "    const tsif_part_fn *parts;\n"
          "};\n"
          "#if defined(__GNUC__)\n__attribute__((visibility(\"default\")))\n#endif\n"
          "extern const struct tsif_info tsif_info;\n",
          f);
    fprintf(f,
            "const struct tsif_info tsif_info = {0x%016llxull, %uu, {0x%016llxull, 0x%016llxull}, %uu, %uu, "
            "parts};\n",
            (unsigned long long)TSIF_MAGIC, TSIF_CODEGEN_VERSION, (unsigned long long)key[0],
            (unsigned long long)key[1], p->n_parts, n_trees);
    return close_out(f, path, bytes, err);
}
