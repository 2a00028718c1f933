/* cuda.cu: the CUDA host side of the GPU engines (gpu_cuda.h): device query, model
 * upload (once per prepared state), and scoring with pinned staging buffers on two
 * streams, so that copying one slice of rows overlaps scoring the previous one. The
 * kernels are kernels.cuh, the same source the CPU emulation tests (tests/gpu). */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu/gpu_cuda.h"
#include "gpu/kernels.cuh"

/* ---- Errors ---------------------------------------------------------------------------- */

static pthread_mutex_t error_lock = PTHREAD_MUTEX_INITIALIZER;
static char last_error[256];

static void set_error(const char *what, cudaError_t e) {
    pthread_mutex_lock(&error_lock);
    snprintf(last_error, sizeof last_error, "%s: %s", what, cudaGetErrorString(e));
    pthread_mutex_unlock(&error_lock);
}

extern "C" const char *tsg_cuda_last_error(void) { return last_error; }

#define CU_TRY(call, what)                                                                   \
    do {                                                                                     \
        cudaError_t e_ = (call);                                                             \
        if (e_ != cudaSuccess) {                                                             \
            set_error(what, e_);                                                             \
            goto fail;                                                                       \
        }                                                                                    \
    } while (0)

/* ---- The device ---------------------------------------------------------------------- */

static pthread_once_t device_once = PTHREAD_ONCE_INIT;
static int device_ok;
static char device_desc[512];
static int device_optin_smem; /* bytes of dynamic shared memory a block may opt in to */
static int device_sms;        /* multiprocessors */
static size_t device_mem;     /* bytes of global memory */

static void query_device(void) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(device_desc, sizeof device_desc, "cudaGetDeviceCount: %s", cudaGetErrorString(e));
        return;
    }
    if (n == 0) {
        snprintf(device_desc, sizeof device_desc, "cudaGetDeviceCount: no CUDA device");
        return;
    }
    cudaDeviceProp p;
    e = cudaGetDeviceProperties(&p, 0);
    if (e != cudaSuccess) {
        snprintf(device_desc, sizeof device_desc, "cudaGetDeviceProperties: %s", cudaGetErrorString(e));
        return;
    }
    if (cudaDeviceGetAttribute(&device_optin_smem, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0) != cudaSuccess)
        device_optin_smem = 48 * 1024;
    device_sms = p.multiProcessorCount > 0 ? p.multiProcessorCount : 1;
    device_mem = p.totalGlobalMem;
    int driver = 0;
    cudaDriverGetVersion(&driver);
    char name[257];
    snprintf(name, sizeof name, "%.256s", p.name);
    snprintf(device_desc, sizeof device_desc, "%s, compute %d.%d, %.1f GiB, %d SMs, driver %d.%d (device 0 of %d)",
             name, p.major, p.minor, (double)p.totalGlobalMem / (1024.0 * 1024.0 * 1024.0), p.multiProcessorCount,
             driver / 1000, driver % 1000 / 10, n);
    device_ok = 1;
}

extern "C" int tsg_cuda_device(char *desc, size_t size) {
    pthread_once(&device_once, query_device);
    if (desc && size) snprintf(desc, size, "%s", device_desc);
    return device_ok;
}

/* ---- Prepared state ------------------------------------------------------------------ */

#define N_STREAMS 2
/* Rows per slice (slice_rows_for): at least about 8 MiB of floats, and enough blocks to
 * fill the GPU twice over (each slice's kernel must keep every multiprocessor busy: at
 * 136 features 8 MiB is 15,488 rows, 121 blocks of 128 for 132 multiprocessors, a
 * fraction of what the naive kernel keeps resident), up to 64 MiB of floats and 2^21
 * rows. */
#define SLICE_BYTES (8u << 20)
#define SLICE_BYTES_MAX (64u << 20)
#define SLICE_ROWS_MAX (1u << 21)

/* One launch shape: threads (documents) per block, dynamic shared memory per block,
 * whether the block's slot values or codes are staged in it (x_shared), and the
 * resident blocks per multiprocessor at that size (the occupancy API). */
typedef struct tsg_launch {
    unsigned threads;
    size_t smem;
    uint32_t x_shared;
    int blocks_per_sm;
} tsg_launch;

