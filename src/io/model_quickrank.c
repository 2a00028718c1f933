/* model_quickrank.c: loaders for QuickRank and RankLib XML tree ensembles (one tolerant XML reader, two semantics). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/loaders.h"
#include "io/text.h"
#include "model/forest.h"

/*
 * Input: optional "##" comment lines, then
 *   <ranker> <info>...</info> <ensemble>
 *     <tree id="1" weight="0.1">
 *       <split> <feature>12</feature> <threshold>0.5</threshold>
 *         <split pos="left"> ... </split> <split pos="right"> <output>-1.5</output> </split>
 *       </split>
 *     </tree> ...
 *   </ensemble> </ranker>
 * (the <ranker> wrapper is optional; a tree may also be a lone <output>).
 *
 * Semantics (QuickRank): feature ids are 1-based and feature k reads column k (column 0
 * is unused), threshold = (float)strtod(text) and x <= threshold goes left, so NaN goes
 * right (flags 0); leaf value = strtod(output); tree weight = the weight attribute
 * (default 1.0). score = sum of weight * output.
 *
 * Semantics (RankLib, read from its source: Ensemble, Split, RFRanker, DenseDataPoint):
 * the same layout, but every number is parsed with Java's Float.parseFloat (strtof here:
 * threshold, output and weight are floats; the output is then used as a double), feature
 * k reads column k, x <= threshold goes left, and a NaN (RankLib's "unknown" value) or
 * absent feature reads as 0, so NaN goes where 0.0 goes (TSM_MISSING_LEFT iff
 * 0 <= threshold). A random forest (RFRanker) holds several <ensemble> blocks and scores
 * the mean of the ensembles' scores: each tree's weight is divided by the number of
 * ensembles (exact when it is a power of two, else within one double rounding per tree).
 * RankLib adds each ensemble's terms in float32 (Ensemble.eval keeps a float sum);
 * treescore adds them in double, as it does for XGBoost: the exit leaves are the same,
 * the sums differ by RankLib's float32 rounding.
 *
 * The XML reader is a small tolerant tokenizer (tags, attributes in either quotes, text,
 * comments, CDATA, <?...?> and <!...> declarations; no entity decoding). It keeps an
 * explicit stack of open elements on the heap, so arbitrarily deep nesting cannot
 * overflow the C stack.
 */

typedef enum xml_kind { XK_START, XK_END, XK_TEXT, XK_EOF } xml_kind;

typedef struct xml_tok {
    xml_kind kind;
    const char *name;   /* START, END */
    size_t name_n;
    const char *attrs;  /* START: the raw attribute region (already validated) */
    size_t attrs_n;
    int self_closing;
    const char *text;   /* TEXT */
    size_t text_n;
    size_t byte;        /* where the token starts */
} xml_tok;

typedef enum elem_kind {
    E_OTHER,
    E_RANKER,
    E_INFO,
    E_ENSEMBLE,
    E_TREE,
    E_SPLIT,
    E_FEATURE,
    E_THRESHOLD,
    E_OUTPUT
} elem_kind;

typedef struct elem {
    elem_kind kind;
    const char *name;
    size_t name_n;
    size_t byte;
} elem;

/* An open <split>: what it has collected so far. */
typedef struct split_frame {
    int pos;            /* 0 root, 1 left, 2 right */
    int has_feature, has_threshold, has_output, has_left, has_right;
    uint32_t feature;
    float threshold;
    double output;
    int32_t left, right;
    size_t byte;
} split_frame;

typedef struct qr_ctx {
    const char *data;
    size_t size, pos;
    const char *name;
    ts_error *err;
    ts_model *m;
    elem *stack;        /* open elements */
    size_t depth, stack_cap;
    int skipping;       /* inside an element whose content is ignored (<info>, unknown) */
    size_t skip_depth;  /* depth of that element (its index in stack) */
    split_frame *frames;/* open <split>s of the current tree */
    size_t n_frames, frames_cap;
    tsm_node *nodes;    /* current tree, post-order (root last) */
    size_t n_nodes, nodes_cap;
    double *leaves;
    size_t n_leaves, leaves_cap;
    int ensembles;      /* <ensemble> elements seen */
    int ranklib;        /* RankLib semantics (see above) instead of QuickRank's */
    int in_tree, tree_has_root;
    int32_t tree_root;
    double tree_weight;
    size_t tree_byte;
    /* text of the innermost <feature>/<threshold>/<output> */
    const char *text;
    size_t text_n, text_byte;
} qr_ctx;

