/* cc.c: finds the system C compiler, runs compiler processes in parallel (posix_spawn, wait4 by pid), makes and removes private build directories. */
/* wait4 (the child's resource usage: its peak RSS) is a BSD interface glibc declares
 * only with _DEFAULT_SOURCE; the rest is POSIX.1-2008. */
#define _DEFAULT_SOURCE 1

#include "platform/cc.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/error.h"
#include "platform/artifacts.h"
#include "platform/clock.h"
#include "platform/config.h"

extern char **environ;

const char *tsr_tmp_dir(void) {
    const char *t = tsr_config_get()->tmp_dir;
    return t && *t ? t : "/tmp";
}

/* ---- Finding the compiler ------------------------------------------------------------- */

static int is_executable_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* Search PATH for `name` (no '/'); 0 and the path in out when found. */
static int search_path(const char *name, char *out, size_t size) {
    const char *path = tsr_config_get()->path;
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    for (const char *p = path;;) {
        const char *end = strchr(p, ':');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        int n = len ? snprintf(out, size, "%.*s/%s", (int)len, p, name) : snprintf(out, size, "%s", name);
        if (n > 0 && (size_t)n < size && is_executable_file(out)) return 0;
        if (!end) return -1;
        p = end + 1;
    }
}

static const char CC_HINT[] = "install gcc or clang, or set TREESCORE_CC to a C compiler";

/* The resolved path, size and mtime of the compiler binary: changes when it is upgraded. */
static void compiler_identity(tsr_cc *cc) {
    char *real = realpath(cc->path, NULL);
    struct stat st;
    memset(&st, 0, sizeof st);
    stat(real ? real : cc->path, &st);
    snprintf(cc->identity, sizeof cc->identity, "%s %lld %lld.%09ld", real ? real : cc->path, (long long)st.st_size,
             (long long)st.st_mtim.tv_sec, (long)st.st_mtim.tv_nsec);
    free(real);
}

ts_status tsr_cc_find(tsr_cc *cc, ts_error *err) {
    const char *env = tsr_config_get()->cc;
    const char *name = env && *env ? env : "cc";
    memset(cc, 0, sizeof *cc);
    if (strchr(name, '/')) {
        if (strlen(name) >= sizeof cc->path || !is_executable_file(name))
            return ts_fail(err, TS_ERR_ENGINE_UNAVAILABLE,
                           "the C compiler TREESCORE_CC=%s is not an executable file; %s", name, CC_HINT);
        snprintf(cc->path, sizeof cc->path, "%s", name);
    } else if (search_path(name, cc->path, sizeof cc->path) != 0) {
        const char *path = tsr_config_get()->path;
        return ts_fail(err, TS_ERR_ENGINE_UNAVAILABLE, "no C compiler: %s'%s' is not found in PATH (%.300s); %s",
                       env && *env ? "TREESCORE_CC=" : "", name, path ? path : "unset", CC_HINT);
    }
    compiler_identity(cc);
    return TS_OK;
}

/* ---- Running compiles ------------------------------------------------------------------ */

/* A compiler process: the leader of its own process group (pgid == pid), so that on a
 * timeout or a failure the processes it started (cc1, as, ld) are killed with it. */
typedef struct running {
    pid_t pid;
    size_t job;
    double started;         /* tsr_now() at spawn */
} running;

