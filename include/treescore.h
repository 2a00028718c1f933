/* treescore.h: the public C API of treescore, fast exact scoring with additive tree ensembles. */
#ifndef TREESCORE_H
#define TREESCORE_H

/*
 * Overview
 * --------
 *   ts_model   a forest loaded from a LightGBM model (text or dump_model JSON), an
 *              XGBoost model (JSON, UBJSON, or get_dump JSON trees), a QuickRank, a
 *              RankLib, a CatBoost or an ONNX-ML model (see ts_model_format), or built
 *              from arrays (ts_model_builder). Immutable after loading, but for
 *              ts_model_map_features and ts_model_set_base_score.
 *   ts_scorer  a model prepared for one traversal engine ("naive", "qs", ...). Immutable
 *              after creation; it keeps no reference to the ts_model it came from.
 *
 * Every engine returns exactly the training library's own raw score: the LightGBM raw
 * score bit for bit, the XGBoost margin (XGBoost sums in float32, treescore in double),
 * the QuickRank score sum(weight * output), the RankLib score (RankLib sums in float32,
 * treescore in double; a random forest is the mean of its ensembles). A model with K
 * outputs (multiclass, multi-target) gives K raw scores per row.
 *
 * Errors
 * ------
 * Functions that can fail return an `enum ts_status` (TS_OK == 0) and, when the caller
 * passes a non-NULL `ts_error *`, fill it with the status and a message that says what
 * went wrong and where (file, line, byte offset for load errors). There is no global
 * error state: the error channel is the caller's own struct, so it is thread-safe.
 *
 * Thread safety
 * -------------
 *   ts_model:  loading is independent per call; a loaded model may be read (info,
 *              ts_scorer_create) from many threads at once. Freeing it while another
 *              thread uses it is the caller's bug.
 *   ts_scorer: ts_scorer_score may be called concurrently on one scorer from any number
 *              of threads. It takes no lock. Each calling thread keeps one scratch
 *              buffer that grows on its first calls to the largest size needed, so in
 *              steady state scoring allocates nothing.
 *
 * Threads
 * -------
 * A scorer scores a batch with up to `n_threads` threads (default: all cores): the
 * calling thread plus helpers from one process-wide pool of (cores - 1) threads,
 * started once and kept. A helper joins a batch only when it is idle, so callers that
 * are themselves multi-threaded never make more threads run than they have plus the
 * pool; small batches are scored in the calling thread alone. A call of fewer rows than
 * threads and than cores (one document on a big model) may instead split each row's
 * trees across as many threads (at most the cores), where the planner measured (or, without timing, the model's size says) that
 * it pays: each thread writes its trees' leaf values and the calling thread adds them
 * in tree order, so scores are the same bits for every thread count.
 *   ts_error:  owned by the caller; use one per thread.
 */

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every function below is exported from the shared library; the rest of the library's
 * symbols are hidden. */
#if defined(__GNUC__) || defined(__clang__)
#define TS_API __attribute__((visibility("default")))
#else
#define TS_API
#endif

/* ---- Version ---------------------------------------------------------------------- */

#define TS_VERSION_MAJOR 0
#define TS_VERSION_MINOR 1
#define TS_VERSION_PATCH 0
#define TS_VERSION_NUMBER (TS_VERSION_MAJOR * 10000 + TS_VERSION_MINOR * 100 + TS_VERSION_PATCH)
#define TS_STRINGIFY_(x) #x
#define TS_STRINGIFY(x) TS_STRINGIFY_(x)
#define TS_VERSION_STRING                                                                   \
    TS_STRINGIFY(TS_VERSION_MAJOR) "." TS_STRINGIFY(TS_VERSION_MINOR) "." TS_STRINGIFY(TS_VERSION_PATCH)

/* The version of the library actually linked (compare with TS_VERSION_NUMBER). */
TS_API unsigned ts_version_number(void);
TS_API const char *ts_version_string(void);

/* ---- Errors ----------------------------------------------------------------------- */

/* Stable numbers: values are never reused or renumbered. */
typedef enum ts_status {
    TS_OK = 0,
    TS_ERR_GENERIC = 1,           /* an error that fits no other class */
    TS_ERR_IO = 2,                /* a file could not be opened, read or written */
    TS_ERR_NO_MEMORY = 3,         /* an allocation failed */
    TS_ERR_INVALID_ARGUMENT = 4,  /* a NULL pointer, a zero size, a bad option value */
    TS_ERR_PARSE = 5,             /* a model or data file is malformed */
    TS_ERR_UNSUPPORTED = 6,       /* well-formed, but uses something treescore cannot do yet */
    TS_ERR_INVALID_MODEL = 7,     /* parsed, but the forest is inconsistent */
    TS_ERR_SHAPE = 8,             /* data does not fit the model (column count, feature id) */
    TS_ERR_ENGINE_UNAVAILABLE = 9,/* the engine is not built in or not supported by this CPU */
    TS_ERR_LIMIT = 10             /* an input exceeds a documented limit (line length, sizes) */
} ts_status;

