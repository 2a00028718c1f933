/* ubjson.h: a bounds-checked UBJSON reader that transcodes to JSON text, for XGBoost's .ubj models. */
#ifndef TS_IO_UBJSON_H
#define TS_IO_UBJSON_H

#include <stddef.h>

#include "treescore.h"

/*
 * XGBoost's binary model format (save_model("m.ubj"), the default since 2.1) is the
 * same document as its JSON model, written in Universal Binary JSON (ubjson.org, draft
 * 12): big-endian numbers, typed and counted containers ('[$d#L<count>' for the float32
 * arrays of split conditions). Rather than a second model loader, the document is
 * transcoded to JSON text and read by the JSON loader (model_xgboost.c), so both
 * formats go through one set of checks and give identical models.
 *
 * Transcoding rules: integers of every width print in decimal; float32 ('d') prints with
 * 9 significant digits and float64 ('D') with 17, which round-trip exactly (NaN and
 * infinities print as NaN, Infinity, -Infinity, which the JSON parser accepts); 'C' and
 * 'S' become JSON strings (escaped); 'H' (a high-precision number) is copied when it
 * has only number characters. The transcoder keeps, for every container and object key,
 * the pair (offset in the JSON text, offset in the UBJSON input), so errors of the JSON
 * loader are reported at a byte of the original file.
 *
 * Invariants: no byte at or past data + size is read; every declared length and count
 * is checked against the bytes that remain before anything is allocated or looped over
 * (a count whose elements could not fit is an error, so a huge count never allocates
 * and never spins); typed containers of payload-free types ('$Z', '$T', '$F', '$N') are
 * refused (they would let a few bytes declare unbounded output); nesting deeper than
 * TSU_MAX_DEPTH is an error. Errors read "NAME: byte N: what".
 */

#define TSU_MAX_DEPTH 128

typedef struct tsu_offset {
    size_t json; /* offset in the JSON text */
    size_t ubj;  /* offset of the same value in the UBJSON input */
} tsu_offset;

typedef struct tsu_json {
    char *text;        /* the JSON text (not NUL-terminated), malloc'd */
    size_t size;
    tsu_offset *map;   /* increasing in both fields */
    size_t n_map;
} tsu_json;

/* Transcode `size` bytes of UBJSON; on success *out owns its buffers (tsu_json_free). */
ts_status tsu_to_json(const char *data, size_t size, const char *name, tsu_json *out, ts_error *err);
void tsu_json_free(tsu_json *j);

/* The UBJSON offset of the value the JSON text has at (or last before) json_byte. */
size_t tsu_ubj_offset(const tsu_json *j, size_t json_byte);

/* True when the input starts like a UBJSON object: '{' then a UBJSON length or
 * container marker (text JSON has whitespace, '"' or '}' there). */
int tsu_looks_like_ubjson(const char *data, size_t size);

#endif /* TS_IO_UBJSON_H */
