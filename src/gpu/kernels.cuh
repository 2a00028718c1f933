/* kernels.cuh: the GPU engines' kernels, one source for nvcc (src/gpu/cuda.cu) and for
 * the host compiler under the CPU emulation of the CUDA execution model
 * (tests/gpu/emu.h, which defines __global__, threadIdx, __syncthreads, __ballot_sync,
 * ... before including this file). Written in the common subset of CUDA C++ and C11:
 * no references, templates, overloads or designated initializers; explicit casts.
 *
 * Exactness (docs/gpu.md): every document's score starts from base and adds the trees'
 * weight * leaf values (precomputed on the host, the same double products as naive) one
 * by one in tree order, in double; the split is tsm_node_goes_left's (src/model/forest.h)
 * to the bit: NaN, and |x| <= 1e-35 on zero-is-missing nodes, go where the node's
 * missing flag says, every other value left iff x <= threshold (float compare). cuda.cu
 * is compiled with -fmad=false -ftz=false -prec-div=true -prec-sqrt=true; the kernels
 * only compare floats and add doubles, so nothing is contracted or flushed anyway. */
#ifndef TS_GPU_KERNELS_CUH
#define TS_GPU_KERNELS_CUH

#include "gpu/gpu_params.h"
#ifndef __CUDACC__
#include <math.h>
#endif

#ifdef __CUDACC__
#define TSG_DEVICE static __device__ __forceinline__
/* The block's dynamic shared memory, 16-byte aligned. */
#define TSG_DYNAMIC_SHARED(name) extern __shared__ __align__(16) unsigned char name[]
#else
#define TSG_DEVICE static inline
#define TSG_DYNAMIC_SHARED(name) unsigned char *name = (unsigned char *)tsg_emu_shared()
#endif

#define TSG_FULL_WARP 0xffffffffu
#ifdef __CUDACC__
#define TSG_INF __int_as_float(0x7f800000)
#define TSG_NAN __int_as_float(0x7fc00000)
#else
#define TSG_INF INFINITY
#define TSG_NAN NAN
#endif

/* forest.h's tsm_node_goes_left, on the node's fields. */
TSG_DEVICE int tsg_goes_left(float x, float threshold, uint32_t flags) {
    int missing = (x != x) || ((flags & TSG_ZERO_IS_MISSING) && x >= -TSG_ZERO_RANGE && x <= TSG_ZERO_RANGE);
    return missing ? (flags & TSG_MISSING_LEFT) != 0 : x <= threshold;
}

/* gpu-naive: one thread per document; every tree walked node by node from global memory. */
__global__ void tsg_naive_kernel(const tsg_naive_params p) {
    uint64_t r = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= p.n_rows) return;
    const float *row = p.x + r * p.stride;
    double score = p.base;
    for (uint32_t t = 0; t < p.n_trees; t++) {
        const tsg_node *nodes = p.nodes + p.node_off[t];
        int32_t c = p.leaf_off[t + 1] - p.leaf_off[t] > 1 ? 0 : -1;
        while (c >= 0) {
            const tsg_node *n = nodes + c;
            c = tsg_goes_left(row[n->feature], n->threshold, n->flags) ? n->left : n->right;
        }
        score += p.leaves[p.leaf_off[t] + (uint32_t)~c];
    }
    p.out[r] = score;
}

/* Slot s's value for this document (gpu_params.h): x, or -inf / NaN where x is missing
 * for the slot's rule and goes left / right. */
TSG_DEVICE float tsg_slot_value(float x, uint32_t flags) {
    int missing = (x != x) || ((flags & TSG_ZERO_IS_MISSING) && x >= -TSG_ZERO_RANGE && x <= TSG_ZERO_RANGE);
    if (!missing) return x;
    return (flags & TSG_MISSING_LEFT) ? -TSG_INF : TSG_NAN;
}

/* The exit leaf of tree t for this thread's document (QuickScorer, paper 003): the
 * leftmost leaf outside the left subtree of every false node (a node whose test sends
 * the document right). Leaves in 64-bit words, left to right; a word starts from its
 * valid leaves minus those below `skip` (the largest hi of the false nodes met so far,
 * whose left subtrees run on into this word), and each entry of the word (a node whose
 * left subtree starts in it) keeps only its `keep` bits when false. The first non-empty
 * word holds the exit leaf. Every thread of the warp evaluates every entry of the word
 * (the same address for all lanes: a broadcast, no divergence); a tree of several words
 * stops once the warp's ballot says every lane has its leaf. E points at entry e_base. */
