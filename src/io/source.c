/* source.c: reader core: the buffered byte and line source (one growing buffer, lines found with memchr), input files opened without blocking on a FIFO, whole regular files read within a limit. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L
#endif

#include "io/source.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/error.h"
#include "platform/clock.h"
#include "platform/config.h"

/* Reads go through a buffer of this size (larger only to hold one long line). */
#define TSIO_READ_BLOCK ((size_t)1 << 20)

/* A FIFO opened without blocking (O_NONBLOCK: a plain open would wait for a writer
 * forever): wait until a writer has opened it, at most TREESCORE_FIFO_TIMEOUT seconds.
 * A writer is there when poll says data or hang-up (one came and left: the input is
 * empty), or when read() says EAGAIN (one is there and has written nothing yet: from
 * then on reads block as usual, however long the writer takes). read() returning 0
 * without a hang-up means no writer yet. Bytes read meanwhile stay in the buffer. */
static ts_status wait_for_writer(tsio_src *s, const char *path, ts_error *err) {
    const double limit = tsr_config_get()->fifo_timeout_s, t0 = tsr_now();
    for (;;) {
        struct pollfd p = {s->fd, POLLIN, 0};
        int r = poll(&p, 1, 100);
        if (r > 0) return TS_OK;
        if (r < 0 && errno != EINTR) return ts_fail(err, TS_ERR_IO, "%s: cannot wait for input: %s", path, strerror(errno));
        ssize_t k = read(s->fd, s->buf + s->end, s->cap - s->end);
        if (k > 0) s->end += (size_t)k;
        if (k > 0 || (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))) return TS_OK;
        if (k < 0 && errno != EINTR) return ts_fail(err, TS_ERR_IO, "%s: read error: %s", path, strerror(errno));
        if (limit > 0 && tsr_now() - t0 > limit)
            return ts_fail(err, TS_ERR_IO,
                           "%s: a FIFO that no program opened for writing within %g s (TREESCORE_FIFO_TIMEOUT); "
                           "start its writer first, or set TREESCORE_FIFO_TIMEOUT=0 to wait without a limit",
                           path, limit);
    }
}

/* Open a data file: without blocking (a FIFO waits for its writer, bounded), then with
 * blocking reads. A directory is refused. */