/* "TS_OK", "TS_ERR_PARSE", ...; "TS_ERR_UNKNOWN" for numbers outside the enum. */
TS_API const char *ts_status_name(ts_status status);

#define TS_ERROR_MESSAGE_SIZE 1024

/* Filled by failing calls when the caller passes it. `message` is a complete sentence
 * naming the input ("model.txt:12: tree 3: bad threshold 'abc'"). `line` is 1-based and
 * `byte` is the 0-based offset of the problem in the input; both are 0 when unknown or
 * not applicable (line 0 never exists, so 0 means "no location"). */
typedef struct ts_error {
    ts_status status;
    unsigned long long line;
    unsigned long long byte;
    char message[TS_ERROR_MESSAGE_SIZE];
} ts_error;

/* ---- Models ----------------------------------------------------------------------- */

typedef enum ts_model_format {
    TS_FORMAT_AUTO = 0,           /* detect from content */
    TS_FORMAT_LIGHTGBM = 1,       /* LightGBM text model (save_model / model.txt) */
    TS_FORMAT_XGBOOST_JSON = 2,   /* XGBoost JSON from save_model("x.json") */
    TS_FORMAT_QUICKRANK_XML = 3,  /* QuickRank XML ensemble */
    TS_FORMAT_XGBOOST_DUMP = 4,   /* XGBoost get_dump(dump_format="json") trees, as a JSON list, or
                                     the Elasticsearch/OpenSearch LTR {"splits": [...]} wrapper */
    TS_FORMAT_LIGHTGBM_JSON = 5,  /* LightGBM dump_model() JSON (the format Vespa imports) */
    TS_FORMAT_RANKLIB = 6,        /* RankLib LambdaMART, MART and random forests */
    TS_FORMAT_XGBOOST_UBJSON = 7, /* XGBoost UBJSON (save_model("x.ubj"), the default since 2.1) */
    TS_FORMAT_CATBOOST = 8,       /* CatBoost binary model (save_model("m.cbm"), "CBM1"); float features */
    TS_FORMAT_CATBOOST_JSON = 9,  /* CatBoost save_model(format="json"); float features */
    TS_FORMAT_ONNX = 10           /* ONNX-ML tree ensemble (TreeEnsembleRegressor/Classifier, TreeEnsemble);
                                     scores are the ensemble's before post_transform */
} ts_model_format;
#define TS_FORMAT_COUNT 11

/* "auto", "lightgbm", "xgboost", "quickrank", "xgboost-dump", "lightgbm-json", "ranklib",
 * "xgboost-ubjson", "catboost", "catboost-json", "onnx"; "unknown" for numbers outside the
 * enum. */
TS_API const char *ts_model_format_name(ts_model_format format);
/* Accepts the names above (and "xgboost-json", "quickrank-xml", "ubjson"); TS_ERR_INVALID_ARGUMENT otherwise. */
TS_API ts_status ts_model_format_from_name(const char *name, ts_model_format *out);

typedef struct ts_model ts_model;

/* Load a model. With TS_FORMAT_AUTO the format is detected from the content. On failure
 * *out is set to NULL. */
TS_API ts_status ts_model_load_file(const char *path, ts_model_format format, ts_model **out, ts_error *err);
/* `name` is used in error messages only (may be NULL: "<buffer>"). The buffer is not
 * kept after the call. */
TS_API ts_status ts_model_load_buffer(const void *data, size_t size, ts_model_format format, const char *name,
                               ts_model **out, ts_error *err);
/* Accepts NULL. */
TS_API void ts_model_free(ts_model *model);

typedef struct ts_model_info {
    ts_model_format format;       /* the format it was loaded from */
    uint32_t n_trees;
    uint32_t n_features;          /* columns a row must have: 1 + the largest feature id read, or the
                                     declared count when the file declares one (never smaller) */
    uint32_t n_features_declared; /* the count the file declares (LightGBM max_feature_idx + 1,
                                     XGBoost num_feature); 0 when the format has none */
    uint32_t n_features_used;     /* distinct features appearing in splits */
    uint64_t n_internal_nodes;    /* internal (split) nodes, all trees */
    uint64_t n_leaves;            /* leaves, all trees */
    uint32_t leaves_max;
    double leaves_mean;
    uint32_t depth_max;           /* root-to-leaf edges; a one-leaf tree has depth 0 */
    double depth_mean;            /* mean over trees of each tree's max depth */
    double base_score;            /* added to every score (XGBoost margin base; 0 for LightGBM);
                                     output 0's when each output has its own (a builder's
                                     ts_model_builder_set_base_scores) */
    uint32_t average_output;      /* 1 for a LightGBM random forest (average_output): the score is
                                     still the raw score, the sum, as LightGBM's raw_score;
                                     its predict() divides by the number of trees */
    uint32_t has_missing_splits;  /* 1 when some split routes missing values specially */
    char objective[64];           /* objective named in the file ("lambdarank", "rank:ndcg"), or "" */
    uint32_t n_outputs;           /* scores per row, K: 1, or the classes of a multiclass model
                                     (LightGBM num_class, XGBoost multi:*) / targets of a
                                     multi-output model; ts_scorer_score writes rows x K */
    uint32_t n_categorical_splits;/* internal nodes that test a category set */
} ts_model_info;

