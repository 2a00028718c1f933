/* emu.c: fibers for the threads of a CUDA block (emu.h). */
#include "emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>

enum { RUNNABLE, AT_BARRIER, AT_WARP, DONE };
enum { OP_BALLOT, OP_SHFL };

#define STACK_BYTES (128u * 1024u)
#define MAX_THREADS 1024u

typedef struct fiber {
    ucontext_t ctx;
    char *stack;
    int state;
} fiber;

typedef struct warp {
    unsigned mask, arrived; /* the op's mask, lanes arrived so far */
    int op;
    unsigned value[32], src[32], result[32];
} warp;

tsg_emu_dim3 tsg_emu_thread_idx, tsg_emu_block_idx, tsg_emu_block_dim, tsg_emu_grid_dim;

static fiber fibers[MAX_THREADS];
static warp warps[MAX_THREADS / 32];
static ucontext_t scheduler;
static unsigned n_threads, live, at_barrier, current;
static unsigned char *shared_mem;
static void (*run_kernel)(const void *);
static const void *run_args;
static uint64_t switches;

uint64_t tsg_emu_switches(void) { return switches; }

void *tsg_emu_shared(void) { return shared_mem; }

static void die(const char *what) {
    fprintf(stderr, "gpu emulator: block %u: %s\n", tsg_emu_block_idx.x, what);
    for (unsigned i = 0; i < n_threads; i++)
        if (fibers[i].state == AT_BARRIER || fibers[i].state == AT_WARP)
            fprintf(stderr, "  thread %u waits at %s\n", i, fibers[i].state == AT_BARRIER ? "__syncthreads" : "a warp op");
    abort();
}

/* Back to the scheduler until resumed. */
static void block_here(int state) {
    fibers[current].state = state;
    switches++;
    if (swapcontext(&fibers[current].ctx, &scheduler) != 0) die("swapcontext failed");
}

/* Releases the barrier when every thread still running has arrived. */
static void barrier_check(void) {
    if (live == 0 || at_barrier < live) return;
    for (unsigned i = 0; i < n_threads; i++)
        if (fibers[i].state == AT_BARRIER) fibers[i].state = RUNNABLE;
    at_barrier = 0;
}

void tsg_emu_syncthreads(void) {
    at_barrier++;
    if (at_barrier == live) {
        barrier_check(); /* the last one through: release the others, run on */
        return;
    }
    block_here(AT_BARRIER);
}

/* A warp op: deposit, then wait for the mask's other lanes; the last one computes every
 * lane's result and releases them. */
static unsigned warp_op(int op, unsigned mask, unsigned value, unsigned src) {
    unsigned lane = current % 32u, wi = current / 32u;
    warp *w = &warps[wi];
    if (!(mask >> lane & 1u)) die("a warp op called by a lane outside its mask");
    if (w->arrived == 0) {
        w->mask = mask;
        w->op = op;
    } else if (w->mask != mask || w->op != op) {
        die("lanes of one warp in different warp ops or masks");
    }
    w->value[lane] = value;
    w->src[lane] = src;
    w->arrived |= 1u << lane;
    if (w->arrived == mask) {
        unsigned ballot = 0;
        for (unsigned l = 0; l < 32; l++)
            if (mask >> l & 1u && w->value[l]) ballot |= 1u << l;
        for (unsigned l = 0; l < 32; l++) {
            if (!(mask >> l & 1u)) continue;
            unsigned s = w->src[l] % 32u;
            w->result[l] = op == OP_BALLOT ? ballot : w->value[s];
            if (l != lane) fibers[wi * 32u + l].state = RUNNABLE;
        }
        w->arrived = 0;
        return w->result[lane];
    }
    block_here(AT_WARP);
    return w->result[lane];
}

unsigned tsg_emu_ballot(unsigned mask, int pred) { return warp_op(OP_BALLOT, mask, pred != 0, 0); }

unsigned tsg_emu_shfl(unsigned mask, unsigned value, int src_lane) {
    return warp_op(OP_SHFL, mask, value, (unsigned)src_lane);
}

static void fiber_main(void) {
    run_kernel(run_args);
    unsigned lane = current % 32u;
    if (warps[current / 32u].arrived & ~(1u << lane) && warps[current / 32u].mask >> lane & 1u)
        die("a thread returned while lanes of its mask wait in a warp op");
    fibers[current].state = DONE;
    live--;
    barrier_check();
    switches++;
    /* returning resumes uc_link, the scheduler */
}

int tsg_emu_launch(unsigned grid, unsigned block, size_t smem_bytes, void (*kernel)(const void *args),
                   const void *args) {
    if (block == 0 || block > MAX_THREADS || block % 32u) return -1;
    static size_t smem_cap;
    if (smem_bytes > smem_cap || !shared_mem) {
        free(shared_mem);
        smem_cap = smem_bytes > 64 ? smem_bytes : 64;
        shared_mem = malloc(smem_cap);
        if (!shared_mem) die("out of memory");
    }
    run_kernel = kernel;
    run_args = args;
    tsg_emu_block_dim = (tsg_emu_dim3){block, 1, 1};
    tsg_emu_grid_dim = (tsg_emu_dim3){grid, 1, 1};
    for (unsigned b = 0; b < grid; b++) {
        tsg_emu_block_idx = (tsg_emu_dim3){b, 0, 0};
        memset(shared_mem, 0xA5, smem_bytes);
        memset(warps, 0, sizeof warps);
        n_threads = live = block;
        at_barrier = 0;
        for (unsigned i = 0; i < block; i++) {
            fiber *f = &fibers[i];
            if (!f->stack && !(f->stack = malloc(STACK_BYTES))) die("out of memory");
            if (getcontext(&f->ctx) != 0) die("getcontext failed");
            f->ctx.uc_stack.ss_sp = f->stack;
            f->ctx.uc_stack.ss_size = STACK_BYTES;
            f->ctx.uc_link = &scheduler;
            makecontext(&f->ctx, fiber_main, 0);
            f->state = RUNNABLE;
        }
        while (live) {
            int progress = 0;
            for (unsigned i = 0; i < block; i++) {
                if (fibers[i].state != RUNNABLE) continue;
                current = i;
                tsg_emu_thread_idx = (tsg_emu_dim3){i, 0, 0};
                progress = 1;
                if (swapcontext(&scheduler, &fibers[i].ctx) != 0) die("swapcontext failed");
            }
            if (!progress && live) die("deadlock: no thread can run");
        }
    }
    return 0;
}
