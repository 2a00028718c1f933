/* cli.h: what the treescore subcommands share: options, inputs, output files, messages. */
#ifndef TS_CLI_H
#define TS_CLI_H

#include <stdint.h>
#include <stdio.h>
#include <sys/stat.h>

#include "data/data.h"
#include "treescore.h"

/* Exit statuses of every subcommand. */
enum { CLI_OK = 0, CLI_FAILED = 1, CLI_USAGE = 2 };

/* The names messages and help texts list. */
#define CLI_ENGINE_NAMES "auto, naive, qs, vqs, ifelse, vpred, block-naive, block-vpred, rapid, trees-simd, oblivious, gpu-naive, gpu, deep"
#define CLI_ISA_NAMES "auto, scalar, sse4.2, avx2, avx512"
/* The help lines of --threads, --isa, --tau and --delta (score, rank, bench). */
#define CLI_SCORER_HELP                                                                     \
    "  -t, --threads N         threads per batch (default 0: all cores); every count gives\n" \
    "                          the same scores\n"                                           \
    "      --isa LEVEL         highest instruction set: auto (default: the best this CPU\n"  \
    "                          has), scalar, sse4.2, avx2, avx512; a level the CPU lacks is\n" \
    "                          lowered to its best (so is any level above the environment\n" \
    "                          variable TREESCORE_ISA)\n"                                   \
    "      --tau N|all         qs, vqs, block-naive, block-vpred, rapid: trees per block; 0\n" \
    "                          (default) = sized from the CPU's cache sizes; all = one\n"   \
    "                          block of every tree\n"                                       \
    "      --delta N           the same engines: documents per block; 0 (default) = sized\n" \
    "                          from the cache sizes (vqs rounds up to whole SIMD registers;\n" \
    "                          rapid: 1,024, in groups of 64, 32 or 8 documents)\n"       \
    "      --lanes N           vpred, block-vpred: documents interleaved; 0 (default) = the\n" \
    "                          engine's choice for the model; trees-simd: 8 or 16 trees per\n" \
    "                          SIMD step (AVX2, AVX-512 gathers), 0 = depth steps;\n"      \
    "                          oblivious: 1 = its AVX-512 kernel without VBMI\n"          \
    "      --planner MODE      how --engine auto picks: measure (default: time the engines\n" \
    "                          on a sample, remembered in the wisdom file) or rule (no\n"   \
    "                          timing); the environment variable TREESCORE_PLAN too\n"

/* Largest --threads (the library uses at most 1024 per batch) and --delta accepted. */
#define CLI_MAX_THREADS 4096u
#define CLI_MAX_DELTA (1u << 24)

/* cli_opts.batch_hint: plan every range of rows per call (ts_scorer_options.batch_hint 0). */
#define CLI_ALL_BATCHES 0xFFFFFFFFu

/* Every option any subcommand takes; each subcommand says which it accepts. */
typedef struct cli_opts {
    const char *model_path;
    const char *data_path;
    const char *output_path;     /* NULL = stdout */
    const char *query_file;
    const char *engines;         /* bench: comma-separated engine specs */
    ts_model_format model_format;
    tsio_data_format data_format;
    ts_engine engine;
    unsigned threads;            /* 0 = all cores */
    ts_isa isa;                  /* highest instruction set (TS_ISA_AUTO = the best) */
    uint32_t tau, delta;         /* blocks: trees, documents (0 = auto) */
    uint32_t lanes;              /* vpred: documents interleaved (0 = auto) */
    ts_plan plan;                /* how auto picks (--planner) */
    unsigned batch_hint;         /* rows per scoring call, told to the planner (0: the CLI's
                                    chunk rows; CLI_ALL_BATCHES: every range, batch_hint 0) */
    int show_plan;               /* info --plan */
    const float *sample;         /* rows for the planner (NULL: synthetic) */
    size_t sample_rows, sample_stride;
    int one_based;
    int header;                  /* -1 detect, 0, 1 */
    int label_column;            /* -1 none */
    unsigned top;                /* rank: rows printed per query */
    unsigned ndcg_k;             /* rank: K of NDCG@K (0 = top) */
    long print_queries;          /* rank: queries printed (-1 = all) */
    unsigned repeat;             /* bench */
    unsigned batch;              /* bench: rows per call (0 = all) */
    uint64_t max_rows;           /* bench: rows loaded (0 = all) */
    int dtype;                   /* bench --dtype: 32 or 64; 0: as score would (doubles from text) */
    int tsv;                     /* bench: --format tsv output */
    int quiet;                   /* no progress on stderr */
    int no_name_check;           /* CSV/TSV header names are not compared with the model's */
    const char *feature_names_path; /* --feature-names: one name per line, in column order */
    double base_score;           /* --base-score, when has_base_score */
    int has_base_score;
    int help;
    uint32_t *keep;              /* SVMlight, a model reading few of many columns: the columns
                                    it reads (cli_choose_columns; free it); else NULL */
    uint32_t n_keep, keep_of;    /* n_keep of the model's keep_of columns */
    int keep_strict;             /* ids past keep_of are an error (the model declared them) */
    int reads_beside_query;      /* rank: DATA.query is read when -q is not given (-o must
                                    not overwrite it) */
} cli_opts;

