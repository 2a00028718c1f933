/* cmd_info.c: `treescore info`: what a model file holds. */
#include <string.h>

#include "cli.h"

static const char usage[] =
    "usage: treescore info -m MODEL [--model-format F] [--plan [-d DATA] [--batch N] [options]]\n"
    "\n"
    "Print a summary of MODEL: format, objective, trees, leaves, depth, features, base\n"
    "score, and whether its splits route missing values. With --plan, also what\n"
    "--engine auto would pick for this model, thread count and machine, for each range of\n"
    "rows per call (1, 2-5, 6-7, 8-15, 16, 17-23, 24-31, 32-63, 64-127, 128+: the table\n"
    "at the end), and why: the planner's timings of the candidate engines (us/doc per\n"
    "range), the wisdom file's earlier answers, or the rule of thumb (--planner rule).\n"
    "Timed on synthetic rows (no --data), a range whose runner-up came within 1.5x of\n"
    "its winner names both ('its first calls decide'): a scorer made this way lets the\n"
    "range's first 24 calls decide between them on its caller's rows.\n"
    "\n"
    "  -m, --model FILE        a model file (LightGBM, XGBoost, CatBoost, QuickRank, RankLib, ONNX: see --model-format)\n"
    "      --model-format F    auto (default), lightgbm, lightgbm-json, xgboost, xgboost-ubjson,\n"
    "                          xgboost-dump, quickrank, ranklib, catboost, catboost-json, onnx\n"
    CLI_FEATURES_HELP
    "      --plan              show the planner's choice\n"
    "      --batch N           plan only for calls of N rows (the scorer's batch_hint;\n"
    "                          default: every range)\n"
    "  -d, --data FILE         time the engines on the first rows of FILE (default:\n"
    "                          synthetic rows made from the model's thresholds); the data\n"
    "                          options of 'treescore score' apply\n"
    CLI_SCORER_HELP
    "  -h, --help              this help\n";

/* The scorer auto makes, timed on the first rows of -d DATA when given. */
static ts_scorer *plan_on_data(const cli_opts *o, const ts_model *m) {
    tsio_reader *r = cli_open_data(o, m, 0, 1);
    if (!r) return NULL;
    cli_chunks it;
    tsio_chunk c;
    ts_scorer *s = NULL;
    cli_chunks_init(&it, o, m, r);
    int got = cli_chunks_next(&it, &c);
    if (got == 0) cli_error("%s: no rows to plan on", o->data_path);
    if (got > 0) cli_ensure_scorer(o, m, &s, &c);
    cli_chunks_free(&it);
    tsio_reader_close(r);
    return s;
}

/* What --engine auto picks: a scorer made the way `treescore score` would make it. */
static int print_plan(cli_opts *o, const ts_model *m) {
    o->batch_hint = o->batch ? o->batch : CLI_ALL_BATCHES;
    o->engine = TS_ENGINE_AUTO;
    ts_scorer *s = o->data_path ? plan_on_data(o, m) : cli_create_scorer(m, o, TS_ENGINE_AUTO);
    if (!s) return CLI_FAILED;
    char batch[32];
    if (o->batch) snprintf(batch, sizeof batch, "batch %u", o->batch_hint);
    else snprintf(batch, sizeof batch, "every batch size");
    printf("plan:             engine %s (1 row: %s), isa %s, %u threads, %s\n", ts_engine_name(ts_scorer_engine(s)),
           ts_engine_name(ts_scorer_engine_for(s, 1)), ts_isa_name(ts_scorer_isa(s)), ts_scorer_n_threads(s), batch);
    fputs(ts_scorer_plan_report(s), stdout);
    ts_scorer_free(s);
    return CLI_OK;
}

int cmd_info(int argc, char **argv) {
    cli_opts o;
    int rc = cli_start(argc, argv, OPT_MODEL | OPT_INFO | OPT_SCORER | OPT_DATA | OPT_DATA_FORMAT | OPT_READER, usage,
                       0, &o);
    if (rc >= 0) return rc;
    if (!o.show_plan && (o.data_path || o.batch)) { /* they only shape --plan's timing */
        cli_error("info: %s is for --plan (what --engine auto picks, timed on DATA's rows); add --plan",
                  o.data_path ? "-d" : "--batch");
        return CLI_USAGE;
    }
    ts_model *m = cli_load_model(&o);
    if (!m) return CLI_FAILED;
    ts_model_info i;
    ts_model_get_info(m, &i, NULL);
    printf("model:            %s\n", o.model_path);
    printf("format:           %s\n", ts_model_format_name(i.format));
    printf("objective:        %s\n", i.objective[0] ? i.objective : "(not stated)");
    printf("trees:            %u\n", i.n_trees);
    printf("leaves:           %llu (max %u, mean %.2f per tree)\n", (unsigned long long)i.n_leaves, i.leaves_max,
           i.leaves_mean);
    printf("internal nodes:   %llu\n", (unsigned long long)i.n_internal_nodes);
    printf("depth:            max %u, mean %.2f\n", i.depth_max, i.depth_mean);
    if (i.n_features_declared)
        printf("features:         %u declared, %u used in splits\n", i.n_features_declared, i.n_features_used);
    else
        printf("features:         %u columns read (the format declares no count), %u used in splits\n",
               i.n_features, i.n_features_used);
    if (ts_model_feature_name(m, 0)) {
        printf("feature names:    %s", ts_model_feature_name(m, 0));
        for (uint32_t j = 1; j < i.n_features && j < 8; j++) printf(" %s", ts_model_feature_name(m, j));
        printf("%s\n", i.n_features > 8 ? " ..." : "");
    }
    if (cli_feature_mapping()) printf("feature mapping:  %s\n", cli_feature_mapping());
    if (i.n_outputs > 1) printf("outputs:          %u scores per row (tree t adds to one of them)\n", i.n_outputs);
    if (i.n_categorical_splits) printf("categorical:      %u splits test a category set\n", i.n_categorical_splits);
    printf("base score:       %.17g%s\n", i.base_score, i.n_outputs > 1 ? " (the first output's)" : "");
    if (i.average_output) { /* a LightGBM random forest, an ONNX AVERAGE ensemble, a built MEAN model */
        double div = 1.0;
        ts_model_output_divisor(m, 0, &div, NULL);
        printf("averaged:         the scores are the trees' sums; the model's mean (its library's predict) "
               "divides them by the trees of each output (%.17g for the first)\n", div);
    }
    printf("missing values:   %s\n", i.has_missing_splits ? "some splits route them explicitly" : "NaN goes right everywhere");
    printf("absent in SVMlight: %s\n", ts_model_absent_value(m) == 0.0f ? "0.0" : "missing (NaN)");
    char gpu[320];
    ts_gpu_info(gpu, sizeof gpu); /* the device of --engine gpu and gpu-naive, or why none */
    printf("gpu:              %s\n", gpu);
    rc = o.show_plan ? print_plan(&o, m) : CLI_OK;
    ts_model_free(m);
    return rc;
}
