/* protobuf.c: the protobuf wire-format reader (see protobuf.h). */
#include <string.h>

#include "io/protobuf.h"

tspb_msg tspb_open(const uint8_t *buf, size_t size) {
    tspb_msg m = {buf, 0, buf ? size : 0};
    return m;
}

/* A varint at buf[*pos, end): at most 10 bytes, the tenth holding only bit 63. */
static int varint(const uint8_t *buf, size_t *pos, size_t end, uint64_t *out) {
    uint64_t v = 0;
    for (unsigned i = 0; i < 10; i++) {
        if (*pos >= end) return -1;
        uint8_t b = buf[(*pos)++];
        if (i == 9 && b > 1) return -1;
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *out = v;
            return 1;
        }
    }
    return -1;
}

static uint64_t le(const uint8_t *p, unsigned n) {
    uint64_t v = 0;
    for (unsigned i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
    return v;
}

float tspb_float_bits(uint32_t bits) {
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

double tspb_double_bits(uint64_t bits) {
    double d;
    memcpy(&d, &bits, sizeof d);
    return d;
}

/* varint with the one-byte case first (keys of fields 1-15, small values). */
static inline int varint1(const uint8_t *buf, size_t *pos, size_t end, uint64_t *out) {
    if (*pos < end && buf[*pos] < 0x80) {
        *out = buf[(*pos)++];
        return 1;
    }
    return varint(buf, pos, end, out);
}

int tspb_next(tspb_msg *m, tspb_field *f) {
    if (m->pos >= m->end) return 0;
    uint64_t key;
    if (varint1(m->buf, &m->pos, m->end, &key) < 0) return -1;
    uint64_t num = key >> 3;
    if (num == 0 || num > 0x1fffffff) return -1;
    f->num = (uint32_t)num;
    f->wire = (int)(key & 7);
    f->len = 0;
    switch (f->wire) {
    case TSPB_VARINT:
        f->pos = m->pos;
        return varint1(m->buf, &m->pos, m->end, &f->v) < 0 ? -1 : 1;
    case TSPB_I64:
        if (m->end - m->pos < 8) return -1;
        f->pos = m->pos;
        f->v = le(m->buf + m->pos, 8);
        m->pos += 8;
        return 1;
    case TSPB_I32:
        if (m->end - m->pos < 4) return -1;
        f->pos = m->pos;
        f->v = le(m->buf + m->pos, 4);
        m->pos += 4;
        return 1;
    case TSPB_LEN: {
        uint64_t n;
        if (varint(m->buf, &m->pos, m->end, &n) < 0) return -1;
        if (n > (uint64_t)(m->end - m->pos)) return -1;
        f->pos = m->pos;
        f->len = (size_t)n;
        f->v = n;
        m->pos += (size_t)n;
        return 1;
    }
    default: return -1; /* groups (3, 4), 6, 7 */
    }
}

tspb_msg tspb_sub(const tspb_msg *parent, const tspb_field *f) {
    tspb_msg s = {parent->buf, f->pos, f->pos + f->len};
    return s;
}

/* One element of type t at buf[*pos, end). */
static int element(const uint8_t *buf, size_t *pos, size_t end, tspb_scalar t, int64_t *vi, double *vd) {
    if (t == TSPB_S_VARINT) {
        uint64_t v;
        if (varint1(buf, pos, end, &v) < 0) return -1;
        *vi = (int64_t)v;
        return 1;
    }
    unsigned n = t == TSPB_S_FLOAT ? 4 : 8;
    if (end - *pos < n) return -1;
    uint64_t bits = le(buf + *pos, n);
    *pos += n;
    *vd = t == TSPB_S_FLOAT ? (double)tspb_float_bits((uint32_t)bits) : tspb_double_bits(bits);
    return 1;
}

/* Counts one element of a repeated field and stores it where out is given (n slots); -1
 * when they are full. */
static inline int put(size_t *count, size_t n, tspb_scalar type, int64_t *out_i, double *out_d, int64_t vi, double vd) {
    if (out_i || out_d) {
        if (*count >= n) return -1;
        if (type == TSPB_S_VARINT) out_i[*count] = vi;
        else out_d[*count] = vd;
    }
    (*count)++;
    return 1;
}

int tspb_repeated(const tspb_msg *m, uint32_t num, tspb_scalar type, size_t *n, int64_t *out_i, double *out_d) {
    tspb_msg it = *m;
    tspb_field f;
    size_t count = 0;
    int r, want = type == TSPB_S_VARINT ? TSPB_VARINT : type == TSPB_S_FLOAT ? TSPB_I32 : TSPB_I64;
    /* Unpacked elements (what proto2 writers such as ONNX's emit: one key per element) of
     * a field numbered below 16 have a one-byte key: read a run of them without
     * tspb_next (the same bounds checks in element). */
    const int one_byte_key = num < 16;
    const uint8_t key = (uint8_t)(num << 3 | (uint32_t)want);
    for (;;) {
        if (one_byte_key)
            while (it.pos < it.end && it.buf[it.pos] == key) {
                int64_t vi = 0;
                double vd = 0;
                size_t p = it.pos + 1;
                if (element(it.buf, &p, it.end, type, &vi, &vd) < 0) return -1;
                if (put(&count, *n, type, out_i, out_d, vi, vd) < 0) return -1;
                it.pos = p;
            }
        if ((r = tspb_next(&it, &f)) <= 0) break;
        if (f.num != num) continue;
        int64_t vi = 0;
        double vd = 0;
        if (f.wire == TSPB_LEN) {
            size_t p = f.pos, end = f.pos + f.len;
            if (type != TSPB_S_VARINT && f.len % (type == TSPB_S_FLOAT ? 4 : 8)) return -1;
            while (p < end) {
                if (element(m->buf, &p, end, type, &vi, &vd) < 0) return -1;
                if (put(&count, *n, type, out_i, out_d, vi, vd) < 0) return -1;
            }
            continue;
        }
        if (f.wire != want) return -1;
        size_t p = f.pos;
        if (element(m->buf, &p, it.end, type, &vi, &vd) < 0) return -1;
        if (put(&count, *n, type, out_i, out_d, vi, vd) < 0) return -1;
    }
    if (r < 0) return -1;
    *n = count;
    return 1;
}
