/* text.h: reader core for the in-memory model loaders: spans, lines, located error messages (numbers: io/num.h). */
#ifndef TS_IO_TEXT_H
#define TS_IO_TEXT_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "io/num.h"
#include "treescore.h"

/*
 * Every helper here works on (pointer, length) spans of the loader's input and never
 * reads outside them. Numbers are parsed by io/num.h (included here for the loaders):
 * the whole token must be a number, "1.5x" and "" are errors, not 1.5 and 0.
 */

/* 3 when the input starts with a UTF-8 byte order mark, else 0. */
size_t tsio_skip_bom(const char *data, size_t size);

/* 1-based line number of byte offset `byte` (counts '\n' before it; O(byte), so only
 * for error paths or offsets visited once). */
unsigned long long tsio_line_at(const char *data, size_t size, size_t byte);

/* Strip leading and trailing spaces, tabs, CR and LF from a span. */
void tsio_trim(const char **s, size_t *n);

/* Copy a printable excerpt of a token into buf for an error message: at most 40 bytes
 * of it (then "..."), control and non-ASCII bytes shown as '?'. */
void tsio_excerpt(char *buf, size_t cap, const char *s, size_t n);

/* The same for the data readers' messages: at most 40 bytes, then "...", other bytes as
 * \xNN escapes; out_size TSIO_TOKEN_TEXT_SIZE is enough. */
void tsio_token_text(const char *s, size_t n, char *out, size_t out_size);
#define TSIO_TOKEN_TEXT_SIZE 64

/* 1 when [s, s+n) equals the lower-case ASCII `word` in any case. */
int tsio_same_ci(const char *s, size_t n, const char *word);

/* Fail with a message "NAME:LINE: what" (or "NAME: what" when line is 0), recording line
 * and byte in err. Returns `status`. */
ts_status tsio_fail(ts_error *err, ts_status status, const char *name, unsigned long long line, size_t byte,
                    const char *fmt, ...) TS_PRINTF(6, 7);

/* Prefix an error produced by the forest builder ("tree 3: ...") with "NAME:LINE" and
 * record line and byte. Returns err's status (or `status` when err is NULL). */
ts_status tsio_locate(ts_error *err, ts_status status, const char *name, unsigned long long line, size_t byte);

/* Move an error a loader reported in a transcoded form of its input (the JSON text of a
 * UBJSON file) to byte `byte` of the original: "NAME: byte N: what", line 0 (the
 * original has no lines), or "NAME: what" when the error had no place (err->byte 0; pass
 * byte 0 then). `what` is the message after the location tsio_fail or tsio_locate wrote
 * ("NAME:LINE: " or "NAME: "): the one place that reads that prefix back. Returns st. */
ts_status tsio_relocate_byte(ts_error *err, ts_status st, const char *name, size_t byte);

/* tsm_model_finish(m), its error located like tsio_locate: at the start of tree K
 * (tree_byte[K], an offset into data) when the message begins "tree K", else at no
 * line. For loaders that record where each tree starts. */
ts_status tsio_finish_located(ts_model *m, const char *name, const char *data, size_t size, const size_t *tree_byte,
                              ts_error *err);

#endif /* TS_IO_TEXT_H */
