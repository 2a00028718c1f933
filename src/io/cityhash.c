/* cityhash.c: CityHash64 as CatBoost hashes categorical values (util/digest/city.h: Google's CityHash 1.0.x, with k3). */
#include <stdint.h>
#include <string.h>

#include "io/catboost_core.h"

/*
 * CatBoost's CalcCatFeatureHash(s) (catboost/libs/cat_feature/cat_feature.cpp) is
 * CityHash64(s) & 0xffffffff, with the CityHash64 of Yandex's util/digest/city.h: Google's
 * CityHash 1.0.x (the constants k0..k3 and HashLen0to16 / HashLen17to32 before 1.1's
 * changes). Bytes are read little-endian, as on every machine CatBoost runs on. The unit
 * tests check this against the hashes CatBoost 1.2.10 stores for strings of every length
 * class (0, 1-3, 4-8, 9-16, 17-32, 33-64, 65 and more).
 */

static const uint64_t k0 = 0xc3a5c85c97cb3127ULL;
static const uint64_t k1 = 0xb492b66fbe98f273ULL;
static const uint64_t k2 = 0x9ae16a3b2f90404fULL;
static const uint64_t k3 = 0xc949d7c7509e6557ULL;

static uint64_t fetch64(const uint8_t *p) {
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static uint64_t fetch32(const uint8_t *p) {
    return (uint64_t)p[0] | (uint64_t)p[1] << 8 | (uint64_t)p[2] << 16 | (uint64_t)p[3] << 24;
}

static uint64_t rot(uint64_t v, int s) { return s == 0 ? v : (v >> s) | (v << (64 - s)); }
static uint64_t rot1(uint64_t v, int s) { return (v >> s) | (v << (64 - s)); } /* 0 < s < 64 */
static uint64_t shift_mix(uint64_t v) { return v ^ (v >> 47); }

static uint64_t hash16(uint64_t u, uint64_t v) {
    const uint64_t mul = 0x9ddfea08eb382d69ULL;
    uint64_t a = (u ^ v) * mul;
    a ^= a >> 47;
    uint64_t b = (v ^ a) * mul;
    b ^= b >> 47;
    return b * mul;
}

static uint64_t len0to16(const uint8_t *s, size_t len) {
    if (len > 8) {
        uint64_t a = fetch64(s), b = fetch64(s + len - 8);
        return hash16(a, rot1(b + len, (int)len)) ^ b;
    }
    if (len >= 4) {
        uint64_t a = fetch32(s);
        return hash16(len + (a << 3), fetch32(s + len - 4));
    }
    if (len > 0) {
        uint8_t a = s[0], b = s[len >> 1], c = s[len - 1];
        uint32_t y = (uint32_t)a + ((uint32_t)b << 8);
        uint32_t z = (uint32_t)len + ((uint32_t)c << 2);
        return shift_mix((uint64_t)y * k2 ^ (uint64_t)z * k3) * k2;
    }
    return k2;
}

static uint64_t len17to32(const uint8_t *s, size_t len) {
    uint64_t a = fetch64(s) * k1, b = fetch64(s + 8);
    uint64_t c = fetch64(s + len - 8) * k2, d = fetch64(s + len - 16) * k0;
    return hash16(rot(a - b, 43) + rot(c, 30) + d, a + rot(b ^ k3, 20) - c + len);
}

static uint64_t len33to64(const uint8_t *s, size_t len) {
    uint64_t z = fetch64(s + 24);
    uint64_t a = fetch64(s) + (len + fetch64(s + len - 16)) * k0;
    uint64_t b = rot(a + z, 52), c = rot(a, 37);
    a += fetch64(s + 8);
    c += rot(a, 7);
    a += fetch64(s + 16);
    uint64_t vf = a + z, vs = b + rot(a, 31) + c;
    a = fetch64(s + 16) + fetch64(s + len - 32);
    z = fetch64(s + len - 8);
    b = rot(a + z, 52);
    c = rot(a, 37);
    a += fetch64(s + len - 24);
    c += rot(a, 7);
    a += fetch64(s + len - 16);
    uint64_t wf = a + z, ws = b + rot(a, 31) + c;
    uint64_t r = shift_mix((vf + ws) * k2 + (wf + vs) * k0);
    return shift_mix(r * k0 + vs) * k2;
}

typedef struct pair64 { uint64_t first, second; } pair64;

static pair64 weak32(const uint8_t *s, uint64_t a, uint64_t b) {
    uint64_t w = fetch64(s), x = fetch64(s + 8), y = fetch64(s + 16), z = fetch64(s + 24);
    a += w;
    b = rot(b + a + z, 21);
    uint64_t c = a;
    a += x;
    a += y;
    b += rot(a, 44);
    return (pair64){a + z, b + c};
}

uint64_t tscb_cityhash64(const void *data, size_t len) {
    const uint8_t *s = data;
    if (len <= 32) return len <= 16 ? len0to16(s, len) : len17to32(s, len);
    if (len <= 64) return len33to64(s, len);
    uint64_t x = fetch64(s);
    uint64_t y = fetch64(s + len - 16) ^ k1;
    uint64_t z = fetch64(s + len - 56) ^ k0;
    pair64 v = weak32(s + len - 64, len, y);
    pair64 w = weak32(s + len - 32, len * k1, k0);
    z += shift_mix(v.second) * k1;
    x = rot(z + x, 39) * k1;
    y = rot(y, 33) * k1;
    len = (len - 1) & ~(size_t)63;
    do {
        x = rot(x + y + v.first + fetch64(s + 16), 37) * k1;
        y = rot(y + v.second + fetch64(s + 48), 42) * k1;
        x ^= w.second;
        y ^= v.first;
        z = rot(z ^ w.first, 33);
        v = weak32(s, v.second * k1, x + w.first);
        w = weak32(s + 32, z + w.second, y);
        uint64_t t = z;
        z = x;
        x = t;
        s += 64;
        len -= 64;
    } while (len != 0);
    return hash16(hash16(v.first, w.first) + shift_mix(y) * k1 + z, hash16(v.second, w.second) + x);
}

uint32_t tscb_category_hash(const char *text, size_t len) { return (uint32_t)(tscb_cityhash64(text, len) & 0xffffffffu); }
