/* derived.h: derived value columns: a value looked up in a table by a key hashed from several input columns (CatBoost's CTRs over feature combinations). */
#ifndef TS_MODEL_DERIVED_H
#define TS_MODEL_DERIVED_H

#include <stddef.h>
#include <stdint.h>

#include "treescore.h"

/*
 * Derived value columns
 * ---------------------
 * A loaded model may carry derived columns whose value is computed from several input
 * columns (CatBoost's CTRs over a combination of categorical features, binarized float
 * conditions and one-hot conditions; io/catboost_core.c explains where the pieces come
 * from). A table (tsm_ctrtab) hashes a row's projection into a 64-bit key, CatBoost's
 * way (catboost/libs/model/hash.h CalcHash, ctr_provider.h CalcHashes):
 *     key = 0; for each element e in order: key = M * (key + M * v_e), M = TSM_CTR_MULT
 * with v_e the sign-extended category hash (TSM_ELEM_CAT: (uint64)(int64)(int32)hash),
 * x > border as 0 or 1 (TSM_ELEM_FLOAT; NaN gives nan_one), or hash == value as 0 or 1
 * (TSM_ELEM_ONEHOT). The key names a row of the table (open addressing over slot_key), or
 * none: row n_rows. A categorical element reads a category id (a tsm_catmap's id: the
 * column's ids map back to their hashes); an id the catmap does not know (NaN, negative,
 * >= n) is a category the model never saw, and such a row is row n_rows without hashing:
 * the catmap knows every category hash that appears in any of the model's table keys (the
 * loader proves that), so CatBoost's key for that row holds a hash no training row had
 * and is, but for a 64-bit hash collision, not in the table either.
 * A derived column (tsm_derived) is one value per table row plus the value of row n_rows.
 *
 * In a loaded model a node on derived column d has flags TSM_DERIVED (and
 * TSM_MISSING_LEFT: a NaN value goes left), feature d and threshold t: "value <= t goes
 * left", as a numerical node. tsm_model_view rewrites it into a numerical node on column
 * n_features + d (category sets follow, at n_features + n_derived + j), and the scorer
 * fills those columns (tsm_derive_row) before any engine runs: engines never see tables.
 */

#define TSM_CTR_MULT 0x4906ba494954cb65ull
#define TSM_KEY_EMPTY UINT64_MAX
enum { TSM_ELEM_CAT = 0, TSM_ELEM_FLOAT = 1, TSM_ELEM_ONEHOT = 2 };

typedef struct tsm_elem {
    uint32_t kind;      /* TSM_ELEM_* */
    uint32_t column;    /* the input column it reads */
    uint32_t catmap;    /* CAT, ONEHOT: index into ts_model.catmaps (the column's ids) */
    uint32_t value;     /* ONEHOT: the category hash tested */
    float border;       /* FLOAT: 1 when x > border */
    uint32_t nan_one;   /* FLOAT: what NaN gives */
} tsm_elem;

/* One slot of a table's index: a key, its row, and the value of the table's first derived
 * column at that row (so that the most common lookup, a table of one CTR, touches one
 * cache line: a line holds four slots). */
typedef struct tsm_slot {
    uint64_t key;
    uint32_t row;
    float first;
} tsm_slot;

typedef struct tsm_ctrtab {
    tsm_elem *elems;
    uint32_t n_elems;
    uint32_t n_rows;     /* table rows; row n_rows stands for every key not in the table */
    uint32_t n_slots;    /* power of two, >= 2 * n_rows */
    tsm_slot *slots;     /* n_slots; key TSM_KEY_EMPTY where empty */
    uint32_t first, count; /* its derived columns: first .. first + count - 1 */
} tsm_ctrtab;

typedef struct tsm_derived {
    uint32_t tab;        /* the table */
    float *values;       /* n_rows + 1 of the table: row n_rows is an unknown key's */
} tsm_derived;

/* One step of CatBoost's projection hash. */
static inline uint64_t tsm_ctr_hash_step(uint64_t key, uint64_t v) { return TSM_CTR_MULT * (key + TSM_CTR_MULT * v); }

/* Fill t's slots from its n_rows keys (row r has keys[r]; TSM_KEY_EMPTY: no key finds
 * that row). TS_ERR_PARSE for a repeated key, TS_ERR_NO_MEMORY. */
ts_status tsm_ctrtab_set_keys(tsm_ctrtab *t, const uint64_t *keys, uint32_t n_rows, ts_error *err);

/* Copy each slot's row of values (the table's first derived column) into the slot. */
void tsm_ctrtab_set_first(tsm_ctrtab *t, const float *values);

struct tsm_catmap;
/* The table row of one row of input columns (row[e.column] for each element; the
 * categorical ones are ids of catmaps[e.catmap]). */
uint32_t tsm_ctrtab_row(const tsm_ctrtab *t, const struct tsm_catmap *catmaps, const float *row);

/* Every derived column's value for one row: out[d], d < m->n_derived. */
void tsm_derive_row(const ts_model *m, const float *row, float *out);

/* The same for n rows, stride floats apart, writing row[first + d]: table by table over
 * the rows, so that each table's index and values stay in cache across the rows (row by
 * row, every row touches every table: 5x slower on a model of 397 tables). */
void tsm_derive_rows(const ts_model *m, float *rows, size_t n, size_t stride, uint32_t first);

/* Copy m's catmaps, tables and derived columns into dst (a model without any); the copy
 * is freed with dst. */
ts_status tsm_model_copy_derived(const ts_model *m, ts_model *dst, ts_error *err);

/* Free m's tables and derived columns. */
void tsm_model_free_derived(ts_model *m);

#endif /* TS_MODEL_DERIVED_H */
