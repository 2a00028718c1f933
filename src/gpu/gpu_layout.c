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
    free(l);
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
}
