/* cc.h: the system C compiler for generated code: finding it, running compiles in parallel, private build directories. */
#ifndef TS_PLATFORM_CC_H
#define TS_PLATFORM_CC_H

#include <stddef.h>
#include <stdint.h>

#include "treescore.h"

#define TSR_PATH_MAX 4096

/* A C compiler found on this machine. `identity` changes when the binary behind `path`
 * is replaced (upgraded): it is the resolved path, size and modification time of the
 * file, read with stat (cheap: the compiler is not run). */
typedef struct tsr_cc {
    char path[TSR_PATH_MAX];      /* absolute or relative path, usable with posix_spawn */
    char identity[TSR_PATH_MAX + 64];
} tsr_cc;

/* Find the compiler: the environment variable TREESCORE_CC (a program name searched in
 * PATH, or a path when it contains a '/'), else "cc" searched in PATH. When there is
 * none, or it is not an executable file, fails with TS_ERR_ENGINE_UNAVAILABLE and a
 * message naming what was looked for and how to fix it. */
ts_status tsr_cc_find(tsr_cc *cc, ts_error *err);

/* What a batch of compiler runs cost. */
typedef struct tsr_cc_stats {
    double wall_s;          /* from the first spawn to the last exit */
    uint64_t peak_rss;      /* bytes: the largest peak resident set of one compiler process
                               (with the processes it ran, e.g. gcc's cc1), from wait4 */
    unsigned jobs;          /* the most processes that ran at once */
} tsr_cc_stats;

/* One command: argv[0] is the program's path (run as is, no PATH search), the vector
 * ends with NULL. Its standard output and error go to `log` (created or truncated);
 * standard input is /dev/null. */
typedef struct tsr_cc_job {
    char *const *argv;
    const char *log;
} tsr_cc_job;

/* Called just before job i is spawned (for example to write the source it compiles,
 * overlapping code generation with earlier compiles). Returns TS_OK or fails. */
typedef ts_status (*tsr_cc_before_fn)(void *ctx, size_t i, ts_error *err);

/* Run jobs 0..n-1 in order, at most max_parallel (>= 1) at a time, each in a process
 * group of its own. Children are waited for by pid only, so the caller's other children
 * are never reaped. A job running longer than TREESCORE_CC_TIMEOUT seconds (tsr_config:
 * default 120, 0 none) fails: its process group is killed with SIGKILL and it is
 * reaped. On the first failure (a job exits non-zero, dies of a signal or times out, a
 * spawn fails, `before` fails) the process groups of the jobs still running are sent
 * SIGTERM and reaped, and the error message quotes the tail of the failing job's log
 * (and names TREESCORE_CC_TIMEOUT on a timeout). stats may be NULL.
 * A process group of its own also means that a terminal's Ctrl-C reaches only the
 * calling process: compilers already started run to their end (each compiles one
 * bounded file), but none is started after the caller dies. */
ts_status tsr_cc_run(const tsr_cc_job *jobs, size_t n, unsigned max_parallel, tsr_cc_before_fn before, void *ctx,
                     tsr_cc_stats *stats, ts_error *err);

/* Make a new private directory (mode 0700) `parent`/`prefix`XXXXXX. Returns 0 and the
 * path in out, or -1 with errno set. */
int tsr_make_temp_dir(const char *parent, const char *prefix, char *out, size_t size);

/* Remove the plain files in `dir` and then `dir` itself (a private build directory made
 * by tsr_make_temp_dir; subdirectories are not descended; links are removed, never
 * followed; only a directory owned by this user is touched). Errors are ignored. */
void tsr_remove_temp_dir(const char *dir);

/* Remove directories named `prefix`* directly in `parent` (owned by this user, never
 * through a symbolic link: tsr_remove_stale_dirs_at) whose modification time is more
 * than max_age_s seconds ago: the leftovers of builds whose process was killed. */
void tsr_remove_stale_temp_dirs(const char *parent, const char *prefix, double max_age_s);

/* The directory for temporary files: $TMPDIR when set and non-empty, else /tmp. */
const char *tsr_tmp_dir(void);

#endif /* TS_PLATFORM_CC_H */