/* Fills *out. Fails with TS_ERR_INVALID_ARGUMENT (NULL model or out) or TS_ERR_NO_MEMORY;
 * err may be NULL. */
TS_API ts_status ts_model_get_info(const ts_model *model, ts_model_info *out, ts_error *err);

/* The name the model file gives feature i (LightGBM feature_names, XGBoost feature_names),
 * or NULL when it gives none or i is out of range. Valid while the model lives. */
TS_API const char *ts_model_feature_name(const ts_model *model, uint32_t i);

/* Models whose splits name features (XGBoost dumps: "split": "bm25") read feature i from
 * column names[i]'s position: after this call, each split on a feature named names[c]
 * reads column c. Names of the model that are not in `names`, that `names` gives to
 * two columns, or that the model gives to two of the features its splits read, are an
 * error that names them (TS_ERR_SHAPE); the model is unchanged on failure. After it, a
 * row has n_names columns (ts_model_info.n_features is n_names, n_features_declared 0)
 * and ts_model_feature_name(i) is names[i]. Call before ts_scorer_create (a scorer
 * created earlier keeps the old columns), never concurrently with other uses of the
 * model. */
TS_API ts_status ts_model_map_features(ts_model *model, const char *const *names, uint32_t n_names,
                                       ts_error *err);

/* Set the constant added to every score (formats without one, such as XGBoost dumps,
 * load with 0). Same rules as ts_model_map_features. */
TS_API ts_status ts_model_set_base_score(ts_model *model, double base_score, ts_error *err);

/* What an absent entry of a sparse (SVMlight) row means to the training library of this
 * model: 0.0 for LightGBM and QuickRank, NaN (missing) for XGBoost. */
TS_API float ts_model_absent_value(const ts_model *model);

/* ---- Hashed categorical columns (CatBoost) -------------------------------------------
 * A CatBoost model with categorical features (one-hot and CTR splits) reads each such
 * column as a category id, not as the category itself: the loader numbers the categories
 * the model knows for the column 0 .. n-1, and a row passes the id as a float in that
 * column. Any other value (NaN, a negative number, an id the model does not know) is a
 * category the model never saw, scored as CatBoost scores an unseen category.
 * ts_model_category_id gives the id of a category's text: CatBoost hashes the bytes of
 * its string (an integer category is its decimal text: 3 and "3" are one category); the
 * id is NaN for a category the model never saw. ts_model_category_hash_id does the same
 * from CatBoost's 32-bit hash of the text (CalcCatFeatureHash). Columns are the model's
 * (after ts_model_map_features when it was called). TS_ERR_INVALID_ARGUMENT when the
 * column is not such a column; thread-safe (the model is only read). */
TS_API int ts_model_is_categorical(const ts_model *model, uint32_t column);
TS_API ts_status ts_model_category_id(const ts_model *model, uint32_t column, const char *text, size_t len,
                                      float *id, ts_error *err);
TS_API ts_status ts_model_category_hash_id(const ts_model *model, uint32_t column, uint32_t hash, float *id,
                                           ts_error *err);

