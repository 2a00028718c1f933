/* ubjson.c: UBJSON to JSON transcoding (what the XGBoost UBJSON loader reads), byte offsets back, format sniffing. */
#include "io/ubjson.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/error.h"

/* Transcoder state: input cursor and the growing output (see ubjson.h for the rules). */
typedef struct ubj {
    const unsigned char *d;
    size_t n, pos;             /* pos <= n always */
    const char *name;
    ts_error *err;
    char *out;
    size_t len, cap;           /* len <= cap */
    tsu_offset *map;
    size_t n_map, cap_map;
} ubj;

static ts_status ubj_fail(ubj *u, ts_status st, size_t byte, const char *what) {
    return ts_fail_at(u->err, st, 0, byte, "%s: byte %zu: %s", u->name, byte, what);
}

static ts_status truncated(ubj *u, const char *what) {
    char msg[160];
    snprintf(msg, sizeof msg, "truncated UBJSON: the input ends inside %s", what);
    return ubj_fail(u, TS_ERR_PARSE, u->n, msg);
}

/* ---- output ----------------------------------------------------------------------- */

static ts_status emit(ubj *u, const char *s, size_t k) {
    if (u->cap - u->len < k) {
        size_t cap = u->cap ? u->cap : 4096;
        while (cap - u->len < k) {
            if (cap > ((size_t)-1) / 2) return ubj_fail(u, TS_ERR_NO_MEMORY, u->pos, "output too large");
            cap *= 2;
        }
        char *p = realloc(u->out, cap);
        if (!p) return ubj_fail(u, TS_ERR_NO_MEMORY, u->pos, "out of memory");
        u->out = p;
        u->cap = cap;
    }
    memcpy(u->out + u->len, s, k);
    u->len += k;
    return TS_OK;
}

static ts_status emit_s(ubj *u, const char *s) { return emit(u, s, strlen(s)); }

static ts_status mark(ubj *u, size_t ubj_byte) {
    if (u->n_map == u->cap_map) {
        size_t cap = u->cap_map ? u->cap_map * 2 : 256;
        tsu_offset *p = realloc(u->map, cap * sizeof *p);
        if (!p) return ubj_fail(u, TS_ERR_NO_MEMORY, u->pos, "out of memory");
        u->map = p;
        u->cap_map = cap;
    }
    u->map[u->n_map].json = u->len;
    u->map[u->n_map].ubj = ubj_byte;
    u->n_map++;
    return TS_OK;
}

/* A JSON string of k bytes at s, escaped. */
static ts_status emit_string(ubj *u, const unsigned char *s, size_t k) {
    TS_TRY(emit(u, "\"", 1));
    size_t run = 0;
    for (size_t i = 0; i < k; i++) {
        unsigned char c = s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        TS_TRY(emit(u, (const char *)s + run, i - run));
        char esc[8];
        if (c == '"' || c == '\\')
            snprintf(esc, sizeof esc, "\\%c", c);
        else
            snprintf(esc, sizeof esc, "\\u%04x", c);
        TS_TRY(emit_s(u, esc));
        run = i + 1;
    }
    TS_TRY(emit(u, (const char *)s + run, k - run));
    return emit(u, "\"", 1);
}

/* ---- input ------------------------------------------------------------------------ */

static ts_status need(ubj *u, size_t k, const char *what) {
    if (u->n - u->pos < k) return truncated(u, what);
    return TS_OK;
}

static uint64_t be(const unsigned char *p, size_t k) {
    uint64_t v = 0;
    for (size_t i = 0; i < k; i++) v = (v << 8) | p[i];
    return v;
}

/* Payload size of a fixed-size type marker; 0 for markers without a fixed payload. */
static size_t fixed_size(unsigned char t) {
    switch (t) {
    case 'i': case 'U': case 'C': return 1;
    case 'I': return 2;
    case 'l': case 'd': return 4;
    case 'L': case 'D': return 8;
    default: return 0;
    }
}

/* An integer of type t (i, U, I, l, L) into *v. */
static ts_status read_int(ubj *u, unsigned char t, long long *v) {
    size_t k = fixed_size(t);
    if (k == 0 || t == 'd' || t == 'D' || t == 'C')
        return ubj_fail(u, TS_ERR_PARSE, u->pos ? u->pos - 1 : 0, "expected an integer type marker");
    TS_TRY(need(u, k, "an integer"));
    uint64_t raw = be(u->d + u->pos, k);
    u->pos += k;
    switch (t) {
    case 'i': *v = (int8_t)raw; break;
    case 'U': *v = (long long)raw; break;
    case 'I': *v = (int16_t)raw; break;
    case 'l': *v = (int32_t)raw; break;
    default: *v = (long long)(int64_t)raw; break;
    }
    return TS_OK;
}

