/* gpu_layout.c: the GPU engines' arrays (gpu_layout.h) from a finished forest. */
#include <stdlib.h>
#include <string.h>

#include "gpu/gpu_layout.h"
#include "model/forest.h"

void tsg_layout_free(tsg_layout *l) {
    if (!l) return;
    free(l->leaf_off);
    free(l->leaves);
    free(l->node_off);
    free(l->nodes);
    free(l->slot_feature);
    free(l->slot_flags);
    free(l->node_first);
    free(l->tree_word);
    free(l->word_entry);
    free(l->entries);
    free(l->wnodes);
    free(l->block_tree);
    free(l->slot_thr);
    free(l->thr);
    free(l->bslot_slot);
    free(l->bslot_base);
    free(l->centries);
    free(l->cwnodes);
    free(l);
}

static int cmp_float(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return x < y ? -1 : x > y;
}

/* A node's byte slot and k (tsg_centry's bslot_k) from its slot and threshold: the
 * threshold's index among the slot's distinct thresholds, cut into bytes. */
static uint32_t bslot_k(const tsg_layout *l, const uint32_t *bfirst, uint32_t slot, float threshold) {
    const float *T = l->thr + l->slot_thr[slot];
    uint32_t lo = 0, hi = l->slot_thr[slot + 1] - l->slot_thr[slot];
    while (lo < hi) { /* the threshold's index: the first one >= it */
        uint32_t mid = lo + (hi - lo) / 2u;
        if (T[mid] < threshold) lo = mid + 1u;
        else hi = mid;
    }
    return (bfirst[slot] + lo / 255u) << 8 | lo % 255u;
}

/* The byte-code arrays (gpu_params.h, tsg_centry and tsg_cwnode) from the built entries
 * and walk nodes: 0, or 1 when out of memory. */
static int build_codes(tsg_layout *l) {
    uint32_t n_nodes = l->node_first[l->n_trees], ns = l->n_slots;
    l->slot_thr = calloc((size_t)ns + 2, sizeof *l->slot_thr);
    l->thr = malloc(((size_t)n_nodes + 1) * sizeof *l->thr);
    uint32_t *bfirst = malloc(((size_t)ns + 1) * sizeof *bfirst);
    if (!l->slot_thr || !l->thr || !bfirst) {
        free(bfirst);
        return 1;
    }
    /* every slot's thresholds, sorted and made distinct in place */
    for (uint32_t i = 0; i < n_nodes; i++) l->slot_thr[l->entries[i].slot + 2]++;
    for (uint32_t s = 0; s < ns; s++) l->slot_thr[s + 2] += l->slot_thr[s + 1];
    for (uint32_t i = 0; i < n_nodes; i++) l->thr[l->slot_thr[l->entries[i].slot + 1]++] = l->entries[i].threshold;
    uint32_t out = 0;
    for (uint32_t s = 0; s < ns; s++) {
        uint32_t a = l->slot_thr[s], b = l->slot_thr[s + 1], first = out;
        qsort(l->thr + a, b - a, sizeof *l->thr, cmp_float);
        for (uint32_t i = a; i < b; i++)
            if (out == first || l->thr[out - 1] < l->thr[i]) l->thr[out++] = l->thr[i];
        l->slot_thr[s] = first;
    }
    l->slot_thr[ns] = out;
    /* byte slots: 255 thresholds each */
    uint64_t nb = 0;
    for (uint32_t s = 0; s < ns; s++) {
        bfirst[s] = (uint32_t)nb;
        nb += (l->slot_thr[s + 1] - l->slot_thr[s] + 254u) / 255u;
    }
    if (nb >= (1u << 24)) {
        free(bfirst);
        return 0; /* codes_ok stays 0 */
    }
    l->n_bslots = (uint32_t)nb;
    l->bslot_slot = malloc((nb + 1) * sizeof *l->bslot_slot);
    l->bslot_base = malloc((nb + 1) * sizeof *l->bslot_base);
    l->centries = malloc(((size_t)n_nodes + 1) * sizeof *l->centries);
    l->cwnodes = malloc(((size_t)n_nodes + 1) * sizeof *l->cwnodes);
    if (!l->bslot_slot || !l->bslot_base || !l->centries || !l->cwnodes) {
        free(bfirst);
        return 1;
    }
    if (!nb) l->bslot_slot[0] = l->bslot_base[0] = 0;
    for (uint32_t s = 0; s < ns; s++)
        for (uint32_t b = bfirst[s], base = 0; base < l->slot_thr[s + 1] - l->slot_thr[s]; b++, base += 255u) {
            l->bslot_slot[b] = s;
            l->bslot_base[b] = base;
        }
    for (uint32_t i = 0; i < n_nodes; i++) {
        const tsg_entry *e = &l->entries[i];
        const tsg_wnode *w = &l->wnodes[i];
        l->centries[i] = (tsg_centry){e->keep, e->hi, bslot_k(l, bfirst, e->slot, e->threshold)};
        l->cwnodes[i] = (tsg_cwnode){bslot_k(l, bfirst, w->slot, w->threshold), w->left, w->right, 0};
    }
    free(bfirst);
    l->codes_ok = 1;
    return 0;
}

