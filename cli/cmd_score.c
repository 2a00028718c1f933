/* cmd_score.c: `treescore score`: one score per input row, streamed chunk by chunk. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static const char usage[] =
    "usage: treescore score -m MODEL -d DATA [-o OUT] [options]\n"
    "\n"
    "Score every row of DATA with MODEL and print one score per line (%.17g: the exact\n"
    "double); a model with K > 1 outputs (multiclass, multi-target) prints K tab-separated\n"
    "scores per line, in class order. The scores are the training library's raw scores:\n"
    "LightGBM raw_score, XGBoost output_margin, CatBoost RawFormulaVal, QuickRank\n"
    "sum(weight * output), ONNX the tree node's scores before post_transform (the sum for\n"
    "AVERAGE). DATA is read and scored in chunks, so files of any size run in bounded\n"
    "memory.\n"
    "\n"
    "  -m, --model FILE        a model file (LightGBM, XGBoost, CatBoost, QuickRank, RankLib, ONNX: see --model-format)\n"
    "      --model-format F    auto (default), lightgbm, lightgbm-json, xgboost, xgboost-ubjson,\n"
    "                          xgboost-dump, quickrank, ranklib, catboost, catboost-json, onnx\n"
    CLI_FEATURES_HELP
    "  -d, --data FILE         data file, or - for standard input\n"
    "  -f, --format F          auto (default: from the extension: .csv, .tsv, .raw/.f32; else\n"
    "                          raw for a TSRAWF32 header, else SVMlight), svmlight, csv,\n"
    "                          tsv, raw (TSRAWF32 float32 matrix)\n"
    "  -o, --output FILE       write here instead of standard output; the file appears only\n"
    "                          when every row was scored\n"
    "  -e, --engine E          " CLI_ENGINE_NAMES ";\n"
    "                          auto (default) times the engines on the data's first rows\n"
    "                          and keeps the fastest (remembered in the wisdom file; ifelse\n"
    "                          only once it is compiled); with --planner rule, per range of\n"
    "                          rows per call: oblivious (all trees oblivious, 8+ rows), deep\n"
    "                          (wide trees, 16+), rapid (1,000 nodes or more, 32+, AVX2),\n"
    "                          trees-simd (1-7 rows; up to 31 with AVX-512 VBMI), else vpred\n"
    "                          without AVX2, vqs up to 64 leaves, vpred beyond\n"
    CLI_SCORER_HELP
    "  -q, --query-file FILE   query sizes, one per line (any data format; checked against\n"
    "                          the rows)\n"
    "      --one-based         SVMlight: feature id k is column k-1 (scikit-learn's\n"
    "                          zero_based=False); default: id k is column k, as LightGBM and\n"
    "                          XGBoost read LETOR files\n"
    "      --header, --no-header   CSV/TSV: the first line is (not) a header (default: detect)\n"
    "      --label-column K    CSV/TSV: column K (counting from 0) is a label, not a feature\n"
    "      --no-name-check     CSV/TSV: score even when the header's column names differ from\n"
    "                          the feature names the model file gives (default: an error)\n"
    "      --quiet             no progress messages\n"
    "  -h, --help              this help\n"
    "\n"
    "SVMlight entries absent from a line are 0.0 for LightGBM and QuickRank models and\n"
    "missing (NaN) for XGBoost models, as each library reads sparse data. In CSV/TSV, an\n"
    "empty field, nan, NaN or NA is missing. A CatBoost model's categorical columns hold\n"
    "the categories' text in CSV/TSV (red, 3, \"a, \"\"quoted\"\" one\"; every field is text\n"
    "there, the empty one too); SVMlight cannot carry them.\n";

static int score_stream(const cli_opts *o, const ts_model *m, ts_scorer **s, tsio_reader *r, cli_output *out,
                        uint64_t *rows) {
    uint64_t total = 0;
    cli_progress prog;
    cli_chunks it;
    tsio_chunk c;
    int got;
    cli_progress_init(&prog, o->quiet);
    cli_chunks_init(&it, o, m, r);
    while ((got = cli_chunks_next(&it, &c)) > 0) {
        if (cli_ensure_scorer(o, m, s, &c) || cli_chunks_score(&it, *s, &c)) {
            got = -1;
            break;
        }
        uint32_t k = ts_scorer_n_outputs(*s);
        for (size_t i = 0; i < c.n_rows; i++)
            for (uint32_t j = 0; j < k; j++)
                fprintf(out->f, j + 1 < k ? "%.17g\t" : "%.17g\n", it.scores[i * k + j]);
        total += c.n_rows;
        cli_progress_update(&prog, total);
    }
    cli_progress_done(&prog);
    cli_chunks_free(&it);
    *rows = total;
    return got == 0 ? CLI_OK : CLI_FAILED;
}

int cmd_score(int argc, char **argv) {
    cli_opts o;
    int rc = cli_start(argc, argv,
                       OPT_MODEL | OPT_DATA | OPT_OUTPUT | OPT_ENGINE | OPT_SCORER | OPT_DATA_FORMAT | OPT_READER |
                           OPT_QUIET,
                       usage, 1, &o);
    if (rc >= 0) return rc;
    ts_model *m = cli_load_model(&o);
    if (!m) return CLI_FAILED;
    if (cli_choose_columns(&o, m)) {
        ts_model_free(m);
        return CLI_FAILED;
    }
    /* auto: made on the first chunk (the planner times the engines on it) */
    ts_scorer *s = o.engine == TS_ENGINE_AUTO ? NULL : cli_create_scorer(m, &o, o.engine);
    tsio_reader *r = s || o.engine == TS_ENGINE_AUTO ? cli_open_data(&o, m, 0, 1) : NULL;
    cli_output out;
    rc = CLI_FAILED;
    if (r && cli_output_open(&out, o.output_path, &o) == 0) {
        uint64_t rows = 0;
        rc = score_stream(&o, m, &s, r, &out, &rows);
        if (rc == CLI_OK && cli_output_commit(&out) != 0) rc = CLI_FAILED;
        if (rc == CLI_OK && rows == 0) cli_warn_no_rows(&o);
        if (rc != CLI_OK) cli_output_abort(&out);
    }
    tsio_reader_close(r);
    ts_scorer_free(s);
    ts_model_free(m);
    free(o.keep);
    return rc;
}