TSG_DEVICE uint32_t tsg_qs_exit_leaf(const tsg_qs_params *p, const tsg_entry *E, uint32_t e_base, uint32_t t,
                                     const float *xs, uint32_t xs_stride, const float *row) {
    uint32_t w0 = p->tree_word[t], w1 = p->tree_word[t + 1];
    uint32_t n_leaves = p->leaf_off[t + 1] - p->leaf_off[t];
    uint32_t skip = 0, leaf = 0;
    int found = 0;
    for (uint32_t w = w0; w < w1; w++) {
        uint32_t first = (w - w0) * 64u, left = n_leaves - first;
        uint64_t bv = left >= 64u ? ~0ull : (1ull << left) - 1ull;
        if (skip >= first + 64u) bv = 0;
        else if (skip > first) bv &= ~0ull << (skip - first);
        for (uint32_t k = p->word_entry[w]; k < p->word_entry[w + 1]; k++) {
            const tsg_entry *e = E + (k - e_base);
            float v = xs ? xs[e->slot * xs_stride] : tsg_slot_value(row[p->slot_feature[e->slot]], p->slot_flags[e->slot]);
            if (!(v <= e->threshold)) {
                bv &= e->keep;
                if (e->hi > skip) skip = e->hi;
            }
        }
        if (!found && bv) {
            found = 1;
#ifdef __CUDACC__
            leaf = first + (uint32_t)(__ffsll((long long)bv) - 1);
#else
            leaf = first + (uint32_t)tsg_emu_ctz64(bv);
#endif
        }
        if (w + 1 < w1 && __ballot_sync(TSG_FULL_WARP, !found) == 0) break;
    }
    return leaf;
}

/* Byte slot b's code for a row (gpu_params.h, tsg_centry): the number of the slot's
 * thresholds below the slot value (all of them for NaN), minus the byte slot's base,
 * clamped to [0, 255]. */
TSG_DEVICE uint32_t tsg_code(const tsg_qs_params *p, uint32_t b, const float *row) {
    uint32_t s = p->bslot_slot[b];
    float v = tsg_slot_value(row[p->slot_feature[s]], p->slot_flags[s]);
    const float *T = p->thr + p->slot_thr[s];
    uint32_t n = p->slot_thr[s + 1] - p->slot_thr[s], c = n;
    if (v == v) {
        uint32_t lo = 0, hi = n; /* the first threshold >= v */
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2u;
            if (T[mid] < v) lo = mid + 1u;
            else hi = mid;
        }
        c = lo;
    }
    uint32_t base = p->bslot_base[b];
    return c <= base ? 0u : (c - base >= 255u ? 255u : c - base);
}

/* tsg_qs_exit_leaf on byte codes: a node is false when its byte slot's code exceeds k. */
TSG_DEVICE uint32_t tsg_codes_exit_leaf(const tsg_qs_params *p, const tsg_centry *E, uint32_t e_base, uint32_t t,
                                        const unsigned char *cs, uint32_t cs_stride, const float *row) {
    uint32_t w0 = p->tree_word[t], w1 = p->tree_word[t + 1];
    uint32_t n_leaves = p->leaf_off[t + 1] - p->leaf_off[t];
    uint32_t skip = 0, leaf = 0;
    int found = 0;
    for (uint32_t w = w0; w < w1; w++) {
        uint32_t first = (w - w0) * 64u, left = n_leaves - first;
        uint64_t bv = left >= 64u ? ~0ull : (1ull << left) - 1ull;
        if (skip >= first + 64u) bv = 0;
        else if (skip > first) bv &= ~0ull << (skip - first);
        for (uint32_t k = p->word_entry[w]; k < p->word_entry[w + 1]; k++) {
            const tsg_centry *e = E + (k - e_base);
            uint32_t b = e->bslot_k >> 8;
            uint32_t code = cs ? cs[b * cs_stride] : tsg_code(p, b, row);
            if (code > (e->bslot_k & 255u)) {
                bv &= e->keep;
                if (e->hi > skip) skip = e->hi;
            }
        }
        if (!found && bv) {
            found = 1;
#ifdef __CUDACC__
            leaf = first + (uint32_t)(__ffsll((long long)bv) - 1);
#else
            leaf = first + (uint32_t)tsg_emu_ctz64(bv);
#endif
        }
        if (w + 1 < w1 && __ballot_sync(TSG_FULL_WARP, !found) == 0) break;
    }
    return leaf;
}

