/* scratch.h: one growable, 64-byte aligned scratch buffer per thread, for engines' per-call working memory. */
#ifndef TS_PLATFORM_SCRATCH_H
#define TS_PLATFORM_SCRATCH_H

#include <stddef.h>

/*
 * tsr_scratch(bytes) returns this thread's buffer, at least `bytes` long and 64-byte
 * aligned, or NULL if it had to grow and the allocation failed. It grows (never
 * shrinks) to the largest size asked for on this thread, so after the first calls
 * scoring allocates nothing. The contents are undefined on return, and the buffer is
 * only valid until this thread's next tsr_scratch call: one user at a time per thread
 * (the scorer takes it once per chunk and hands it to the engine). Freed when the
 * thread exits (pthread key destructor).
 */
void *tsr_scratch(size_t bytes);

#endif /* TS_PLATFORM_SCRATCH_H */
