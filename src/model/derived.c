/* derived.c: derived value columns: CatBoost's projection hash of a row, its table row, the value (derived.h has the semantics). */
#include "model/derived.h"

#include <stdlib.h>
#include <string.h>

#include "common/error.h"
#include "model/forest.h"

/* The slot a key starts probing at (keys are products by an odd constant: take the top bits
 * of a second multiplication). */
static inline uint32_t slot_of(uint64_t key, uint32_t n_slots) {
    uint64_t h = (key ^ (key >> 31)) * 0x9E3779B97F4A7C15ull;
    return (uint32_t)(h >> 32) & (n_slots - 1);
}

ts_status tsm_ctrtab_set_keys(tsm_ctrtab *t, const uint64_t *keys, uint32_t n_rows, ts_error *err) {
    uint32_t n_slots = 16;
    while (n_slots < 2 * (uint64_t)n_rows) {
        if (n_slots >= (1u << 31)) return ts_fail(err, TS_ERR_LIMIT, "a CTR table of %u rows is too large", n_rows);
        n_slots *= 2;
    }
    t->slots = malloc((size_t)n_slots * sizeof *t->slots);
    if (!t->slots) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory");
    t->n_slots = n_slots;
    t->n_rows = n_rows;
    for (uint32_t i = 0; i < n_slots; i++) t->slots[i] = (tsm_slot){TSM_KEY_EMPTY, 0, 0.0f};
    for (uint32_t r = 0; r < n_rows; r++) {
        uint64_t k = keys[r];
        if (k == TSM_KEY_EMPTY) continue; /* an empty bucket: no key finds its row */
        uint32_t j = slot_of(k, n_slots);
        for (; t->slots[j].key != TSM_KEY_EMPTY; j = (j + 1) & (n_slots - 1))
            if (t->slots[j].key == k)
                return ts_fail(err, TS_ERR_PARSE, "a CTR table has key %llu twice", (unsigned long long)k);
        t->slots[j] = (tsm_slot){k, r, 0.0f};
    }
    return TS_OK;
}

void tsm_ctrtab_set_first(tsm_ctrtab *t, const float *values) {
    for (uint32_t j = 0; j < t->n_slots; j++)
        if (t->slots[j].key != TSM_KEY_EMPTY) t->slots[j].first = values[t->slots[j].row];
}

/* The hash of category id v of catmap cm, or 0 with *unseen set (the rule of the category
 * sets, TSM_CAT_LIGHTGBM: NaN, v <= -1 and ids past the map are no category it knows). */
static inline uint32_t id_hash(const tsm_catmap *cm, float v, int *unseen) {
    if (!(v > -1.0f) || v >= (float)cm->n) {
        *unseen = 1;
        return 0;
    }
    return cm->hashes[(uint32_t)v];
}

/* CatBoost's key of the row's projection; 0 when an element reads a category the catmap
 * does not know (the key is then none of the table's: derived.h). */
static inline int row_key(const tsm_ctrtab *t, const tsm_catmap *catmaps, const float *row, uint64_t *out) {
    uint64_t key = 0;
    int unseen = 0;
    for (uint32_t i = 0; i < t->n_elems; i++) {
        const tsm_elem *e = &t->elems[i];
        float x = row[e->column];
        uint64_t v;
        if (e->kind == TSM_ELEM_CAT) {
            uint32_t h = id_hash(&catmaps[e->catmap], x, &unseen);
            v = (uint64_t)(int64_t)(int32_t)h;
        } else if (e->kind == TSM_ELEM_FLOAT) {
            v = x != x ? e->nan_one : x > e->border;
        } else {
            int u = 0; /* a category the map does not know is not the one-hot value (which it knows) */
            uint32_t h = id_hash(&catmaps[e->catmap], x, &u);
            v = !u && h == e->value;
        }
        key = tsm_ctr_hash_step(key, v);
    }
    *out = key;
    return !unseen;
}

/* The slot of key, probing from slot j; NULL when the table does not hold it. */
static inline const tsm_slot *probe(const tsm_ctrtab *t, uint64_t key, uint32_t j) {
    for (;; j = (j + 1) & (t->n_slots - 1)) {
        uint64_t k = t->slots[j].key;
        if (k == TSM_KEY_EMPTY) return NULL;
        if (k == key) return &t->slots[j];
    }
}

uint32_t tsm_ctrtab_row(const tsm_ctrtab *t, const tsm_catmap *catmaps, const float *row) {
    uint64_t key;
    if (!row_key(t, catmaps, row, &key)) return t->n_rows;
    const tsm_slot *s = probe(t, key, slot_of(key, t->n_slots));
    return s ? s->row : t->n_rows;
}

void tsm_derive_row(const ts_model *m, const float *row, float *out) {
    for (uint32_t i = 0; i < m->n_ctrtabs; i++) {
        const tsm_ctrtab *t = &m->ctrtabs[i];
        uint32_t r = tsm_ctrtab_row(t, m->catmaps, row);
        for (uint32_t d = t->first; d < t->first + t->count; d++) out[d] = m->derived[d].values[r];
    }
}

