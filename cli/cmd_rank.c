/* cmd_rank.c: `treescore rank`: score, group rows by query, sort, print the top K, NDCG@K. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "usage: treescore rank -m MODEL -d DATA [--top K] [options]\n"
    "\n"
    "Score DATA with MODEL, group the rows by query (qid: fields, or query sizes from\n"
    "--query-file or DATA.query), sort each query by score (highest first; ties keep\n"
    "file order) and print its top K rows as tab-separated lines:\n"
    "    qid  rank  row  score  label  comment\n"
    "(qid is the file's qid, or the 0-based query number when sizes come from a query\n"
    "file; row is the 1-based row of DATA; comment the text after #, such as a docid, its\n"
    "tabs printed as spaces). When the data has labels, NDCG@K over all queries is\n"
    "printed at the end (gain 2^label - 1, discount log2(rank + 1), a query without\n"
    "relevant rows counts 1, as in LightGBM).\n"
    "A query is a run of consecutive rows with one qid, as LightGBM reads them: rows of\n"
    "a qid that comes back after other qids are another query (a warning says so: sort\n"
    "the file by qid).\n"
    "\n"
    "  -m, --model FILE        a model file (LightGBM, XGBoost, CatBoost, QuickRank, RankLib: see --model-format)\n"
    "  -d, --data FILE         data file (SVMlight/LETOR with qid or a query file)\n"
    "  -k, --top K             rows printed per query (default 10)\n"
    "      --ndcg K            K of NDCG@K (default: the --top value)\n"
    "      --print-queries N   print only the first N queries (default all; 0 = summary only)\n"
    "  -o, --output FILE       write the ranking here (appears only when complete)\n"
    "  -e, --engine E          " CLI_ENGINE_NAMES " (default auto, as for 'treescore score')\n"
    CLI_SCORER_HELP
    "  -f, --format F          auto, svmlight, csv, tsv, raw\n"
    "  -q, --query-file FILE   query sizes, one per line\n"
    "      --one-based, --header, --no-header, --label-column K, --no-name-check,\n"
    "      --model-format F, --feature-names FILE, --base-score X\n"
    "                          as for 'treescore score'\n"
    "      --quiet             no summary on stderr\n"
    "  -h, --help              this help\n";

typedef struct doc {
    double score;
    double label;
    uint64_t row;
    char *comment;
} doc;

typedef struct rank_state {
    const cli_opts *o;
    FILE *out;
    doc *docs;
    size_t n, cap;
    int64_t qid;
    uint64_t n_queries, n_docs;
    double ndcg_sum;
    uint64_t ndcg_queries;
    int labels_ok;      /* every row so far has a label */
    int grades_ok;      /* and every label is a relevance grade 0 .. 30 */
    double bad_label;   /* the first label that is not (grades_ok 0) */
    uint64_t bad_row;   /* its row, from 0 */
    double score_seconds;
    int64_t *done;      /* qids of the queries flushed: an open-addressing set (slot -1: empty) */
    size_t done_cap, done_n;
    int warned_back;    /* a qid came back after other qids (said once) */
} rank_state;

/* Whether qid q is in the set of flushed queries; with add, put it there. -1 when the
 * set cannot grow (out of memory: the warning below is then skipped, nothing else). */
static int done_has(rank_state *st, int64_t q, int add) {
    if (add && (st->done_n + 1) * 2 > st->done_cap) {
        size_t cap = st->done_cap ? st->done_cap * 2 : 1024;
        int64_t *t = malloc(cap * sizeof *t), *old = st->done;
        if (!t) return -1;
        for (size_t i = 0; i < cap; i++) t[i] = -1;
        size_t old_cap = st->done_cap;
        st->done = t;
        st->done_cap = cap;
        st->done_n = 0;
        for (size_t i = 0; i < old_cap; i++)
            if (old[i] >= 0) done_has(st, old[i], 1);
        free(old);
    }
    if (!st->done_cap) return 0;
    size_t mask = st->done_cap - 1, i = (size_t)((uint64_t)q * 0x9E3779B97F4A7C15ull >> 17) & mask;
    for (; st->done[i] >= 0; i = (i + 1) & mask)
        if (st->done[i] == q) return 1;
    if (add) {
        st->done[i] = q;
        st->done_n++;
    }
    return 0;
}

/* A qid that comes back after other qids starts another query, as LightGBM reads the
 * file: said once on stderr, since an unsorted file was ranked and its NDCG averaged over
 * split queries with no word. Query-file numbers never come back. */
