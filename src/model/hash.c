/* hash.c: a 128-bit fingerprint of a model: two independent 64-bit multiply-xorshift lanes over its content. */
#include "model/hash.h"

#include <stdio.h>
#include <string.h>

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

static void hash_u64(tsm_hash *h, uint64_t v) { tsm_hash_bytes(h, &v, sizeof v); }

tsm_hash tsm_model_hash(const ts_model *m) {
    tsm_hash h = tsm_hash_init();
    hash_u64(&h, m->n_trees);
    hash_u64(&h, m->n_features);
    tsm_hash_bytes(&h, &m->base_score, sizeof m->base_score);
    for (uint32_t t = 0; t < m->n_trees; t++) {
        const tsm_tree *tr = &m->trees[t];
        hash_u64(&h, ((uint64_t)tr->n_nodes << 32) | tr->n_leaves);
        tsm_hash_bytes(&h, &tr->weight, sizeof tr->weight);
        for (uint32_t i = 0; i < tr->n_nodes; i++) {
            const tsm_node *n = &tr->nodes[i];
            uint32_t w[5];
            memcpy(&w[0], &n->threshold, 4);
            w[1] = n->feature;
            memcpy(&w[2], &n->left, 4);
            memcpy(&w[3], &n->right, 4);
            w[4] = n->flags;
            tsm_hash_bytes(&h, w, sizeof w);
        }
        tsm_hash_bytes(&h, tr->leaf_values, (size_t)tr->n_leaves * sizeof *tr->leaf_values);
    }
    h.h[0] = avalanche(h.h[0] ^ h.h[1] * 3);
    h.h[1] = avalanche(h.h[1] + h.h[0]);
    return h;
}

void tsm_hash_hex(const tsm_hash *h, char out[33]) {
    snprintf(out, 33, "%016llx%016llx", (unsigned long long)h->h[0], (unsigned long long)h->h[1]);
}
