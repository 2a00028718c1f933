/* hash.c: a 128-bit fingerprint of a model: two independent 64-bit multiply-xorshift lanes over its content. */
#include "model/hash.h"

#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#endif

/* Each lane absorbs 8-byte words w as h = mix(h ^ w) with its own odd multiplier; the
 * final avalanche makes every input bit reach every output bit. The tail is padded with
 * its length so that "ab" and "ab\0" differ. */
static const uint64_t MUL[2] = {0x9E3779B97F4A7C15ull, 0xC2B2AE3D27D4EB4Full};

static uint64_t mix(uint64_t h, uint64_t m) {
    h *= m;
    h ^= h >> 29;
    return h;
}

static uint64_t avalanche(uint64_t h) {
    h ^= h >> 33;
    h *= 0xFF51AFD7ED558CCDull;
    h ^= h >> 33;
    h *= 0xC4CEB9FE1A85EC53ull;
    h ^= h >> 33;
    return h;
}

tsm_hash tsm_hash_init(void) { return (tsm_hash){{0x243F6A8885A308D3ull, 0x13198A2E03707344ull}}; }

void tsm_hash_bytes(tsm_hash *h, const void *data, size_t len) {
    const unsigned char *p = data;
    while (len >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        h->h[0] = mix(h->h[0] ^ w, MUL[0]);
        h->h[1] = mix(h->h[1] ^ (w + 0x632BE59BD9B4E019ull), MUL[1]);
        p += 8;
        len -= 8;
    }
    uint64_t w = (uint64_t)len << 56;
    for (size_t i = 0; i < len; i++) w |= (uint64_t)p[i] << (8 * i);
    h->h[0] = mix(h->h[0] ^ w, MUL[0]);
    h->h[1] = mix(h->h[1] ^ (w + 0x632BE59BD9B4E019ull), MUL[1]);
}

/* The scoring content of a model as one byte stream, fed in order to `feed`: the one
 * definition both keys below hash (the counts, base score, then per tree its sizes,
 * weight, nodes and leaf values). */
typedef void (*feed_fn)(void *ctx, const void *p, size_t n);

static void feed_u64(feed_fn feed, void *ctx, uint64_t v) { feed(ctx, &v, sizeof v); }

static void feed_model(const ts_model *m, feed_fn feed, void *ctx) {
    feed_u64(feed, ctx, m->n_trees);
    feed_u64(feed, ctx, m->n_features);
    feed(ctx, &m->base_score, sizeof m->base_score);
    for (uint32_t t = 0; t < m->n_trees; t++) {
        const tsm_tree *tr = &m->trees[t];
        feed_u64(feed, ctx, ((uint64_t)tr->n_nodes << 32) | tr->n_leaves);
        feed(ctx, &tr->weight, sizeof tr->weight);
        for (uint32_t i = 0; i < tr->n_nodes; i++) {
            const tsm_node *n = &tr->nodes[i];
            uint32_t w[5];
            memcpy(&w[0], &n->threshold, 4);
            w[1] = n->feature;
            memcpy(&w[2], &n->left, 4);
            memcpy(&w[3], &n->right, 4);
            w[4] = n->flags;
            feed(ctx, w, sizeof w);
        }
        feed(ctx, tr->leaf_values, (size_t)tr->n_leaves * sizeof *tr->leaf_values);
    }
}

static void feed_hash(void *ctx, const void *p, size_t n) { tsm_hash_bytes(ctx, p, n); }

tsm_hash tsm_model_hash(const ts_model *m) {
    tsm_hash h = tsm_hash_init();
    feed_model(m, feed_hash, &h);
    h.h[0] = avalanche(h.h[0] ^ h.h[1] * 3);
    h.h[1] = avalanche(h.h[1] + h.h[0]);
    return h;
}

void tsm_hash_hex(const tsm_hash *h, char out[33]) {
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)h->h[0], (unsigned long long)h->h[1]);
}

/* ---- SHA-256 (FIPS 180-4) ------------------------------------------------------------- */

static const uint32_t SHA_K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t rotr(uint32_t x, unsigned n) { return (x >> n) | (x << (32 - n)); }