typedef struct tsg_dev {
    int kind;
    uint32_t n_features;
    tsg_naive_params np; /* device pointers; x, out, n_rows, stride set per launch */
    tsg_qs_params qp;
    /* Two launch shapes: `large` for every plain launch, `small` for the split launch
     * below one full wave of large blocks (wave_rows rows: every multiprocessor holding
     * blocks_per_sm of them). The same unless the kernel is a walk (launch_shapes). */
    tsg_launch small, large;
    size_t wave_rows;
    size_t slice;        /* rows per slice of a call (a multiple of 128) */
    void *allocs[16];
    int n_allocs;
    pthread_mutex_t lock; /* calls take turns on the streams and buffers below */
    cudaStream_t stream[N_STREAMS];
    float *h_in[N_STREAMS], *d_in[N_STREAMS];
    double *h_out[N_STREAMS], *d_out[N_STREAMS];
    size_t cap_rows;      /* rows each staging buffer holds */
    /* The split launch (kernels.cuh) for launches below a full wave (unless tune says
     * no: TREESCORE_GPU_NO_SPLIT): a stream's exit leaves, n_rows x n_trees of them, at
     * most split_exits_max(). Measured on an H100 (docs/gpu.md), 20,000 x 64 leaves:
     * 5.2x at 100 rows, 3.6x at 1,000. */
    int split;
    uint32_t *d_exits[N_STREAMS];
    size_t exits_cap[N_STREAMS];
} tsg_dev;

/* The most exits a stream's split launch stores: 4 bytes each, in 1/32 of the device's
 * memory, at most 2 GiB (H100: 512 M, 10,000 rows of 20,000 trees and more; two streams:
 * 4 GiB of its 80), at least 64 M. */
static size_t split_exits_max(void) {
    size_t bytes = device_mem / 32;
    if (bytes > ((size_t)2 << 30)) bytes = (size_t)2 << 30;
    if (bytes < ((size_t)256 << 20)) bytes = (size_t)256 << 20;
    return bytes / sizeof(uint32_t);
}

/* A device copy of n bytes of host memory (NULL on error; n == 0 still allocates). */
static void *upload(tsg_dev *d, const void *host, size_t n) {
    void *p = NULL;
    if (d->n_allocs == (int)(sizeof d->allocs / sizeof d->allocs[0])) return NULL;
    cudaError_t e = cudaMalloc(&p, n ? n : 16);
    if (e != cudaSuccess) {
        set_error("cudaMalloc", e);
        return NULL;
    }
    d->allocs[d->n_allocs++] = p;
    if (n && (e = cudaMemcpy(p, host, n, cudaMemcpyHostToDevice)) != cudaSuccess) {
        set_error("cudaMemcpy", e);
        return NULL;
    }
    return p;
}

static void free_buffers(tsg_dev *d) {
    for (int i = 0; i < N_STREAMS; i++) {
        if (d->h_in[i]) cudaFreeHost(d->h_in[i]);
        if (d->h_out[i]) cudaFreeHost(d->h_out[i]);
        if (d->d_in[i]) cudaFree(d->d_in[i]);
        if (d->d_out[i]) cudaFree(d->d_out[i]);
        if (d->d_exits[i]) cudaFree(d->d_exits[i]);
        d->h_in[i] = NULL, d->h_out[i] = NULL, d->d_in[i] = NULL, d->d_out[i] = NULL, d->d_exits[i] = NULL;
        d->exits_cap[i] = 0;
    }
    d->cap_rows = 0;
}

extern "C" void tsg_cuda_free(void *p) {
    tsg_dev *d = (tsg_dev *)p;
    if (!d) return;
    free_buffers(d);
    for (int i = 0; i < N_STREAMS; i++)
        if (d->stream[i]) cudaStreamDestroy(d->stream[i]);
    for (int i = 0; i < d->n_allocs; i++) cudaFree(d->allocs[i]);
    pthread_mutex_destroy(&d->lock);
    free(d);
}

/* Threads per block: 128, or what tune asks rounded down to a power of two in [32, 1024]
 * (whole warps, for the kernels' full-warp votes, and halvings that stay whole warps). */
static unsigned threads_wanted(const tsg_tuning *tune) {
    if (!tune || !tune->threads) return 128;
    unsigned t = 32;
    while (t < 1024 && t * 2 <= tune->threads) t *= 2;
    return t;
}

