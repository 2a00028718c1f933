/* source.h: reader core: a buffered byte and line source over a file descriptor (data readers' input). */
#ifndef TS_IO_SOURCE_H
#define TS_IO_SOURCE_H

#include <stddef.h>
#include <stdint.h>

#include "treescore.h"

/* ---- Byte and line source ------------------------------------------------------------
 *
 * A tsio_src reads a file descriptor through one buffer `buf` of `cap` bytes (plus one
 * slack byte, so that buf[end] is always writable: a token ending at the end of the
 * buffered data can be NUL-terminated in place). The unconsumed data is buf[start, end);
 * buf[start, scan) is known to hold no '\n'. The buffer starts at about 1 MiB and only
 * grows, up to `max_cap`, to hold one line of at most max_line bytes (plus CR LF).
 * `base` is the stream offset of buf[0], for error byte offsets.
 */
typedef struct tsio_src {
    int fd;
    int own_fd;           /* close fd at the end (not for stdin) */
    const char *name;     /* for messages; not owned */
    char *buf;
    size_t cap, max_cap;
    size_t start, end, scan;
    size_t max_line;
    int eof;              /* read() returned 0 */
    uint64_t line_no;     /* number of the last line returned (1-based) */
    uint64_t base;        /* stream offset of buf[0] */
    /* one pushed-back line (tsio_src_unread_line) */
    int pushed;
    char *pushed_p;
    size_t pushed_len;
    uint64_t pushed_byte;
} tsio_src;

typedef struct tsio_line {
    char *p;              /* inside the source buffer; p[len] is writable */
    size_t len;           /* without the '\n' and a CR before it */
    uint64_t line_no;     /* 1-based */
    uint64_t byte;        /* stream offset of p[0] */
} tsio_line;

/* Open `path` ("-" = standard input). `name` is kept by pointer for messages. Pipes and
 * FIFOs are welcome (`-d <(zcat x.gz)`, /dev/stdin), but a FIFO is opened without
 * blocking: when no program opens it for writing within TREESCORE_FIFO_TIMEOUT seconds
 * (platform/config.h; 0: no limit) the open fails with TS_ERR_IO naming the file and the
 * variable, instead of waiting forever. Once a writer is there, reads block as usual. A
 * directory is refused. */
ts_status tsio_src_open(tsio_src *s, const char *path, const char *name, size_t max_line, ts_error *err);
void tsio_src_close(tsio_src *s);
/* Buffer at least `want` unconsumed bytes, fewer only at end of input (want <= cap). */
ts_status tsio_src_fill(tsio_src *s, size_t want, ts_error *err);
/* The next line into *line; *got = 0 at end of input. A line longer than max_line is
 * TS_ERR_LIMIT. The line stays valid until the next call on this source. */
ts_status tsio_src_next_line(tsio_src *s, tsio_line *line, int *got, ts_error *err);
/* Make the next tsio_src_next_line return the line just returned again. */
void tsio_src_unread_line(tsio_src *s);
/* Skip n buffered bytes (n <= end - start), e.g. a byte-order mark. */
void tsio_src_skip(tsio_src *s, size_t n);
/* Read up to n bytes (buffered ones first); *got < n only at end of input. */
ts_status tsio_src_read(tsio_src *s, void *dst, size_t n, size_t *got, ts_error *err);

/* ---- Whole files ---------------------------------------------------------------------- */

/* Read the regular file `path` into a malloc'd, NUL-terminated buffer (*out, *size bytes
 * without the NUL). Anything but a regular file (a FIFO, a device such as /dev/zero, a
 * directory, a socket) is refused with TS_ERR_IO ("PATH: is a FIFO (named pipe); a
 * WHAT must be a regular file"), and the open never blocks; a file above max_bytes is
 * TS_ERR_LIMIT before anything is read; no more than the size fstat gave is read. */
ts_status tsio_read_regular_file(const char *path, size_t max_bytes, const char *what, char **out, size_t *size,
                                 ts_error *err);

#endif /* TS_IO_SOURCE_H */