/* ---- Building a model in memory ----------------------------------------------------- */
/*
 * A ts_model_builder makes a ts_model from arrays, for programs that hold a tree ensemble
 * in memory (scikit-learn's estimators: treescore.Model.from_sklearn is built on it; any
 * trainer): create, add trees, optionally set the aggregation, base scores and feature
 * names, finish into an ordinary ts_model that every engine scores (its format is
 * TS_FORMAT_AUTO: built, not loaded), free. A builder is used by one thread at a time.
 *
 * Trees (ts_tree_arrays) are scikit-learn's arrays: nodes 0 .. n_nodes-1, node 0 the
 * root; node i is a leaf when children_left[i] == children_right[i] == -1, else it tests
 * its feature and goes to children_left[i] when the test is true, children_right[i]
 * when it is false. Every node must be reached exactly once from the root (no cycle, no
 * shared or unreachable node); a failing tree is not added, and the message names the
 * tree (its index among the trees added) and the node.
 *
 * The test of an internal node, "x OP threshold" (ts_compare), on its input type:
 *   TS_INPUT_FLOAT32  x is rounded to float32 first, then compared in double with the
 *                     double threshold t (scikit-learn's trees: X cast to float32,
 *                     float64 thresholds). Stored exactly as "x <= F" on floats:
 *                       LE: F = the largest float <= t
 *                       LT: F = the largest float <  t        (t = -inf: never true)
 *                       GT: not (x <= F), F as for LE (the children are swapped)
 *                       GE: not (x <= F), F as for LT         (t = -inf: always true)
 *                     Double rows are rounded to float32 by ts_scorer_score_f64, as
 *                     scikit-learn does: exact for every input.
 *   TS_INPUT_FLOAT64  x is compared as a double (HistGradientBoosting: float64 X against
 *                     float64 thresholds). Stored as "x <= D" on doubles (D = t for LE,
 *                     the largest double below t for LT, children swapped for GT and GE)
 *                     and "x <= F" on floats (F the largest float <= D: a float x is the
 *                     double x). Exact for float rows and double rows alike, with one
 *                     restriction: the double path of the scorer treats |x| <= 1e-35 as
 *                     0.0 (LightGBM's rule, shared with LightGBM models), so a node whose
 *                     D lies in [-1e-35, 1e-35) (x <= 0.0 included) is refused with
 *                     TS_ERR_UNSUPPORTED rather than scored wrongly for such x.
 *   All trees of one model take one input type (TS_ERR_INVALID_ARGUMENT otherwise).
 *   NaN is missing: it goes to children_left when missing_left[i] is 1, to
 *   children_right when 0 (missing_left NULL: right, where "NaN OP t", false, sends it).
 *   TS_CMP_IN / TS_CMP_NOT_IN: a categorical test. The node's set (category_set[i], a
 *   bitset of category_set_words words in category_words: category c is in it when bit
 *   c % 32 of word c / 32 is set) holds categories c, integers: the input value x as the
 *   tree's input type reads it (rounded to float32 for TS_INPUT_FLOAT32, the double
 *   itself for TS_INPUT_FLOAT64) is category c when x == c exactly (scikit-learn's
 *   OrdinalEncoder: 2.5 is an unknown category, not 2); IN sends the set's members to
 *   children_left, NOT_IN to children_right. A non-member, NaN, x < 0, x >= 2^24 and a
 *   non-integer x go to the other child (missing_left is not read at categorical nodes).
 *
 * Leaf values: `values` holds n_values doubles per node (node i's at values + i *
 * n_values; only leaves are read; they must be finite). n_values == 1: the tree adds
 * weight * value to output `output`. n_values == n_outputs (K): the tree adds value k to
 * output k (it is stored as K trees with one value per leaf, one per output, which
 * scores the same bits: each output's sum runs over its trees in order).
 *
 * Score of output k (double): base_k + sum over the trees adding to k, in the order they
 * were added, of weight * value. TS_AGG_MEAN: the model's raw score is still that sum,
 * as for LightGBM random forests (ts_model_info.average_output is 1); the mean is the sum
 * divided by ts_model_output_divisor (the trees adding to that output), which is how
 * scikit-learn's forests average (a double sum in tree order, then one division).
 */
typedef struct ts_model_builder ts_model_builder;

typedef enum ts_compare {
    TS_CMP_LE = 0,     /* x <= threshold goes to children_left */
    TS_CMP_LT = 1,     /* x <  threshold goes to children_left */
    TS_CMP_GE = 2,     /* x >= threshold goes to children_left */
    TS_CMP_GT = 3,     /* x >  threshold goes to children_left */
    TS_CMP_IN = 4,     /* x's category in the node's set goes to children_left */
    TS_CMP_NOT_IN = 5  /* x's category in the node's set goes to children_right */
} ts_compare;

typedef enum ts_input_type {
    TS_INPUT_FLOAT32 = 0, /* x rounded to float32, compared in double (scikit-learn trees) */
    TS_INPUT_FLOAT64 = 1  /* x compared as a double (HistGradientBoosting) */
} ts_input_type;

typedef enum ts_aggregation {
    TS_AGG_SUM = 0,  /* base + sum of the trees (boosting) */
    TS_AGG_MEAN = 1  /* (base + sum of the trees) / trees of the output (forests) */
} ts_aggregation;

typedef struct ts_tree_arrays {
    size_t size;                    /* sizeof(ts_tree_arrays), set by ts_tree_arrays_init */
    uint32_t n_nodes;               /* nodes, leaves included (scikit-learn's node_count) */
    const int64_t *children_left;   /* n_nodes: child when the test is true, -1 at a leaf */
    const int64_t *children_right;  /* n_nodes: child when it is false, -1 at a leaf */
    const int64_t *feature;         /* n_nodes: column tested (< n_features); leaves: ignored */
    const double *threshold;        /* n_nodes: not NaN (+-inf allowed); leaves: ignored */
    ts_compare compare;             /* every node's test, unless `compares` is given; default LE */
    const uint8_t *compares;        /* optional, n_nodes ts_compare values */
    ts_input_type input;            /* default TS_INPUT_FLOAT32 */
    const uint8_t *missing_left;    /* optional, n_nodes: 1 = NaN goes to children_left */
    const double *values;           /* n_nodes * n_values leaf values (see above) */
    uint32_t n_values;              /* 1 (default) or the builder's n_outputs */
    uint32_t output;                /* n_values == 1: the output the tree adds to (default 0) */
    double weight;                  /* multiplies every leaf value (default 1.0) */
    const int64_t *category_set;    /* categorical nodes: index of their set, < n_category_sets */
    const uint32_t *category_words; /* n_category_sets * category_set_words bitset words */
    uint32_t n_category_sets;
    uint32_t category_set_words;    /* at most 2^19 (categories below 2^24) */
} ts_tree_arrays;