static ts_status spawn_job(const tsr_cc_job *job, pid_t *pid, ts_error *err) {
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    sigset_t none, defaults;
    sigemptyset(&none);
    sigemptyset(&defaults);
    /* A parent that ignores SIGCHLD would make the compiler driver lose its own children. */
    static const int reset[] = {SIGCHLD, SIGPIPE, SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    for (size_t i = 0; i < sizeof reset / sizeof reset[0]; i++) sigaddset(&defaults, reset[i]);
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc) return ts_fail(err, TS_ERR_NO_MEMORY, "cannot start %s: %s", job->argv[0], strerror(rc));
    rc = posix_spawnattr_init(&attr);
    if (rc) {
        posix_spawn_file_actions_destroy(&fa);
        return ts_fail(err, TS_ERR_NO_MEMORY, "cannot start %s: %s", job->argv[0], strerror(rc));
    }
    if (!rc) rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    if (!rc) rc = posix_spawn_file_actions_addopen(&fa, 1, job->log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (!rc) rc = posix_spawn_file_actions_adddup2(&fa, 1, 2);
    if (!rc) rc = posix_spawnattr_setsigmask(&attr, &none);
    if (!rc) rc = posix_spawnattr_setsigdefault(&attr, &defaults);
    if (!rc) rc = posix_spawnattr_setpgroup(&attr, 0); /* a group of its own: see running */
    if (!rc) rc = posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP);
    if (!rc) rc = posix_spawn(pid, job->argv[0], &fa, &attr, job->argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    posix_spawnattr_destroy(&attr);
    if (rc) return ts_fail(err, TS_ERR_ENGINE_UNAVAILABLE, "cannot run %s: %s", job->argv[0], strerror(rc));
    return TS_OK;
}

/* The last bytes of a log file, from a line start where possible, trailing blanks cut. */
static void log_tail(const char *path, char *out, size_t size) {
    out[0] = '\0';
    FILE *f = fopen(path, "rb");
    if (!f) return;
    long want = (long)size - 1;
    if (fseek(f, 0, SEEK_END) == 0) {
        long len = ftell(f);
        fseek(f, len > want ? len - want : 0, SEEK_SET);
    }
    size_t n = fread(out, 1, size - 1, f);
    fclose(f);
    out[n] = '\0';
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' ' || out[n - 1] == '\r')) out[--n] = '\0';
    char *nl = strchr(out, '\n');
    if (n == size - 1 && nl && nl[1]) memmove(out, nl + 1, strlen(nl + 1) + 1);
}

/* The command line, shortened to fit. */
static void command_text(char *const *argv, char *out, size_t size) {
    size_t used = 0;
    out[0] = '\0';
    for (size_t i = 0; argv[i] && used + 1 < size; i++) {
        int n = snprintf(out + used, size - used, "%s%s", i ? " " : "", argv[i]);
        if (n < 0) break;
        used += (size_t)n;
    }
}

static ts_status job_failed(const tsr_cc_job *job, int status, int timed_out, ts_error *err) {
    char cmd[256], tail[560];
    command_text(job->argv, cmd, sizeof cmd);
    log_tail(job->log, tail, sizeof tail);
    if (timed_out)
        return ts_fail(err, TS_ERR_ENGINE_UNAVAILABLE,
                       "the C compiler did not finish within %g s (TREESCORE_CC_TIMEOUT) and was killed: `%s`%s%s",
                       tsr_config_get()->cc_timeout_s, cmd, tail[0] ? ":\n" : "", tail);
    if (WIFSIGNALED(status))
        return ts_fail(err, TS_ERR_ENGINE_UNAVAILABLE, "the C compiler died of signal %d: `%s`:\n%s", WTERMSIG(status), cmd,
                       tail);
    return ts_fail(err, TS_ERR_ENGINE_UNAVAILABLE, "the C compiler failed with exit status %d: `%s`:\n%s", WEXITSTATUS(status),
                   cmd, tail);
}

/* Wait for pid (blocking or not). 1 when it was reaped (status, peak RSS in bytes set),
 * 0 when it is still running. A child reaped by someone else (SIGCHLD ignored by the
 * application) counts as a success: the outputs are checked later anyway. */
static int reap(pid_t pid, int block, int *status, uint64_t *rss) {
    struct rusage ru;
    memset(&ru, 0, sizeof ru);
    for (;;) {
        pid_t r = wait4(pid, status, block ? 0 : WNOHANG, &ru);
        if (r == pid) break;
        if (r == 0) return 0;
        if (errno == EINTR) continue;
        *status = 0;
        *rss = 0;
        return 1;
    }
#if defined(__APPLE__)
    *rss = (uint64_t)ru.ru_maxrss;
#else
    *rss = (uint64_t)ru.ru_maxrss * 1024u;
#endif
    return 1;
}