/* The exit leaf of tree t by a walk from the root (the walk variant): nodes from W, the
 * tree's first node at W[0]. Lanes whose paths differ in length wait for the longest. */
TSG_DEVICE uint32_t tsg_walk_exit_leaf(const tsg_qs_params *p, const tsg_wnode *W, uint32_t n_nodes, const float *xs,
                                       uint32_t xs_stride, const float *row) {
    int32_t c = n_nodes ? 0 : -1;
    while (c >= 0) {
        const tsg_wnode *n = W + c;
        float v = xs ? xs[n->slot * xs_stride] : tsg_slot_value(row[p->slot_feature[n->slot]], p->slot_flags[n->slot]);
        c = v <= n->threshold ? n->left : n->right;
    }
    return (uint32_t)~c;
}

/* tsg_walk_exit_leaf on byte codes (the walk-codes variant): left when the node's byte
 * slot's code is at most its k (gpu_params.h, tsg_cwnode). */
TSG_DEVICE uint32_t tsg_walk_codes_exit_leaf(const tsg_qs_params *p, const tsg_cwnode *W, uint32_t n_nodes,
                                             const unsigned char *cs, uint32_t cs_stride, const float *row) {
    int32_t c = n_nodes ? 0 : -1;
    while (c >= 0) {
        const tsg_cwnode *n = W + c;
        uint32_t b = n->bslot_k >> 8;
        uint32_t code = cs ? cs[b * cs_stride] : tsg_code(p, b, row);
        c = code <= (n->bslot_k & 255u) ? n->left : n->right;
    }
    return (uint32_t)~c;
}

/* Tree t's exit leaf li (an index into leaves) for row r: added to the score, or with
 * exits (the split launch) stored for tsg_sum_kernel, which adds them in tree order. */
TSG_DEVICE void tsg_take_leaf(const tsg_qs_params *p, uint32_t t, uint32_t li, uint64_t r, double *score) {
    if (!p->exits) *score += p->leaves[li];
    else if (r < p->n_rows) p->exits[(uint64_t)t * p->n_rows + r] = li;
}

/* gpu: a block of blockDim.x threads scores blockDim.x documents, one each. Their slot
 * values are staged in shared memory (x_shared), then for each block of trees the
 * block's nodes (when they fit), and each thread adds its document's exit leaves tree
 * by tree. Threads past the last row still run (on the last row's values) so that every
 * warp votes and every thread reaches the barriers; they store nothing.
 * The split launch (exits set, for batches too small to fill the GPU): block x scores
 * the rows of row block x % row_blocks over the tree blocks of chunk x / row_blocks
 * (chunk_blocks tree blocks each), storing each tree's exit leaf instead of adding it;
 * tsg_sum_kernel then adds them in tree order, so the sum is the same, bit for bit. */