static void note_query_start(rank_state *st, int64_t prev, int64_t q, uint64_t row) {
    if (prev != INT64_MIN) done_has(st, prev, 1);
    if (st->warned_back || done_has(st, q, 0) != 1) return;
    st->warned_back = 1;
    fprintf(stderr, "treescore: warning: %s: qid %lld comes back at row %llu after other qids: its rows form another "
                    "query, as LightGBM reads them (sort the file by qid to rank them together)\n",
            strcmp(st->o->data_path, "-") ? st->o->data_path : "<stdin>", (long long)q, (unsigned long long)row + 1);
}

static int by_score_desc(const void *a, const void *b) {
    const doc *x = a, *y = b;
    if (x->score != y->score) return x->score > y->score ? -1 : 1;
    return x->row < y->row ? -1 : x->row > y->row; /* stable: file order */
}

static int by_label_desc(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x > y ? -1 : x < y;
}

/* NDCG@k of docs already sorted by score (LightGBM's definition). */
static double ndcg_at(const doc *d, size_t n, unsigned k) {
    double dcg = 0, idcg = 0;
    double *labels = malloc((n ? n : 1) * sizeof *labels);
    if (!labels) return NAN;
    for (size_t i = 0; i < n; i++) labels[i] = d[i].label;
    qsort(labels, n, sizeof *labels, by_label_desc);
    for (size_t i = 0; i < n && i < k; i++) {
        double disc = 1.0 / log2((double)i + 2.0);
        dcg += (exp2(d[i].label) - 1.0) * disc;
        idcg += (exp2(labels[i]) - 1.0) * disc;
    }
    free(labels);
    return idcg > 0 ? dcg / idcg : 1.0;
}

static void flush_query(rank_state *st) {
    if (st->n == 0) return;
    qsort(st->docs, st->n, sizeof *st->docs, by_score_desc);
    if (st->o->print_queries < 0 || (long)st->n_queries < st->o->print_queries)
        for (size_t i = 0; i < st->n && i < st->o->top; i++) {
            const doc *d = &st->docs[i];
            fprintf(st->out, "%lld\t%zu\t%llu\t%.17g\t", (long long)st->qid, i + 1, (unsigned long long)d->row + 1,
                    d->score);
            if (d->label == d->label) fprintf(st->out, "%g", d->label);
            fputc('\t', st->out);
            for (const char *p = d->comment ? d->comment : ""; *p; p++) /* a tab would add a field */
                fputc(*p == '\t' ? ' ' : *p, st->out);
            fputc('\n', st->out);
        }
    if (st->labels_ok && st->grades_ok) {
        st->ndcg_sum += ndcg_at(st->docs, st->n, st->o->ndcg_k ? st->o->ndcg_k : st->o->top);
        st->ndcg_queries++;
    }
    for (size_t i = 0; i < st->n; i++) free(st->docs[i].comment);
    st->n_queries++;
    st->n = 0;
}

static int add_doc(rank_state *st, double score, double label, uint64_t row, const char *comment) {
    if (st->n == st->cap) {
        size_t cap = st->cap ? st->cap * 2 : 256;
        doc *d = realloc(st->docs, cap * sizeof *d);
        if (!d) return -1;
        st->docs = d;
        st->cap = cap;
    }
    char *c = NULL;
    if (comment && !(c = strdup(comment))) return -1;
    st->docs[st->n++] = (doc){score, label, row, c};
    if (label != label) {
        st->labels_ok = 0;
    } else if (st->grades_ok && !(label >= 0 && label <= 30 && label == floor(label))) {
        /* 2^label - 1 of 1e308 is inf (NDCG printed -nan), of -1 negative, of 2.5 not
         * LightGBM's label_gain (integer grades 0 .. 30): no NDCG rather than a wrong one */
        st->grades_ok = 0;
        st->bad_label = label;
        st->bad_row = row;
    }
    return 0;
}

/* Add a scored chunk's rows to their queries, flushing each query as it ends. */
static int rank_chunk(rank_state *st, const tsio_chunk *c, const double *scores) {
    for (size_t i = 0; i < c->n_rows; i++) {
        if (c->qids[i] < 0) {
            int is_stdin = strcmp(st->o->data_path, "-") == 0;
            cli_error("%s: row %llu has no query id: rank needs qid: fields in the data or query sizes in "
                      "--query-file%s%s%s",
                      is_stdin ? "<stdin>" : st->o->data_path, (unsigned long long)(c->first_row + i + 1),
                      is_stdin ? "" : " or ", is_stdin ? "" : st->o->data_path, is_stdin ? "" : ".query");
            return -1;
        }
        if (c->qids[i] != st->qid) {
            flush_query(st);
            note_query_start(st, st->qid, c->qids[i], c->first_row + i);
        }
        st->qid = c->qids[i];
        if (add_doc(st, scores[i], c->labels[i], c->first_row + i, c->comments ? c->comments[i] : NULL)) {
            cli_error("out of memory");
            return -1;
        }
        st->n_docs++;
    }
    return 0;
}

