/* hash.h: a 128-bit fingerprint of a model's scoring content (ifelse's cache and the planner's wisdom key). */
#ifndef TS_MODEL_HASH_H
#define TS_MODEL_HASH_H

#include <stddef.h>
#include <stdint.h>

#include "model/forest.h"

/* The fingerprint covers everything that decides a score: base score, n_features, and per
 * tree in order its weight, nodes (threshold bits, feature, children, flags) and leaf
 * values (bits). Two models with equal fingerprints score every row the same (barring a
 * 2^-128 accident; the hash is not cryptographic and not meant against adversaries). It
 * does not depend on the file format, feature names or objective. */
typedef struct tsm_hash {
    uint64_t h[2];
} tsm_hash;

tsm_hash tsm_model_hash(const ts_model *m);

/* Mix len bytes into a running hash (start from tsm_hash_init()). */
tsm_hash tsm_hash_init(void);
void tsm_hash_bytes(tsm_hash *h, const void *data, size_t len);

/* 32 lowercase hex digits and a NUL into out (33 bytes). */
void tsm_hash_hex(const tsm_hash *h, char out[33]);

/* SHA-256 (FIPS 180-4), for names that must resist collisions made on purpose: the
 * key of ifelse's cached native code. Streaming: init, update any number of times,
 * final. */
typedef struct tsm_sha256 {
    uint32_t state[8];
    uint64_t bytes;             /* total length absorbed */
    unsigned char block[64];    /* the pending partial block: bytes % 64 of them */
    int ni;                     /* blocks compressed with the SHA extensions */
} tsm_sha256;

void tsm_sha256_init(tsm_sha256 *c);
/* The same, compressing with the x86 SHA extensions when sha_ni is not 0: only where the
 * CPU has them (platform/cpu.h TSR_CPU_SHA; the caller asks, this layer does not detect).
 * The same digests (test_cache_trust), about 5x faster (a 4-million-node forest: 0.3 s). */
void tsm_sha256_init_ni(tsm_sha256 *c, int sha_ni);
void tsm_sha256_update(tsm_sha256 *c, const void *data, size_t len);
void tsm_sha256_final(tsm_sha256 *c, unsigned char digest[32]);

/* The SHA-256 of the same content tsm_model_hash covers (in the same order, each
 * field little-endian as stored), so two models with the same digest score alike
 * unless someone broke SHA-256. */
void tsm_model_sha256(const ts_model *m, int sha_ni, unsigned char digest[32]);

/* 2 * n lowercase hex digits of bytes and a NUL into out (2 * n + 1 bytes). */
void tsm_hex(const unsigned char *bytes, size_t n, char *out);

#endif /* TS_MODEL_HASH_H */
