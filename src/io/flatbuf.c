/* flatbuf.c: the bounds-checked FlatBuffers reader of flatbuf.h. */
#include "io/flatbuf.h"

#include <string.h>

/* [pos, pos + n) inside a buffer of `size` bytes, without overflow. */
static int in_range(size_t size, size_t pos, size_t n) { return pos <= size && n <= size - pos; }

/* The table at pos: its vtable found and checked. */
static int table_at(const uint8_t *buf, size_t size, size_t pos, tsfb_table *out) {
    if (!in_range(size, pos, 4)) return -1;
    int32_t so = (int32_t)tsfb_u32(buf, pos);
    /* vtable = pos - so, computed in 64 bits so that no value of so overflows */
    int64_t vt = (int64_t)pos - (int64_t)so;
    if (vt < 0 || (uint64_t)vt > (uint64_t)size) return -1;
    if (!in_range(size, (size_t)vt, 4)) return -1;
    uint16_t vt_bytes = tsfb_u16(buf, (size_t)vt), table_bytes = tsfb_u16(buf, (size_t)vt + 2);
    if (vt_bytes < 4 || (vt_bytes & 1) || !in_range(size, (size_t)vt, vt_bytes)) return -1;
    if (table_bytes < 4 || !in_range(size, pos, table_bytes)) return -1;
    out->buf = buf;
    out->size = size;
    out->pos = pos;
    out->vt = (size_t)vt;
    out->vt_bytes = vt_bytes;
    out->table_bytes = table_bytes;
    return 1;
}

int tsfb_root(const uint8_t *buf, size_t size, tsfb_table *out) {
    if (!buf || !in_range(size, 0, 4)) return -1;
    size_t root = tsfb_u32(buf, 0);
    return table_at(buf, size, root, out);
}

int tsfb_field(const tsfb_table *t, unsigned id, size_t bytes, size_t *pos) {
    size_t slot = 4 + 2 * (size_t)id;
    if (slot + 2 > t->vt_bytes) return 0; /* beyond the vtable: absent (a newer schema's field) */
    uint16_t off = tsfb_u16(t->buf, t->vt + slot);
    if (off == 0) return 0;
    if (off < 4 || (size_t)off + bytes > t->table_bytes) return -1;
    *pos = t->pos + off;
    return 1;
}

int tsfb_bool(const tsfb_table *t, unsigned id, int dflt, int *out) {
    size_t pos;
    int r = tsfb_field(t, id, 1, &pos);
    *out = r == 1 ? t->buf[pos] != 0 : dflt;
    return r;
}

int tsfb_i8(const tsfb_table *t, unsigned id, int dflt, int *out) {
    size_t pos;
    int r = tsfb_field(t, id, 1, &pos);
    *out = r == 1 ? (int)(int8_t)t->buf[pos] : dflt;
    return r;
}

int tsfb_i32(const tsfb_table *t, unsigned id, int32_t dflt, int32_t *out) {
    size_t pos;
    int r = tsfb_field(t, id, 4, &pos);
    *out = r == 1 ? (int32_t)tsfb_u32(t->buf, pos) : dflt;
    return r;
}

int tsfb_f64(const tsfb_table *t, unsigned id, double dflt, double *out) {
    size_t pos;
    int r = tsfb_field(t, id, 8, &pos);
    if (r == 1) {
        uint64_t u = tsfb_u64(t->buf, pos);
        memcpy(out, &u, sizeof *out);
    } else {
        *out = dflt;
    }
    return r;
}

/* Follow the uoffset stored at pos. */
static int deref(const uint8_t *buf, size_t size, size_t pos, size_t *target) {
    if (!in_range(size, pos, 4)) return -1;
    uint32_t off = tsfb_u32(buf, pos);
    if (off == 0 || (size_t)off > size - pos) return -1;
    *target = pos + off;
    return 1;
}

int tsfb_table_field(const tsfb_table *t, unsigned id, tsfb_table *out) {
    size_t pos, target;
    int r = tsfb_field(t, id, 4, &pos);
    if (r != 1) return r;
    if (deref(t->buf, t->size, pos, &target) < 0) return -1;
    return table_at(t->buf, t->size, target, out);
}

static int vector_at(const uint8_t *buf, size_t size, size_t at, size_t elem, tsfb_vector *out) {
    if (!in_range(size, at, 4)) return -1;
    size_t len = tsfb_u32(buf, at);
    size_t first = at + 4;
    if (elem == 0 || len > (size - first) / elem) return -1;
    out->buf = buf;
    out->size = size;
    out->pos = first;
    out->len = len;
    out->elem = elem;
    return 1;
}

int tsfb_vector_field(const tsfb_table *t, unsigned id, size_t elem, tsfb_vector *out) {
    size_t pos, target;
    out->buf = t->buf;
    out->size = t->size;
    out->pos = 0;
    out->len = 0;
    out->elem = elem;
    int r = tsfb_field(t, id, 4, &pos);
    if (r != 1) return r;
    if (deref(t->buf, t->size, pos, &target) < 0) return -1;
    return vector_at(t->buf, t->size, target, elem, out);
}

static int string_at(const uint8_t *buf, size_t size, size_t at, const char **s, size_t *n) {
    if (!in_range(size, at, 4)) return -1;
    size_t len = tsfb_u32(buf, at);
    if (!in_range(size, at + 4, len + 1)) return -1; /* the bytes and the NUL */
    if (buf[at + 4 + len] != 0) return -1;
    *s = (const char *)buf + at + 4;
    *n = len;
    return 1;
}

int tsfb_string_field(const tsfb_table *t, unsigned id, const char **s, size_t *n) {
    size_t pos, target;
    *s = "";
    *n = 0;
    int r = tsfb_field(t, id, 4, &pos);
    if (r != 1) return r;
    if (deref(t->buf, t->size, pos, &target) < 0) return -1;
    return string_at(t->buf, t->size, target, s, n);
}

int tsfb_vector_table(const tsfb_vector *v, size_t i, tsfb_table *out) {
    size_t target;
    if (v->elem != 4 || i >= v->len) return -1;
    if (deref(v->buf, v->size, v->pos + i * 4, &target) < 0) return -1;
    return table_at(v->buf, v->size, target, out);
}

int tsfb_vector_string(const tsfb_vector *v, size_t i, const char **s, size_t *n) {
    size_t target;
    if (v->elem != 4 || i >= v->len) return -1;
    if (deref(v->buf, v->size, v->pos + i * 4, &target) < 0) return -1;
    return string_at(v->buf, v->size, target, s, n);
}

float tsfb_vec_f32(const tsfb_vector *v, size_t i) {
    uint32_t u = tsfb_u32(v->buf, v->pos + i * 4);
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

double tsfb_vec_f64(const tsfb_vector *v, size_t i) {
    uint64_t u = tsfb_u64(v->buf, v->pos + i * 8);
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}
