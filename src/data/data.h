/* data.h: streaming readers of feature matrices (SVMlight/LETOR text, CSV/TSV, raw float32). */
#ifndef TS_DATA_DATA_H
#define TS_DATA_DATA_H

#include <stddef.h>
#include <stdint.h>

#include "treescore.h"

/*
 * A reader hands out the input in chunks of at most `chunk_rows` rows as a dense
 * row-major float32 matrix, so files of any size are scored in bounded memory. It reads
 * through a fixed-size buffer (never the whole file), works on pipes ("-" is stdin),
 * and reports errors as "FILE:LINE: what" with err->line set.
 */

typedef enum tsio_data_format {
    TSIO_DATA_AUTO = 0,     /* from the file name: .csv -> CSV, .tsv -> TSV, .f32/.raw -> raw,
                               else sniffed: "TSRAWF32" magic -> raw, else SVMlight */
    TSIO_DATA_SVMLIGHT = 1, /* label [qid:Q] id:v ... [# comment], LF or CRLF */
    TSIO_DATA_CSV = 2,      /* comma-separated; "nan", "NaN", "NA", "" are missing (NaN) */
    TSIO_DATA_TSV = 3,      /* the same with tabs */
    TSIO_DATA_RAW = 4,      /* header + float32 little-endian matrix, see below */
    TSIO_DATA_COUNT         /* one past the last */
} tsio_data_format;

/* Raw float32 matrix file: a 24-byte header then n_rows * n_cols float32 values,
 * little-endian, row-major.
 *   bytes 0-7   magic "TSRAWF32"
 *   bytes 8-11  uint32 version (1)
 *   bytes 12-15 uint32 n_cols
 *   bytes 16-23 uint64 n_rows
 */
#define TSIO_RAW_MAGIC "TSRAWF32"
#define TSIO_RAW_HEADER_SIZE 24
/* The widest matrix any reader produces (as TSM_MAX_FEATURES: a row is 64 MiB). */
#define TSIO_MAX_COLS (1u << 24)

typedef struct tsio_data_options {
    tsio_data_format format;
    /* Columns of the produced matrix. SVMlight: required (> 0): feature id k goes to
     * column k (column k-1 with one_based). CSV/TSV/raw: 0 = take the file's column
     * count; otherwise the file must have exactly this many feature columns. */
    uint32_t n_cols;
    /* SVMlight: keep only these columns (n_keep of them, ascending, each < n_cols: the
     * columns a model reads): column keep[j] becomes column j of the matrix, which then
     * has n_keep columns; the other ids are still checked (range, duplicates) and their
     * values dropped. The array is copied when the reader opens. NULL (default): all
     * n_cols columns. A model reading 3 of 16,777,216 declared columns needs rows of 3. */
    const uint32_t *keep;
    uint32_t n_keep;
    /* SVMlight: a feature id past n_cols is an error when set, ignored when clear. */
    int strict_cols;
    /* SVMlight: value of features absent from a line (0.0f for LightGBM/QuickRank
     * models, NaN for XGBoost). */
    float absent_value;
    /* SVMlight: ids are 1-based and id k goes to column k-1 (scikit-learn's
     * load_svmlight_file(zero_based=False)). Default 0: id k -> column k as LightGBM
     * and XGBoost read LETOR files. */
    int one_based;
    /* SVMlight: file of query sizes (one per line, LightGBM's ".query"), used when lines
     * carry no qid:. NULL: none. */
    const char *query_file;
    /* CSV/TSV: 1 the first line is a header, 0 it is not, -1 detect (a first line with a
     * field that is not a number and not a missing marker is a header). */
    int csv_header;
    /* CSV/TSV: index of a label column, removed from the features; -1 for none. */
    int csv_label_column;
    /* Text formats (SVMlight, CSV, TSV): deliver each value as the correctly rounded
     * double of its text in chunk->xd (chunk->x is then NULL), for libraries that
     * compare in double; values beyond float range are then accepted. Raw files always
     * deliver floats. */
    int double_values;
    /* CSV/TSV: feature columns read as text (a CatBoost model's categorical features,
     * whose values are category names). Feature column j (counted without the label
     * column) is text when j < n_text_columns and text_columns[j] is nonzero (the array
     * is copied when the reader opens). Such a field's text (an unquoted field without
     * the spaces around it, a quoted one without its quotes and with "" read as ") goes
     * to text_value(text_ctx, j, text, len, &value, err), and value is the column's
     * value; the missing markers are text there too ("" is the empty string, NA the two
     * letters). A failure is reported as "FILE:LINE: column J ('NAME'): message". With
     * text columns a header is detected from the other columns alone; when every
     * column is text, a first line is a header when its fields are header_names (the
     * n_header_names feature names the caller expects, read during open only), else
     * not. Ignored by the other formats; NULL: numbers only. */
    const unsigned char *text_columns;
    uint32_t n_text_columns;
    ts_status (*text_value)(void *ctx, uint32_t column, const char *text, size_t len, double *value,
                            ts_error *err);
    void *text_ctx;
    const char *const *header_names;
    uint32_t n_header_names;
    size_t chunk_rows;      /* 0 = default 4096 */
    size_t max_line_bytes;  /* 0 = default TSIO_DEFAULT_MAX_LINE; longer lines are TS_ERR_LIMIT */
} tsio_data_options;

