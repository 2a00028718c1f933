/* emu.h: the CUDA execution model on the CPU, enough of it to run src/gpu/kernels.cuh
 * unchanged under the host compiler (docs/gpu.md "Testing without a GPU").
 *
 * A launch runs its blocks one after another; a block's threads are fibers (ucontext)
 * run round-robin in thread order on the calling OS thread, each until it blocks:
 *   __syncthreads()        waits until every thread of the block that has not returned
 *                          has arrived (a real barrier: the block cannot run on past it);
 *   __ballot_sync(m, p)    and __shfl_sync(m, v, src) wait until every lane of m in the
 *                          warp has arrived with the same mask (a lane outside m, or a
 *                          lane of m that returns meanwhile, is an error);
 * and a block in which no thread can run while some have not returned is a deadlock:
 * the emulator prints which threads wait where and aborts. Shared memory: the launch's
 * dynamic bytes per block, filled with a garbage pattern before each block (0xA5), so a
 * kernel reading what it did not write is not hidden by zeros. threadIdx, blockIdx,
 * blockDim and gridDim are x-only (y = z = 0, or 1 for dimensions); __shfl_sync moves
 * unsigned ints only (C has no overloads); no atomics (the kernels use none). */
#ifndef TS_TESTS_GPU_EMU_H
#define TS_TESTS_GPU_EMU_H

#include <stddef.h>
#include <stdint.h>

typedef struct tsg_emu_dim3 {
    unsigned x, y, z;
} tsg_emu_dim3;

/* Current thread and block: set by the scheduler before it resumes a fiber. */
extern tsg_emu_dim3 tsg_emu_thread_idx, tsg_emu_block_idx, tsg_emu_block_dim, tsg_emu_grid_dim;

void tsg_emu_syncthreads(void);
unsigned tsg_emu_ballot(unsigned mask, int pred);
unsigned tsg_emu_shfl(unsigned mask, unsigned value, int src_lane);
void *tsg_emu_shared(void);

static inline int tsg_emu_ctz64(uint64_t v) { return __builtin_ctzll(v); }

/* Runs kernel(args) on grid x block threads with smem_bytes of dynamic shared memory
 * per block. Returns 0, or -1 when block is 0, above 1024 or not a multiple of 32. */
int tsg_emu_launch(unsigned grid, unsigned block, size_t smem_bytes, void (*kernel)(const void *args),
                   const void *args);

/* Fiber switches and barriers of the launches so far (for the test's report). */
uint64_t tsg_emu_switches(void);

#define __global__ static
#define __device__
#define __forceinline__
#define threadIdx tsg_emu_thread_idx
#define blockIdx tsg_emu_block_idx
#define blockDim tsg_emu_block_dim
#define gridDim tsg_emu_grid_dim
#define __syncthreads() tsg_emu_syncthreads()
#define __ballot_sync(mask, pred) tsg_emu_ballot((mask), (pred))
#define __shfl_sync(mask, value, src) tsg_emu_shfl((mask), (value), (src))

#endif /* TS_TESTS_GPU_EMU_H */