/* Zero every field, then size, compare = TS_CMP_LE, input = TS_INPUT_FLOAT32,
 * n_values = 1, weight = 1.0. Always call before setting fields. */
TS_API void ts_tree_arrays_init(ts_tree_arrays *tree);

/* A builder of models reading n_features columns (1 .. 2^24) with n_outputs scores per
 * row (1 .. 65,536). On failure *out is NULL. */
TS_API ts_status ts_model_builder_create(uint32_t n_features, uint32_t n_outputs, ts_model_builder **out,
                                         ts_error *err);
/* Validate, normalize and append one tree (the arrays are copied). */
TS_API ts_status ts_model_builder_add_tree(ts_model_builder *builder, const ts_tree_arrays *tree, ts_error *err);
/* TS_AGG_SUM (default) or TS_AGG_MEAN. */
TS_API ts_status ts_model_builder_set_aggregation(ts_model_builder *builder, ts_aggregation aggregation,
                                                  ts_error *err);
/* n_outputs doubles, each output's base score (default 0.0); finite. */
TS_API ts_status ts_model_builder_set_base_scores(ts_model_builder *builder, const double *base_scores,
                                                  uint32_t n, ts_error *err);
/* n_features NUL-terminated names (ts_model_feature_name). */
TS_API ts_status ts_model_builder_set_feature_names(ts_model_builder *builder, const char *const *names,
                                                    uint32_t n, ts_error *err);
/* The model (at least one tree), into *out; the builder is spent: every later call but
 * ts_model_builder_free fails with TS_ERR_INVALID_ARGUMENT. On failure *out is NULL. */
TS_API ts_status ts_model_builder_finish(ts_model_builder *builder, ts_model **out, ts_error *err);
/* Accepts NULL. */
TS_API void ts_model_builder_free(ts_model_builder *builder);

/* What the mean of output k divides the raw score by: 1.0 for a summed model, the
 * number of trees adding to output k when ts_model_info.average_output is 1 (a builder
 * model with TS_AGG_MEAN, a LightGBM random forest); 1.0 for an output no tree adds to. */
TS_API ts_status ts_model_output_divisor(const ts_model *model, uint32_t output, double *divisor, ts_error *err);

/* ---- Engines and scorers ---------------------------------------------------------- */

typedef enum ts_engine {
    TS_ENGINE_AUTO = 0,   /* the planner's choice for this model, batch size and machine: it
                             times the candidate engines on a sample batch when the scorer is
                             created and remembers the answer (see ts_plan) */
    TS_ENGINE_NAIVE = 1,  /* node-by-node traversal (Struct+): the readable reference */
    TS_ENGINE_QS = 2,     /* QuickScorer (Lucchese et al., SIGIR 2015): trees of up to 262,144
                             leaves (TS_ERR_UNSUPPORTED beyond; naive has no such limit) */
    TS_ENGINE_VQS = 3,    /* vectorized QuickScorer (Lucchese et al., SIGIR 2016): 4, 8 or 16
                             documents per SSE4.2, AVX2 or AVX-512 register; the scalar qs
                             kernel where the CPU (or the isa option) has none of them */
    TS_ENGINE_IFELSE = 4, /* compiled If-Then-Else: C source generated for the model, compiled
                             by the system C compiler (TREESCORE_CC, else cc) into a shared
                             object cached on disk (TREESCORE_CACHE_DIR, else
                             $XDG_CACHE_HOME/treescore or ~/.cache/treescore), loaded with
                             dlopen; TS_ERR_ENGINE_UNAVAILABLE when no compiler runs. The
                             cache is used only when the directory and the object are owned
                             by this user and writable by no one else (else it compiles in a
                             private temporary directory). The library prints nothing: the
                             cache hit or compile cost goes into the planner's report (auto),
                             and the CLI prints it on stderr with TREESCORE_VERBOSE=1 */
    TS_ENGINE_VPRED = 5,  /* VPred (Asadi et al., TKDE 2014): branch-free Pred traversal of
                             trees stored as arrays, depth-unrolled, v documents interleaved */
    TS_ENGINE_BLOCK_NAIVE = 6, /* naive in 2D blocks of tau trees x delta documents (SDSD loop
                             order of Tang et al., SIGIR 2014) */
    TS_ENGINE_BLOCK_VPRED = 7, /* vpred in 2D blocks of tau trees x delta documents */
    TS_ENGINE_RAPID = 8,  /* RapidScorer's layout (Ye et al., KDD 2018) on exact 8-bit feature
                             codes: each batch is quantized once (a value's code is how many
                             of the feature's thresholds lie below it), every node is then one
                             byte compare of 64 (AVX-512BW), 32 (AVX2) or 8 (scalar) documents,
                             and leaf bitvectors are byte-transposed and built row by row;
                             fastest on batches of tens of rows and more, slow on one row;
                             trees of up to 262,144 leaves, as qs (TS_ERR_UNSUPPORTED beyond) */
    TS_ENGINE_TREES_SIMD = 9, /* one document at a time, trees in SIMD lanes: 16 (AVX-512) or 8
                             (AVX2) trees step down together, each lane gathering its node and
                             the document's value; for one row and small batches */
    TS_ENGINE_GPU_NAIVE = 10, /* CUDA: one GPU thread per document walks every tree node by
                             node from global memory (the GPU baseline). Built only when nvcc
                             was found; TS_ERR_ENGINE_UNAVAILABLE without CUDA or without a
                             device; auto never picks it (docs/gpu.md) */
    TS_ENGINE_GPU = 11,      /* CUDA QuickScorer (paper 003): a block's documents and tree
                             blocks in shared memory, a warp evaluates every node of a tree
                             for 32 documents and ANDs 64-bit leaf bitvectors, no divergence;
                             same availability as TS_ENGINE_GPU_NAIVE */
    TS_ENGINE_OBLIVIOUS = 12, /* oblivious trees (CatBoost's SymmetricTree: one split per level)
                             on rapid's exact 8-bit codes: a depth-d tree is d byte compares
                             of 64 (AVX-512BW), 32 (AVX2) or 8 documents whose results are the
                             leaf index; other trees are walked on the same codes. auto times
                             it on models whose trees are all oblivious */
    TS_ENGINE_DEEP = 13      /* deep trees (thousands of leaves, fully grown forests): a block of
                             documents walks each tree in turn, 32 walks in AVX-512 gathers
                             (else 16 scalar walks) interleaved, each lane taking the next
                             document as soon as its walk reaches a leaf (no padding to the
                             tree's depth) */
} ts_engine;
#define TS_ENGINE_COUNT 14