/* A length or count: an integer marker and value, >= 0. */
static ts_status read_length(ubj *u, long long *len) {
    TS_TRY(need(u, 1, "a length"));
    size_t at = u->pos;
    unsigned char t = u->d[u->pos++];
    TS_TRY(read_int(u, t, len));
    if (*len < 0) return ubj_fail(u, TS_ERR_PARSE, at, "negative length or count");
    return TS_OK;
}

/* A length that must fit in the remaining input (strings, keys). */
static ts_status read_span(ubj *u, const char *what, const unsigned char **s, size_t *k) {
    long long len = 0;
    TS_TRY(read_length(u, &len));
    if ((unsigned long long)len > u->n - u->pos) return truncated(u, what);
    *s = u->d + u->pos;
    *k = (size_t)len;
    u->pos += (size_t)len;
    return TS_OK;
}

/* ---- values ----------------------------------------------------------------------- */

static ts_status value(ubj *u, unsigned char t, size_t at, unsigned depth);

static ts_status emit_float(ubj *u, double v, int digits) {
    char buf[48];
    if (isnan(v))
        snprintf(buf, sizeof buf, "NaN");
    else if (isinf(v))
        snprintf(buf, sizeof buf, v > 0 ? "Infinity" : "-Infinity");
    else
        snprintf(buf, sizeof buf, "%.*g", digits, v);
    return emit_s(u, buf);
}

static ts_status number(ubj *u, unsigned char t) {
    char buf[32];
    if (t == 'd') {
        TS_TRY(need(u, 4, "a float32"));
        uint32_t raw = (uint32_t)be(u->d + u->pos, 4);
        float f;
        memcpy(&f, &raw, sizeof f);
        u->pos += 4;
        return emit_float(u, (double)f, 9);
    }
    if (t == 'D') {
        TS_TRY(need(u, 8, "a float64"));
        uint64_t raw = be(u->d + u->pos, 8);
        double x;
        memcpy(&x, &raw, sizeof x);
        u->pos += 8;
        return emit_float(u, x, 17);
    }
    long long v;
    TS_TRY(read_int(u, t, &v));
    snprintf(buf, sizeof buf, "%lld", v);
    return emit_s(u, buf);
}

static ts_status high_precision(ubj *u, size_t at) {
    const unsigned char *s = NULL;
    size_t k = 0;
    TS_TRY(read_span(u, "a high-precision number", &s, &k));
    if (k == 0 || k > 255) return ubj_fail(u, TS_ERR_PARSE, at, "bad high-precision number");
    for (size_t i = 0; i < k; i++)
        if (!strchr("0123456789+-.eE", s[i]) || s[i] == '\0')
            return ubj_fail(u, TS_ERR_PARSE, at, "bad high-precision number");
    return emit(u, (const char *)s, k);
}

/* Container header after '[' or '{': optional '$' type (then '#' is required), optional
 * '#' count. *type = 0 when untyped; *count = -1 when not counted. */
static ts_status container_header(ubj *u, unsigned char *type, long long *count) {
    *type = 0;
    *count = -1;
    if (u->pos < u->n && u->d[u->pos] == '$') {
        u->pos++;
        TS_TRY(need(u, 1, "a container type"));
        size_t at = u->pos;
        *type = u->d[u->pos++];
        if (strchr("ZTFN", *type) || *type == '\0')
            return ubj_fail(u, TS_ERR_UNSUPPORTED, at, "typed containers of payload-free values are not supported");
        if (u->pos >= u->n || u->d[u->pos] != '#') {
            if (u->pos >= u->n) return truncated(u, "a container header");
            return ubj_fail(u, TS_ERR_PARSE, u->pos, "a typed container needs a count ('#')");
        }
    }
    if (u->pos < u->n && u->d[u->pos] == '#') {
        u->pos++;
        TS_TRY(read_length(u, count));
    }
    return TS_OK;
}

/* The next type marker, skipping no-ops ('N'). */
static ts_status next_marker(ubj *u, const char *what, unsigned char *t, size_t *at) {
    for (;;) {
        TS_TRY(need(u, 1, what));
        *at = u->pos;
        *t = u->d[u->pos++];
        if (*t != 'N') return TS_OK;
    }
}

/* One element of a container: its marker (unless typed) and value. */
static ts_status element(ubj *u, unsigned char type, unsigned depth) {
    size_t at;
    unsigned char t = type;
    if (!type) TS_TRY(next_marker(u, "a container", &t, &at));
    else at = u->pos;
    return value(u, t, at, depth);
}

static ts_status object_key(ubj *u, size_t at) {
    const unsigned char *s = NULL;
    size_t k = 0;
    TS_TRY(mark(u, at));
    TS_TRY(read_span(u, "an object key", &s, &k));
    TS_TRY(emit_string(u, s, k));
    return emit(u, ":", 1);
}