static int rank_stream(rank_state *st, const ts_model *m, ts_scorer **s, tsio_reader *r) {
    cli_chunks it;
    tsio_chunk c;
    int got;
    cli_chunks_init(&it, st->o, m, r);
    for (;;) {
        if ((got = cli_chunks_next(&it, &c)) <= 0) break;
        if (cli_ensure_scorer(st->o, m, s, &c)) {
            got = -1;
            break;
        }
        double t0 = cli_now();
        if (cli_chunks_score(&it, *s, &c)) {
            got = -1;
            break;
        }
        st->score_seconds += cli_now() - t0;
        if (rank_chunk(st, &c, it.scores)) {
            got = -1;
            break;
        }
    }
    if (got == 0) flush_query(st);
    for (size_t i = 0; i < st->n; i++) free(st->docs[i].comment);
    free(st->docs);
    free(st->done);
    cli_chunks_free(&it);
    return got == 0 ? CLI_OK : CLI_FAILED;
}

static void summary(const rank_state *st, ts_scorer *s, double wall) {
    unsigned k = st->o->ndcg_k ? st->o->ndcg_k : st->o->top;
    if (st->o->quiet) return;
    if (st->n_queries == 0)
        fprintf(stderr, "NDCG@%u: not computed (no rows)\n", k);
    else if (st->ndcg_queries != st->n_queries && !st->grades_ok && st->labels_ok)
        fprintf(stderr, "NDCG@%u: not computed (row %llu has label %g: NDCG's gain 2^label - 1 takes relevance grades, "
                        "integers 0 to 30, as LightGBM's label_gain)\n",
                k, (unsigned long long)st->bad_row + 1, st->bad_label);
    else if (st->ndcg_queries == st->n_queries)
        fprintf(stderr, "NDCG@%u: %.4f over %llu queries\n", k, st->ndcg_sum / (double)st->ndcg_queries,
                (unsigned long long)st->ndcg_queries);
    else
        fprintf(stderr, "NDCG@%u: not computed (some rows have no label)\n", k);
    fprintf(stderr, "scored %llu documents in %llu queries with engine %s: %.0f documents/s scoring, "
                    "%.0f documents/s end to end (parsing included)\n",
            (unsigned long long)st->n_docs, (unsigned long long)st->n_queries, ts_engine_name(ts_scorer_engine(s)),
            st->score_seconds > 0 ? (double)st->n_docs / st->score_seconds : 0.0,
            wall > 0 ? (double)st->n_docs / wall : 0.0);
}

int cmd_rank(int argc, char **argv) {
    cli_opts o;
    int rc = cli_start(argc, argv,
                       OPT_MODEL | OPT_DATA | OPT_OUTPUT | OPT_ENGINE | OPT_SCORER | OPT_DATA_FORMAT | OPT_READER |
                           OPT_RANK | OPT_QUIET,
                       usage, 1, &o);
    if (rc >= 0) return rc;
    o.reads_beside_query = 1;
    double t0 = cli_now();
    ts_model *m = cli_load_model(&o);
    if (!m) return CLI_FAILED;
    if (cli_choose_columns(&o, m)) {
        ts_model_free(m);
        return CLI_FAILED;
    }
    ts_model_info mi;
    if (ts_model_get_info(m, &mi, NULL) == TS_OK && mi.n_outputs > 1) {
        cli_error("%s: the model gives %u scores per row (a multiclass or multi-target model, objective '%s'); "
                  "rank sorts by one score: use 'treescore score', which prints the %u scores of each row",
                  o.model_path, mi.n_outputs, mi.objective, mi.n_outputs);
        ts_model_free(m);
        return CLI_FAILED;
    }
    /* auto: made on the first chunk (the planner times the engines on it) */
    ts_scorer *s = o.engine == TS_ENGINE_AUTO ? NULL : cli_create_scorer(m, &o, o.engine);
    tsio_reader *r = s || o.engine == TS_ENGINE_AUTO ? cli_open_data(&o, m, 1, 1) : NULL;
    cli_output out;
    rc = CLI_FAILED;
    if (r && cli_output_open(&out, o.output_path, &o) == 0) {
        rank_state st = {.o = &o, .out = out.f, .qid = INT64_MIN, .labels_ok = 1, .grades_ok = 1};
        rc = rank_stream(&st, m, &s, r);
        if (rc == CLI_OK && cli_output_commit(&out) != 0) rc = CLI_FAILED;
        if (rc != CLI_OK) cli_output_abort(&out);
        if (rc == CLI_OK && st.n_docs == 0) cli_warn_no_rows(&o);
        if (rc == CLI_OK) summary(&st, s, cli_now() - t0);
    }
    tsio_reader_close(r);
    ts_scorer_free(s);
    ts_model_free(m);
    free(o.keep);
    return rc;
}
