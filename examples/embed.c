/* embed.c: the smallest useful program on the C API: load a model, prepare a scorer, score rows. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <treescore.h>

/* usage: embed MODEL [ROWS]
 * Scores ROWS (default 4) synthetic rows (feature j of row r = (r + j) % 7 / 2.0, every
 * third value missing) and prints one line per row: its K scores (K = 1, or the classes
 * of a multiclass model), separated by spaces. */
int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s MODEL [ROWS]\n", argv[0]);
        return 2;
    }
    size_t rows = argc > 2 ? (size_t)strtoul(argv[2], NULL, 10) : 4;

    ts_error err;
    ts_model *model = NULL;
    if (ts_model_load_file(argv[1], TS_FORMAT_AUTO, &model, &err) != TS_OK) {
        fprintf(stderr, "%s\n", err.message);
        return 1;
    }
    ts_scorer_options opts;
    ts_scorer_options_init(&opts); /* engine auto, threads 0 */
    ts_scorer *scorer = NULL;
    if (ts_scorer_create(model, &opts, &scorer, &err) != TS_OK) {
        fprintf(stderr, "%s\n", err.message);
        ts_model_free(model);
        return 1;
    }
    size_t cols = ts_scorer_n_features(scorer);
    size_t k_out = ts_scorer_n_outputs(scorer); /* scores per row: size `scores` for all of them */
    ts_model_free(model); /* the scorer keeps what it needs */

    float *x = malloc((rows * cols + 1) * sizeof *x);
    double *scores = malloc((rows * k_out + 1) * sizeof *scores);
    if (!x || !scores) {
        fprintf(stderr, "out of memory\n");
        free(x);
        free(scores);
        ts_scorer_free(scorer);
        return 1;
    }
    for (size_t r = 0; r < rows; r++)
        for (size_t j = 0; j < cols; j++)
            x[r * cols + j] = (r + j) % 3 == 0 ? NAN : (float)((r + j) % 7) / 2.0f;
    int rc = 0;
    if (ts_scorer_score(scorer, x, rows, cols, cols, scores, &err) != TS_OK) {
        fprintf(stderr, "%s\n", err.message);
        rc = 1;
    } else {
        for (size_t r = 0; r < rows; r++)
            for (size_t k = 0; k < k_out; k++) printf("%.17g%c", scores[r * k_out + k], k + 1 < k_out ? ' ' : '\n');
    }
    printf("# treescore %s, engine %s\n", ts_version_string(), ts_engine_name(ts_scorer_engine(scorer)));
    free(x);
    free(scores);
    ts_scorer_free(scorer);
    return rc;
}