/* Counted container: the count must fit in what remains (each element takes >= 1 byte). */
static ts_status counted(ubj *u, int is_obj, unsigned char type, long long count, unsigned depth) {
    size_t min = type ? fixed_size(type) : 1;
    if (min == 0) min = 1; /* typed S, H, [, {: at least a length marker each */
    if (is_obj) min += 1;  /* a key length marker */
    if ((unsigned long long)count > (u->n - u->pos) / min) return truncated(u, "a counted container");
    for (long long i = 0; i < count; i++) {
        if (i) TS_TRY(emit(u, ",", 1));
        if (is_obj) TS_TRY(object_key(u, u->pos));
        TS_TRY(element(u, type, depth));
    }
    return TS_OK;
}

/* Container ended by ']' or '}'. */
static ts_status open_ended(ubj *u, int is_obj, unsigned depth) {
    for (size_t i = 0;; i++) {
        size_t at;
        unsigned char t;
        TS_TRY(next_marker(u, is_obj ? "an object" : "an array", &t, &at));
        if (t == (is_obj ? '}' : ']')) return TS_OK;
        if (i) TS_TRY(emit(u, ",", 1));
        if (is_obj) {
            u->pos = at; /* the marker is the key's length type */
            TS_TRY(object_key(u, at));
            TS_TRY(next_marker(u, "an object", &t, &at));
        }
        TS_TRY(value(u, t, at, depth));
    }
}

static ts_status container(ubj *u, int is_obj, size_t at, unsigned depth) {
    unsigned char type;
    long long count;
    if (depth >= TSU_MAX_DEPTH) return ubj_fail(u, TS_ERR_LIMIT, at, "nesting deeper than 128 levels");
    TS_TRY(mark(u, at));
    TS_TRY(emit(u, is_obj ? "{" : "[", 1));
    TS_TRY(container_header(u, &type, &count));
    if (count >= 0)
        TS_TRY(counted(u, is_obj, type, count, depth + 1));
    else
        TS_TRY(open_ended(u, is_obj, depth + 1));
    return emit(u, is_obj ? "}" : "]", 1);
}

static ts_status value(ubj *u, unsigned char t, size_t at, unsigned depth) {
    char msg[80];
    switch (t) {
    case 'Z': return emit_s(u, "null");
    case 'T': return emit_s(u, "true");
    case 'F': return emit_s(u, "false");
    case 'i': case 'U': case 'I': case 'l': case 'L': case 'd': case 'D': return number(u, t);
    case 'H': return high_precision(u, at);
    case 'C':
        TS_TRY(need(u, 1, "a char"));
        u->pos++;
        return emit_string(u, u->d + u->pos - 1, 1);
    case 'S': {
        const unsigned char *s = NULL;
        size_t k = 0;
        TS_TRY(read_span(u, "a string", &s, &k));
        return emit_string(u, s, k);
    }
    case '[': return container(u, 0, at, depth);
    case '{': return container(u, 1, at, depth);
    default:
        if (t >= 0x20 && t < 0x7f)
            snprintf(msg, sizeof msg, "unknown UBJSON type marker '%c'", t);
        else
            snprintf(msg, sizeof msg, "unknown UBJSON type marker 0x%02x", t);
        return ubj_fail(u, TS_ERR_PARSE, at, msg);
    }
}

ts_status tsu_to_json(const char *data, size_t size, const char *name, tsu_json *out, ts_error *err) {
    ubj u = {0};
    u.d = (const unsigned char *)data;
    u.n = size;
    u.name = name ? name : "<buffer>";
    u.err = err;
    memset(out, 0, sizeof *out);
    ts_status st;
    if (size == 0)
        st = ubj_fail(&u, TS_ERR_PARSE, 0, "empty UBJSON input");
    else
        st = value(&u, u.d[u.pos++], 0, 0);
    if (st == TS_OK && u.pos < u.n)
        st = ubj_fail(&u, TS_ERR_PARSE, u.pos, "unexpected bytes after the top-level value");
    if (st != TS_OK) {
        free(u.out);
        free(u.map);
        return st;
    }
    out->text = u.out;
    out->size = u.len;
    out->map = u.map;
    out->n_map = u.n_map;
    return TS_OK;
}

void tsu_json_free(tsu_json *j) {
    if (!j) return;
    free(j->text);
    free(j->map);
    memset(j, 0, sizeof *j);
}

size_t tsu_ubj_offset(const tsu_json *j, size_t json_byte) {
    size_t lo = 0, hi = j->n_map; /* find the last entry with json <= json_byte */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (j->map[mid].json <= json_byte)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo ? j->map[lo - 1].ubj : 0;
}

int tsu_looks_like_ubjson(const char *data, size_t size) {
    return data && size >= 2 && data[0] == '{' && data[1] && strchr("iUIlL$#", data[1]) != NULL;
}
