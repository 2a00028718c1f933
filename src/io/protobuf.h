/* protobuf.h: a small bounds-checked reader of the protobuf wire format (varints, fixed 32/64-bit, length-delimited fields, packed repeated scalars), for ONNX models. */
#ifndef TS_IO_PROTOBUF_H
#define TS_IO_PROTOBUF_H

#include <stddef.h>
#include <stdint.h>

/*
 * The wire format (protobuf.dev, "Encoding"): a message is a sequence of fields, each a
 * varint key (field number << 3 | wire type) then its value: wire type 0 a varint (at
 * most 10 bytes), 1 eight little-endian bytes, 2 a varint length then that many bytes
 * (a string, bytes, an embedded message or a packed run of scalars), 5 four bytes.
 * Wire types 3 and 4 (groups, deprecated) and field number 0 are malformed here.
 *
 * Invariants: nothing at or past the message's end is read. A varint of more than 10
 * bytes, a length past the end of the enclosing message, a key with field number 0 or
 * above 2^29 - 1 are malformed (-1). Nothing recurses: a caller walks its schema's fixed
 * depth, opening an embedded message as a tspb_msg over the field's bytes (a sub-range of
 * its parent, so it can never reach outside it). Repeated scalars are read in both
 * encodings, packed (one wire-type-2 field) and unpacked (one field per element), as
 * every protobuf parser must accept either.
 */

typedef struct tspb_msg {
    const uint8_t *buf; /* the whole input */
    size_t pos, end;    /* the message's bytes: buf[pos, end) */
} tspb_msg;

enum { TSPB_VARINT = 0, TSPB_I64 = 1, TSPB_LEN = 2, TSPB_I32 = 5 };

typedef struct tspb_field {
    uint32_t num;  /* field number */
    int wire;      /* TSPB_* */
    uint64_t v;    /* varint value, or the raw bits of I64 / I32 */
    size_t pos;    /* TSPB_LEN: offset of the bytes in buf; other types: offset of the value */
    size_t len;    /* TSPB_LEN: byte count */
} tspb_field;

/* A message over buf[0, size). */
tspb_msg tspb_open(const uint8_t *buf, size_t size);
/* The next field of m (advancing m->pos). 1: *f filled; 0: end of message; -1: malformed. */
int tspb_next(tspb_msg *m, tspb_field *f);
/* The embedded message (or bytes) of a TSPB_LEN field. */
tspb_msg tspb_sub(const tspb_msg *parent, const tspb_field *f);

/* The element type of a repeated scalar field. */
typedef enum tspb_scalar { TSPB_S_VARINT, TSPB_S_FLOAT, TSPB_S_DOUBLE } tspb_scalar;

/* Elements of field `num` of m, as `type` (packed runs and single elements in order):
 * counts them (*n) and, when out is not NULL, stores them (out has *n slots from a first
 * call). Varints are read as int64 (two's complement, as protobuf's int64/int32/enum),
 * floats and doubles are widened to double in a double array (out_d) or, for
 * TSPB_S_VARINT, int64 (out_i). -1 when malformed (a packed run that does not divide
 * into whole elements, a field of the wrong wire type). */
int tspb_repeated(const tspb_msg *m, uint32_t num, tspb_scalar type, size_t *n, int64_t *out_i, double *out_d);

/* Little-endian IEEE loads. */
float tspb_float_bits(uint32_t bits);
double tspb_double_bits(uint64_t bits);

#endif /* TS_IO_PROTOBUF_H */
