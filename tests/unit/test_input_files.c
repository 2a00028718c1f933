/* test_input_files.c: files that are not what they claim: a model that is a FIFO, /dev/zero or a directory is refused at once; a data FIFO without a writer fails after TREESCORE_FIFO_TIMEOUT instead of blocking forever, and one with a late or silent writer is read. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "io/source.h"
#include "platform/cc.h"
#include "platform/config.h"
#include "treescore.h"

static char root[TSR_PATH_MAX];
static char fifo[TSR_PATH_MAX + 32];

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(long ms) { nanosleep(&(struct timespec){ms / 1000, ms % 1000 * 1000000}, NULL); }

/* Run fn in a child that SIGALRM kills after `seconds`: a call that blocks forever (or
 * reads a device without end) fails the test instead of hanging it. */
static void bounded(void (*fn)(void), unsigned seconds, const char *what) {
    fflush(stderr);
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) {
        alarm(seconds);
        fn();
        _exit(check_failed_ ? 1 : 0);
    }
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid);
    CHECK_MSG(WIFEXITED(status) && WEXITSTATUS(status) == 0, "%s: %s %d", what,
              WIFSIGNALED(status) ? "killed by signal (blocked?)" : "failed, exit status",
              WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
}

/* ---- model files ----------------------------------------------------------------------------- */

static void load_refused(const char *path, const char *kind) {
    ts_model *m = NULL;
    ts_error err;
    double t0 = now_s();
    CHECK_STATUS(ts_model_load_file(path, TS_FORMAT_AUTO, &m, &err), TS_ERR_IO);
    CHECK(m == NULL);
    CHECK_MSG(strstr(err.message, path) && strstr(err.message, kind) && strstr(err.message, "regular file"), "%s",
              err.message);
    CHECK_MSG(now_s() - t0 < 1.0, "%s took %.2f s", path, now_s() - t0);
}

static void model_fifo(void) { load_refused(fifo, "FIFO"); }
static void model_dev_zero(void) { load_refused("/dev/zero", "character device"); }
static void model_dir(void) { load_refused(root, "directory"); }

static void test_model_not_regular(void) {
    bounded(model_fifo, 10, "ts_model_load_file on a FIFO without a writer");
    bounded(model_dev_zero, 10, "ts_model_load_file on /dev/zero");
    bounded(model_dir, 10, "ts_model_load_file on a directory");
}

/* ---- data FIFOs -------------------------------------------------------------------------------- */

/* No writer ever: fails after the timeout (1 s here), naming the file and the variable. */
static void data_no_writer(void) {
    setenv("TREESCORE_FIFO_TIMEOUT", "1", 1);
    tsr_config_reload();
    tsio_src s;
    ts_error err;
    double t0 = now_s();
    CHECK_STATUS(tsio_src_open(&s, fifo, fifo, 1 << 20, &err), TS_ERR_IO);
    double took = now_s() - t0;
    CHECK_MSG(took >= 0.9 && took < 5, "took %.2f s", took);
    CHECK_MSG(strstr(err.message, fifo) && strstr(err.message, "TREESCORE_FIFO_TIMEOUT"), "%s", err.message);
}

/* A writer that opens the FIFO late (0.3 s), or opens it and writes only after longer
 * than the timeout (a writer is there: reads block as usual), or opens and closes it. */
static void writer(long open_after_ms, long write_after_ms, const char *text) {
    sleep_ms(open_after_ms);
    int fd = open(fifo, O_WRONLY);
    if (fd < 0) _exit(2);
    sleep_ms(write_after_ms);
    size_t n = strlen(text);
    _exit(write(fd, text, n) == (ssize_t)n ? 0 : 3);
}

static void read_with_writer(long open_after_ms, long write_after_ms, const char *text, int lines) {
    setenv("TREESCORE_FIFO_TIMEOUT", "1", 1);
    tsr_config_reload();
    pid_t pid = fork();
    CHECK(pid >= 0);
    if (pid == 0) writer(open_after_ms, write_after_ms, text);
    tsio_src s;
    ts_error err;
    CHECK_STATUS(tsio_src_open(&s, fifo, fifo, 1 << 20, &err), TS_OK);
    int n = 0, got = 1;
    tsio_line line;
    while (got && tsio_src_next_line(&s, &line, &got, &err) == TS_OK && got) {
        CHECK(line.len == 5 && memcmp(line.p, "1 1:2", 5) == 0);
        n++;
    }
    CHECK_MSG(n == lines, "%d lines read, %d written", n, lines);
    tsio_src_close(&s);
    int status = 0;
    CHECK(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void data_late_writer(void) { read_with_writer(300, 0, "1 1:2\n1 1:2\n", 2); }
static void data_silent_writer(void) { read_with_writer(0, 1500, "1 1:2\n1 1:2\n1 1:2\n", 3); }
static void data_empty_writer(void) { read_with_writer(200, 0, "", 0); }

static void test_data_fifo(void) {
    bounded(data_no_writer, 20, "a data FIFO without a writer");
    bounded(data_late_writer, 20, "a data FIFO whose writer comes late");
    bounded(data_silent_writer, 20, "a data FIFO whose writer writes after the timeout");
    bounded(data_empty_writer, 20, "a data FIFO whose writer writes nothing");
}

int main(void) {
    if (tsr_make_temp_dir(tsr_tmp_dir(), "treescore-test-inputs-", root, sizeof root) != 0) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(fifo, sizeof fifo, "%s/fifo", root);
    if (mkfifo(fifo, 0600) != 0) {
        perror("mkfifo");
        return 1;
    }
    RUN_TEST(test_model_not_regular);
    RUN_TEST(test_data_fifo);
    unlink(fifo);
    rmdir(root);
    return check_summary("test_input_files");
}
