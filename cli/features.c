/* features.c: --base-score, --feature-names and the CSV header mapping of models whose splits name features. */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "io/source.h"

/* What cli_prepare_model did to the features, for `info` (one command per process). */
static char mapping_note[512];

const char *cli_feature_mapping(void) { return mapping_note[0] ? mapping_note : NULL; }

/* How many names --feature-names listed (0: none given). */
static uint32_t names_listed;

uint32_t cli_feature_names_count(void) { return names_listed; }

/* A whole line list of names: one per line, LF or CRLF, no empty lines, no NUL bytes; a
 * leading UTF-8 byte order mark is skipped. */
typedef struct name_list {
    char *text;
    char **names;
    uint32_t n;
} name_list;

static void names_free(name_list *l) {
    free(l->text);
    free(l->names);
}

static int read_names(const char *path, name_list *l) {
    memset(l, 0, sizeof *l);
    size_t n = 0;
    ts_error err;
    /* A regular file, 1 GiB at most: a FIFO or a device is refused at once, never waited on. */
    if (tsio_read_regular_file(path, (size_t)1 << 30, "feature-name list", &l->text, &n, &err) != TS_OK) {
        cli_error("--feature-names %s", err.message);
        return -1;
    }
    l->text[n] = '\0';
    size_t lines = 1;
    for (size_t i = 0; i < n; i++) lines += l->text[i] == '\n';
    if (lines > TSIO_MAX_COLS || !(l->names = malloc(lines * sizeof *l->names))) {
        cli_error("--feature-names %s: too many lines", path);
        names_free(l);
        return -1;
    }
    char *end = l->text + n, *start = l->text;
    if (n >= 3 && memcmp(start, "\xef\xbb\xbf", 3) == 0) start += 3; /* a UTF-8 byte order mark */
    for (char *s = start; s < end;) {
        char *nl = memchr(s, '\n', (size_t)(end - s));
        char *e = nl ? nl : end;
        *e = '\0';
        size_t k = (size_t)(e - s);
        if (k && s[k - 1] == '\r') s[--k] = '\0';
        if (k == 0) {
            cli_error("--feature-names %s: line %u is empty (one name per line, in column order)", path, l->n + 1);
            names_free(l);
            return -1;
        }
        if (memchr(s, '\0', k)) { /* the name would end there: "a\0b" read as "a" */
            cli_error("--feature-names %s: line %u has a NUL byte (not a text file?)", path, l->n + 1);
            names_free(l);
            return -1;
        }
        l->names[l->n++] = s;
        s = e + 1;
    }
    if (l->n == 0) {
        cli_error("--feature-names %s: no names", path);
        names_free(l);
        return -1;
    }
    return 0;
}

static int map_from_file(const cli_opts *o, ts_model *m) {
    name_list l;
    ts_error err;
    if (read_names(o->feature_names_path, &l)) return -1;
    int rc = 0;
    if (ts_model_map_features(m, (const char *const *)l.names, l.n, &err) != TS_OK) {
        cli_error("%s: %s (names from --feature-names %s)", o->model_path, err.message, o->feature_names_path);
        rc = -1;
    } else {
        snprintf(mapping_note, sizeof mapping_note, "mapped by name to the columns of %s", o->feature_names_path);
        names_listed = l.n;
    }
    names_free(&l);
    return rc;
}

/* A dump names its features in order of first use: a CSV/TSV header (a regular file,
 * since a pipe cannot be read twice) gives each its column. */
static int map_from_header(const cli_opts *o, ts_model *m) {
    tsio_data_options d;
    tsio_reader *r = NULL;
    ts_error err;
    tsio_data_options_init(&d);
    d.format = o->data_format;
    d.csv_header = o->header;
    d.csv_label_column = o->label_column;
    d.n_cols = 0; /* CSV/TSV: the file's width; SVMlight (which needs one) has no header anyway */
    if (!cli_is_regular_file(o->data_path)) return 0; /* a pipe's rows belong to the scorer */
    if (tsio_reader_open(o->data_path, &d, &r, &err) != TS_OK) return 0; /* else reported when opened for real */
    uint32_t n = tsio_reader_n_cols(r);
    int rc = 0;
    if (tsio_reader_column_name(r, 0)) {
        const char **names = malloc((n ? n : 1) * sizeof *names);
        for (uint32_t j = 0; names && j < n; j++) names[j] = tsio_reader_column_name(r, j);
        if (!names) {
            cli_error("out of memory");
            rc = -1;
        } else if (ts_model_map_features(m, names, n, &err) != TS_OK) {
            cli_error("%s: %s (the columns of %s's header; --feature-names FILE maps them otherwise)", o->model_path,
                      err.message, o->data_path);
            rc = -1;
        } else {
            snprintf(mapping_note, sizeof mapping_note, "mapped by name to the header columns of %s", o->data_path);
        }
        free(names);
    }
    tsio_reader_close(r);
    return rc;
}

int cli_prepare_model(const cli_opts *o, ts_model *m) {
    ts_model_info info;
    ts_error err;
    mapping_note[0] = '\0';
    names_listed = 0;
    if (o->has_base_score && ts_model_set_base_score(m, o->base_score, &err) != TS_OK) {
        cli_error("--base-score: %s", err.message);
        return -1;
    }
    if (o->feature_names_path) return map_from_file(o, m);
    ts_model_get_info(m, &info, NULL);
    if (info.format != TS_FORMAT_XGBOOST_DUMP) return 0;
    if (!ts_model_feature_name(m, 0)) {
        snprintf(mapping_note, sizeof mapping_note, "column numbers (split \"fN\" reads column N)");
        return 0;
    }
    snprintf(mapping_note, sizeof mapping_note,
             "by order of first use in the dump (no --feature-names and no data header mapped them)");
    if (o->data_path && strcmp(o->data_path, "-") != 0 && !o->no_name_check && map_from_header(o, m)) return -1;
    if (o->data_path && ts_model_get_info(m, &info, NULL) == TS_OK && strncmp(mapping_note, "by order", 8) == 0)
        fprintf(stderr,
                "treescore: warning: %s names its features (\"%s\", ...) and nothing maps them to columns of %s "
                "(no --feature-names, no CSV/TSV header of a file: a pipe's is not read ahead): they are read in "
                "their order of first use\n",
                o->model_path, ts_model_feature_name(m, 0), o->data_path);
    return 0;
}
