/* loaders.h: internal entry points of the model loaders (one file per format) and format detection. */
#ifndef TS_IO_LOADERS_H
#define TS_IO_LOADERS_H

#include <stddef.h>

#include "treescore.h"

/* Each loader parses `size` bytes at `data` (not NUL-terminated; may contain NULs) and
 * on success sets *out to a finished model (tsm_model_finish done). `name` is the file
 * name used in error messages, which read "NAME:LINE: what" and fill err->line/byte.
 * On failure *out is NULL and nothing leaks. Loaders never read past data + size. */
ts_status tsio_load_lightgbm(const char *data, size_t size, const char *name, ts_model **out, ts_error *err);
ts_status tsio_load_xgboost_json(const char *data, size_t size, const char *name, ts_model **out, ts_error *err);
ts_status tsio_load_quickrank_xml(const char *data, size_t size, const char *name, ts_model **out, ts_error *err);

/* Guess the format from the first bytes: "tree\n"/"version=v" -> LightGBM, '{' -> XGBoost
 * JSON, '<' or "##" comment lines then '<' -> QuickRank XML. TS_FORMAT_AUTO when unknown. */
ts_model_format tsio_detect_model_format(const char *data, size_t size);

#endif /* TS_IO_LOADERS_H */