/* ---- errors ----------------------------------------------------------------------- */

static ts_status fail(qr_ctx *c, ts_status st, size_t byte, const char *fmt, ...) TS_PRINTF(4, 5);
static ts_status fail(qr_ctx *c, ts_status st, size_t byte, const char *fmt, ...) {
    char what[TS_ERROR_MESSAGE_SIZE];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    return tsio_fail(c->err, st, c->name, tsio_line_at(c->data, c->size, byte), byte, "%s", what);
}

/* ---- tokenizer -------------------------------------------------------------------- */

static int is_ws(char ch) { return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n'; }

static int is_name_char(char ch) {
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_' ||
           ch == ':' || ch == '.' || ch == '-';
}

static int starts(const qr_ctx *c, size_t at, const char *s) {
    size_t n = strlen(s);
    return c->size - at >= n && memcmp(c->data + at, s, n) == 0;
}

/* Offset of `s` at or after `from`, or size when absent. */
static size_t find(const qr_ctx *c, size_t from, const char *s) {
    size_t n = strlen(s);
    for (size_t i = from; i + n <= c->size; i++) {
        const char *hit = memchr(c->data + i, s[0], c->size - i);
        if (!hit) break;
        i = (size_t)(hit - c->data);
        if (i + n <= c->size && memcmp(hit, s, n) == 0) return i;
    }
    return c->size;
}

static void skip_ws(qr_ctx *c) {
    while (c->pos < c->size && is_ws(c->data[c->pos])) c->pos++;
}

static size_t read_name(qr_ctx *c) {
    size_t start = c->pos;
    while (c->pos < c->size && is_name_char(c->data[c->pos])) c->pos++;
    return c->pos - start;
}

/* Validate the attributes of a start tag up to '>' or "/>" (c->pos after the name). */
static ts_status read_attrs(qr_ctx *c, xml_tok *t) {
    t->attrs = c->data + c->pos;
    for (;;) {
        skip_ws(c);
        if (c->pos >= c->size) return fail(c, TS_ERR_PARSE, t->byte, "unterminated tag: truncated?");
        if (c->data[c->pos] == '>' || starts(c, c->pos, "/>")) break;
        if (read_name(c) == 0) return fail(c, TS_ERR_PARSE, c->pos, "bad character in a tag");
        skip_ws(c);
        if (c->pos >= c->size || c->data[c->pos] != '=')
            return fail(c, TS_ERR_PARSE, c->pos, "expected '=' after an attribute name");
        c->pos++;
        skip_ws(c);
        if (c->pos >= c->size || (c->data[c->pos] != '"' && c->data[c->pos] != '\''))
            return fail(c, TS_ERR_PARSE, c->pos, "expected a quoted attribute value");
        char q = c->data[c->pos++];
        const char *end = memchr(c->data + c->pos, q, c->size - c->pos);
        if (!end) return fail(c, TS_ERR_PARSE, t->byte, "unterminated attribute value: truncated?");
        c->pos = (size_t)(end - c->data) + 1;
    }
    t->attrs_n = (size_t)(c->data + c->pos - t->attrs);
    t->self_closing = c->data[c->pos] == '/';
    c->pos += t->self_closing ? 2 : 1;
    return TS_OK;
}

/* Skip a construct from c->pos to the end of `close`; error when unterminated. */
static ts_status skip_until(qr_ctx *c, const char *close, const char *what) {
    size_t at = find(c, c->pos, close);
    if (at >= c->size) return fail(c, TS_ERR_PARSE, c->pos, "unterminated %s: truncated?", what);
    c->pos = at + strlen(close);
    return TS_OK;
}

static ts_status next_token(qr_ctx *c, xml_tok *t) {
    for (;;) {
        memset(t, 0, sizeof *t);
        t->byte = c->pos;
        if (c->pos >= c->size) {
            t->kind = XK_EOF;
            return TS_OK;
        }
        if (c->data[c->pos] != '<') {
            const char *lt = memchr(c->data + c->pos, '<', c->size - c->pos);
            size_t end = lt ? (size_t)(lt - c->data) : c->size;
            t->kind = XK_TEXT;
            t->text = c->data + c->pos;
            t->text_n = end - c->pos;
            c->pos = end;
            return TS_OK;
        }
        if (starts(c, c->pos, "<!--")) {
            c->pos += 4;
            TS_TRY(skip_until(c, "-->", "comment"));
            continue;
        }
        if (starts(c, c->pos, "<![CDATA[")) {
            size_t start = c->pos + 9;
            c->pos = start;
            TS_TRY(skip_until(c, "]]>", "CDATA section"));
            t->kind = XK_TEXT;
            t->text = c->data + start;
            t->text_n = c->pos - 3 - start;
            return TS_OK;
        }
        if (starts(c, c->pos, "<?")) {
            c->pos += 2;
            TS_TRY(skip_until(c, "?>", "<?...?> declaration"));
            continue;
        }
        if (starts(c, c->pos, "<!")) {
            c->pos += 2;
            TS_TRY(skip_until(c, ">", "<!...> declaration"));
            continue;
        }
        c->pos++;
        int closing = c->pos < c->size && c->data[c->pos] == '/';
        if (closing) c->pos++;
        t->name = c->data + c->pos;
        t->name_n = read_name(c);
        if (t->name_n == 0) {
            if (c->pos >= c->size) return fail(c, TS_ERR_PARSE, t->byte, "unterminated tag: truncated?");
            return fail(c, TS_ERR_PARSE, t->byte, "'<' not followed by a tag name");
        }
        if (closing) {
            skip_ws(c);
            if (c->pos >= c->size) return fail(c, TS_ERR_PARSE, t->byte, "unterminated tag: truncated?");
            if (c->data[c->pos] != '>') return fail(c, TS_ERR_PARSE, c->pos, "expected '>' in a closing tag");
            c->pos++;
            t->kind = XK_END;
            return TS_OK;
        }
        t->kind = XK_START;
        return read_attrs(c, t);
    }
}

/* Find attribute `want` in a validated attribute region. 1 when found. */
static int get_attr(const xml_tok *t, const char *want, const char **v, size_t *n) {
    const char *p = t->attrs, *end = t->attrs + t->attrs_n;
    size_t want_n = strlen(want);
    while (p < end) {
        while (p < end && is_ws(*p)) p++;
        const char *name = p;
        while (p < end && is_name_char(*p)) p++;
        size_t name_n = (size_t)(p - name);
        while (p < end && *p != '"' && *p != '\'') p++;
        if (p >= end || name_n == 0) return 0;
        char q = *p++;
        const char *val = p;
        while (p < end && *p != q) p++;
        if (p >= end) return 0;
        if (name_n == want_n && memcmp(name, want, want_n) == 0) {
            *v = val;
            *n = (size_t)(p - val);
            return 1;
        }
        p++;
    }
    return 0;
}

/* ---- element stack ---------------------------------------------------------------- */

static int name_is(const char *name, size_t n, const char *want) {
    return n == strlen(want) && memcmp(name, want, n) == 0;
}

static elem_kind classify(const xml_tok *t) {
    static const struct { const char *name; elem_kind kind; } names[] = {
        {"ranker", E_RANKER},   {"info", E_INFO},           {"ensemble", E_ENSEMBLE}, {"tree", E_TREE},
        {"split", E_SPLIT},     {"feature", E_FEATURE},     {"threshold", E_THRESHOLD}, {"output", E_OUTPUT},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (name_is(t->name, t->name_n, names[i].name)) return names[i].kind;
    return E_OTHER;
}

static ts_status push_elem(qr_ctx *c, const xml_tok *t, elem_kind kind) {
    if (c->depth == c->stack_cap) {
        size_t cap = c->stack_cap ? c->stack_cap * 2 : 32;
        elem *p = realloc(c->stack, cap * sizeof *p);
        if (!p) return fail(c, TS_ERR_NO_MEMORY, t->byte, "out of memory");
        c->stack = p;
        c->stack_cap = cap;
    }
    if (!c->skipping && (kind == E_OTHER || kind == E_INFO)) {
        c->skipping = 1;
        c->skip_depth = c->depth;
    }
    c->stack[c->depth++] = (elem){kind, t->name, t->name_n, t->byte};
    return TS_OK;
}

static ts_status grow(qr_ctx *c, void **p, size_t *cap, size_t need, size_t elem_size, size_t byte) {
    if (need <= *cap) return TS_OK;
    size_t n = *cap ? *cap * 2 : 64;
    while (n < need) n *= 2;
    void *q = realloc(*p, n * elem_size);
    if (!q) return fail(c, TS_ERR_NO_MEMORY, byte, "out of memory");
    *p = q;
    *cap = n;
    return TS_OK;
}

/* ---- tree building ---------------------------------------------------------------- */

/* A threshold, output or weight: a double for QuickRank, a float (Float.parseFloat) for RankLib. */
static int parse_number(const qr_ctx *c, const char *s, size_t n, double *out) {
    float f;
    if (!c->ranklib) return tsio_parse_double(s, n, out);
    if (tsio_parse_float(s, n, &f) != 0) return -1;
    *out = f;
    return 0;
}

static const char *format_label(const qr_ctx *c) { return c->ranklib ? "RankLib" : "QuickRank"; }

static ts_status begin_tree(qr_ctx *c, const xml_tok *t) {
    const char *v;
    size_t n;
    c->in_tree = 1;
    c->tree_has_root = 0;
    c->n_nodes = c->n_leaves = c->n_frames = 0;
    c->tree_byte = t->byte;
    c->tree_weight = 1.0;
    if (get_attr(t, "weight", &v, &n)) {
        tsio_trim(&v, &n);
        if (parse_number(c, v, n, &c->tree_weight) != 0 || !isfinite(c->tree_weight)) {
            char ex[64];
            tsio_excerpt(ex, sizeof ex, v, n);
            return fail(c, TS_ERR_PARSE, t->byte, "tree %u: bad weight '%s'", c->m->n_trees, ex);
        }
    }
    return TS_OK;
}

/* A child reference is ready: give it to the enclosing split, or make it the root. */
static ts_status attach(qr_ctx *c, int pos, int32_t ref, size_t byte) {
    if (c->n_frames == 0) {
        if (c->tree_has_root)
            return fail(c, TS_ERR_PARSE, byte, "tree %u: more than one root <split> or <output>", c->m->n_trees);
        c->tree_has_root = 1;
        c->tree_root = ref;
        return TS_OK;
    }
    split_frame *parent = &c->frames[c->n_frames - 1];
    int *has = pos == 1 ? &parent->has_left : &parent->has_right;
    if (*has)
        return fail(c, TS_ERR_PARSE, byte, "tree %u: two %s children in one <split>", c->m->n_trees,
                    pos == 1 ? "left" : "right");
    *has = 1;
    if (pos == 1)
        parent->left = ref;
    else
        parent->right = ref;
    return TS_OK;
}

static ts_status add_leaf(qr_ctx *c, double value, size_t byte, int32_t *ref) {
    if (c->n_leaves >= TSM_MAX_LEAVES)
        return fail(c, TS_ERR_LIMIT, byte, "tree %u: more than %u leaves", c->m->n_trees, TSM_MAX_LEAVES);
    TS_TRY(grow(c, (void **)&c->leaves, &c->leaves_cap, c->n_leaves + 1, sizeof *c->leaves, byte));
    c->leaves[c->n_leaves] = value;
    *ref = ~(int32_t)c->n_leaves++;
    return TS_OK;
}

static ts_status open_split(qr_ctx *c, const xml_tok *t) {
    const char *v;
    size_t n;
    int pos = 0;
    if (c->n_frames > 0) {
        split_frame *parent = &c->frames[c->n_frames - 1];
        if (parent->has_output)
            return fail(c, TS_ERR_PARSE, t->byte, "tree %u: a <split> with an <output> cannot have children",
                        c->m->n_trees);
        if (!get_attr(t, "pos", &v, &n) || !(name_is(v, n, "left") || name_is(v, n, "right")))
            return fail(c, TS_ERR_PARSE, t->byte, "tree %u: a nested <split> needs pos=\"left\" or pos=\"right\"",
                        c->m->n_trees);
        pos = name_is(v, n, "left") ? 1 : 2;
    } else if (c->tree_has_root) {
        return fail(c, TS_ERR_PARSE, t->byte, "tree %u: more than one root <split>", c->m->n_trees);
    }
    TS_TRY(grow(c, (void **)&c->frames, &c->frames_cap, c->n_frames + 1, sizeof *c->frames, t->byte));
    split_frame *f = &c->frames[c->n_frames++];
    memset(f, 0, sizeof *f);
    f->pos = pos;
    f->byte = t->byte;
    return TS_OK;
}

/* </split>: the frame becomes a leaf (it has an <output>) or an internal node. */
static ts_status close_split(qr_ctx *c) {
    split_frame f = c->frames[--c->n_frames];
    int32_t ref;
    uint32_t tree = c->m->n_trees;
    if (f.has_output) {
        if (f.has_feature || f.has_threshold || f.has_left || f.has_right)
            return fail(c, TS_ERR_PARSE, f.byte, "tree %u: a <split> has both an <output> and a split", tree);
        TS_TRY(add_leaf(c, f.output, f.byte, &ref));
    } else {
        if (!f.has_feature || !f.has_threshold || !f.has_left || !f.has_right)
            return fail(c, TS_ERR_PARSE, f.byte,
                        "tree %u: a <split> needs <feature>, <threshold> and left and right <split>s, or an <output>",
                        tree);
        if (c->n_nodes >= TSM_MAX_LEAVES - 1)
            return fail(c, TS_ERR_LIMIT, f.byte, "tree %u: more than %u nodes", tree, TSM_MAX_LEAVES - 1);
        TS_TRY(grow(c, (void **)&c->nodes, &c->nodes_cap, c->n_nodes + 1, sizeof *c->nodes, f.byte));
        /* RankLib reads NaN as 0: it goes where 0.0 goes. QuickRank: NaN <= t is false, right. */
        uint32_t flags = c->ranklib && 0.0f <= f.threshold ? TSM_MISSING_LEFT : 0u;
        c->nodes[c->n_nodes] = (tsm_node){f.threshold, f.feature, f.left, f.right, flags};
        ref = (int32_t)c->n_nodes++;
    }
    return attach(c, f.pos, ref, f.byte);
}

/* </tree>: nodes were stored children first (root last); reverse their numbering so the
 * root is node 0, then hand the tree to the forest builder. */
static ts_status end_tree(qr_ctx *c, size_t byte) {
    uint32_t tree = c->m->n_trees;
    c->in_tree = 0;
    if (!c->tree_has_root) return fail(c, TS_ERR_PARSE, byte, "tree %u: empty <tree>", tree);
    size_t n = c->n_nodes;
    for (size_t i = 0; i < n / 2; i++) {
        tsm_node tmp = c->nodes[i];
        c->nodes[i] = c->nodes[n - 1 - i];
        c->nodes[n - 1 - i] = tmp;
    }
    for (size_t i = 0; i < n; i++) {
        if (c->nodes[i].left >= 0) c->nodes[i].left = (int32_t)(n - 1) - c->nodes[i].left;
        if (c->nodes[i].right >= 0) c->nodes[i].right = (int32_t)(n - 1) - c->nodes[i].right;
    }
    ts_status st = tsm_model_add_tree(c->m, (uint32_t)n, c->nodes, (uint32_t)c->n_leaves, c->leaves, c->tree_weight,
                                      c->err);
    if (st != TS_OK)
        return tsio_locate(c->err, st, c->name, tsio_line_at(c->data, c->size, c->tree_byte), c->tree_byte);
    return TS_OK;
}

/* </feature>, </threshold>, </output>: parse the collected text. */
static ts_status close_value(qr_ctx *c, elem_kind kind, size_t byte) {
    uint32_t tree = c->m->n_trees;
    const char *s = c->text;
    size_t n = s ? c->text_n : 0, at = s ? c->text_byte : byte; /* no text: text_n may be stale */
    char ex[64];
    static const char *const names[] = {[E_FEATURE] = "feature", [E_THRESHOLD] = "threshold", [E_OUTPUT] = "output"};
    tsio_excerpt(ex, sizeof ex, s ? s : "", s ? n : 0);
    c->text = NULL;
    long long id = 0;
    double d = 0;
    int ok = kind == E_FEATURE ? tsio_parse_int(s ? s : "", n, 0, TSM_MAX_FEATURES - 1, &id) == 0
                               : parse_number(c, s ? s : "", n, &d) == 0;
    if (!ok || (kind != E_FEATURE && isnan(d)))
        return fail(c, TS_ERR_PARSE, at, "tree %u: bad %s '%s'", tree, names[kind], ex);
    if (kind == E_FEATURE && id == 0)
        return fail(c, TS_ERR_PARSE, at, "tree %u: feature id 0 (%s feature ids start at 1)", tree, format_label(c));
    if (c->n_frames == 0) { /* a lone <output> directly in <tree> */
        int32_t ref;
        TS_TRY(add_leaf(c, d, at, &ref));
        return attach(c, 0, ref, at);
    }
    split_frame *f = &c->frames[c->n_frames - 1];
    int *has = kind == E_FEATURE ? &f->has_feature : kind == E_THRESHOLD ? &f->has_threshold : &f->has_output;
    if (*has) return fail(c, TS_ERR_PARSE, at, "tree %u: two <%s> in one <split>", tree, names[kind]);
    *has = 1;
    if (kind == E_FEATURE)
        f->feature = (uint32_t)id;
    else if (kind == E_THRESHOLD)
        f->threshold = (float)d; /* QuickRank: atof, stored as float; RankLib: d is already a float */
    else
        f->output = d;
    return TS_OK;
}

/* ---- events ----------------------------------------------------------------------- */

static ts_status unexpected_elem(qr_ctx *c, const xml_tok *t, const char *where) {
    char ex[64];
    tsio_excerpt(ex, sizeof ex, t->name, t->name_n);
    return fail(c, TS_ERR_PARSE, t->byte, "unexpected <%s> in %s", ex, where);
}

static ts_status on_start(qr_ctx *c, const xml_tok *t) {
    elem_kind kind = classify(t), parent = c->depth ? c->stack[c->depth - 1].kind : E_RANKER;
    if (c->skipping) return push_elem(c, t, E_OTHER);
    switch (parent) {
    case E_RANKER:
        if (kind == E_ENSEMBLE) {
            if (c->ensembles++ && !c->ranklib)
                return fail(c, TS_ERR_PARSE, t->byte, "a second <ensemble> (only RankLib random forests have several)");
        } else if (kind != E_INFO && kind != E_RANKER) {
            kind = E_OTHER; /* unknown wrapper content: skipped */
        }
        break;
    case E_ENSEMBLE:
        if (kind != E_TREE) return unexpected_elem(c, t, "<ensemble>");
        TS_TRY(begin_tree(c, t));
        break;
    case E_TREE:
    case E_SPLIT:
        if (kind == E_SPLIT) {
            TS_TRY(open_split(c, t));
        } else if (kind == E_OUTPUT || (parent == E_SPLIT && (kind == E_FEATURE || kind == E_THRESHOLD))) {
            c->text = NULL;
        } else {
            return unexpected_elem(c, t, parent == E_TREE ? "<tree>" : "<split>");
        }
        break;
    default:
        return unexpected_elem(c, t, "a value element");
    }
    return push_elem(c, t, kind);
}

static ts_status on_end(qr_ctx *c, const xml_tok *t) {
    char ex[64], open_ex[64];
    tsio_excerpt(ex, sizeof ex, t->name, t->name_n);
    if (c->depth == 0) return fail(c, TS_ERR_PARSE, t->byte, "</%s> closes nothing", ex);
    elem e = c->stack[c->depth - 1];
    if (e.name_n != t->name_n || memcmp(e.name, t->name, e.name_n) != 0) {
        tsio_excerpt(open_ex, sizeof open_ex, e.name, e.name_n);
        return fail(c, TS_ERR_PARSE, t->byte, "</%s> does not match <%s> opened on line %llu", ex, open_ex,
                    tsio_line_at(c->data, c->size, e.byte));
    }
    c->depth--;
    if (c->skipping) {
        if (c->depth == c->skip_depth) c->skipping = 0;
        return TS_OK;
    }
    switch (e.kind) {
    case E_FEATURE: case E_THRESHOLD: case E_OUTPUT: return close_value(c, e.kind, t->byte);
    case E_SPLIT: return close_split(c);
    case E_TREE: return end_tree(c, t->byte);
    default: return TS_OK;
    }
}

static ts_status on_text(qr_ctx *c, const xml_tok *t) {
    const char *s = t->text;
    size_t n = t->text_n;
    elem_kind top = c->depth ? c->stack[c->depth - 1].kind : E_RANKER;
    tsio_trim(&s, &n);
    if (n == 0) return TS_OK;
    if (top == E_FEATURE || top == E_THRESHOLD || top == E_OUTPUT) {
        if (c->text) return fail(c, TS_ERR_PARSE, t->byte, "two pieces of text in one value element");
        c->text = s;
        c->text_n = n;
        c->text_byte = (size_t)(s - c->data);
        return TS_OK;
    }
    if (top == E_ENSEMBLE || top == E_TREE || top == E_SPLIT) {
        char ex[64];
        tsio_excerpt(ex, sizeof ex, s, n);
        return fail(c, TS_ERR_PARSE, (size_t)(s - c->data), "unexpected text '%s'", ex);
    }
    return TS_OK; /* text in <info>, unknown elements or outside elements is ignored */
}

static ts_status at_eof(qr_ctx *c) {
    if (c->depth > 0) {
        const elem *e = &c->stack[c->depth - 1];
        char ex[64];
        tsio_excerpt(ex, sizeof ex, e->name, e->name_n);
        return fail(c, TS_ERR_PARSE, c->size,
                    "unexpected end of file: <%s> opened on line %llu is not closed: truncated?", ex,
                    tsio_line_at(c->data, c->size, e->byte));
    }
    if (!c->ensembles)
        return fail(c, TS_ERR_PARSE, c->size, "no <ensemble> element: not a %s model?", format_label(c));
    return TS_OK;
}

/* Skip leading '#' comment lines (QuickRank writes "## LambdaMART" headers). */
static void skip_comment_lines(qr_ctx *c) {
    for (;;) {
        size_t p = c->pos;
        while (p < c->size && is_ws(c->data[p])) p++;
        if (p >= c->size || c->data[p] != '#') return;
        const char *nl = memchr(c->data + p, '\n', c->size - p);
        c->pos = nl ? (size_t)(nl - c->data) + 1 : c->size;
    }
}

static ts_status parse(qr_ctx *c) {
    xml_tok t;
    skip_comment_lines(c);
    for (;;) {
        TS_TRY(next_token(c, &t));
        switch (t.kind) {
        case XK_EOF: return at_eof(c);
        case XK_TEXT: TS_TRY(on_text(c, &t)); break;
        case XK_START:
            TS_TRY(on_start(c, &t));
            if (t.self_closing) {
                xml_tok end = t;
                end.kind = XK_END;
                TS_TRY(on_end(c, &end));
            }
            break;
        case XK_END: TS_TRY(on_end(c, &t)); break;
        }
    }
}

/* RankLib random forest: the score is the mean of the ensembles' scores, so each tree's
 * weight is divided by the number of ensembles (one ensemble: unchanged). */
static void average_ensembles(qr_ctx *c) {
    if (!c->ranklib || c->ensembles <= 1) return;
    for (uint32_t i = 0; i < c->m->n_trees; i++) c->m->trees[i].weight /= (double)c->ensembles;
}

static ts_status load_xml(const char *data, size_t size, const char *name, int ranklib, ts_model **out,
                          ts_error *err) {
    qr_ctx c;
    memset(&c, 0, sizeof c);
    *out = NULL;
    if (!name) name = "<buffer>";
    c.data = data;
    c.size = size;
    c.pos = tsio_skip_bom(data, size);
    c.name = name;
    c.err = err;
    c.ranklib = ranklib;
    c.m = tsm_model_new(ranklib ? TS_FORMAT_RANKLIB : TS_FORMAT_QUICKRANK_XML);
    ts_status st = c.m ? parse(&c) : ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory", name);
    if (st == TS_OK) {
        average_ensembles(&c);
        st = tsm_model_finish(c.m, err);
        if (st != TS_OK) tsio_locate(err, st, name, 0, 0);
    }
    free(c.stack);
    free(c.frames);
    free(c.nodes);
    free(c.leaves);
    if (st != TS_OK) {
        ts_model_free(c.m);
        return st;
    }
    *out = c.m;
    return TS_OK;
}

ts_status tsio_load_quickrank_xml(const char *data, size_t size, const char *name, ts_model **out, ts_error *err) {
    return load_xml(data, size, name, 0, out, err);
}

static const char *ranklib_non_tree(const char *data, size_t size);

ts_status tsio_load_ranklib(const char *data, size_t size, const char *name, ts_model **out, ts_error *err) {
    const char *other = ranklib_non_tree(data, size);
    *out = NULL;
    if (other)
        return tsio_fail(err, TS_ERR_UNSUPPORTED, name ? name : "<buffer>", 1, tsio_skip_bom(data, size),
                         "a RankLib %s model is not a tree ensemble (treescore scores LambdaMART, MART and "
                         "random forests)",
                         other);
    return load_xml(data, size, name, 1, out, err);
}

/* ---- detection -------------------------------------------------------------------- */

/* The line starting at p (without its '\n' and a trailing '\r'). */
static size_t line_len(const char *p, size_t n) {
    const char *nl = memchr(p, '\n', n);
    size_t k = nl ? (size_t)(nl - p) : n;
    if (k > 0 && p[k - 1] == '\r') k--;
    return k;
}

static int line_is(const char *p, size_t k, const char *want) {
    const char *s = p;
    size_t n = k;
    tsio_trim(&s, &n);
    return n == strlen(want) && memcmp(s, want, n) == 0;
}

/* "## Learning rate = 0.100000": C's "%f" (exactly six decimals), as QuickRank prints it;
 * Java's Float.toString (RankLib) prints the shortest decimal ("0.1"). */
static int c_style_rate(const char *p, size_t k) {
    static const char key[] = "## Learning rate = ";
    size_t kn = sizeof key - 1;
    if (k < kn || memcmp(p, key, kn) != 0) return 0;
    const char *v = p + kn, *dot = memchr(v, '.', k - kn);
    size_t vn = k - kn;
    tsio_trim(&v, &vn);
    if (!dot) return 0;
    size_t decimals = (size_t)(v + vn - dot) - 1;
    return decimals == 6;
}

/* RankLib's rankers that are not tree ensembles (their name() in the "## NAME" header). */
static const char *const ranklib_other[] = {"## RankNet",   "## RankBoost",         "## AdaRank",
                                             "## LambdaRank", "## Coordinate Ascent", "## ListNet",
                                             "## Linear Regression"};

/* The first header line names a RankLib ranker that is not a tree ensemble. */
static const char *ranklib_non_tree(const char *data, size_t size) {
    size_t i = tsio_skip_bom(data, size);
    while (i < size && is_ws(data[i])) i++;
    size_t k = line_len(data + i, size - i);
    for (size_t r = 0; r < sizeof ranklib_other / sizeof ranklib_other[0]; r++)
        if (line_is(data + i, k, ranklib_other[r])) return ranklib_other[r] + 3;
    return NULL;
}

int tsio_is_ranklib_header(const char *data, size_t size) {
    size_t i = tsio_skip_bom(data, size);
    while (i < size && is_ws(data[i])) i++;
    size_t k = line_len(data + i, size - i);
    if (ranklib_non_tree(data, size)) return 1; /* refused by the RankLib loader, by name */
    if (!line_is(data + i, k, "## LambdaMART") && !line_is(data + i, k, "## MART") &&
        !line_is(data + i, k, "## Random Forests"))
        return 0;
    for (int lines = 0; lines < 16 && i < size && data[i] == '#'; lines++) { /* the header only */
        k = line_len(data + i, size - i);
        if (c_style_rate(data + i, k)) return 0;
        i += k;
        while (i < size && is_ws(data[i])) i++;
    }
    /* RankLib's body is bare <ensemble> blocks (none: a truncated RankLib file);
     * QuickRank's starts <ranker> or <?xml. */
    return i == size || (size - i >= 9 && memcmp(data + i, "<ensemble", 9) == 0);
}