/* Rows per slice (SLICE_BYTES' rule above) once threads and smem are known. */
static size_t slice_rows_for(const tsg_dev *d, const tsg_tuning *tune) {
    size_t row_bytes = (size_t)(d->n_features ? d->n_features : 1) * sizeof(float), r;
    if (tune && tune->slice_rows) {
        r = tune->slice_rows;
    } else {
        size_t wave = d->wave_rows, lo = SLICE_BYTES / row_bytes, hi = SLICE_BYTES_MAX / row_bytes;
        r = 2 * wave < hi ? 2 * wave : hi;
        if (r < lo) r = lo;
    }
    if (r > SLICE_ROWS_MAX) r = SLICE_ROWS_MAX;
    r = (r + 127) / 128 * 128;
    return r ? r : 128;
}

extern "C" void tsg_cuda_launch_info(const void *p, unsigned *threads, size_t *slice_rows, int *blocks_per_sm,
                                     size_t *smem_bytes, unsigned *threads_small, size_t *wave_rows) {
    const tsg_dev *d = (const tsg_dev *)p;
    *threads = d->large.threads, *slice_rows = d->slice, *blocks_per_sm = d->large.blocks_per_sm;
    *smem_bytes = d->large.smem, *threads_small = d->small.threads, *wave_rows = d->wave_rows;
}

/* A launch shape of the gpu kernels for at most `threads` documents per block and
 * `limit` bytes of shared memory: the most documents (halving down to 32) whose slot
 * values or codes fit with the tree block's nodes; none fit: threads, and the slots
 * read from global memory. */
static cudaError_t qs_shape(const tsg_dev *d, size_t per_doc, unsigned threads, size_t limit, tsg_launch *c) {
    size_t e_bytes = (size_t)d->qp.smem_nodes * d->qp.node_bytes;
    c->threads = threads;
    c->x_shared = 0;
    for (unsigned t = threads; t >= 32; t /= 2)
        if (e_bytes + per_doc * t <= limit) {
            c->threads = t;
            c->x_shared = 1;
            break;
        }
    c->smem = e_bytes + (c->x_shared ? per_doc * c->threads : 0);
    /* The kernel's limit is one per process, not per state: raised once to all a block
     * may opt in to (states of other models then launch with their own smaller sizes);
     * it permits, the launch's size decides the occupancy. */
    cudaError_t e = cudaSuccess;
    if (c->smem > 48u * 1024u)
        e = cudaFuncSetAttribute(tsg_qs_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, device_optin_smem);
    if (e == cudaSuccess)
        e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&c->blocks_per_sm, tsg_qs_kernel, (int)c->threads, c->smem);
    return e;
}

/* The gpu kernels' two shapes. Measured on an H100 (docs/gpu.md, 20,000 x 64 leaves):
 * the walks ran faster with 256 documents per block than with 128 (the tree block's
 * nodes staged once for twice the documents) at every batch size that does not split:
 * walk-codes 1.07x at 10,000 rows, 1.09x at 50,000, 1.55x at 200,000 (walk on floats
 * 1.65x there), so every plain walk launch takes 256 (shared memory up to all a block
 * may opt in to). The split launch (its speedups measured with it) takes 128 within
 * 96 KiB, the shape of the QuickScorer kernels (not measured beyond 128). A forced
 * thread count (tune) is both. */
static cudaError_t launch_shapes(tsg_dev *d, size_t per_doc, const tsg_tuning *tune) {
    size_t optin = (size_t)device_optin_smem, small_limit = 96u * 1024u < optin ? 96u * 1024u : optin;
    cudaError_t e;
    if (tune && tune->threads) {
        e = qs_shape(d, per_doc, threads_wanted(tune), optin, &d->large);
        d->small = d->large;
        return e;
    }
    if ((e = qs_shape(d, per_doc, 128, small_limit, &d->small)) != cudaSuccess) return e;
    if (!d->qp.walk) {
        d->large = d->small;
        return cudaSuccess;
    }
    return qs_shape(d, per_doc, 256, optin, &d->large);
}

