/* model_xgboost_dump.c: loader for XGBoost get_dump(dump_format="json") trees and the ES/OpenSearch LTR wrapper. */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/json.h"
#include "io/loaders.h"
#include "io/text.h"
#include "model/forest.h"

/*
 * Accepted documents:
 *   [tree, tree, ...]                         each tree a node object, or a string holding
 *                                             one (Booster.get_dump's list of strings)
 *   {"splits": [tree, ...], "objective": "reg:logistic", ...}
 *                                             Elasticsearch/OpenSearch LTR's xgboost+json
 *                                             definition (other keys are skipped)
 * A node object (keys in any order; others, such as depth, gain and cover, are skipped):
 *   internal: {"nodeid": 0, "split": "bm25", "split_condition": 0.5, "yes": 1, "no": 2,
 *              "missing": 1, "children": [node, node]}
 *   leaf:     {"nodeid": 1, "leaf": 0.25}
 *
 * Semantics (XGBoost's RegTree, which the dump prints): NaN goes to "missing" (which must
 * be "yes" or "no"; when absent, NaN goes to "no", as NaN < c is false); otherwise
 * x < split_condition goes to "yes", compared in float32. split_condition and leaf are
 * float32 values printed to round-trip, so they are parsed with strtof; x < c becomes
 * x <= nextafterf(c, -inf). Children are matched to yes/no by nodeid, not by position.
 * A split_condition that is a list is a categorical split (refused).
 *
 * Features: "split" names a feature. When every name in the model is "f<N>" (f0, f12:
 * XGBoost's names for unnamed columns), split "fN" reads column N and the model has no
 * names. Otherwise each distinct name is a feature, numbered by order of first use, and
 * the model keeps the names, so ts_model_map_features can later move each to its column
 * in the data. No base score is in a dump: it is 0 (ts_model_set_base_score sets one).
 * Absent sparse entries are missing (NaN), as in XGBoost.
 */

#define DUMP_NAME_MAX 1024

/* One node as read; children are indices in the node array. */
typedef struct dump_node {
    long long nodeid, yes, no, missing;
    uint32_t name;            /* index in the name table (internal nodes) */
    float cond, leaf;
    int32_t kid[2];           /* parse indices of the children; -1 when absent */
    uint32_t n_kids;
    unsigned char has_id, has_split, has_cond, has_yes, has_no, has_missing, has_leaf, has_children;
    size_t byte;
} dump_node;

typedef struct dump_ctx {
    tsj_parser p;
    const char *name;
    ts_error *err;
    ts_model *m;
    dump_node *nodes;         /* the current tree's nodes in parse order (root first) */
    size_t n_nodes, cap_nodes;
    /* name table: names in order of first use; slots is an open-addressing hash of
     * indices + 1 (0 = empty), n_slots a power of two kept >= 2 * n_names */
    char **names;
    size_t n_names, cap_names;
    uint32_t *slots;
    size_t n_slots;
    /* conversion scratch for one tree */
    tsm_node *tn;
    double *leaves;
    int32_t *ref;
    size_t cap_scratch;
    size_t *tree_byte;
    size_t cap_tree_byte;
    char objective[64];
} dump_ctx;

/* ---- names -------------------------------------------------------------------------- */