int tsg_layout_build(const ts_model *m, uint32_t block_nodes, tsg_layout **out) {
    *out = NULL;
    if (!block_nodes) block_nodes = TSG_BLOCK_NODES;
    uint64_t n_nodes = 0, n_leaves = 0, n_words = 0;
    uint32_t max_nodes = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        n_nodes += m->trees[t].n_nodes;
        n_leaves += m->trees[t].n_leaves;
        n_words += (m->trees[t].n_leaves + 63u) / 64u;
        if (m->trees[t].n_nodes > max_nodes) max_nodes = m->trees[t].n_nodes;
    }
    if (n_nodes >= UINT32_MAX || n_leaves >= UINT32_MAX || n_words >= UINT32_MAX) return 2;
    tsg_layout *l = calloc(1, sizeof *l);
    if (!l) return 1;
    size_t nt = (size_t)m->n_trees + 1, nf = (size_t)m->n_features + 1;
    l->n_features = m->n_features;
    l->base = m->base_score;
    l->n_trees = m->n_trees;
    l->block_nodes = block_nodes;
    l->leaf_off = malloc(nt * sizeof *l->leaf_off);
    l->leaves = malloc((n_leaves + 1) * sizeof *l->leaves);
    l->node_off = malloc(nt * sizeof *l->node_off);
    l->nodes = malloc((n_nodes + 1) * sizeof *l->nodes);
    l->node_first = malloc(nt * sizeof *l->node_first);
    l->tree_word = malloc(nt * sizeof *l->tree_word);
    l->word_entry = malloc((n_words + 1) * sizeof *l->word_entry);
    l->entries = calloc(n_nodes + 1, sizeof *l->entries);
    l->wnodes = malloc((n_nodes + 1) * sizeof *l->wnodes);
    l->block_tree = malloc(nt * sizeof *l->block_tree);
    l->slot_feature = malloc(nf * 4 * sizeof *l->slot_feature);
    l->slot_flags = malloc(nf * 4 * sizeof *l->slot_flags);
    uint32_t *slot_of = calloc(nf * 4, sizeof *slot_of); /* (feature, flags) -> slot + 1 */
    uint32_t *lo = malloc(((size_t)max_nodes + 1) * sizeof *lo), *hi = malloc(((size_t)max_nodes + 1) * sizeof *hi);
    uint32_t *count = calloc(((size_t)max_nodes + 1) / 64 + 2, sizeof *count);
    if (!l->leaf_off || !l->leaves || !l->node_off || !l->nodes || !l->node_first || !l->tree_word || !l->word_entry ||
        !l->entries || !l->wnodes || !l->block_tree || !l->slot_feature || !l->slot_flags || !slot_of || !lo || !hi ||
        !count) {
        free(slot_of), free(lo), free(hi), free(count);
        tsg_layout_free(l);
        return 1;
    }
    /* The slots the model reads, by column and then rule (staging reads columns in order). */
    for (uint32_t t = 0; t < m->n_trees; t++)
        for (uint32_t i = 0; i < m->trees[t].n_nodes; i++) {
            const tsm_node *n = &m->trees[t].nodes[i];
            slot_of[(size_t)n->feature * 4 + (n->flags & 3u)] = 1;
        }
    for (size_t k = 0; k < nf * 4; k++)
        if (slot_of[k]) {
            l->slot_feature[l->n_slots] = (uint32_t)(k / 4);
            l->slot_flags[l->n_slots] = (uint32_t)(k % 4);
            slot_of[k] = ++l->n_slots;
        }
    if (!l->n_slots) l->slot_feature[0] = l->slot_flags[0] = 0; /* never read: no nodes */
    uint32_t node = 0, leaf = 0, word = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        const tsm_tree *tr = &m->trees[t];
        l->leaf_off[t] = leaf;
        l->node_off[t] = l->node_first[t] = node;
        l->tree_word[t] = word;
        for (uint32_t j = 0; j < tr->n_leaves; j++) l->leaves[leaf + j] = tr->weight * tr->leaf_values[j];
        for (uint32_t i = 0; i < tr->n_nodes; i++) {
            const tsm_node *n = &tr->nodes[i];
            uint32_t slot = slot_of[(size_t)n->feature * 4 + (n->flags & 3u)] - 1u;
            l->nodes[node + i] = (tsg_node){n->threshold, n->feature, n->left, n->right, n->flags};
            l->wnodes[node + i] = (tsg_wnode){n->threshold, slot, n->left, n->right};
        }
        /* Entries grouped by the word of their left subtree's first leaf (a counting
         * sort: preorder within a word). */
        uint32_t words = (tr->n_leaves + 63u) / 64u;
        if (tr->n_nodes) tsm_tree_leaf_ranges(tr, lo, hi);
        memset(count, 0, ((size_t)words + 1) * sizeof *count);
        for (uint32_t i = 0; i < tr->n_nodes; i++) count[lo[i] / 64u + 1]++;
        for (uint32_t w = 0; w < words; w++) {
            count[w + 1] += count[w];
            l->word_entry[word + w] = node + count[w];
        }
        for (uint32_t i = 0; i < tr->n_nodes; i++) {
            const tsm_node *n = &tr->nodes[i];
            uint32_t left_hi = n->left < 0 ? (uint32_t)~n->left + 1u : hi[n->left];
            uint32_t w = lo[i] / 64u, first = w * 64u, a = lo[i] - first;
            uint32_t b = left_hi - first; /* may pass the word: hi carries it on */
            uint64_t removed = b >= 64u ? ~0ull << a : ((1ull << b) - 1ull) & (~0ull << a);
            tsg_entry *e = &l->entries[node + count[w]++];
            e->keep = ~removed;
            e->threshold = n->threshold;
            e->slot = slot_of[(size_t)n->feature * 4 + (n->flags & 3u)] - 1u;
            e->hi = left_hi;
        }
        node += tr->n_nodes;
        leaf += tr->n_leaves;
        word += words;
    }
    l->leaf_off[m->n_trees] = leaf;
    l->node_off[m->n_trees] = l->node_first[m->n_trees] = node;
    l->tree_word[m->n_trees] = word;
    l->word_entry[word] = node;
    /* Tree blocks: consecutive trees while their nodes fit block_nodes. */
    uint32_t nb = 0, in_block = 0;
    for (uint32_t t = 0; t < m->n_trees; t++) {
        uint32_t e = m->trees[t].n_nodes;
        if (t == 0 || in_block + e > block_nodes) {
            l->block_tree[nb++] = t;
            in_block = 0;
        }
        in_block += e;
    }
    l->block_tree[nb] = m->n_trees;
    l->n_blocks = nb;
    free(slot_of), free(lo), free(hi), free(count);
    if (build_codes(l)) {
        tsg_layout_free(l);
        return 1;
    }
    *out = l;
    return 0;
}