extern "C" int tsg_cuda_prepare(const tsg_layout *l, int kind, const tsg_tuning *tune, void **out, char *msg,
                                size_t size) {
    *out = NULL;
    tsg_dev *d = (tsg_dev *)calloc(1, sizeof *d);
    if (!d) {
        snprintf(msg, size, "out of memory");
        return 1;
    }
    pthread_mutex_init(&d->lock, NULL);
    d->kind = kind;
    d->n_features = l->n_features;
    size_t nt = (size_t)l->n_trees + 1, n_leaves = l->leaf_off[l->n_trees];
    uint32_t *leaf_off = (uint32_t *)upload(d, l->leaf_off, nt * sizeof(uint32_t));
    double *leaves = (double *)upload(d, l->leaves, n_leaves * sizeof(double));
    if (!leaf_off || !leaves) goto fail;
    if (kind == TSG_KIND_NAIVE) {
        tsg_layout_naive_params(l, &d->np);
        d->np.leaf_off = leaf_off;
        d->np.leaves = leaves;
        d->np.node_off = (const uint32_t *)upload(d, l->node_off, nt * sizeof(uint32_t));
        d->np.nodes = (const tsg_node *)upload(d, l->nodes, l->node_off[l->n_trees] * sizeof(tsg_node));
        if (!d->np.node_off || !d->np.nodes) goto fail;
        d->large.threads = threads_wanted(tune);
        CU_TRY(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&d->large.blocks_per_sm, tsg_naive_kernel,
                                                             (int)d->large.threads, 0),
               "cudaOccupancyMaxActiveBlocksPerMultiprocessor");
        d->small = d->large;
    } else {
        tsg_layout_qs_params(l, &d->qp);
        d->qp.leaf_off = leaf_off;
        d->qp.leaves = leaves;
        d->qp.walk = kind == TSG_KIND_WALK || kind == TSG_KIND_WALK_CODES;
        size_t n_nodes = l->node_first[l->n_trees], n_words = l->tree_word[l->n_trees], ns = l->n_slots ? l->n_slots : 1;
        d->qp.slot_feature = (const uint32_t *)upload(d, l->slot_feature, ns * sizeof(uint32_t));
        d->qp.slot_flags = (const uint32_t *)upload(d, l->slot_flags, ns * sizeof(uint32_t));
        d->qp.node_first = (const uint32_t *)upload(d, l->node_first, nt * sizeof(uint32_t));
        d->qp.tree_word = (const uint32_t *)upload(d, l->tree_word, nt * sizeof(uint32_t));
        d->qp.word_entry = (const uint32_t *)upload(d, l->word_entry, (n_words + 1) * sizeof(uint32_t));
        d->qp.block_tree = (const uint32_t *)upload(d, l->block_tree, ((size_t)l->n_blocks + 1) * sizeof(uint32_t));
        d->qp.codes = kind == TSG_KIND_CODES || kind == TSG_KIND_WALK_CODES;
        d->qp.entries = NULL;
        d->qp.wnodes = NULL;
        d->qp.centries = NULL;
        d->qp.cwnodes = NULL;
        const void *nodes_up = NULL;
        if (d->qp.walk && !d->qp.codes) {
            nodes_up = d->qp.wnodes = (const tsg_wnode *)upload(d, l->wnodes, n_nodes * sizeof(tsg_wnode));
        } else if (d->qp.codes) {
            if (!l->codes_ok) {
                snprintf(msg, size, "the byte-code kernel takes fewer than 2^24 byte slots");
                tsg_cuda_free(d);
                return 1;
            }
            size_t nb = l->n_bslots ? l->n_bslots : 1;
            d->qp.slot_thr = (const uint32_t *)upload(d, l->slot_thr, (ns + 1) * sizeof(uint32_t));
            d->qp.thr = (const float *)upload(d, l->thr, l->slot_thr[l->n_slots] * sizeof(float));
            d->qp.bslot_slot = (const uint32_t *)upload(d, l->bslot_slot, nb * sizeof(uint32_t));
            d->qp.bslot_base = (const uint32_t *)upload(d, l->bslot_base, nb * sizeof(uint32_t));
            if (!d->qp.slot_thr || !d->qp.thr || !d->qp.bslot_slot || !d->qp.bslot_base) goto fail;
            if (d->qp.walk)
                nodes_up = d->qp.cwnodes = (const tsg_cwnode *)upload(d, l->cwnodes, n_nodes * sizeof(tsg_cwnode));
            else
                nodes_up = d->qp.centries = (const tsg_centry *)upload(d, l->centries, n_nodes * sizeof(tsg_centry));
        } else {
            nodes_up = d->qp.entries = (const tsg_entry *)upload(d, l->entries, n_nodes * sizeof(tsg_entry));
        }
        if (!d->qp.slot_feature || !d->qp.slot_flags || !d->qp.node_first || !d->qp.tree_word ||
            !d->qp.word_entry || !d->qp.block_tree || !nodes_up)
            goto fail;
        /* Shared memory: the tree block's nodes, then the block's documents' slot
         * values (or byte codes), in the two launch shapes (launch_shapes). */
        d->qp.node_bytes = tsg_node_bytes(d->qp.walk, d->qp.codes);
        size_t per_doc = d->qp.codes ? (size_t)l->n_bslots : (size_t)l->n_slots * sizeof(float);
        CU_TRY(launch_shapes(d, per_doc, tune), "the kernel's shared memory and occupancy");
    }
    d->wave_rows = (size_t)device_sms * (size_t)(d->large.blocks_per_sm > 0 ? d->large.blocks_per_sm : 1) *
                   d->large.threads;
    d->slice = slice_rows_for(d, tune);
    d->split = !(tune && tune->no_split) && kind != TSG_KIND_NAIVE;
    for (int i = 0; i < N_STREAMS; i++) CU_TRY(cudaStreamCreateWithFlags(&d->stream[i], cudaStreamNonBlocking), "cudaStreamCreate");
    *out = d;
    return 0;
