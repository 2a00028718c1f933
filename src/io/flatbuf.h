/* flatbuf.h: a small bounds-checked FlatBuffers reader (tables, scalars, strings, vectors), for CatBoost's .cbm models. */
#ifndef TS_IO_FLATBUF_H
#define TS_IO_FLATBUF_H

#include <stddef.h>
#include <stdint.h>

/*
 * FlatBuffers (flatbuffers.dev, "Internals"): little-endian throughout. The buffer starts
 * with a uoffset (u32) to the root table. A table starts with an soffset (i32): its
 * vtable is at table - soffset. A vtable is u16 vtable_bytes, u16 table_bytes, then one
 * u16 per field id: the field's offset inside the table, 0 when the field is absent (its
 * default applies). A reference field (table, vector, string) holds a uoffset relative
 * to the field's own position. A vector is a u32 count then its elements; a vector of
 * tables holds uoffsets (each relative to its own slot); a string is a u32 length, the
 * bytes and a NUL.
 *
 * Invariants: nothing at or past buf + size is read. Every position is checked before it
 * is read: the vtable and every field it names must lie inside the buffer, a field's
 * bytes inside the table's declared size, a vector's count * element size inside what
 * remains after it (so a huge count is refused, never looped over or allocated), a
 * string's bytes and NUL inside the buffer. Reads go through byte loads (no unaligned
 * access). Nothing recurses: callers walk the schema's fixed depth. Functions return 1
 * (present), 0 (absent: the default applies) or -1 (malformed: out of range).
 */

typedef struct tsfb_table {
    const uint8_t *buf;
    size_t size;
    size_t pos;      /* the table */
    size_t vt;       /* its vtable */
    uint16_t vt_bytes, table_bytes;
} tsfb_table;

typedef struct tsfb_vector {
    const uint8_t *buf;
    size_t size;
    size_t pos;      /* first element */
    size_t len;      /* elements */
    size_t elem;     /* bytes per element */
} tsfb_vector;

/* Little-endian loads at buf + pos (the caller has checked the range). */
static inline uint16_t tsfb_u16(const uint8_t *b, size_t pos) { return (uint16_t)(b[pos] | b[pos + 1] << 8); }
static inline uint32_t tsfb_u32(const uint8_t *b, size_t pos) {
    return (uint32_t)b[pos] | (uint32_t)b[pos + 1] << 8 | (uint32_t)b[pos + 2] << 16 | (uint32_t)b[pos + 3] << 24;
}
static inline uint64_t tsfb_u64(const uint8_t *b, size_t pos) {
    return (uint64_t)tsfb_u32(b, pos) | (uint64_t)tsfb_u32(b, pos + 4) << 32;
}

/* The root table of a buffer of `size` bytes. -1 when malformed. */
int tsfb_root(const uint8_t *buf, size_t size, tsfb_table *out);

/* Field `id` of t: its position in the buffer, checked to hold `bytes` bytes inside the
 * table. 1 / 0 (absent) / -1. */
int tsfb_field(const tsfb_table *t, unsigned id, size_t bytes, size_t *pos);

/* Scalar fields; *out receives the default when the field is absent (return 0). */
int tsfb_bool(const tsfb_table *t, unsigned id, int dflt, int *out);
int tsfb_i8(const tsfb_table *t, unsigned id, int dflt, int *out);
int tsfb_i32(const tsfb_table *t, unsigned id, int32_t dflt, int32_t *out);
int tsfb_f64(const tsfb_table *t, unsigned id, double dflt, double *out);

/* A table field (sub-table). */
int tsfb_table_field(const tsfb_table *t, unsigned id, tsfb_table *out);
/* A vector field of elements of `elem` bytes (scalars, structs, or 4-byte offsets for
 * vectors of tables and strings). Absent: an empty vector (len 0) and return 0. */
int tsfb_vector_field(const tsfb_table *t, unsigned id, size_t elem, tsfb_vector *out);
/* A string field: *s (not NUL-terminated in general use; the NUL is checked) and *n. */
int tsfb_string_field(const tsfb_table *t, unsigned id, const char **s, size_t *n);

/* Element i (< v->len) of a vector of tables / of strings. 1 / -1. */
int tsfb_vector_table(const tsfb_vector *v, size_t i, tsfb_table *out);
int tsfb_vector_string(const tsfb_vector *v, size_t i, const char **s, size_t *n);

/* Scalar element i (< v->len) of a vector. */
static inline int32_t tsfb_vec_i32(const tsfb_vector *v, size_t i) {
    return (int32_t)tsfb_u32(v->buf, v->pos + i * 4);
}
static inline uint32_t tsfb_vec_u32(const tsfb_vector *v, size_t i) { return tsfb_u32(v->buf, v->pos + i * 4); }
float tsfb_vec_f32(const tsfb_vector *v, size_t i);
double tsfb_vec_f64(const tsfb_vector *v, size_t i);

#endif /* TS_IO_FLATBUF_H */
