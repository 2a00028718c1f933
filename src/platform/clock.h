/* clock.h: the one clock of the library, seconds on a monotonic clock for measuring durations. */
#ifndef TS_PLATFORM_CLOCK_H
#define TS_PLATFORM_CLOCK_H

/* Seconds on CLOCK_MONOTONIC: only differences mean anything (compile times, the
 * planner's timed calls, cache-hit latencies). */
double tsr_now(void);

#endif /* TS_PLATFORM_CLOCK_H */
