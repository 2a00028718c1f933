/* clock.c: tsr_now, seconds on the monotonic clock. */
#include "platform/clock.h"

#include <time.h>

double tsr_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
