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
/* XGBoost get_dump(dump_format="json") trees or the ES-LTR {"splits": [...]} wrapper
 * (model_xgboost_dump.c); XGBoost UBJSON models (model_xgboost.c: the core transcoder
 * ubjson.c turns them into JSON text, read by the same file's JSON reader). */
ts_status tsio_load_xgboost_dump(const char *data, size_t size, const char *name, ts_model **out, ts_error *err);
ts_status tsio_load_xgboost_ubjson(const char *data, size_t size, const char *name, ts_model **out, ts_error *err);
/* 1 when JSON text at data is a list, or an object whose top-level keys include "splits"
 * before any "learner" or "tree_info" (an XGBoost dump, not a model). */
int tsio_is_xgboost_dump(const char *data, size_t size);
/* RankLib LambdaMART, MART and random forests (model_quickrank.c, RankLib's semantics). */
ts_status tsio_load_ranklib(const char *data, size_t size, const char *name, ts_model **out, ts_error *err);
/* LightGBM dump_model() JSON (model_lightgbm_json.c; its semantics: io/lightgbm_tree.h, as the text model's). */
ts_status tsio_load_lightgbm_json(const char *data, size_t size, const char *name, ts_model **out, ts_error *err);
/* 1 when the input starts with the "##" header RankLib writes ("## LambdaMART", "## MART",
 * "## Random Forests") followed by <ensemble>, and not QuickRank's imitation of that
 * header (learning rate printed "%f", or a <ranker> body). */
int tsio_is_ranklib_header(const char *data, size_t size);
/* 1 when a JSON object starting at data has a top-level key "tree_info" (LightGBM
 * dump_model), looked for in its first bytes only. */
int tsio_is_lightgbm_json(const char *data, size_t size);

/* CatBoost: the binary model (.cbm, model_catboost.c) and save_model(format="json")
 * (model_catboost_json.c); float features only so far (catboost_core.h). */
ts_status tsio_load_catboost(const char *data, size_t size, const char *name, ts_model **out, ts_error *err);
ts_status tsio_load_catboost_json(const char *data, size_t size, const char *name, ts_model **out, ts_error *err);
/* 1 when the input starts with CatBoost's "CBM1" magic. */
int tsio_is_catboost_cbm(const char *data, size_t size);
/* 1 when a JSON object starting at data has a top-level key "oblivious_trees",
 * "features_info" or "scale_and_bias" before any "learner", "tree_info" or "splits"
 * (looked for in its first bytes only). */
int tsio_is_catboost_json(const char *data, size_t size);

/* ONNX-ML tree ensembles (model_onnx.c, on the protobuf reader protobuf.h): a ModelProto
 * whose graph holds one TreeEnsembleRegressor / TreeEnsembleClassifier (ai.onnx.ml 1, 3)
 * or TreeEnsemble (ai.onnx.ml 5) node, built through the model builder. */
ts_status tsio_load_onnx(const char *data, size_t size, const char *name, ts_model **out, ts_error *err);
/* 1 when the input parses as a protobuf message whose first field is ir_version (field 1,
 * varint) and which holds a graph (field 7, length-delimited), every top-level field
 * within the input. */
int tsio_is_onnx(const char *data, size_t size);

/* Guess the format from the first bytes: "CBM1" -> CatBoost, "tree\n"/"version=v" -> LightGBM, '{' -> XGBoost
 * JSON, '<' or "##" comment lines then '<' -> QuickRank XML. TS_FORMAT_AUTO when unknown. */
ts_model_format tsio_detect_model_format(const char *data, size_t size);

#endif /* TS_IO_LOADERS_H */