fail:
    snprintf(msg, size, "%s", last_error[0] ? last_error : "CUDA error");
    tsg_cuda_free(d);
    return 1;
}

/* ---- Scoring --------------------------------------------------------------------------- */

/* Chunks of tree blocks for a split launch of n rows in shape c: enough blocks for two
 * waves, at most one chunk per tree block; 0 when no split (too many exits to store). */
static uint32_t split_chunk_blocks(const tsg_dev *d, const tsg_launch *c, size_t n) {
    uint32_t n_blocks = d->qp.n_blocks;
    size_t row_blocks = (n + c->threads - 1) / c->threads;
    size_t target = 2 * (size_t)device_sms * (size_t)(c->blocks_per_sm > 0 ? c->blocks_per_sm : 1);
    size_t chunks = (target + row_blocks - 1) / row_blocks;
    if (chunks > n_blocks) chunks = n_blocks;
    if (chunks < 2 || n * d->qp.n_trees > split_exits_max()) return 0;
    return (uint32_t)((n_blocks + chunks - 1) / chunks);
}

/* The split launch on stream k: the kernel stores exits, tsg_sum_kernel adds them. */
static cudaError_t launch_split(tsg_dev *d, int k, const tsg_launch *c, uint32_t chunk_blocks, const float *x,
                                size_t n, size_t stride, double *out, cudaStream_t s) {
    size_t need = n * d->qp.n_trees;
    cudaError_t e;
    if (need > d->exits_cap[k]) {
        if (d->d_exits[k]) cudaFree(d->d_exits[k]);
        d->d_exits[k] = NULL, d->exits_cap[k] = 0;
        if ((e = cudaMalloc((void **)&d->d_exits[k], need * sizeof(uint32_t))) != cudaSuccess) return e;
        d->exits_cap[k] = need;
    }
    uint32_t row_blocks = (uint32_t)((n + c->threads - 1) / c->threads);
    uint32_t chunks = (d->qp.n_blocks + chunk_blocks - 1) / chunk_blocks;
    tsg_qs_params p = d->qp;
    p.x = x, p.n_rows = n, p.stride = stride, p.out = out;
    p.x_shared = c->x_shared;
    p.exits = d->d_exits[k], p.row_blocks = row_blocks, p.chunk_blocks = chunk_blocks;
    tsg_qs_kernel<<<row_blocks * chunks, c->threads, c->smem, s>>>(p);
    if ((e = cudaGetLastError()) != cudaSuccess) return e;
    tsg_sum_params sp;
    sp.exits = d->d_exits[k], sp.leaves = d->qp.leaves, sp.out = out, sp.base = d->qp.base, sp.n_rows = n;
    sp.n_trees = d->qp.n_trees;
    tsg_sum_kernel<<<(unsigned)((n + 127) / 128), 128, 0, s>>>(sp);
    return cudaGetLastError();
}