/* "auto", "naive", "qs", "vqs", "ifelse", "vpred", "block-naive", "block-vpred", "rapid",
 * "trees-simd", "gpu-naive", "gpu", "oblivious", "deep"; "unknown" for numbers outside the
 * enum. */
TS_API const char *ts_engine_name(ts_engine engine);
/* Accepts the names above; TS_ERR_INVALID_ARGUMENT otherwise (NULL name or out included). */
TS_API ts_status ts_engine_from_name(const char *name, ts_engine *out);
/* The GPU the engines gpu and gpu-naive run on ("NVIDIA H100 80GB HBM3, compute 9.0, 79.1
 * GiB"), or why there is none ("none: this treescore was built without CUDA ..."), into
 * buf (size bytes, NUL-terminated); returns 1 when there is one, else 0. */
TS_API int ts_gpu_info(char *buf, size_t size);

/* Instruction-set levels of the vectorized engines, lowest first. A level implies the
 * ones below it. */
typedef enum ts_isa {
    TS_ISA_AUTO = 0,      /* the best level this CPU and OS support */
    TS_ISA_SCALAR = 1,    /* no SIMD: portable C */
    TS_ISA_SSE42 = 2,     /* SSE4.2 (x86-64-v2) */
    TS_ISA_AVX2 = 3,      /* AVX2 + BMI2 (x86-64-v3) */
    TS_ISA_AVX512 = 4     /* AVX-512 F, BW, DQ, VL (x86-64-v4) */
} ts_isa;
#define TS_ISA_COUNT 5

/* "auto", "scalar", "sse4.2", "avx2", "avx512". */
TS_API const char *ts_isa_name(ts_isa isa);
/* Accepts the names above (and "sse42", "avx-512"); TS_ERR_INVALID_ARGUMENT otherwise. */
TS_API ts_status ts_isa_from_name(const char *name, ts_isa *out);
/* The best level this CPU and OS support, detected once (cpuid and xgetbv), lowered by
 * the environment variable TREESCORE_ISA ("avx2", ...) when it is set. TS_ISA_SCALAR on
 * other architectures. */
TS_API ts_isa ts_cpu_isa(void);
/* Logical CPUs this process may run on (its affinity mask), at most what its cgroup's CPU
 * quota allows (a container's --cpus, rounded up): the default thread count. */
TS_API unsigned ts_cpu_count(void);

/* tau for "all trees in one block": QuickScorer as first published, without blocking. */
#define TS_BLOCK_ALL 0xFFFFFFFFu

/* How TS_ENGINE_AUTO picks an engine. */
typedef enum ts_plan {
    TS_PLAN_DEFAULT = 0,  /* TS_PLAN_MEASURE, unless the environment variable TREESCORE_PLAN
                             says "rule" */
    TS_PLAN_MEASURE = 1,  /* time the candidates on a sample batch of batch_hint rows (a few
                             hundred milliseconds at most on big models), or reuse an earlier
                             answer from the wisdom file (TREESCORE_WISDOM, else
                             <cache dir>/wisdom; "off" disables it) */
    TS_PLAN_RULE = 2      /* no timing: a rule of thumb from the tree shapes and the CPU */
} ts_plan;