__global__ void tsg_qs_kernel(const tsg_qs_params p) {
    TSG_DYNAMIC_SHARED(smem);
    float *s_x = (float *)(void *)(smem + (uint64_t)p.smem_nodes * p.node_bytes);
    uint32_t tid = threadIdx.x, dpb = blockDim.x, bx = blockIdx.x, b_lo = 0, b_hi = p.n_blocks;
    if (p.exits) {
        b_lo = bx / p.row_blocks * p.chunk_blocks;
        b_hi = p.n_blocks - b_lo < p.chunk_blocks ? p.n_blocks : b_lo + p.chunk_blocks;
        bx %= p.row_blocks;
    }
    uint64_t first_row = (uint64_t)bx * dpb, r = first_row + tid;
    uint64_t rc = r < p.n_rows ? r : p.n_rows - 1;
    const float *row = p.x + rc * p.stride;
    unsigned char *s_c = (unsigned char *)(void *)s_x;
    if (p.x_shared) {
        /* consecutive threads read consecutive slots of a row (mostly consecutive
         * columns), and each writes its slot's value (or byte slot's code) for that
         * document */
        uint64_t n_docs = p.n_rows - first_row < dpb ? p.n_rows - first_row : dpb;
        uint32_t n = p.codes ? p.n_bslots : p.n_slots;
        for (uint64_t i = tid; i < (uint64_t)n * dpb; i += dpb) {
            uint64_t d = i / n, s = i % n;
            uint64_t dr = first_row + (d < n_docs ? d : n_docs - 1);
            if (p.codes)
                s_c[s * dpb + d] = (unsigned char)tsg_code(&p, (uint32_t)s, p.x + dr * p.stride);
            else
                s_x[s * dpb + d] = tsg_slot_value(p.x[dr * p.stride + p.slot_feature[s]], p.slot_flags[s]);
        }
    }
    const float *xs = p.x_shared ? s_x + tid : (const float *)0;
    const unsigned char *cs = p.x_shared ? s_c + tid : (const unsigned char *)0;
    double score = p.base;
    for (uint32_t b = b_lo; b < b_hi; b++) {
        uint32_t t0 = p.block_tree[b], t1 = p.block_tree[b + 1];
        uint32_t e0 = p.node_first[t0], e1 = p.node_first[t1];
        int staged = e1 - e0 <= p.smem_nodes;
        __syncthreads(); /* the slots are staged; no thread still reads the last block */
        if (staged) {
            if (p.walk && p.codes) {
                tsg_cwnode *s_cw = (tsg_cwnode *)(void *)smem;
                for (uint32_t i = tid; i < e1 - e0; i += dpb) s_cw[i] = p.cwnodes[e0 + i];
            } else if (p.walk) {
                tsg_wnode *s_w = (tsg_wnode *)(void *)smem;
                for (uint32_t i = tid; i < e1 - e0; i += dpb) s_w[i] = p.wnodes[e0 + i];
            } else if (p.codes) {
                tsg_centry *s_ce = (tsg_centry *)(void *)smem;
                for (uint32_t i = tid; i < e1 - e0; i += dpb) s_ce[i] = p.centries[e0 + i];
            } else {
                tsg_entry *s_e = (tsg_entry *)(void *)smem;
                for (uint32_t i = tid; i < e1 - e0; i += dpb) s_e[i] = p.entries[e0 + i];
            }
        }
        __syncthreads();
        if (p.walk && p.codes) {
            const tsg_cwnode *W = staged ? (const tsg_cwnode *)(const void *)smem : p.cwnodes + e0;
            for (uint32_t t = t0; t < t1; t++)
                tsg_take_leaf(&p, t,
                              p.leaf_off[t] + tsg_walk_codes_exit_leaf(&p, W + (p.node_first[t] - e0),
                                                                       p.node_first[t + 1] - p.node_first[t], cs, dpb,
                                                                       row),
                              r, &score);
        } else if (p.walk) {
            const tsg_wnode *W = staged ? (const tsg_wnode *)(const void *)smem : p.wnodes + e0;
            for (uint32_t t = t0; t < t1; t++)
                tsg_take_leaf(&p, t,
                              p.leaf_off[t] + tsg_walk_exit_leaf(&p, W + (p.node_first[t] - e0),
                                                                 p.node_first[t + 1] - p.node_first[t], xs, dpb, row),
                              r, &score);
        } else if (p.codes) {
            const tsg_centry *E = staged ? (const tsg_centry *)(const void *)smem : p.centries + e0;
            for (uint32_t t = t0; t < t1; t++)
                tsg_take_leaf(&p, t, p.leaf_off[t] + tsg_codes_exit_leaf(&p, E, e0, t, cs, dpb, row), r, &score);
        } else {
            const tsg_entry *E = staged ? (const tsg_entry *)(const void *)smem : p.entries + e0;
            for (uint32_t t = t0; t < t1; t++)
                tsg_take_leaf(&p, t, p.leaf_off[t] + tsg_qs_exit_leaf(&p, E, e0, t, xs, dpb, row), r, &score);
        }
    }
    if (!p.exits && r < p.n_rows) p.out[r] = score;
}

/* After a split launch: row r's score, base plus its trees' exit leaves in tree order
 * (the order every engine adds them in). One thread per row. */
__global__ void tsg_sum_kernel(const tsg_sum_params p) {
    uint64_t r = (uint64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (r >= p.n_rows) return;
    double score = p.base;
    for (uint32_t t = 0; t < p.n_trees; t++) score += p.leaves[p.exits[(uint64_t)t * p.n_rows + r]];
    p.out[r] = score;
}

#endif /* TS_GPU_KERNELS_CUH */