static void sha_block(uint32_t st[8], const unsigned char *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 | p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = st[0], b = st[1], c = st[2], d = st[3], e = st[4], f = st[5], g = st[6], h = st[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + SHA_K[i] + w[i];
        uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        h = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    st[0] += a, st[1] += b, st[2] += c, st[3] += d, st[4] += e, st[5] += f, st[6] += g, st[7] += h;
}

#if defined(__x86_64__) || defined(__i386__)
/*
 * n blocks with the SHA extensions (Intel's SHA-NI reference sequence): the state as the
 * two registers ABEF and CDGH that SHA256RNDS2 works on, four rounds per pair of RNDS2
 * (the message words plus K in the low then the high half), the schedule's next four
 * words W[t..t+3] = MSG2(MSG1(W[t-16..], W[t-12..]) + W[t-7..t-4], W[t-4..]). Compiled
 * for SHA, SSSE3 and SSE4.1 here only (a target attribute: the file stays generic);
 * called only when the caller says the CPU has them.
 */
__attribute__((target("sha,ssse3,sse4.1"))) static void sha_blocks_ni(uint32_t st[8], const unsigned char *p,
                                                                       size_t n) {
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bll, 0x0405060700010203ll);
    __m128i t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)st), 0xB1);  /* CDAB */
    __m128i s1 = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(st + 4)), 0x1B); /* EFGH */
    __m128i s0 = _mm_alignr_epi8(t, s1, 8);                                        /* ABEF */
    s1 = _mm_blend_epi16(s1, t, 0xF0);                                             /* CDGH */
    for (; n; n--, p += 64) {
        const __m128i abef = s0, cdgh = s1;
        __m128i w[4];
        for (int i = 0; i < 16; i++) {
            __m128i m;
            if (i < 4) {
                m = w[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), bswap);
            } else { /* w[i % 4] held W of group i - 4 */
                m = _mm_sha256msg1_epu32(w[i % 4], w[(i + 1) % 4]);
                m = _mm_add_epi32(m, _mm_alignr_epi8(w[(i + 3) % 4], w[(i + 2) % 4], 4));
                m = w[i % 4] = _mm_sha256msg2_epu32(m, w[(i + 3) % 4]);
            }
            m = _mm_add_epi32(m, _mm_loadu_si128((const __m128i *)(SHA_K + 4 * i)));
            s1 = _mm_sha256rnds2_epu32(s1, s0, m);
            s0 = _mm_sha256rnds2_epu32(s0, s1, _mm_shuffle_epi32(m, 0x0E));
        }
        s0 = _mm_add_epi32(s0, abef);
        s1 = _mm_add_epi32(s1, cdgh);
    }
    t = _mm_shuffle_epi32(s0, 0x1B);       /* FEBA */
    s1 = _mm_shuffle_epi32(s1, 0xB1);      /* DCHG */
    _mm_storeu_si128((__m128i *)st, _mm_blend_epi16(t, s1, 0xF0));      /* DCBA */
    _mm_storeu_si128((__m128i *)(st + 4), _mm_alignr_epi8(s1, t, 8));   /* HGFE */
}
#define SHA_NI_BUILT 1
#else
#define SHA_NI_BUILT 0
#endif

/* n whole blocks at p into c's state. */
static void sha_blocks(tsm_sha256 *c, const unsigned char *p, size_t n) {
#if SHA_NI_BUILT
    if (c->ni) {
        sha_blocks_ni(c->state, p, n);
        return;
    }
#endif
    for (; n; n--, p += 64) sha_block(c->state, p);
}

void tsm_sha256_init_ni(tsm_sha256 *c, int sha_ni) {
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(c->state, iv, sizeof iv);
    c->bytes = 0;
    c->ni = SHA_NI_BUILT && sha_ni;
}

void tsm_sha256_init(tsm_sha256 *c) { tsm_sha256_init_ni(c, 0); }

void tsm_sha256_update(tsm_sha256 *c, const void *data, size_t len) {
    const unsigned char *p = data;
    size_t used = (size_t)(c->bytes % 64);
    c->bytes += len;
    if (used) {
        size_t take = 64 - used < len ? 64 - used : len;
        memcpy(c->block + used, p, take);
        p += take;
        len -= take;
        if (used + take < 64) return;
        sha_blocks(c, c->block, 1);
    }
    sha_blocks(c, p, len / 64);
    p += len / 64 * 64;
    len %= 64;
    if (len) memcpy(c->block, p, len);
}

void tsm_sha256_final(tsm_sha256 *c, unsigned char digest[32]) {
    uint64_t bits = c->bytes * 8;
    unsigned char pad[72] = {0x80};
    size_t used = (size_t)(c->bytes % 64), n = used < 56 ? 56 - used : 120 - used;
    for (int i = 0; i < 8; i++) pad[n + (size_t)i] = (unsigned char)(bits >> (56 - 8 * i));
    tsm_sha256_update(c, pad, n + 8);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 4; j++) digest[4 * i + j] = (unsigned char)(c->state[i] >> (24 - 8 * j));
}

static void feed_sha(void *ctx, const void *p, size_t n) { tsm_sha256_update(ctx, p, n); }

void tsm_model_sha256(const ts_model *m, int sha_ni, unsigned char digest[32]) {
    tsm_sha256 c;
    tsm_sha256_init_ni(&c, sha_ni);
    feed_model(m, feed_sha, &c);
    tsm_sha256_final(&c, digest);
}

void tsm_hex(const unsigned char *bytes, size_t n, char *out) {
    static const char digits[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = digits[bytes[i] >> 4];
        out[2 * i + 1] = digits[bytes[i] & 15];
    }
    out[2 * n] = '\0';
}
