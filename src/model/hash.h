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

#endif /* TS_MODEL_HASH_H */
