// SPDX-License-Identifier: Apache-2.0
/*
 * colcode.h - the column encodings of compact batch lines (docs/log-format.md, "Compact
 * batches"): which columns of which record versions are written as deltas, as offsets from
 * another column or once per key, and the one decoder that turns such a line back into plain
 * columns. The writer (core/wire.c), the analysis reader and gpufl-server all use this file,
 * so a column's encoding is declared and undone in one place.
 */
#ifndef GPUFL_UTIL_COLCODE_H
#define GPUFL_UTIL_COLCODE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

typedef enum gpufl__colcode_kind {
    /* row r holds value[r] - value[q], q the row before (0 for a first row); nulls skipped */
    GPUFL_CODE_DELTA = 1,
    /* row r holds d[r] - d[q] with d = value - ref (end_ns: a duration's change); without a key,
     * d[r] itself */
    GPUFL_CODE_AFTER = 2,
    /* one value per distinct ref value, in order of first appearance; a ref value whose rows
     * disagree as -n and its n rows' values (docs/log-format.md) */
    GPUFL_CODE_KEYED = 3,
    /* row r holds value[r] - ref[q] (0 for a first row): start_ns as the gap since the row
     * before ended */
    GPUFL_CODE_FROM_PREV = 4,
    /* row r holds value[r] - (hi[q] * 2^40 + lo[r - 1]): hi the bits above the low 40 of the
     * key's row before q, lo the low 40 bits of the row before (PyTorch's external ids are
     * seq << 40 | counter: the seq follows the operator, the counter the launches) */
    GPUFL_CODE_HIGH_KEYED = 5
} gpufl__colcode_kind_t;

typedef struct gpufl__colcode {
    const char *column;
    gpufl__colcode_kind_t kind;
    const char *ref; /* the column AFTER, FROM_PREV and KEYED refer to; NULL for DELTA */
    /* DELTA, AFTER, FROM_PREV and HIGH_KEYED only: "the row before" is the last earlier row with the same
     * value in this column (a stream, a config), and a key's first row counts from 0. For
     * AFTER, the row holds its difference from that row's (value - ref). NULL: the row before. */
    const char *key;
    /* A second key column: rows are alike when both keys agree (a kernel's duration goes with
     * its configuration and its grid). NULL: key alone. */
    const char *key2;
} gpufl__colcode_t;

/* The encodings of one compact record version. Besides its codes, any column but the first
 * may be written as a scalar: the value of every row. */
typedef struct gpufl__colcode_table {
    const char *type;
    int version;
    const gpufl__colcode_t *codes;
    size_t n_codes;
} gpufl__colcode_table_t;

extern const gpufl__colcode_table_t gpufl__colcode_kernel, gpufl__colcode_copy,
    gpufl__colcode_memset, gpufl__colcode_sync;

/* The table of lines of type at version v, NULL when such lines are plain. */
const gpufl__colcode_table_t *gpufl__colcode_find(const char *type, int64_t v);
/* The code of column `name` (len bytes) in t, NULL when it is written plain. */
const gpufl__colcode_t *gpufl__colcode_of(const gpufl__colcode_table_t *t, const char *name,
                                          size_t len);

/* The most keys the writer keys a column on (more: the column is written plain). */
#define GPUFL_COLCODE_MAX_KEYS 256
/* The most rows a compact line holds (GPUFL_BATCH_MAX_ROWS, what a writer puts in a line): a
 * line of more is malformed, which bounds what its scalars expand to. */
#define GPUFL_COLCODE_MAX_ROWS 4096
/* The most codes a table declares. */
#define GPUFL_COLCODE_MAX_CODES 32

/* A small map from an int64 key (or null) to a row index: KEYED columns, both ways. */
typedef struct gpufl__colcode_keys {
    int64_t *key;
    uint32_t *slot_row; /* row + 1 of the key's first row; 0: empty */
    size_t slots, count;
} gpufl__colcode_keys_t;
/* Room for `slots` slots at once (a power of two): a map that never holds more than slots / 2
 * keys never allocates again. GPUFL_ENOMEM. */
int gpufl__colcode_keys_init(gpufl__colcode_keys_t *k, size_t slots);
/* Empties k, keeping its room. */
void gpufl__colcode_keys_reset(gpufl__colcode_keys_t *k);
void gpufl__colcode_keys_fini(gpufl__colcode_keys_t *k);
/* The one int64 key of two key cells (a null cell, or a key column the line lacks, as null):
 * the writer and the decoder key on it alike, so its rare collisions cost bytes, not meaning. */
int64_t gpufl__colcode_key_pair(int64_t k1, int null1, int64_t k2, int null2);
/* Finds key (null: is_null) or adds it with row. Returns the row of its first appearance
 * (row itself when new), -1 out of memory. */
int64_t gpufl__colcode_keys_put(gpufl__colcode_keys_t *k, int64_t key, int is_null, uint32_t row);

/* HIGH_KEYED: the bits of the low part (a PyTorch external id's counter). */
#define GPUFL_COLCODE_LOW_BITS 40
/* v as hi * 2^40 + lo, hi floored, lo in [0, 2^40); join undoes it (any hi and lo so made:
 * no overflow). */
void gpufl__colcode_split(int64_t v, int64_t *hi, int64_t *lo);
int64_t gpufl__colcode_join(int64_t hi, int64_t lo);

/* One column of a line being decoded: values[r] and is_null[r] for every row, or, for a
 * KEYED column, n_values entries (one per distinct key). Decoding rewrites values, is_null
 * and n_values in place; a KEYED column needs room for rows entries. */
typedef struct gpufl__colcode_col {
    const char *name;
    size_t name_len;
    int64_t *values;
    unsigned char *is_null;
    size_t n_values;
} gpufl__colcode_col_t;

/* Decodes the n columns of a line of table t holding rows rows (scalars already expanded):
 * row by row, each row's codes in the table's order (a code refers to columns before it in
 * the same row, or to the row before), then the KEYED columns.
 * Returns 0, or -1 with why: a coded column of the wrong length, a reference missing or
 * null, a key with no value, a value past int64. */
int gpufl__colcode_decode(const gpufl__colcode_table_t *t, gpufl__colcode_col_t *cols, size_t n,
                          size_t rows, char *why, size_t why_size);

/* Rewrites a parsed line of a compact version as its plain form (every column an array of
 * rows values; unknown members untouched). Lines of other versions are left as they are.
 * Returns 0, -1 with why for a malformed encoding (then rec may be half rewritten), or
 * GPUFL_ENOMEM. */
int gpufl__colcode_decode_json(json_t *rec, char *why, size_t why_size);

#endif