/* One launch of n rows on stream k (of the state's streams, for its exit buffer). */
static cudaError_t launch(tsg_dev *d, int k, const float *x, size_t n, size_t stride, double *out, cudaStream_t s) {
    uint32_t chunk_blocks = d->split && n < d->wave_rows ? split_chunk_blocks(d, &d->small, n) : 0;
    if (chunk_blocks) {
        cudaError_t e = launch_split(d, k, &d->small, chunk_blocks, x, n, stride, out, s);
        if (e != cudaErrorMemoryAllocation) return e;
        cudaGetLastError(); /* no room for the exits (another process holds the memory): a plain launch */
    }
    const tsg_launch *c = &d->large;
    unsigned grid = (unsigned)((n + c->threads - 1) / c->threads);
    if (d->kind == TSG_KIND_NAIVE) {
        tsg_naive_params p = d->np;
        p.x = x, p.n_rows = n, p.stride = stride, p.out = out;
        tsg_naive_kernel<<<grid, c->threads, 0, s>>>(p);
    } else {
        tsg_qs_params p = d->qp;
        p.x = x, p.n_rows = n, p.stride = stride, p.out = out;
        p.x_shared = c->x_shared;
        tsg_qs_kernel<<<grid, c->threads, c->smem, s>>>(p);
    }
    return cudaGetLastError();
}

static int ensure_buffers(tsg_dev *d, size_t rows) {
    if (rows <= d->cap_rows) return 0;
    free_buffers(d);
    size_t in_bytes = rows * (d->n_features ? d->n_features : 1) * sizeof(float);
    for (int i = 0; i < N_STREAMS; i++) {
        CU_TRY(cudaMallocHost((void **)&d->h_in[i], in_bytes), "cudaMallocHost");
        CU_TRY(cudaMallocHost((void **)&d->h_out[i], rows * sizeof(double)), "cudaMallocHost");
        CU_TRY(cudaMalloc((void **)&d->d_in[i], in_bytes), "cudaMalloc");
        CU_TRY(cudaMalloc((void **)&d->d_out[i], rows * sizeof(double)), "cudaMalloc");
    }
    d->cap_rows = rows;
    return 0;
fail:
    free_buffers(d);
    return 1;
}

/* Rows [r0, r0 + n) compacted to n_features floats each into dst. */
static void stage_rows(const tsg_dev *d, float *dst, const float *x, size_t r0, size_t n, size_t stride) {
    size_t f = d->n_features;
    if (stride == f) {
        memcpy(dst, x + r0 * stride, n * f * sizeof(float));
        return;
    }
    for (size_t r = 0; r < n; r++) memcpy(dst + r * f, x + (r0 + r) * stride, f * sizeof(float));
}

/* Slice i of the batch goes through stream i % 2: rows copied into that stream's pinned
 * buffer by the CPU, copied to the device, scored and copied back asynchronously; the
 * CPU meanwhile stages slice i + 1 on the other stream, and collects slice i's scores
 * when it comes back to that stream two slices later. */
static int score_locked(tsg_dev *d, const float *x, size_t n_rows, size_t stride, double *out) {
    size_t slice = d->slice, f = d->n_features ? d->n_features : 1;
    size_t cap = n_rows < slice ? (n_rows + 127) / 128 * 128 : slice;
    size_t n_slices = (n_rows + slice - 1) / slice;
    size_t pending_r0[N_STREAMS] = {0, 0}, pending_n[N_STREAMS] = {0, 0};
    if (ensure_buffers(d, cap)) return 1;
    for (size_t i = 0; i < n_slices + N_STREAMS; i++) {
        int k = (int)(i % N_STREAMS);
        if (pending_n[k]) {
            CU_TRY(cudaStreamSynchronize(d->stream[k]), "scoring");
            memcpy(out + pending_r0[k], d->h_out[k], pending_n[k] * sizeof(double));
            pending_n[k] = 0;
        }
        if (i >= n_slices) continue;
        size_t r0 = i * slice, n = n_rows - r0 < slice ? n_rows - r0 : slice;
        stage_rows(d, d->h_in[k], x, r0, n, stride);
        CU_TRY(cudaMemcpyAsync(d->d_in[k], d->h_in[k], n * f * sizeof(float), cudaMemcpyHostToDevice, d->stream[k]),
               "cudaMemcpyAsync (rows)");
        CU_TRY(launch(d, k, d->d_in[k], n, f, d->d_out[k], d->stream[k]), "kernel launch");
        CU_TRY(cudaMemcpyAsync(d->h_out[k], d->d_out[k], n * sizeof(double), cudaMemcpyDeviceToHost, d->stream[k]),
               "cudaMemcpyAsync (scores)");
        pending_r0[k] = r0;
        pending_n[k] = n;
    }
    return 0;
fail:
    for (int k = 0; k < N_STREAMS; k++) cudaStreamSynchronize(d->stream[k]);
    return 1;
}

