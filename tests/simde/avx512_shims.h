/* avx512_shims.h: AVX-512 intrinsics through SIMDe (and the few SIMDe 0.7 lacks, written from Intel's definitions), so that the AVX-512 kernels run on a CPU without AVX-512 (scripts/check_avx512_simde.sh; tests only). */
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#include <simde/x86/gfni.h>
#define _IMMINTRIN_H_INCLUDED
typedef simde__mmask64 __mmask64;
typedef simde__mmask32 __mmask32;
typedef simde__mmask16 __mmask16;
typedef simde__mmask8 __mmask8;
#include <string.h>
#include <stdint.h>
/* Intrinsics SIMDe 0.7.4 lacks, from Intel's definitions (lane loops). */
static inline simde__mmask32 _mm512_cmpgt_epu16_mask(simde__m512i a, simde__m512i b) {
    uint16_t x[32], y[32]; memcpy(x, &a, 64); memcpy(y, &b, 64);
    simde__mmask32 m = 0; for (int i = 0; i < 32; i++) if (x[i] > y[i]) m |= (simde__mmask32)1 << i; return m;
}
static inline simde__mmask16 _mm512_cmplt_epu32_mask(simde__m512i a, simde__m512i b) {
    uint32_t x[16], y[16]; memcpy(x, &a, 64); memcpy(y, &b, 64);
    simde__mmask16 m = 0; for (int i = 0; i < 16; i++) if (x[i] < y[i]) m |= (simde__mmask16)(1u << i); return m;
}
static inline simde__mmask16 _mm512_cmpgt_epu32_mask(simde__m512i a, simde__m512i b) {
    uint32_t x[16], y[16]; memcpy(x, &a, 64); memcpy(y, &b, 64);
    simde__mmask16 m = 0; for (int i = 0; i < 16; i++) if (x[i] > y[i]) m |= (simde__mmask16)(1u << i); return m;
}
static inline simde__m256i _mm512_cvtepi32_epi16(simde__m512i a) {
    int32_t x[16]; int16_t r[16]; memcpy(x, &a, 64); for (int i = 0; i < 16; i++) r[i] = (int16_t)x[i];
    simde__m256i o; memcpy(&o, r, 32); return o;
}
static inline simde__m128i _mm512_cvtepi32_epi8(simde__m512i a) {
    int32_t x[16]; int8_t r[16]; memcpy(x, &a, 64); for (int i = 0; i < 16; i++) r[i] = (int8_t)x[i];
    simde__m128i o; memcpy(&o, r, 16); return o;
}
static inline simde__m512i _mm512_cvtepu8_epi32(simde__m128i a) {
    uint8_t x[16]; int32_t r[16]; memcpy(x, &a, 16); for (int i = 0; i < 16; i++) r[i] = x[i];
    simde__m512i o; memcpy(&o, r, 64); return o;
}
static inline simde__m512 _mm512_shuffle_f32x4(simde__m512 a, simde__m512 b, int imm) {
    float x[16], y[16], r[16]; memcpy(x, &a, 64); memcpy(y, &b, 64);
    for (int q = 0; q < 4; q++) memcpy(r + 4 * q, (q < 2 ? x : y) + 4 * (imm >> (2 * q) & 3), 16);
    simde__m512 o; memcpy(&o, r, 64); return o;
}
static inline simde__m512 _mm512_maskz_loadu_ps(simde__mmask16 k, const void *p) {
    float r[16]; for (int i = 0; i < 16; i++) if (k >> i & 1) memcpy(&r[i], (const char *)p + 4 * i, 4); else r[i] = 0;
    simde__m512 o; memcpy(&o, r, 64); return o;
}
static inline simde__m512d _mm512_cvtps_pd(simde__m256 a) {
    float x[8]; double r[8]; memcpy(x, &a, 32); for (int i = 0; i < 8; i++) r[i] = (double)x[i];
    simde__m512d o; memcpy(&o, r, 64); return o;
}
/* SIMDe 0.7.4's _mm256_testz_si256 (through _mm_testz_si128, in a build without AVX)
 * answers wrong in about half of the cases where a lane is non-zero: Intel's definition. */