/* Option flags: which options a subcommand accepts (OPT_SCORER: --threads, --isa, --tau,
 * --delta, --lanes, --planner). */
enum {
    OPT_MODEL = 1 << 0, OPT_DATA = 1 << 1, OPT_OUTPUT = 1 << 2, OPT_ENGINE = 1 << 3, OPT_SCORER = 1 << 4,
    OPT_DATA_FORMAT = 1 << 5, OPT_READER = 1 << 6, OPT_RANK = 1 << 7, OPT_BENCH = 1 << 8, OPT_QUIET = 1 << 9,
    OPT_INFO = 1 << 10
};

/* Set one scorer setting from its text: key "threads", "isa", "tau" (a number or
 * "all"), "delta", "lanes" or "planner", as the options --KEY and bench's engine specs give them. Prints
 * the problem and returns -1 on a bad key or value. */
int cli_set_tuning(cli_opts *o, const char *key, const char *value);

/* --base-score's value: a finite number (message and -1 otherwise). */
int cli_parse_base_score(const char *v, double *out);

/* Parse argv[1..] (argv[0] is the subcommand name). Prints the problem and returns
 * CLI_USAGE on a bad option; CLI_OK otherwise (opts->help set for --help). */
int cli_parse(int argc, char **argv, unsigned accepted, cli_opts *opts);

/* The start every subcommand shares: parse its options, answer --help with `usage`,
 * require -m (and -d when need_data). Returns -1 to go on, else the exit status. */
int cli_start(int argc, char **argv, unsigned accepted, const char *usage, int need_data, cli_opts *opts);

/* "treescore: " + message on stderr. */
void cli_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* "treescore: warning: DATA: no rows to score ..." on stderr (score and rank on an empty
 * file or a header-only CSV: the exit status stays 0). */
void cli_warn_no_rows(const cli_opts *o);

/* Load the model named in opts (message and NULL on failure), then cli_prepare_model. */
ts_model *cli_load_model(const cli_opts *o);
/* features.c: apply --base-score and --feature-names; a dump whose splits name features
 * is mapped through the CSV/TSV header of -d DATA when there is one. Message and -1 on
 * failure. cli_feature_mapping: how the features were mapped, for info (NULL: as read). */
int cli_prepare_model(const cli_opts *o, ts_model *m);
const char *cli_feature_mapping(void);
/* The count of names --feature-names listed, one per data column (0: none given). */
uint32_t cli_feature_names_count(void);
/* The help lines of --feature-names and --base-score. */
#define CLI_FEATURES_HELP                                                                   \
    "      --feature-names FILE  one name per line, in the data's column order: a split on\n" \
    "                          a named feature reads that name's column (XGBoost dumps name\n" \
    "                          features; a CSV/TSV header maps them too)\n"                 \
    "      --base-score X      the constant added to every score (XGBoost dumps have none:\n" \
    "                          0 by default); replaces the model's own\n"