void tsg_layout_naive_params(const tsg_layout *l, tsg_naive_params *p) {
    memset(p, 0, sizeof *p);
    p->base = l->base;
    p->n_trees = l->n_trees;
    p->node_off = l->node_off;
    p->leaf_off = l->leaf_off;
    p->nodes = l->nodes;
    p->leaves = l->leaves;
}

void tsg_layout_qs_params(const tsg_layout *l, tsg_qs_params *p) {
    memset(p, 0, sizeof *p);
    p->base = l->base;
    p->n_slots = l->n_slots;
    p->slot_feature = l->slot_feature;
    p->slot_flags = l->slot_flags;
    p->n_trees = l->n_trees;
    p->node_first = l->node_first;
    p->tree_word = l->tree_word;
    p->leaf_off = l->leaf_off;
    p->word_entry = l->word_entry;
    p->entries = l->entries;
    p->wnodes = l->wnodes;
    p->leaves = l->leaves;
    p->n_blocks = l->n_blocks;
    p->block_tree = l->block_tree;
    p->smem_nodes = l->block_nodes;
    p->node_bytes = TSG_NODE_BYTES;
    p->centries = l->centries;
    p->cwnodes = l->cwnodes;
    p->n_bslots = l->n_bslots;
    p->bslot_slot = l->bslot_slot;
    p->bslot_base = l->bslot_base;
    p->slot_thr = l->slot_thr;
    p->thr = l->thr;
}