static ts_status open_input(tsio_src *s, const char *path, ts_error *err) {
    struct stat st;
    do {
        s->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    } while (s->fd < 0 && errno == EINTR);
    if (s->fd < 0) return ts_fail(err, TS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    s->own_fd = 1;
    if (fstat(s->fd, &st) != 0) return ts_fail(err, TS_ERR_IO, "%s: cannot stat: %s", path, strerror(errno));
    if (S_ISDIR(st.st_mode)) return ts_fail(err, TS_ERR_IO, "%s: cannot read: %s", path, strerror(EISDIR));
    if (S_ISFIFO(st.st_mode)) TS_TRY(wait_for_writer(s, path, err));
    int flags = fcntl(s->fd, F_GETFL);
    if (flags < 0 || fcntl(s->fd, F_SETFL, flags & ~O_NONBLOCK) != 0)
        return ts_fail(err, TS_ERR_IO, "%s: cannot read: %s", path, strerror(errno));
    return TS_OK;
}

ts_status tsio_src_open(tsio_src *s, const char *path, const char *name, size_t max_line, ts_error *err) {
    size_t need;
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->name = name;
    if (max_line > SIZE_MAX / 4) max_line = SIZE_MAX / 4;
    s->max_line = max_line;
    need = max_line + 3; /* the line, CR, LF */
    s->max_cap = need > TSIO_READ_BLOCK ? need : TSIO_READ_BLOCK;
    s->cap = s->max_cap <= 2 * TSIO_READ_BLOCK ? s->max_cap : TSIO_READ_BLOCK;
    s->buf = malloc(s->cap + 1);
    if (!s->buf) return ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory for the read buffer", name);
    if (strcmp(path, "-") == 0) {
        s->fd = STDIN_FILENO;
        return TS_OK;
    }
    ts_status st = open_input(s, path, err);
    if (st != TS_OK) tsio_src_close(s);
    return st;
}

/* What a file that is not a regular one is, for messages. */
static const char *file_kind(mode_t mode) {
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "not a regular file";
}

ts_status tsio_read_regular_file(const char *path, size_t max_bytes, const char *what, char **out, size_t *size,
                                 ts_error *err) {
    struct stat st;
    int fd;
    *out = NULL;
    *size = 0;
    do {
        fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO must not block the open */
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return ts_fail(err, TS_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        return ts_fail(err, TS_ERR_IO, "%s: cannot stat: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return ts_fail(err, TS_ERR_IO, "%s: is %s; a %s must be a regular file", path, file_kind(st.st_mode), what);
    }
    if ((unsigned long long)st.st_size > max_bytes) {
        close(fd);
        return ts_fail(err, TS_ERR_LIMIT, "%s: a %s of %llu bytes is above the limit %zu", path, what,
                       (unsigned long long)st.st_size, max_bytes);
    }
    /* What fstat said and no more: a file growing meanwhile is read as it was. */
    size_t want = (size_t)st.st_size, got = 0;
    char *buf = malloc(want + 1);
    if (!buf) {
        close(fd);
        return ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory reading %zu bytes", path, want);
    }
    while (got < want) {
        ssize_t k = read(fd, buf + got, want - got);
        if (k < 0 && errno == EINTR) continue;
        if (k < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return ts_fail(err, TS_ERR_IO, "%s: cannot read: %s", path, strerror(e));
        }
        if (k == 0) break; /* it shrank meanwhile */
        got += (size_t)k;
    }
    close(fd);
    buf[got] = '\0';
    *out = buf;
    *size = got;
    return TS_OK;
}

void tsio_src_close(tsio_src *s) {
    if (s->own_fd && s->fd >= 0) close(s->fd);
    s->fd = -1;
    s->own_fd = 0;
    free(s->buf);
    s->buf = NULL;
}

/* Append what one read() gives to buf[end, cap); sets eof on 0. */
static ts_status src_read_more(tsio_src *s, ts_error *err) {
    for (;;) {
        ssize_t k = read(s->fd, s->buf + s->end, s->cap - s->end);
        if (k > 0) {
            s->end += (size_t)k;
            return TS_OK;
        }
        if (k == 0) {
            s->eof = 1;
            return TS_OK;
        }
        if (errno != EINTR) return ts_fail(err, TS_ERR_IO, "%s: read error: %s", s->name, strerror(errno));
    }
}

/* Move the unconsumed bytes to the front of the buffer. */
static void src_compact(tsio_src *s) {
    size_t n = s->end - s->start;
    if (s->start == 0) return;
    memmove(s->buf, s->buf + s->start, n);
    s->base += s->start;
    s->scan -= s->start;
    s->end = n;
    s->start = 0;
}

static ts_status src_grow(tsio_src *s, size_t want, ts_error *err) {
    size_t cap = s->cap;
    char *nb;
    while (cap < want && cap < s->max_cap) cap = cap > s->max_cap / 2 ? s->max_cap : cap * 2;
    if (cap == s->cap) return TS_OK;
    nb = realloc(s->buf, cap + 1);
    if (!nb) return ts_fail(err, TS_ERR_NO_MEMORY, "%s: out of memory for a %zu-byte line buffer", s->name, cap);
    s->buf = nb;
    s->cap = cap;
    return TS_OK;
}

ts_status tsio_src_fill(tsio_src *s, size_t want, ts_error *err) {
    while (s->end - s->start < want && !s->eof) {
        if (s->cap - s->start < want) {
            src_compact(s);
            if (s->cap < want) TS_TRY(src_grow(s, want, err));
        }
        TS_TRY(src_read_more(s, err));
    }
    return TS_OK;
}

void tsio_src_skip(tsio_src *s, size_t n) {
    s->start += n;
    if (s->scan < s->start) s->scan = s->start;
}

static ts_status src_too_long(tsio_src *s, ts_error *err) {
    return ts_fail_at(err, TS_ERR_LIMIT, s->line_no + 1, s->base + s->start, "%s:%llu: line longer than %zu bytes",
                      s->name, (unsigned long long)(s->line_no + 1), s->max_line);
}

/* Hand out buf[start, stop) (less a trailing CR) and continue at `next`. */
static ts_status src_take_line(tsio_src *s, size_t stop, size_t next, tsio_line *line, ts_error *err) {
    size_t len = stop - s->start;
    if (len > 0 && s->buf[stop - 1] == '\r') len--;
    if (len > s->max_line) return src_too_long(s, err);
    s->line_no++;
    line->p = s->buf + s->start;
    line->len = len;
    line->line_no = s->line_no;
    line->byte = s->base + s->start;
    s->pushed_p = line->p;
    s->pushed_len = len;
    s->pushed_byte = line->byte;
    s->start = s->scan = next;
    return TS_OK;
}

ts_status tsio_src_next_line(tsio_src *s, tsio_line *line, int *got, ts_error *err) {
    *got = 0;
    if (s->pushed) {
        s->pushed = 0;
        line->p = s->pushed_p;
        line->len = s->pushed_len;
        line->line_no = s->line_no;
        line->byte = s->pushed_byte;
        *got = 1;
        return TS_OK;
    }
    for (;;) {
        /* Invariant: buf[start, scan) holds no '\n'; each byte is searched once. */
        char *nl = memchr(s->buf + s->scan, '\n', s->end - s->scan);
        if (nl) {
            size_t pos = (size_t)(nl - s->buf);
            TS_TRY(src_take_line(s, pos, pos + 1, line, err));
            *got = 1;
            return TS_OK;
        }
        s->scan = s->end;
        if (s->end - s->start > s->max_line + 1) return src_too_long(s, err);
        if (s->eof) {
            if (s->start == s->end) return TS_OK;
            TS_TRY(src_take_line(s, s->end, s->end, line, err));
            *got = 1;
            return TS_OK;
        }
        /* Room for more: each partial line is moved at most once (start becomes 0). */
        if (s->start > 0 && s->cap - s->end < s->cap / 2) src_compact(s);
        if (s->end == s->cap) TS_TRY(src_grow(s, s->cap + 1, err));
        TS_TRY(src_read_more(s, err));
    }
}

void tsio_src_unread_line(tsio_src *s) { s->pushed = 1; }

ts_status tsio_src_read(tsio_src *s, void *dst, size_t n, size_t *got, ts_error *err) {
    char *out = dst;
    size_t done = s->end - s->start;
    if (done > n) done = n;
    memcpy(out, s->buf + s->start, done);
    s->start += done;
    if (s->scan < s->start) s->scan = s->start;
    if (s->start == s->end) { /* buffer drained: reads go straight to dst */
        s->base += s->end;
        s->start = s->end = s->scan = 0;
    }
    while (done < n && !s->eof) {
        size_t want = n - done;
        ssize_t k;
        if (want > ((size_t)1 << 30)) want = (size_t)1 << 30;
        k = read(s->fd, out + done, want);
        if (k > 0) {
            done += (size_t)k;
            s->base += (uint64_t)k;
        } else if (k == 0) {
            s->eof = 1;
        } else if (errno != EINTR) {
            return ts_fail(err, TS_ERR_IO, "%s: read error: %s", s->name, strerror(errno));
        }
    }
    *got = done;
    return TS_OK;
}