extern "C" int tsg_cuda_score(void *p, const float *x, size_t n_rows, size_t stride, double *out) {
    tsg_dev *d = (tsg_dev *)p;
    if (n_rows == 0) return 0;
    pthread_mutex_lock(&d->lock);
    int rc = score_locked(d, x, n_rows, stride, out);
    pthread_mutex_unlock(&d->lock);
    if (rc)
        for (size_t r = 0; r < n_rows; r++) out[r] = __builtin_nan("");
    return rc;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

extern "C" int tsg_cuda_time(void *p, const float *x, size_t n_rows, size_t stride, double *out, int reps,
                             double *kernel_s, double *e2e_s) {
    tsg_dev *d = (tsg_dev *)p;
    size_t f = d->n_features ? d->n_features : 1;
    float *h = NULL, *dx = NULL;
    double *dout = NULL;
    cudaEvent_t ev[2] = {NULL, NULL};
    int rc = 1;
    if (reps < 1) reps = 1;
    *kernel_s = *e2e_s = 0.0;
    if (n_rows == 0) return 0;
    /* End to end: whole calls, transfers included (one warm-up call first). */
    if (tsg_cuda_score(d, x, n_rows, stride, out)) return 1;
    double t0 = now_s();
    for (int i = 0; i < reps; i++)
        if (tsg_cuda_score(d, x, n_rows, stride, out)) return 1;
    *e2e_s = (now_s() - t0) / reps;
    /* Kernel only: the rows on the device once, launches timed with events. */
    pthread_mutex_lock(&d->lock);
    h = (float *)malloc(n_rows * f * sizeof(float));
    if (!h) goto fail;
    stage_rows(d, h, x, 0, n_rows, stride);
    CU_TRY(cudaMalloc((void **)&dx, n_rows * f * sizeof(float)), "cudaMalloc");
    CU_TRY(cudaMalloc((void **)&dout, n_rows * sizeof(double)), "cudaMalloc");
    CU_TRY(cudaMemcpy(dx, h, n_rows * f * sizeof(float), cudaMemcpyHostToDevice), "cudaMemcpy");
    CU_TRY(cudaEventCreate(&ev[0]), "cudaEventCreate");
    CU_TRY(cudaEventCreate(&ev[1]), "cudaEventCreate");
    CU_TRY(launch(d, 0, dx, n_rows, f, dout, d->stream[0]), "kernel launch"); /* warm-up */
    CU_TRY(cudaEventRecord(ev[0], d->stream[0]), "cudaEventRecord");
    for (int i = 0; i < reps; i++) CU_TRY(launch(d, 0, dx, n_rows, f, dout, d->stream[0]), "kernel launch");
    CU_TRY(cudaEventRecord(ev[1], d->stream[0]), "cudaEventRecord");
    CU_TRY(cudaEventSynchronize(ev[1]), "kernel");
    {
        float ms = 0.0f;
        CU_TRY(cudaEventElapsedTime(&ms, ev[0], ev[1]), "cudaEventElapsedTime");
        *kernel_s = (double)ms * 1e-3 / reps;
    }
    rc = 0;
fail:
    if (ev[0]) cudaEventDestroy(ev[0]);
    if (ev[1]) cudaEventDestroy(ev[1]);
    if (dx) cudaFree(dx);
    if (dout) cudaFree(dout);
    free(h);
    pthread_mutex_unlock(&d->lock);
    return rc;
}