typedef struct ts_scorer_options {
    size_t size;          /* sizeof(ts_scorer_options), set by ts_scorer_options_init: the
                             struct can grow in later versions, and ts_scorer_create refuses
                             a size it does not know (TS_ERR_INVALID_ARGUMENT) */
    ts_engine engine;     /* default TS_ENGINE_AUTO */
    unsigned n_threads;   /* threads per batch; 0 (default) = ts_cpu_count(); more than 1024
                             is taken as 1024 (ts_scorer_n_threads says what is used) */
    ts_isa max_isa;       /* highest instruction set the engine may use; default TS_ISA_AUTO
                             (the best of ts_cpu_isa()); a level the CPU lacks is lowered */
    uint32_t tau;         /* qs, vqs, block-naive, block-vpred: trees per block; 0 (default) =
                             sized from the cache sizes; TS_BLOCK_ALL = one block */
    uint32_t delta;       /* qs, vqs, block-naive, block-vpred: documents per block; 0 (default)
                             = sized from the cache sizes (vqs rounds it up to whole SIMD
                             registers) */
    uint32_t lanes;       /* vpred, block-vpred: documents interleaved (v); 0 (default) = the
                             engine's choice for the model. trees-simd: 8 or 16 = its SIMD
                             kernel of 8 (AVX2) or 16 (AVX-512) trees per step; 0 = depth steps
                             (below the top levels decided by byte masks where the CPU has
                             AVX-512 VBMI); 1 = depth steps from the roots.
                             oblivious: 1 = its AVX-512 kernel without VBMI's byte planes.
                             deep: 1 = its 16 scalar walks even where the CPU has AVX-512
                             (whose default is the gathered walk of 32 lanes) */
    ts_plan plan;         /* TS_ENGINE_AUTO only; default TS_PLAN_DEFAULT */
    uint32_t batch_hint;  /* TS_ENGINE_AUTO only: the rows per scoring call to plan for.
                             0 (default): every batch size: the planner picks an engine for
                             each range of rows per call (1, 2-5, 6-7, 8-15, 16, 17-23,
                             24-31, 32-63, 64-127, 128 and more),
                             prepares each chosen engine once, and every ts_scorer_score call
                             uses its range's engine (no lock, no allocation; the same bits
                             whichever). Planned without a sample, a range whose runner-up
                             timed within 1.5x of its winner keeps both, and the range's
                             first 24 calls decide between them on the caller's rows.
                             Nonzero: only batch_hint's range is planned, at
                             batch_hint rows, and its one engine scores every call (less
                             memory and planning time). ts_scorer_plan_report shows the
                             table, ts_scorer_engine_for a call's engine */
    const float *sample;  /* rows of the data to be scored (row r at sample + r * sample_stride,
                             with the model's feature count readable; used during
                             ts_scorer_create only; no rows, or a stride below the row width,
                             is TS_ERR_INVALID_ARGUMENT whatever the engine and plan): auto's
                             planner times the engines on them (reused cyclically when fewer
                             than it needs), and rapid (chosen by auto or by name) orders each
                             tree's leaves by how often its first 256 rows reach them (64 or
                             more; the same scores, faster: up to 1.2-1.3x on LightGBM and
                             scikit-learn models); NULL (default) = synthetic rows made from the
                             model's thresholds for the planner, the model's own leaf order.
                             Real rows matter: branchy engines (naive, ifelse) run much faster
                             on real data, whose paths the branch predictor learns */
    size_t sample_rows;
    size_t sample_stride; /* floats */
    unsigned packed_columns; /* 0 (default): rows have the model's columns. Nonzero: rows
                             hold only the columns ts_scorer_columns_for(model) names, in
                             that order (all of them when it names none), and
                             ts_scorer_n_features is their count: for callers that read a
                             model of many declared columns and few used ones (SVMlight
                             data for LightGBM's max_feature_idx=16777215) into rows of
                             those alone. The sample is such rows too */
    unsigned reserved[1]; /* zero */
} ts_scorer_options;

/* Fill with defaults, size included. Always call before setting fields. */
TS_API void ts_scorer_options_init(ts_scorer_options *opts);

typedef struct ts_scorer ts_scorer;

/* Prepare `model` for scoring. `opts` may be NULL (defaults). The model may be freed
 * afterwards. On failure *out is set to NULL. Memory follows the columns the splits read,
 * not the declared feature count: a model declaring many more features than it reads
 * (more than 4 x used + 1024, such as LightGBM max_feature_idx=16777215 with a few
 * splits) is prepared and planned on those columns alone, and ts_scorer_score* gather
 * them from each row (of the full width, as always) into the thread's scratch buffer. */
TS_API ts_status ts_scorer_create(const ts_model *model, const ts_scorer_options *opts, ts_scorer **out,
                           ts_error *err);