/* Kill job r's whole process group (the compiler and what it started). */
static void kill_group(const running *r, int sig) {
    if (kill(-r->pid, sig) != 0) kill(r->pid, sig); /* not a group leader (yet): the process */
}

/* Reap one of the running jobs, polling every 2 ms. A job running for longer than the
 * timeout (TREESCORE_CC_TIMEOUT; 0: none) has its process group killed (SIGKILL) and is
 * reaped, with *timed_out set. Returns its index in run[]. */
static size_t reap_one(const running *run, size_t n_run, int *status, uint64_t *rss, int *timed_out) {
    const double limit = tsr_config_get()->cc_timeout_s;
    *timed_out = 0;
    for (;;) {
        double now = tsr_now();
        for (size_t i = 0; i < n_run; i++) {
            if (reap(run[i].pid, 0, status, rss)) return i;
            if (limit > 0 && now - run[i].started > limit) {
                kill_group(&run[i], SIGKILL);
                reap(run[i].pid, 1, status, rss);
                *timed_out = 1;
                return i;
            }
        }
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
}

ts_status tsr_cc_run(const tsr_cc_job *jobs, size_t n, unsigned max_parallel, tsr_cc_before_fn before, void *ctx,
                     tsr_cc_stats *stats, ts_error *err) {
    if (max_parallel == 0) max_parallel = 1;
    if (max_parallel > n) max_parallel = n ? (unsigned)n : 1;
    running *run = calloc(max_parallel, sizeof *run);
    if (!run) return ts_fail(err, TS_ERR_NO_MEMORY, "out of memory starting compiles");
    tsr_cc_stats st = {0, 0, 0};
    double t0 = tsr_now();
    ts_status result = TS_OK;
    size_t next = 0, n_run = 0;
    while (next < n || n_run > 0) {
        while (result == TS_OK && next < n && n_run < max_parallel) {
            if (before) result = before(ctx, next, err);
            if (result == TS_OK) result = spawn_job(&jobs[next], &run[n_run].pid, err);
            if (result != TS_OK) break;
            run[n_run].started = tsr_now();
            run[n_run++].job = next++;
            if (n_run > st.jobs) st.jobs = (unsigned)n_run;
        }
        if (n_run == 0) break;
        int status = 0, timed_out = 0;
        uint64_t rss = 0;
        size_t i = reap_one(run, n_run, &status, &rss, &timed_out);
        if (rss > st.peak_rss) st.peak_rss = rss;
        if (timed_out) kill_group(&run[i], SIGKILL); /* what its killed leader left running */
        if (result == TS_OK && (timed_out || !(WIFEXITED(status) && WEXITSTATUS(status) == 0))) {
            result = job_failed(&jobs[run[i].job], status, timed_out, err);
            for (size_t k = 0; k < n_run; k++)
                if (k != i) kill_group(&run[k], SIGTERM);
        }
        run[i] = run[--n_run];
        if (result != TS_OK) next = n; /* start nothing more; reap the rest */
    }
    st.wall_s = tsr_now() - t0;
    if (stats) *stats = st;
    free(run);
    return result;
}

/* ---- Build directories --------------------------------------------------------------- */

int tsr_make_temp_dir(const char *parent, const char *prefix, char *out, size_t size) {
    int n = snprintf(out, size, "%s/%sXXXXXX", parent, prefix);
    if (n < 0 || (size_t)n >= size) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return mkdtemp(out) ? 0 : -1;
}

void tsr_remove_temp_dir(const char *dir) { tsr_remove_dir_at(AT_FDCWD, dir); }

void tsr_remove_stale_temp_dirs(const char *parent, const char *prefix, double max_age_s) {
    int fd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return;
    tsr_remove_stale_dirs_at(fd, prefix, max_age_s);
    close(fd);
}
