/* builder.c: a model built in memory with ts_model_builder (scikit-learn's tree arrays), scored by every engine. */
#include <math.h>
#include <stdio.h>

#include <treescore.h>

/*
 * A forest of two trees on 2 features, averaged (TS_AGG_MEAN) as scikit-learn's random
 * forests are, with 2 outputs (class probabilities: each leaf holds K = 2 values).
 *
 *   tree 0:  node 0: x0 <= 0.5 ?            tree 1:  node 0: x1 > 2.0 ?  (NaN: left)
 *              yes -> node 1 (leaf [0.9, 0.1])          yes -> node 2 (leaf [0.2, 0.8])
 *              no  -> node 2: x1 <= 1.5 ?               no  -> node 1 (leaf [0.6, 0.4])
 *                     yes -> node 3 (leaf [0.3, 0.7])
 *                     no  -> node 4 (leaf [0.0, 1.0])
 *
 * The raw score is the sum over the trees; the mean divides it by
 * ts_model_output_divisor (2 here): a double sum in tree order, then one division.
 */
int main(void) {
    ts_error err;
    ts_model_builder *b = NULL;
    if (ts_model_builder_create(2, 2, &b, &err) != TS_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    /* tree 0: scikit-learn's arrays; -1 marks a leaf; values: K per node (leaves read) */
    const int64_t left0[5] = {1, -1, 3, -1, -1}, right0[5] = {2, -1, 4, -1, -1}, feat0[5] = {0, -2, 1, -2, -2};
    const double thr0[5] = {0.5, -2, 1.5, -2, -2};
    const double val0[10] = {0, 0, 0.9, 0.1, 0, 0, 0.3, 0.7, 0.0, 1.0};
    ts_tree_arrays t;
    ts_tree_arrays_init(&t);
    t.n_nodes = 5;
    t.children_left = left0;
    t.children_right = right0;
    t.feature = feat0;
    t.threshold = thr0;
    t.compare = TS_CMP_LE;       /* scikit-learn: x <= threshold goes left */
    t.input = TS_INPUT_FLOAT32;  /* and x is rounded to float32 first */
    t.values = val0;
    t.n_values = 2;
    ts_status st = ts_model_builder_add_tree(b, &t, &err);

    /* tree 1: x1 > 2.0 goes to children_left; NaN goes left too */
    const int64_t left1[3] = {2, -1, -1}, right1[3] = {1, -1, -1}, feat1[3] = {1, -2, -2};
    const double thr1[3] = {2.0, -2, -2};
    const double val1[6] = {0, 0, 0.6, 0.4, 0.2, 0.8};
    const uint8_t nan_left[3] = {1, 0, 0};
    ts_tree_arrays_init(&t);
    t.n_nodes = 3;
    t.children_left = left1;
    t.children_right = right1;
    t.feature = feat1;
    t.threshold = thr1;
    t.compare = TS_CMP_GT;
    t.missing_left = nan_left;
    t.values = val1;
    t.n_values = 2;
    if (st == TS_OK) st = ts_model_builder_add_tree(b, &t, &err);

    const char *names[2] = {"height", "width"};
    if (st == TS_OK) st = ts_model_builder_set_feature_names(b, names, 2, &err);
    if (st == TS_OK) st = ts_model_builder_set_aggregation(b, TS_AGG_MEAN, &err);
    ts_model *model = NULL;
    if (st == TS_OK) st = ts_model_builder_finish(b, &model, &err);
    ts_model_builder_free(b);
    if (st != TS_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }

    double divisor[2];
    ts_model_output_divisor(model, 0, &divisor[0], NULL);
    ts_model_output_divisor(model, 1, &divisor[1], NULL);
    const float x[4 * 2] = {0.25f, 3.0f, 1.0f, 1.0f, 1.0f, NAN, 0.5f, 2.0f};
    double ref[4 * 2];
    int rc = 0;
    for (int e = TS_ENGINE_NAIVE; e < TS_ENGINE_COUNT; e++) {
        if (e == TS_ENGINE_IFELSE || e == TS_ENGINE_GPU_NAIVE || e == TS_ENGINE_GPU) continue; /* a compiler, a GPU */
        ts_scorer_options opts;
        ts_scorer_options_init(&opts);
        opts.engine = (ts_engine)e;
        ts_scorer *s = NULL;
        double out[4 * 2];
        if (ts_scorer_create(model, &opts, &s, &err) != TS_OK ||
            ts_scorer_score(s, x, 4, 2, 2, out, &err) != TS_OK) {
            fprintf(stderr, "%s: %s\n", ts_engine_name((ts_engine)e), err.message);
            ts_scorer_free(s);
            rc = 1;
            continue;
        }
        ts_scorer_free(s);
        for (int i = 0; i < 8; i++) {
            out[i] /= divisor[i % 2];
            if (e == TS_ENGINE_NAIVE) ref[i] = out[i];
            else if (out[i] != ref[i]) rc = 1;
        }
    }
    printf("# %s %s, 2 trees, mean of 2: every engine agrees: %s\n", ts_model_feature_name(model, 0),
           ts_model_feature_name(model, 1), rc ? "no" : "yes");
    for (int r = 0; r < 4; r++) printf("%g %g\n", ref[2 * r], ref[2 * r + 1]);
    ts_model_free(model);
    return rc;
}