static inline int ts_shim_mm256_testz_si256(simde__m256i a, simde__m256i b) {
    uint64_t x[4], y[4], r = 0; memcpy(x, &a, 32); memcpy(y, &b, 32);
    for (int i = 0; i < 4; i++) r |= x[i] & y[i];
    return r == 0;
}
#undef _mm256_testz_si256
#define _mm256_testz_si256(a, b) ts_shim_mm256_testz_si256(a, b)
static inline simde__m512i _mm512_cvtepu8_epi64(simde__m128i a) {
    uint8_t x[16]; int64_t r[8]; memcpy(x, &a, 16); for (int i = 0; i < 8; i++) r[i] = x[i];
    simde__m512i o; memcpy(&o, r, 64); return o;
}
static inline simde__m512d _mm512_mask_i32gather_pd(simde__m512d src, simde__mmask8 k, simde__m256i idx, const void *base, int scale) {
    int32_t i[8]; double r[8]; memcpy(i, &idx, 32); memcpy(r, &src, 64);
    for (int j = 0; j < 8; j++) if (k >> j & 1) memcpy(&r[j], (const char *)base + (int64_t)i[j] * scale, 8);
    simde__m512d o; memcpy(&o, r, 64); return o;
}
static inline simde__m512d _mm512_i32gather_pd(simde__m256i idx, const void *base, int scale) {
    return _mm512_mask_i32gather_pd(simde_mm512_setzero_pd(), 0xFF, idx, base, scale);
}
static inline simde__m512 _mm512_mask_i32gather_ps(simde__m512 src, simde__mmask16 k, simde__m512i idx, const void *base, int scale) {
    int32_t i[16]; float r[16]; memcpy(i, &idx, 64); memcpy(r, &src, 64);
    for (int j = 0; j < 16; j++) if (k >> j & 1) memcpy(&r[j], (const char *)base + (int64_t)i[j] * scale, 4);
    simde__m512 o; memcpy(&o, r, 64); return o;
}
static inline simde__m512 _mm512_i32gather_ps(simde__m512i idx, const void *base, int scale) {
    return _mm512_mask_i32gather_ps(simde_mm512_setzero_ps(), 0xFFFF, idx, base, scale);
}
static inline uint32_t _mm512_reduce_max_epu32(simde__m512i a) {
    uint32_t x[16], m = 0; memcpy(x, &a, 64); for (int i = 0; i < 16; i++) if (x[i] > m) m = x[i]; return m;
}
#define _mm512_mask_cmp_ps_mask(k, a, b, p) ((simde__mmask16)((k) & simde_mm512_cmp_ps_mask(a, b, p)))
static inline simde__m512i _mm512_lzcnt_epi32(simde__m512i a) {
    uint32_t x[16]; memcpy(x, &a, 64); for (int i = 0; i < 16; i++) x[i] = x[i] ? (uint32_t)__builtin_clz(x[i]) : 32;
    simde__m512i o; memcpy(&o, x, 64); return o;
}
static inline simde__m512i _mm512_lzcnt_epi64(simde__m512i a) {
    uint64_t x[8]; memcpy(x, &a, 64); for (int i = 0; i < 8; i++) x[i] = x[i] ? (uint64_t)__builtin_clzll(x[i]) : 64;
    simde__m512i o; memcpy(&o, x, 64); return o;
}
static inline simde__m512d _mm512_i64gather_pd(simde__m512i idx, const void *base, int scale) {
    int64_t i[8]; double r[8]; memcpy(i, &idx, 64);
    for (int k = 0; k < 8; k++) memcpy(&r[k], (const char *)base + i[k] * scale, 8);
    simde__m512d o; memcpy(&o, r, 64); return o;
}
static inline simde__m128i _mm512_cvtusepi32_epi8(simde__m512i a) {
    uint32_t x[16]; uint8_t r[16]; memcpy(x, &a, 64); for (int i = 0; i < 16; i++) r[i] = x[i] > 255 ? 255 : (uint8_t)x[i];
    simde__m128i o; memcpy(&o, r, 16); return o;
}
static inline simde__mmask64 _kxor_mask64(simde__mmask64 a, simde__mmask64 b) { return a ^ b; }
/* Rounding modes and the intrinsics the double quantizers and trees-simd's keys use. */
#include <math.h>
#ifndef _MM_FROUND_TO_NEG_INF
#define _MM_FROUND_TO_NEG_INF 0x01
#endif
#ifndef _MM_FROUND_TO_POS_INF
#define _MM_FROUND_TO_POS_INF 0x02
#endif
#ifndef _MM_FROUND_NO_EXC
#define _MM_FROUND_NO_EXC 0x08
#endif
static inline simde__m256 _mm512_cvt_roundpd_ps(simde__m512d a, int r) {
    double x[8]; float f[8]; memcpy(x, &a, 64);
    for (int i = 0; i < 8; i++) {
        f[i] = (float)x[i];
        if ((r & 3) == _MM_FROUND_TO_POS_INF && (double)f[i] < x[i]) f[i] = nextafterf(f[i], INFINITY);
        if ((r & 3) == _MM_FROUND_TO_NEG_INF && (double)f[i] > x[i]) f[i] = nextafterf(f[i], -INFINITY);
    }
    simde__m256 o; memcpy(&o, f, 32); return o;
}
static inline simde__m512d _mm512_maskz_loadu_pd(simde__mmask8 k, const void *p) {
    double r[8]; for (int i = 0; i < 8; i++) if (k >> i & 1) memcpy(&r[i], (const char *)p + 8 * i, 8); else r[i] = 0;
    simde__m512d o; memcpy(&o, r, 64); return o;
}
static inline simde__m512d _mm512_shuffle_f64x2(simde__m512d a, simde__m512d b, int imm) {
    double x[8], y[8], r[8]; memcpy(x, &a, 64); memcpy(y, &b, 64);
    for (int q = 0; q < 4; q++) memcpy(r + 2 * q, (q < 2 ? x : y) + 2 * (imm >> (2 * q) & 3), 16);
    simde__m512d o; memcpy(&o, r, 64); return o;
}
static inline simde__m512i _mm512_cvtepu32_epi64(simde__m256i a) {
    uint32_t x[8]; uint64_t r[8]; memcpy(x, &a, 32); for (int i = 0; i < 8; i++) r[i] = x[i];
    simde__m512i o; memcpy(&o, r, 64); return o;
}
static inline simde__m512i _mm512_srai_epi32(simde__m512i a, int n) {
    int32_t x[16]; memcpy(x, &a, 64); for (int i = 0; i < 16; i++) x[i] = x[i] >> (n > 31 ? 31 : n);
    simde__m512i o; memcpy(&o, x, 64); return o;
}
#undef _mm512_mask_cmpge_epi32_mask
#undef _mm512_mask_cmplt_epi32_mask
static inline simde__mmask16 _mm512_mask_cmpge_epi32_mask(simde__mmask16 k, simde__m512i a, simde__m512i b) {
    int32_t x[16], y[16]; memcpy(x, &a, 64); memcpy(y, &b, 64);
    simde__mmask16 m = 0; for (int i = 0; i < 16; i++) if ((k >> i & 1) && x[i] >= y[i]) m |= (simde__mmask16)(1u << i); return m;
}
static inline simde__mmask16 _mm512_mask_cmplt_epi32_mask(simde__mmask16 k, simde__m512i a, simde__m512i b) {
    int32_t x[16], y[16]; memcpy(x, &a, 64); memcpy(y, &b, 64);
    simde__mmask16 m = 0; for (int i = 0; i < 16; i++) if ((k >> i & 1) && x[i] < y[i]) m |= (simde__mmask16)(1u << i); return m;
}
static inline simde__m512i _mm512_mask_i32gather_epi32(simde__m512i src, simde__mmask16 k, simde__m512i idx, const void *base, int scale) {
    int32_t i[16], r[16]; memcpy(i, &idx, 64); memcpy(r, &src, 64);
    for (int j = 0; j < 16; j++) if (k >> j & 1) memcpy(&r[j], (const char *)base + (int64_t)i[j] * scale, 4);
    simde__m512i o; memcpy(&o, r, 64); return o;
}
static inline simde__m512i _mm512_mask_i32gather_epi64(simde__m512i src, simde__mmask8 k, simde__m256i idx, const void *base, int scale) {
    int32_t i[8]; int64_t r[8]; memcpy(i, &idx, 32); memcpy(r, &src, 64);
    for (int j = 0; j < 8; j++) if (k >> j & 1) memcpy(&r[j], (const char *)base + (int64_t)i[j] * scale, 8);
    simde__m512i o; memcpy(&o, r, 64); return o;
}
/* deep's gathered walk (x86/deep_avx512.c) */
static inline simde__m512i _mm512_i32gather_epi32(simde__m512i idx, const void *base, int scale) {
    return _mm512_mask_i32gather_epi32(simde_mm512_setzero_si512(), 0xFFFF, idx, base, scale);
}
static inline simde__m512i _mm512_i32gather_epi64(simde__m256i idx, const void *base, int scale) {
    return _mm512_mask_i32gather_epi64(simde_mm512_setzero_si512(), 0xFF, idx, base, scale);
}
static inline simde__m512i _mm512_mask_expand_epi32(simde__m512i src, simde__mmask16 k, simde__m512i a) {
    int32_t s[16], x[16]; memcpy(s, &src, 64); memcpy(x, &a, 64);
    for (int i = 0, j = 0; i < 16; i++) if (k >> i & 1) s[i] = x[j++];
    simde__m512i o; memcpy(&o, s, 64); return o;
}
static inline simde__mmask16 _mm512_mask_cmpgt_epu32_mask(simde__mmask16 k, simde__m512i a, simde__m512i b) {
    return (simde__mmask16)(k & _mm512_cmpgt_epu32_mask(a, b));
}
static inline simde__m512i _mm512_maskz_loadu_epi32(simde__mmask16 k, const void *p) {
    int32_t r[16]; for (int i = 0; i < 16; i++) if (k >> i & 1) memcpy(&r[i], (const char *)p + 4 * i, 4); else r[i] = 0;
    simde__m512i o; memcpy(&o, r, 64); return o;
}