static uint64_t name_hash(const char *s) {
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static ts_status rehash(dump_ctx *c) {
    size_t n = c->n_slots ? c->n_slots * 2 : 64;
    uint32_t *s = calloc(n, sizeof *s);
    if (!s) return tsj_fail(&c->p, TS_ERR_NO_MEMORY, "out of memory");
    for (size_t i = 0; i < c->n_names; i++) {
        size_t j = (size_t)name_hash(c->names[i]) & (n - 1);
        while (s[j]) j = (j + 1) & (n - 1);
        s[j] = (uint32_t)i + 1;
    }
    free(c->slots);
    c->slots = s;
    c->n_slots = n;
    return TS_OK;
}

/* The index of `s` in the name table, adding it when new. */
static ts_status intern(dump_ctx *c, const char *s, uint32_t *idx) {
    if (2 * (c->n_names + 1) > c->n_slots) TS_TRY(rehash(c));
    size_t j = (size_t)name_hash(s) & (c->n_slots - 1);
    for (; c->slots[j]; j = (j + 1) & (c->n_slots - 1))
        if (strcmp(c->names[c->slots[j] - 1], s) == 0) {
            *idx = c->slots[j] - 1;
            return TS_OK;
        }
    if (c->n_names >= TSM_MAX_FEATURES)
        return tsj_fail(&c->p, TS_ERR_LIMIT, "more than %u distinct feature names", TSM_MAX_FEATURES);
    if (c->n_names == c->cap_names) {
        size_t cap = c->cap_names ? c->cap_names * 2 : 64;
        char **p = realloc(c->names, cap * sizeof *p);
        if (!p) return tsj_fail(&c->p, TS_ERR_NO_MEMORY, "out of memory");
        c->names = p;
        c->cap_names = cap;
    }
    size_t len = strlen(s);
    char *copy = malloc(len + 1);
    if (!copy) return tsj_fail(&c->p, TS_ERR_NO_MEMORY, "out of memory");
    memcpy(copy, s, len + 1);
    c->names[c->n_names] = copy;
    c->slots[j] = (uint32_t)c->n_names + 1;
    *idx = (uint32_t)c->n_names++;
    return TS_OK;
}

/* Column N of a name "fN" (no sign, no leading zero but in "f0", N < TSM_MAX_FEATURES); -1 otherwise. */
static long long f_column(const char *s) {
    if (s[0] != 'f' || s[1] < '0' || s[1] > '9' || (s[1] == '0' && s[2])) return -1;
    long long v = 0;
    for (const char *q = s + 1; *q; q++) {
        if (*q < '0' || *q > '9') return -1;
        v = v * 10 + (*q - '0');
        if (v >= TSM_MAX_FEATURES) return -1;
    }
    return v;
}

/* ---- values ------------------------------------------------------------------------- */

static ts_status bad_number(dump_ctx *c, size_t byte, const char *tok, size_t n, const char *what) {
    char ex[64];
    tsio_excerpt(ex, sizeof ex, tok, n);
    return tsj_fail_at(&c->p, TS_ERR_PARSE, byte, "bad %s '%s'", what, ex);
}

static ts_status read_id(dump_ctx *c, const char *what, long long *out) {
    const char *tok;
    size_t n, at = tsj_offset(&c->p);
    tsj_type t;
    TS_TRY(tsj_peek(&c->p, &t));
    if (t != TSJ_NUMBER) return tsj_fail(&c->p, TS_ERR_PARSE, "%s: expected a node id (a number)", what);
    TS_TRY(tsj_number(&c->p, &tok, &n));
    if (tsio_parse_int(tok, n, 0, INT32_MAX, out) != 0) return bad_number(c, at, tok, n, what);
    return TS_OK;
}

static ts_status read_float(dump_ctx *c, const char *what, float *out) {
    const char *tok;
    size_t n, at = tsj_offset(&c->p);
    tsj_type t;
    TS_TRY(tsj_peek(&c->p, &t));
    if (t == TSJ_ARRAY && strcmp(what, "split_condition") == 0)
        return tsj_fail(&c->p, TS_ERR_UNSUPPORTED,
                        "categorical splits (a list of categories as split_condition) are not supported in dumps");
    if (t != TSJ_NUMBER) return tsj_fail(&c->p, TS_ERR_PARSE, "%s: expected a number", what);
    TS_TRY(tsj_number(&c->p, &tok, &n));
    if (tsio_parse_float(tok, n, out) != 0 || isnan(*out)) return bad_number(c, at, tok, n, what);
    return TS_OK;
}

static ts_status read_split(dump_ctx *c, dump_node *nd) {
    char buf[DUMP_NAME_MAX];
    tsj_type t;
    TS_TRY(tsj_peek(&c->p, &t));
    if (t != TSJ_STRING) return tsj_fail(&c->p, TS_ERR_PARSE, "split: expected a feature name (a string)");
    TS_TRY(tsj_string(&c->p, buf, sizeof buf));
    if (!buf[0]) return tsj_fail(&c->p, TS_ERR_PARSE, "split: empty feature name");
    return intern(c, buf, &nd->name);
}

/* ---- one tree ----------------------------------------------------------------------- */

static ts_status new_node(dump_ctx *c, int32_t *idx) {
    if (c->n_nodes >= 2 * (size_t)TSM_MAX_LEAVES)
        return tsj_fail(&c->p, TS_ERR_LIMIT, "a tree has more than %u nodes", 2 * TSM_MAX_LEAVES);
    if (c->n_nodes == c->cap_nodes) {
        size_t cap = c->cap_nodes ? c->cap_nodes * 2 : 64;
        dump_node *p = realloc(c->nodes, cap * sizeof *p);
        if (!p) return tsj_fail(&c->p, TS_ERR_NO_MEMORY, "out of memory");
        c->nodes = p;
        c->cap_nodes = cap;
    }
    *idx = (int32_t)c->n_nodes;
    dump_node *nd = &c->nodes[c->n_nodes++];
    memset(nd, 0, sizeof *nd);
    nd->kid[0] = nd->kid[1] = -1;
    nd->byte = tsj_offset(&c->p);
    return TS_OK;
}

static ts_status read_node(dump_ctx *c, int32_t *out);

static ts_status read_children(dump_ctx *c, int32_t me) {
    int has;
    c->nodes[me].has_children = 1;
    TS_TRY(tsj_array_begin(&c->p));
    while (tsj_array_next(&c->p, &has) == TS_OK && has) {
        int32_t kid;
        if (c->nodes[me].n_kids == 2) return tsj_fail(&c->p, TS_ERR_INVALID_MODEL, "a node has more than 2 children");
        TS_TRY(read_node(c, &kid)); /* c->nodes may move: index it again */
        c->nodes[me].kid[c->nodes[me].n_kids++] = kid;
    }
    return c->p.status;
}

/* One node object and, recursively, its children (depth is bounded by the parser's
 * TSJ_MAX_DEPTH: each level opens an object and an array). */
static ts_status read_node(dump_ctx *c, int32_t *out) {
    char key[TSJ_KEY_MAX];
    int has;
    tsj_type t;
    TS_TRY(tsj_peek(&c->p, &t));
    if (t != TSJ_OBJECT) return tsj_fail(&c->p, TS_ERR_PARSE, "expected a tree node (a JSON object)");
    int32_t me = 0;
    TS_TRY(new_node(c, &me));
    *out = me;
    TS_TRY(tsj_object_begin(&c->p));
    while (tsj_object_next(&c->p, key, &has) == TS_OK && has) {
        dump_node *nd = &c->nodes[me];
        if (strcmp(key, "nodeid") == 0) {
            TS_TRY(read_id(c, "nodeid", &nd->nodeid));
            nd->has_id = 1;
        } else if (strcmp(key, "split") == 0) {
            TS_TRY(read_split(c, nd));
            nd->has_split = 1;
        } else if (strcmp(key, "split_condition") == 0) {
            TS_TRY(read_float(c, "split_condition", &nd->cond));
            nd->has_cond = 1;
        } else if (strcmp(key, "yes") == 0) {
            TS_TRY(read_id(c, "yes", &nd->yes));
            nd->has_yes = 1;
        } else if (strcmp(key, "no") == 0) {
            TS_TRY(read_id(c, "no", &nd->no));
            nd->has_no = 1;
        } else if (strcmp(key, "missing") == 0) {
            TS_TRY(read_id(c, "missing", &nd->missing));
            nd->has_missing = 1;
        } else if (strcmp(key, "leaf") == 0) {
            TS_TRY(read_float(c, "leaf", &nd->leaf));
            nd->has_leaf = 1;
        } else if (strcmp(key, "children") == 0) {
            TS_TRY(read_children(c, me));
        } else {
            TS_TRY(tsj_skip(&c->p));
        }
    }
    return c->p.status;
}

static ts_status node_fail(dump_ctx *c, ts_status st, const dump_node *nd, const char *fmt, ...) TS_PRINTF(4, 5);
static ts_status node_fail(dump_ctx *c, ts_status st, const dump_node *nd, const char *fmt, ...) {
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    if (nd->has_id) return tsj_fail_at(&c->p, st, nd->byte, "tree %u: node %lld: %s", c->m->n_trees, nd->nodeid, what);
    return tsj_fail_at(&c->p, st, nd->byte, "tree %u: %s", c->m->n_trees, what);
}

/* Check one node's fields; an internal node gets its left (yes) and right (no) kid. */
static ts_status check_node(dump_ctx *c, const dump_node *nd, int32_t *left, int32_t *right) {
    if (nd->has_leaf) {
        if (nd->has_children || nd->has_split)
            return node_fail(c, TS_ERR_INVALID_MODEL, nd, "has both a leaf value and a split");
        return TS_OK;
    }
    if (!nd->has_split || !nd->has_children)
        return node_fail(c, TS_ERR_PARSE, nd, "neither a leaf (\"leaf\") nor a split (\"split\" and \"children\")");
    if (!nd->has_cond) return node_fail(c, TS_ERR_UNSUPPORTED, nd, "a split without split_condition (an indicator "
                                                                    "feature?) is not supported");
    if (!nd->has_yes || !nd->has_no) return node_fail(c, TS_ERR_PARSE, nd, "a split needs \"yes\" and \"no\"");
    if (nd->yes == nd->no) return node_fail(c, TS_ERR_INVALID_MODEL, nd, "yes and no are the same node");
    if (nd->has_missing && nd->missing != nd->yes && nd->missing != nd->no)
        return node_fail(c, TS_ERR_INVALID_MODEL, nd, "missing (%lld) is neither yes (%lld) nor no (%lld)",
                         nd->missing, nd->yes, nd->no);
    if (nd->n_kids != 2) return node_fail(c, TS_ERR_INVALID_MODEL, nd, "a split has %u children, expected 2", nd->n_kids);
    *left = *right = -1;
    for (int k = 0; k < 2; k++) {
        const dump_node *kid = &c->nodes[nd->kid[k]];
        if (!kid->has_id) return node_fail(c, TS_ERR_PARSE, kid, "a child node has no nodeid");
        if (kid->nodeid == nd->yes) *left = nd->kid[k];
        else if (kid->nodeid == nd->no) *right = nd->kid[k];
    }
    if (*left < 0 || *right < 0)
        return node_fail(c, TS_ERR_INVALID_MODEL, nd, "children are not nodes yes (%lld) and no (%lld)", nd->yes,
                         nd->no);
    if (nd->cond == -INFINITY)
        return node_fail(c, TS_ERR_UNSUPPORTED, nd, "the split condition -inf sends no value to yes");
    return TS_OK;
}

static ts_status grow_scratch(dump_ctx *c, size_t n) {
    if (n <= c->cap_scratch) return TS_OK;
    size_t cap = c->cap_scratch ? c->cap_scratch : 64;
    while (cap < n) cap *= 2;
    tsm_node *tn = realloc(c->tn, cap * sizeof *tn);
    if (tn) c->tn = tn;
    double *leaves = realloc(c->leaves, cap * sizeof *leaves);
    if (leaves) c->leaves = leaves;
    int32_t *ref = realloc(c->ref, cap * sizeof *ref);
    if (ref) c->ref = ref;
    if (!tn || !leaves || !ref) return tsj_fail(&c->p, TS_ERR_NO_MEMORY, "out of memory");
    c->cap_scratch = cap;
    return TS_OK;
}

/* Number the parsed nodes (internal and leaves, each in parse order: the root is internal
 * node 0) and add the tree. Node features are name-table indices until finish. */
static ts_status build_tree(dump_ctx *c, size_t byte) {
    uint32_t n_internal = 0, n_leaves = 0;
    TS_TRY(grow_scratch(c, c->n_nodes));
    for (size_t i = 0; i < c->n_nodes; i++)
        c->ref[i] = c->nodes[i].has_leaf ? ~(int32_t)n_leaves++ : (int32_t)n_internal++;
    for (size_t i = 0; i < c->n_nodes; i++) {
        const dump_node *nd = &c->nodes[i];
        int32_t l = -1, r = -1;
        TS_TRY(check_node(c, nd, &l, &r));
        if (nd->has_leaf) {
            c->leaves[~c->ref[i]] = (double)nd->leaf;
            continue;
        }
        tsm_node *o = &c->tn[c->ref[i]];
        o->feature = nd->name;
        o->threshold = tsm_threshold_lt_float(nd->cond);
        o->flags = nd->has_missing && nd->missing == nd->yes ? TSM_MISSING_LEFT : 0;
        o->left = c->ref[l];
        o->right = c->ref[r];
    }
    uint32_t tree = c->m->n_trees;
    ts_status st = tsm_model_add_tree(c->m, n_internal, c->tn, n_leaves, c->leaves, 1.0, c->err);
    if (st != TS_OK) {
        c->p.status = st;
        return tsio_locate(c->err, st, c->name, tsio_line_at(c->p.data, c->p.size, byte), byte);
    }
    if (tree >= c->cap_tree_byte) {
        size_t cap = c->cap_tree_byte ? c->cap_tree_byte * 2 : 64;
        size_t *p = realloc(c->tree_byte, cap * sizeof *p);
        if (!p) return tsj_fail(&c->p, TS_ERR_NO_MEMORY, "out of memory");
        c->tree_byte = p;
        c->cap_tree_byte = cap;
    }
    c->tree_byte[tree] = byte;
    return TS_OK;
}

/* A tree given as a string holding its JSON (get_dump's list, saved with json.dump):
 * decoded, then parsed with a parser of its own; errors point at the string. */
static ts_status read_tree_string(dump_ctx *c, size_t byte) {
    size_t end = byte + 1; /* find the closing quote to bound the decoded size */
    while (end < c->p.size && c->p.data[end] != '"') end += c->p.data[end] == '\\' ? 2 : 1;
    size_t cap = (end < c->p.size ? end : c->p.size) - byte + 1;
    char *s = malloc(cap);
    if (!s) return tsj_fail(&c->p, TS_ERR_NO_MEMORY, "out of memory");
    ts_status st = tsj_string(&c->p, s, cap);
    if (st != TS_OK) {
        free(s);
        return st;
    }
    tsj_parser outer = c->p;
    ts_error inner_err;
    tsj_init(&c->p, s, strlen(s), 0, c->name, &inner_err);
    int32_t root;
    c->n_nodes = 0;
    st = read_node(c, &root);
    if (st == TS_OK) st = tsj_end(&c->p);
    c->p = outer;
    for (size_t i = 0; i < c->n_nodes; i++) c->nodes[i].byte = byte; /* offsets were in the string */
    if (st == TS_OK) st = build_tree(c, byte);
    else {
        const char *what = strstr(inner_err.message, ": ");
        tsj_fail_at(&c->p, st, byte, "tree %u (a string): %s", c->m->n_trees, what ? what + 2 : inner_err.message);
    }
    free(s);
    return st;
}

static ts_status read_trees(dump_ctx *c) {
    int has;
    TS_TRY(tsj_array_begin(&c->p));
    while (tsj_array_next(&c->p, &has) == TS_OK && has) {
        tsj_type t;
        size_t byte = tsj_offset(&c->p);
        TS_TRY(tsj_peek(&c->p, &t));
        if (c->m->n_trees >= TSM_MAX_TREES) return tsj_fail(&c->p, TS_ERR_LIMIT, "more than %u trees", TSM_MAX_TREES);
        if (t == TSJ_STRING) {
            TS_TRY(read_tree_string(c, byte));
            continue;
        }
        int32_t root;
        c->n_nodes = 0;
        TS_TRY(read_node(c, &root));
        TS_TRY(build_tree(c, byte));
    }
    return c->p.status;
}

/* {"splits": [...], "objective": "..."}: other keys are skipped. */
static ts_status read_wrapper(dump_ctx *c) {
    char key[TSJ_KEY_MAX];
    int has, have_splits = 0;
    TS_TRY(tsj_object_begin(&c->p));
    while (tsj_object_next(&c->p, key, &has) == TS_OK && has) {
        if (strcmp(key, "splits") == 0) {
            if (have_splits) return tsj_fail(&c->p, TS_ERR_PARSE, "a second \"splits\" list");
            have_splits = 1;
            TS_TRY(read_trees(c));
        } else if (strcmp(key, "objective") == 0) {
            tsj_type t;
            TS_TRY(tsj_peek(&c->p, &t));
            if (t != TSJ_STRING) return tsj_fail(&c->p, TS_ERR_PARSE, "objective: expected a string");
            TS_TRY(tsj_string(&c->p, c->objective, sizeof c->objective));
        } else {
            TS_TRY(tsj_skip(&c->p));
        }
    }
    TS_TRY(c->p.status);
    if (!have_splits)
        return tsj_fail_at(&c->p, TS_ERR_PARSE, 0, "not an XGBoost dump: an object needs a \"splits\" list of trees");
    return TS_OK;
}

static ts_status read_root(dump_ctx *c) {
    tsj_type t;
    TS_TRY(tsj_peek(&c->p, &t));
    if (t == TSJ_ARRAY)
        TS_TRY(read_trees(c));
    else if (t == TSJ_OBJECT)
        TS_TRY(read_wrapper(c));
    else
        return tsj_fail(&c->p, TS_ERR_PARSE, "expected a JSON list of trees or an object with \"splits\"");
    TS_TRY(tsj_end(&c->p));
    if (c->m->n_trees == 0) return tsj_fail_at(&c->p, TS_ERR_PARSE, 0, "an XGBoost dump with no trees");
    return TS_OK;
}

/* ---- features ----------------------------------------------------------------------- */

/* Name-table indices become columns: fN -> N when every name is fN, else the names are kept. */
static ts_status resolve_features(dump_ctx *c) {
    int numbered = 1;
    for (size_t i = 0; i < c->n_names && numbered; i++) numbered = f_column(c->names[i]) >= 0;
    if (!numbered) {
        for (size_t i = 0; i < c->n_names; i++)
            TS_TRY(tsm_model_add_feature_name(c->m, c->names[i], strlen(c->names[i]), c->err));
        return TS_OK;
    }
    for (uint32_t t = 0; t < c->m->n_trees; t++)
        for (uint32_t i = 0; i < c->m->trees[t].n_nodes; i++) {
            tsm_node *nd = &c->m->trees[t].nodes[i];
            nd->feature = (uint32_t)f_column(c->names[nd->feature]);
        }
    return TS_OK;
}

static ts_status finish(dump_ctx *c) {
    ts_status st = resolve_features(c);
    if (st != TS_OK) return tsio_locate(c->err, st, c->name, 0, 0);
    memcpy(c->m->objective, c->objective, sizeof c->m->objective);
    c->m->objective[sizeof c->m->objective - 1] = '\0';
    return tsio_finish_located(c->m, c->name, c->p.data, c->p.size, c->tree_byte, c->err);
}

static void free_ctx(dump_ctx *c) {
    for (size_t i = 0; i < c->n_names; i++) free(c->names[i]);
    free(c->names);
    free(c->slots);
    free(c->nodes);
    free(c->tn);
    free(c->leaves);
    free(c->ref);
    free(c->tree_byte);
}

ts_status tsio_load_xgboost_dump(const char *data, size_t size, const char *name, ts_model **out, ts_error *err) {
    dump_ctx *c = calloc(1, sizeof *c);
    *out = NULL;
    if (!name) name = "<buffer>";
    if (!c) return ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory", name);
    c->name = name;
    c->err = err;
    tsj_init(&c->p, data, size, tsio_skip_bom(data, size), name, err);
    c->m = tsm_model_new(TS_FORMAT_XGBOOST_DUMP);
    ts_status st;
    if (!c->m) {
        st = ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory", name);
    } else {
        c->m->absent_value = NAN;
        st = read_root(c);
    }
    if (st == TS_OK) st = finish(c);
    if (st != TS_OK)
        ts_model_free(c->m);
    else
        *out = c->m;
    free_ctx(c);
    free(c);
    return st;
}

/* ---- detection ---------------------------------------------------------------------- */

int tsio_is_xgboost_dump(const char *data, size_t size) {
    tsj_parser p;
    tsj_type t;
    char key[TSJ_KEY_MAX];
    int has;
    tsj_init(&p, data, size, tsio_skip_bom(data, size), "", NULL);
    if (tsj_peek(&p, &t) != TS_OK) return 0;
    if (t == TSJ_ARRAY) return 1;
    if (t != TSJ_OBJECT || tsj_object_begin(&p) != TS_OK) return 0;
    while (tsj_object_next(&p, key, &has) == TS_OK && has) {
        if (strcmp(key, "splits") == 0) return 1;
        if (strcmp(key, "learner") == 0 || strcmp(key, "tree_info") == 0) return 0; /* XGBoost, LightGBM JSON */
        if (tsj_skip(&p) != TS_OK) return 0;
    }
    return 0;
}