/* Create a scorer for `engine` with the threads, isa, tau and delta in opts (message
 * and NULL on failure). */
ts_scorer *cli_create_scorer(const ts_model *m, const cli_opts *o, ts_engine engine);
/* For --engine auto the scorer is made when the first chunk is in, so that the planner
 * times the engines on rows of the data (*s NULL on entry); a no-op when *s is set.
 * Message and -1 on failure. */
int cli_ensure_scorer(const cli_opts *o, const ts_model *m, ts_scorer **s, const tsio_chunk *c);
/* Open the data for this model: SVMlight reads feature id k into column k of a matrix
 * as wide as the model, with the model library's meaning of absent entries; CSV/TSV/raw
 * must have the model's column count. want_queries: find query sizes (the --query-file,
 * or DATA.query next to the data as LightGBM does). want_doubles: text values as
 * doubles (chunk.xd), scored with ts_scorer_score_f64 so that a library comparing in
 * double (LightGBM) gets its exact decisions. Message and NULL on failure. */
tsio_reader *cli_open_data(const cli_opts *o, const ts_model *m, int want_queries, int want_doubles);
/* SVMlight data and a model that reads few of many declared columns (a handful of
 * 16,777,216): the columns a scorer reads (ts_scorer_columns_for, the scorer's own rule)
 * go to o->keep, cli_open_data reads only those, packed, and cli_create_scorer asks for
 * such rows (ts_scorer_options.packed_columns), so that rows, chunks and the planner's
 * sample hold the columns read, not the declared count. The model is not changed and
 * scores are the same. A no-op for other models and formats (and on standard input,
 * whose format is not known yet). Message and -1 on failure. */
int cli_choose_columns(cli_opts *o, const ts_model *m);
/* Non-zero (having said why) when m reads CatBoost category ids the data files cannot give. */
int cli_refuse_hashed_categories(const cli_opts *o, const ts_model *m);
/* Check a chunk's width against the model; message and nonzero on mismatch. */
int cli_check_width(const cli_opts *o, const ts_model *m, uint32_t n_cols);

/* The chunks of one data file for one model: reading errors are printed, the width is
 * checked on the first chunk, and scores land in a buffer grown as needed. */
typedef struct cli_chunks {
    const cli_opts *o;
    const ts_model *m;
    tsio_reader *r;
    int width_checked;
    double *scores;
    size_t cap;
} cli_chunks;
void cli_chunks_init(cli_chunks *it, const cli_opts *o, const ts_model *m, tsio_reader *r);
/* 1: the next chunk is in *c; 0: end of input; -1: error (printed). */
int cli_chunks_next(cli_chunks *it, tsio_chunk *c);
/* Score chunk c into it->scores; nonzero on error (printed). */
int cli_chunks_score(cli_chunks *it, ts_scorer *s, const tsio_chunk *c);
void cli_chunks_free(cli_chunks *it);

/* An output that appears only when complete: writes go to a temporary file beside
 * OUT, renamed over OUT by cli_output_commit; cli_output_abort removes it. With no
 * path, stdout (which cannot be taken back). */
typedef struct cli_output {
    FILE *f;
    const char *path;
    char tmp[4096];
    char real[4096];   /* the resolved path when OUT exists (through symbolic links) */
} cli_output;
/* The output must not overwrite an input: o's data, model, query file or feature names
 * (o may be NULL). */
int cli_output_open(cli_output *out, const char *path, const cli_opts *o);
/* 1 when path names a regular file (stat follows links): one that may be opened twice. */
static inline int cli_is_regular_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}
int cli_output_commit(cli_output *out);
void cli_output_abort(cli_output *out);

/* Progress on stderr for long runs: only on a terminal, at most twice a second. */
typedef struct cli_progress {
    int enabled;
    double start, last;
} cli_progress;
void cli_progress_init(cli_progress *p, int quiet);
void cli_progress_update(cli_progress *p, uint64_t rows);
void cli_progress_done(cli_progress *p);

double cli_now(void); /* monotonic seconds */

int cmd_score(int argc, char **argv);
int cmd_rank(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_bench(int argc, char **argv);

#endif /* TS_CLI_H */