/* Accepts NULL. */
TS_API void ts_scorer_free(ts_scorer *scorer);

/* The columns a scorer of `model` reads from each row, by ts_scorer_create's own rule:
 * *cols = NULL and *n = 0 when it reads rows of the model's full width; else, for a model
 * reading few of many declared columns (more than 4 x used + 1024), the n columns its
 * splits read, ascending, in *cols (malloc'ed: release it with free()). With
 * ts_scorer_options.packed_columns, rows hold exactly these columns in this order. */
TS_API ts_status ts_scorer_columns_for(const ts_model *model, uint32_t **cols, uint32_t *n, ts_error *err);

/* The engine actually used for the largest batches now (never TS_ENGINE_AUTO; a
 * contested range's first calls may change it: see batch_hint) and the columns a row
 * must have. */
TS_API ts_engine ts_scorer_engine(const ts_scorer *scorer);
/* The engine a call of n_rows rows uses now (the plan table, or what a contested
 * range's first calls decided: see batch_hint), and 1 when
 * such a call splits each row's trees across the scorer's threads (a call of fewer rows
 * than threads, on an engine and model where that pays: see "Threads"), else 0. A call
 * that splits runs the one-row engine, and ts_scorer_engine_for names that one. */
TS_API ts_engine ts_scorer_engine_for(const ts_scorer *scorer, size_t n_rows);
TS_API int ts_scorer_splits_trees(const ts_scorer *scorer, size_t n_rows);
TS_API uint32_t ts_scorer_n_features(const ts_scorer *scorer);
/* Scores per row (ts_model_info.n_outputs): ts_scorer_score writes n_rows * K doubles,
 * row-major (the K scores of row r at out + r * K). */
TS_API uint32_t ts_scorer_n_outputs(const ts_scorer *scorer);
/* What the scorer actually uses: instruction set (TS_ISA_SCALAR for naive, qs, vpred,
 * block-naive and block-vpred; for vqs, rapid, trees-simd, oblivious, deep and ifelse the
 * level of the SIMD code they run), threads per batch, and the block sizes tau (trees)
 * and delta (documents) of qs, vqs, block-naive, block-vpred and rapid (delta alone, tau
 * 0, for oblivious and deep; 0 and 0 for the other engines). */
TS_API ts_isa ts_scorer_isa(const ts_scorer *scorer);
TS_API unsigned ts_scorer_n_threads(const ts_scorer *scorer);
TS_API void ts_scorer_blocking(const ts_scorer *scorer, uint32_t *tau, uint32_t *delta);
/* Why the scorer uses its engine: for TS_ENGINE_AUTO the planner's report (candidates,
 * their measured microseconds per document, the wisdom file hit or the rule applied,
 * then, after a line "notes:", what was said while planning: warnings such as an
 * untrusted cache directory or an ignored environment variable, ifelse's cache report;
 * the library itself never prints), for an explicit engine "engine requested". Owned by
 * the scorer; never NULL. */
TS_API const char *ts_scorer_plan_report(const ts_scorer *scorer);

/* Score `n_rows` rows of a dense row-major float32 matrix: row r starts at
 * x + r * row_stride (in floats) and has `n_cols` readable values; NaN is a missing
 * value. Requires n_cols >= ts_scorer_n_features() and row_stride >= n_cols; columns
 * past the model's features are ignored. Writes n_rows * K doubles to `out` (K = ts_scorer_n_outputs, usually 1).
 * n_rows == 0 is a no-op. Thread-safe, lock-free (see above). Fails only with
 * TS_ERR_INVALID_ARGUMENT, TS_ERR_SHAPE, or TS_ERR_NO_MEMORY when a thread's scratch
 * buffer cannot grow. */
TS_API ts_status ts_scorer_score(const ts_scorer *scorer, const float *x, size_t n_rows, size_t n_cols,
                          size_t row_stride, double *out, ts_error *err);

/* Score rows of doubles (row r at x + r * row_stride, n_cols readable, NaN missing) the
 * way the training library scores float64 input:
 *   - LightGBM compares doubles with its double thresholds: the scores equal its
 *     predict(raw_score=True) on a float64 matrix (and on text files) bit for bit;
 *   - XGBoost and QuickRank convert each value to float32 first, and so does this call.
 * Each row is rounded to the float32 row that takes the same path in every tree (usually
 * the nearest floats; the other neighbour when a threshold lies between); a row no float
 * row can stand for (two thresholds within one float32 gap, the value between them) is
 * scored by an exact double traversal. Requirements and guarantees as for
 * ts_scorer_score; its working memory is the calling thread's scratch buffer (see
 * "Thread safety"), as for ts_scorer_score. */
TS_API ts_status ts_scorer_score_f64(const ts_scorer *scorer, const double *x, size_t n_rows, size_t n_cols,
                                     size_t row_stride, double *out, ts_error *err);

#ifdef __cplusplus
}
#endif

#endif /* TREESCORE_H */