#define TSIO_DEFAULT_CHUNK_ROWS 4096
#define TSIO_DEFAULT_MAX_LINE (1u << 20)

void tsio_data_options_init(tsio_data_options *o); /* the defaults above; format AUTO, csv_header -1, csv_label_column -1 */

typedef struct tsio_chunk {
    size_t n_rows;          /* 0 at end of input */
    uint32_t n_cols;
    const float *x;         /* n_rows * n_cols, row-major; NaN = missing (NULL when xd is set) */
    const double *xd;       /* the same as doubles, with double_values on a text format; else NULL */
    const double *labels;   /* n_rows; NaN where the input has no label */
    const int64_t *qids;    /* n_rows; qid: value, or the group index from query_file, or -1 */
    const char *const *comments; /* n_rows; text after '#' (trimmed) or NULL */
    uint64_t first_line;    /* input line of row 0 (1-based) */
    uint64_t first_row;     /* index of row 0 in the whole input */
} tsio_chunk;

typedef struct tsio_reader tsio_reader;

/* Open `path` ("-" = standard input). On failure *out is NULL. */
ts_status tsio_reader_open(const char *path, const tsio_data_options *opts, tsio_reader **out, ts_error *err);
/* The next chunk; its arrays stay valid until the next call or close. At the end of
 * input returns TS_OK with chunk->n_rows == 0 (and checks that a query file's sizes
 * add up to the rows read). */
ts_status tsio_reader_next(tsio_reader *r, tsio_chunk *chunk, ts_error *err);
/* Columns of the produced matrix (known after open). */
uint32_t tsio_reader_n_cols(const tsio_reader *r);
/* Accepts NULL. */
void tsio_reader_close(tsio_reader *r);

/* The name of feature column j from a CSV/TSV header line; NULL without a header. */
const char *tsio_reader_column_name(const tsio_reader *r, uint32_t j);

/* The format a reader chose (after AUTO resolution); and names for messages/CLI. */
tsio_data_format tsio_reader_format(const tsio_reader *r);
const char *tsio_data_format_name(tsio_data_format f);         /* "auto", "svmlight", "csv", "tsv", "raw" */
ts_status tsio_data_format_from_name(const char *name, tsio_data_format *out);
/* The format a reader opened on `path` with format f would use, found without taking
 * input away from it: f itself unless AUTO; else by the extension (see
 * TSIO_DATA_AUTO), then, for a regular file, by its first bytes (the raw magic); AUTO
 * when only reading would tell (standard input, a pipe: SVMlight or raw). */
tsio_data_format tsio_data_format_resolve(const char *path, tsio_data_format f);

/* Write a raw float32 matrix file (used by tests and `treescore convert`). */
ts_status tsio_write_raw(const char *path, const float *x, uint64_t n_rows, uint32_t n_cols, ts_error *err);

#endif /* TS_DATA_DATA_H */
