/* model_load.c: ts_model_load_file / ts_model_load_buffer: read the input, detect the format, dispatch. */
#include <errno.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/error.h"
#include "io/limits.h"
#include "io/loaders.h"
#include "io/source.h"
#include "io/text.h"
#include "io/ubjson.h"

static int is_ws(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

/* Offset of the first byte that is neither the BOM nor whitespace (size when none). */
static size_t content_start(const char *data, size_t size) {
    size_t i = tsio_skip_bom(data, size);
    while (i < size && is_ws(data[i])) i++;
    return i;
}

static int has_prefix(const char *p, size_t n, const char *prefix) {
    size_t k = strlen(prefix);
    return n >= k && memcmp(p, prefix, k) == 0;
}

/* LightGBM's first line "tree", also padded with blanks by an editor ("tree  "). */
static int is_lightgbm_first_line(const char *p, size_t n) {
    if (!has_prefix(p, n, "tree")) return 0;
    size_t i = 4;
    while (i < n && (p[i] == ' ' || p[i] == '\t')) i++;
    return i == n || p[i] == '\n' || p[i] == '\r';
}

ts_model_format tsio_detect_model_format(const char *data, size_t size) {
    if (!data) return TS_FORMAT_AUTO;
    if (tsio_is_catboost_cbm(data, size)) return TS_FORMAT_CATBOOST;
    if (tsio_is_onnx(data, size)) return TS_FORMAT_ONNX;
    if (tsu_looks_like_ubjson(data, size)) return TS_FORMAT_XGBOOST_UBJSON; /* binary: '{' then a length marker */
    size_t i = content_start(data, size);
    const char *p = data + i;
    size_t n = size - i;
    if (n == 0) return TS_FORMAT_AUTO;
    if (is_lightgbm_first_line(p, n)) return TS_FORMAT_LIGHTGBM;
    if (has_prefix(p, n, "version=")) return TS_FORMAT_LIGHTGBM;
    if (p[0] == '{' && tsio_is_catboost_json(p, n)) return TS_FORMAT_CATBOOST_JSON;
    if (p[0] == '[' || (p[0] == '{' && tsio_is_xgboost_dump(p, n))) return TS_FORMAT_XGBOOST_DUMP;
    if (p[0] == '{') return tsio_is_lightgbm_json(p, n) ? TS_FORMAT_LIGHTGBM_JSON : TS_FORMAT_XGBOOST_JSON;
    if (p[0] == '#' && tsio_is_ranklib_header(p, n)) return TS_FORMAT_RANKLIB;
    if (p[0] == '<' || p[0] == '#') return TS_FORMAT_QUICKRANK_XML;
    return TS_FORMAT_AUTO;
}

/* What each format looks like to tsio_detect_model_format above, for the message of a
 * file it does not recognize. No default: a format added to ts_model_format without a
 * line here is a -Wswitch warning (an error under -Werror), so the list cannot drift. */
static const char *format_clue(ts_model_format f) {
    switch (f) {
    case TS_FORMAT_AUTO: return NULL;
    case TS_FORMAT_LIGHTGBM: return "LightGBM text, starting with 'tree' or 'version='";
    case TS_FORMAT_LIGHTGBM_JSON: return "LightGBM dump_model() JSON, '{' with \"tree_info\"";
    case TS_FORMAT_XGBOOST_JSON: return "XGBoost JSON, '{'";
    case TS_FORMAT_XGBOOST_UBJSON: return "XGBoost UBJSON, binary '{' then a length marker";
    case TS_FORMAT_XGBOOST_DUMP: return "XGBoost get_dump JSON, '[' or '{\"splits\"'";
    case TS_FORMAT_QUICKRANK_XML: return "QuickRank XML, '<' or '##' lines";
    case TS_FORMAT_RANKLIB: return "RankLib, a '## LambdaMART', '## MART' or '## Random Forests' header";
    case TS_FORMAT_CATBOOST: return "CatBoost binary .cbm, starting with 'CBM1'";
    case TS_FORMAT_CATBOOST_JSON: return "CatBoost JSON, '{' with \"oblivious_trees\" or \"features_info\"";
    case TS_FORMAT_ONNX: return "ONNX ModelProto, binary protobuf starting with ir_version (0x08) and holding a graph";
    }
    return NULL;
}

/* Files users pass by mistake that no loader reads: what they are and what to write
 * instead (NULL: none of them). */
static const char *known_other_file(const char *text, size_t size, size_t at) {
    const unsigned char *u = (const unsigned char *)text;
    if (size >= 2 && u[0] == 0x80 && u[1] >= 2 && u[1] <= 5)
        return "a Python pickle (pickle.dump / joblib.dump of a model object), which treescore does not read: save "
               "the model with its library's own save_model (LightGBM text, XGBoost .json/.ubj, CatBoost .cbm) or "
               "convert it to ONNX";
    if (size >= 2 && ((u[0] == 0xff && u[1] == 0xfe) || (u[0] == 0xfe && u[1] == 0xff)))
        return "UTF-16 text (as Windows Notepad saves 'Unicode'): save it as UTF-8";
    if (size >= 2 && u[0] == 0x1f && u[1] == 0x8b)
        return "a gzip-compressed file: decompress it first (gunzip)";
    if (size >= 4 && memcmp(text, "PK\x03\x04", 4) == 0)
        return "a zip archive: extract the model file from it first (unzip)";
    if (has_prefix(text + at, size - at, "booster["))
        return "an XGBoost text dump (get_dump / dump_model in the default text format), which treescore does not "
               "read: dump it with dump_format='json', or better save the model itself (save_model to .json or .ubj)";
    return NULL;
}

/* "unknown model format: expected NAME (CLUE), ...": every format of ts_model_format, by
 * the names ts_model_format_from_name accepts. */
static ts_status fail_unknown_format(ts_error *err, const char *name, const char *text, size_t size, size_t at) {
    const char *other = known_other_file(text, size, at);
    if (other)
        return tsio_fail(err, TS_ERR_UNSUPPORTED, name, tsio_line_at(text, size, at), at,
                         "this is %s", other);
    char list[1024];
    size_t n = 0;
    for (int f = 1; f < TS_FORMAT_COUNT && n < sizeof list; f++) {
        const char *clue = format_clue((ts_model_format)f);
        int k = snprintf(list + n, sizeof list - n, "%s%s (%s)", f > 1 ? ", " : "",
                         ts_model_format_name((ts_model_format)f), clue ? clue : "?");
        if (k < 0) break;
        n += (size_t)k;
    }
    return tsio_fail(err, TS_ERR_PARSE, name, tsio_line_at(text, size, at), at,
                     "unknown model format: expected one of %s; or name the format (CLI --model-format, Python model_format=)", list);
}

/* Number parsing must not depend on the caller's LC_NUMERIC (a "de_DE" locale would
 * make strtod stop at the '.'), so loaders run under the "C" numeric locale in this
 * thread only (uselocale is per thread). */
typedef struct locale_guard {
    locale_t c_locale, previous;
} locale_guard;

static void guard_enter(locale_guard *g) {
    g->c_locale = newlocale(LC_NUMERIC_MASK, "C", (locale_t)0);
    g->previous = g->c_locale ? uselocale(g->c_locale) : (locale_t)0;
}

static void guard_leave(locale_guard *g) {
    if (!g->c_locale) return;
    uselocale(g->previous);
    freelocale(g->c_locale);
}

static ts_status dispatch(const char *data, size_t size, ts_model_format format, const char *name, ts_model **out,
                          ts_error *err) {
    locale_guard g;
    ts_status st;
    guard_enter(&g);
    switch (format) {
    case TS_FORMAT_LIGHTGBM: st = tsio_load_lightgbm(data, size, name, out, err); break;
    case TS_FORMAT_XGBOOST_JSON: st = tsio_load_xgboost_json(data, size, name, out, err); break;
    case TS_FORMAT_QUICKRANK_XML: st = tsio_load_quickrank_xml(data, size, name, out, err); break;
    case TS_FORMAT_LIGHTGBM_JSON: st = tsio_load_lightgbm_json(data, size, name, out, err); break;
    case TS_FORMAT_RANKLIB: st = tsio_load_ranklib(data, size, name, out, err); break;
    case TS_FORMAT_XGBOOST_DUMP: st = tsio_load_xgboost_dump(data, size, name, out, err); break;
    case TS_FORMAT_XGBOOST_UBJSON: st = tsio_load_xgboost_ubjson(data, size, name, out, err); break;
    case TS_FORMAT_CATBOOST: st = tsio_load_catboost(data, size, name, out, err); break;
    case TS_FORMAT_CATBOOST_JSON: st = tsio_load_catboost_json(data, size, name, out, err); break;
    case TS_FORMAT_ONNX: st = tsio_load_onnx(data, size, name, out, err); break;
    default: st = ts_fail(err, TS_ERR_INVALID_ARGUMENT, "%s: unknown model format %d", name, (int)format); break;
    }
    guard_leave(&g);
    return st;
}

ts_status ts_model_load_buffer(const void *data, size_t size, ts_model_format format, const char *name,
                               ts_model **out, ts_error *err) {
    if (!name) name = "<buffer>";
    if (!out) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "%s: ts_model_load_buffer: out is NULL", name);
    *out = NULL;
    if (!data && size > 0) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "%s: ts_model_load_buffer: data is NULL", name);
    if ((unsigned)format >= TS_FORMAT_COUNT)
        return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "%s: unknown model format %d", name, (int)format);
    const char *text = data;
    if (size == 0) return ts_fail(err, TS_ERR_PARSE, "%s: empty model file", name);
    if (size > TSIO_MAX_MODEL_BYTES)
        return ts_fail(err, TS_ERR_LIMIT, "%s: a model of %zu bytes is above the limit %zu", name, size,
                       TSIO_MAX_MODEL_BYTES);
    if (content_start(text, size) == size)
        return ts_fail(err, TS_ERR_PARSE, "%s: empty model file (only whitespace)", name);
    if (format == TS_FORMAT_AUTO) {
        format = tsio_detect_model_format(text, size);
        if (format == TS_FORMAT_AUTO) {
            return fail_unknown_format(err, name, text, size, content_start(text, size));
        }
    }
    return dispatch(text, size, format, name, out, err);
}

ts_status ts_model_load_file(const char *path, ts_model_format format, ts_model **out, ts_error *err) {
    if (!out) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "ts_model_load_file: out is NULL");
    *out = NULL;
    if (!path) return ts_fail(err, TS_ERR_INVALID_ARGUMENT, "ts_model_load_file: path is NULL");
    char *data = NULL;
    size_t size = 0;
    /* a regular file only (a FIFO or /dev/zero would block or never end), read within the limit */
    ts_status st = tsio_read_regular_file(path, TSIO_MAX_MODEL_BYTES, "model file", &data, &size, err);
    if (st != TS_OK) return st;
    st = ts_model_load_buffer(data, size, format, path, out, err);
    free(data);
    return st;
}