/* Rows per step of tsm_derive_rows: their slots are loaded together (prefetched), so that
 * the cache misses of a large table overlap instead of following one another. */
#define DERIVE_STEP 32

/* Rows [0, n) of one table, n <= DERIVE_STEP: keys and their first slots (prefetched),
 * then the slots found (the other columns' values prefetched), then the values. Hot loop. */
static void derive_step(const ts_model *m, const tsm_ctrtab *t, float *rows, size_t n, size_t stride, uint32_t first) {
    uint64_t key[DERIVE_STEP];
    uint32_t at[DERIVE_STEP];
    const tsm_slot *hit[DERIVE_STEP];
    for (size_t q = 0; q < n; q++) {
        at[q] = UINT32_MAX;
        if (!row_key(t, m->catmaps, rows + q * stride, &key[q])) continue;
        at[q] = slot_of(key[q], t->n_slots);
        __builtin_prefetch(&t->slots[at[q]]);
    }
    const float *v1 = t->count > 1 ? m->derived[t->first + 1].values : NULL;
    for (size_t q = 0; q < n; q++) {
        hit[q] = at[q] == UINT32_MAX ? NULL : probe(t, key[q], at[q]);
        if (v1 && hit[q]) __builtin_prefetch(&v1[hit[q]->row]);
    }
    const float *unseen = m->derived[t->first].values + t->n_rows; /* row n_rows of the first column */
    for (size_t q = 0; q < n; q++) {
        float *row = rows + q * stride + first;
        uint32_t r = hit[q] ? hit[q]->row : t->n_rows;
        row[t->first] = hit[q] ? hit[q]->first : *unseen;
        for (uint32_t d = t->first + 1; d < t->first + t->count; d++) row[d] = m->derived[d].values[r];
    }
}

void tsm_derive_rows(const ts_model *m, float *rows, size_t n, size_t stride, uint32_t first) {
    for (uint32_t i = 0; i < m->n_ctrtabs; i++) {
        const tsm_ctrtab *t = &m->ctrtabs[i];
        if (t->count == 0) continue;
        for (size_t q = 0; q < n; q += DERIVE_STEP)
            derive_step(m, t, rows + q * stride, n - q < DERIVE_STEP ? n - q : DERIVE_STEP, stride, first);
    }
}

static void *dup(const void *p, size_t bytes) {
    void *q = malloc(bytes ? bytes : 1);
    if (q && bytes) memcpy(q, p, bytes);
    return q;
}

ts_status tsm_model_copy_derived(const ts_model *m, ts_model *dst, ts_error *err) {
    if (m->n_catmaps) {
        dst->catmaps = calloc(m->n_catmaps, sizeof *dst->catmaps);
        if (!dst->catmaps) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory");
        for (uint32_t i = 0; i < m->n_catmaps; i++) {
            dst->catmaps[i] = m->catmaps[i];
            dst->catmaps[i].hashes = dup(m->catmaps[i].hashes, (size_t)m->catmaps[i].n * sizeof(uint32_t));
            dst->n_catmaps = i + 1;
            if (!dst->catmaps[i].hashes) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory");
        }
    }
    if (m->n_ctrtabs) {
        dst->ctrtabs = calloc(m->n_ctrtabs, sizeof *dst->ctrtabs);
        if (!dst->ctrtabs) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory");
        for (uint32_t i = 0; i < m->n_ctrtabs; i++) {
            const tsm_ctrtab *s = &m->ctrtabs[i];
            tsm_ctrtab *t = &dst->ctrtabs[i];
            *t = *s;
            t->elems = dup(s->elems, (size_t)s->n_elems * sizeof *s->elems);
            t->slots = dup(s->slots, (size_t)s->n_slots * sizeof *s->slots);
            dst->n_ctrtabs = i + 1;
            if (!t->elems || !t->slots) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory");
        }
    }
    if (m->n_derived) {
        dst->derived = calloc(m->n_derived, sizeof *dst->derived);
        if (!dst->derived) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory");
        for (uint32_t d = 0; d < m->n_derived; d++) {
            dst->derived[d].tab = m->derived[d].tab;
            size_t n = (size_t)m->ctrtabs[m->derived[d].tab].n_rows + 1;
            dst->derived[d].values = dup(m->derived[d].values, n * sizeof(float));
            dst->n_derived = d + 1;
            if (!dst->derived[d].values) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory");
        }
    }
    return TS_OK;
}

void tsm_model_free_derived(ts_model *m) {
    for (uint32_t i = 0; i < m->n_ctrtabs; i++) {
        free(m->ctrtabs[i].elems);
        free(m->ctrtabs[i].slots);
    }
    free(m->ctrtabs);
    for (uint32_t d = 0; d < m->n_derived; d++) free(m->derived[d].values);
    free(m->derived);
    m->ctrtabs = NULL;
    m->derived = NULL;
    m->n_ctrtabs = m->n_derived = 0;
}
