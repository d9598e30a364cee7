// SPDX-License-Identifier: Apache-2.0
/*
 * reader.h - the one reader of gpufl session logs (docs/log-format.md).
 *
 * Reads device.log, scope.log and system.log of a session directory and their
 * rotated segments, splits them into lines, parses each line with jansson and
 * hands every well-formed record to a callback (plain integer batches of the
 * types a caller asks for skip jansson: see gpufl__reader_ops_t.batch). It interns `dict` lines itself,
 * tolerates what the format says readers must tolerate (an incomplete last
 * line, unknown types and columns, missing files) and reports corrupt lines
 * with file name and line number instead of failing. The session model
 * (model.c) is its main user.
 *
 * Not thread-safe: one reader per thread; the objects here are plain
 * caller-owned structs (init/fini).
 */
#ifndef GPUFL_ANALYSIS_READER_H
#define GPUFL_ANALYSIS_READER_H

#include "util/idmap.h"

#include <gpufl/gpufl.h>

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* ---------------------------------------------------------------------- */
/* String pool: strings that live as long as the pool, allocated in chunks. */
/* ---------------------------------------------------------------------- */

typedef struct gpufl__strpool_chunk gpufl__strpool_chunk_t;

typedef struct gpufl__strpool {
    gpufl__strpool_chunk_t *head; /* newest chunk first */
    size_t used_bytes;            /* bytes handed out, NULs included */
    size_t max_bytes;             /* cap on used_bytes; 0 means the default (1 GiB) */
} gpufl__strpool_t;

void gpufl__strpool_init(gpufl__strpool_t *p, size_t max_bytes);
void gpufl__strpool_fini(gpufl__strpool_t *p);
/* Copies len bytes of s (plus a NUL) into the pool and sets *out. Returns 0,
 * GPUFL_ENOMEM when the pool cap is reached or malloc fails. */
int gpufl__strpool_add(gpufl__strpool_t *p, const char *s, size_t len, const char **out);

/* ---------------------------------------------------------------------- */
/* Dictionary: the session-wide table of interned strings (`dict` lines).   */
/* ---------------------------------------------------------------------- */

typedef struct gpufl__dict {
    gpufl__idmap_t ids; /* id -> index into str */
    const char **str;   /* strings in the order first defined; owned by pool */
    size_t count, alloc;
    size_t max_entries; /* cap; 0 means the default (16 Mi) */
    uint64_t over_cap;  /* definitions past the cap, not kept */
    uint64_t conflicts; /* an id defined again with a different string */
    gpufl__strpool_t pool;
} gpufl__dict_t;

void gpufl__dict_init(gpufl__dict_t *d, size_t max_entries, size_t max_bytes);
void gpufl__dict_fini(gpufl__dict_t *d);
/* The string of id: "" for id 0, NULL when the id was never defined. */
const char *gpufl__dict_get(const gpufl__dict_t *d, int64_t id);
/* Defines id (> 0). Returns 0 new or same string again, 1 when the id already
 * holds a different string (kept as it was), 2 over the cap, GPUFL_EINVAL,
 * GPUFL_ENOMEM. */
int gpufl__dict_put(gpufl__dict_t *d, int64_t id, const char *s, size_t len);

/* ---------------------------------------------------------------------- */
/* Reading a session                                                        */
/* ---------------------------------------------------------------------- */

typedef enum gpufl__log_file {
    GPUFL_LOG_FILE_DEVICE = 0,
    GPUFL_LOG_FILE_SCOPE = 1,
    GPUFL_LOG_FILE_SYSTEM = 2,
    GPUFL_LOG_FILE_COUNT = 3
} gpufl__log_file_t;

/* "device.log", "scope.log" or "system.log". */
const char *gpufl__reader_file_name(gpufl__log_file_t file);

/* Where a record was read. */
typedef struct gpufl__reader_pos {
    gpufl__log_file_t file;
    unsigned segment; /* 0 for <file>, n for <file>.n */
    uint64_t line;    /* 1-based line number in that segment */
    const char *name; /* "scope.log.1": for messages; valid during the callback */
} gpufl__reader_pos_t;

/* What the reader saw; every count is over the whole session. */
typedef struct gpufl__reader_stats {
    unsigned segments[GPUFL_LOG_FILE_COUNT]; /* segments read per file, 0 when missing */
    uint64_t bytes;                          /* bytes read */
    uint64_t lines;                          /* complete lines ('\n'-terminated) */
    uint64_t records;                        /* records handed to the callback */
    uint64_t dict_entries;                   /* dict rows read (repeats included) */
    uint64_t truncated_lines;                /* incomplete last lines, ignored */
    uint64_t empty_lines;     /* blank lines, ignored (left by a writer recovering) */
    uint64_t corrupt_lines;   /* reported through warn and skipped */
    uint64_t oversized_lines; /* longer than max_line_bytes: reported and skipped */
    uint64_t unknown_records; /* records the callback did not know (return 1) */
} gpufl__reader_stats_t;

/* One column of a batch line read by the batch scanner (no JSON values
 * built): values[r] holds row r, 0 where is_null[r]. name is not
 * NUL-terminated. */
typedef struct gpufl__reader_column {
    const char *name;
    size_t name_len;
    const int64_t *values;
    const unsigned char *is_null;
} gpufl__reader_column_t;

/* A batch line whose members after "type" and "v" are all arrays of the
 * same length holding only integers (within int64) and nulls, with no key
 * twice; a compact line (util/colcode.h) is handed on decoded, as the plain
 * line it stands for. Valid during the callback. Whether its version is one the caller
 * knows is the caller's to judge. */
typedef struct gpufl__reader_batch {
    const char *type;
    int64_t version; /* its "v" */
    size_t n_columns, rows;
    const gpufl__reader_column_t *columns;
} gpufl__reader_batch_t;

/* The column called name, or NULL. */
const gpufl__reader_column_t *gpufl__reader_batch_column(const gpufl__reader_batch_t *b,
                                                         const char *name);

/*
 * Scans one line as a batch of integer columns into b, using the scanner's
 * buffers in s (zeroed before the first use, freed by
 * gpufl__reader_scanner_fini). Returns 1 when the line is such a batch, 0
 * when it is anything else (the line must then go through jansson, which
 * decides and reports as usual), GPUFL_ENOMEM.
 */
typedef struct gpufl__reader_scanner {
    int64_t *values;
    unsigned char *is_null;
    size_t cells_alloc;
    gpufl__reader_column_t *columns;
    size_t columns_alloc;
    char type[64];
    /* A compact line (util/colcode.h) being scanned: its encodings, and per column its number
     * of cells (a scalar: 1, a KEYED column: one per key). */
    const struct gpufl__colcode_table *codes;
    size_t col_cells[64];
    unsigned char col_scalar[64];
} gpufl__reader_scanner_t;

int gpufl__reader_scan_batch(gpufl__reader_scanner_t *s, const char *line, size_t len,
                             gpufl__reader_batch_t *b);

/*
 * What a damaged line (bytes that are not JSON: a write cut short, or
 * overwritten) held, as far as its surviving start tells. Writers put
 * "type" and "v" first and the columns of a batch after them, all of one
 * length, so the first column to survive whole gives the row count.
 */
typedef struct gpufl__reader_damage {
    const char *type; /* the record type, NULL when even that is gone */
    int64_t rows;     /* rows (1 for a single record) lost with the line; -1 unknown */
    int rows_exact;   /* 1: exactly rows; 0: at least rows (the first column was cut) */
    /* The integer columns that survived whole, in line order (NULL when
     * none): all of `rows` rows, up to the first column cut or not made of
     * integers. Their values were damaged too, possibly: good for naming
     * what was lost, not for figures. */
    const gpufl__reader_batch_t *columns;
} gpufl__reader_damage_t;

/* Reads what survives of a damaged line into d, with the scanner's buffers
 * (d and what it points to are valid until the scanner's next use).
 * Returns 0 or GPUFL_ENOMEM. */
int gpufl__reader_scan_damage(gpufl__reader_scanner_t *s, const char *line, size_t len,
                              gpufl__reader_batch_t *b, gpufl__reader_damage_t *d);
void gpufl__reader_scanner_fini(gpufl__reader_scanner_t *s);

typedef struct gpufl__reader_ops {
    /*
     * Called for each well-formed line: a JSON object with a string "type" and
     * an integer "v", in file order (device, scope, system; segments in
     * order). Not called for `dict` lines (interned into the dict) nor for
     * `segment_end`. rec stays owned by the reader. Returns 0 when handled, 1
     * when the record type or version is unknown (counted), 2 when the line
     * is corrupt (counted; the callback has reported it itself), or a negative
     * GPUFL_E* code to stop reading.
     */
    int (*record)(void *user, const gpufl__reader_pos_t *pos, const char *type, json_t *rec);
    /* A problem at pos (line 0: about the file as a whole). May be NULL. */
    void (*warn)(void *user, const gpufl__reader_pos_t *pos, const char *message);
    /*
     * Optional fast path for high-rate batches: record types (NULL-terminated
     * list) whose batch lines, when the scanner understands them whole, go to
     * batch instead of record, as a column view and without a JSON tree. Any
     * other line of these types still goes to record. batch returns what
     * record returns. Both NULL: every line goes to record.
     */
    const char *const *batch_types;
    int (*batch)(void *user, const gpufl__reader_pos_t *pos, const gpufl__reader_batch_t *b);
    /* A damaged line at pos (not JSON; also counted in corrupt_lines and
     * reported through warn): what it held, for the caller to account for
     * what was lost. May be NULL. Returns 0, or a negative GPUFL_E* code to
     * stop reading. */
    int (*damaged)(void *user, const gpufl__reader_pos_t *pos, const gpufl__reader_damage_t *d);
} gpufl__reader_ops_t;

/* Progress of a long read: bytes read so far and the size of all segment
 * files (as found when the read began). */
typedef void (*gpufl_reader_progress_fn)(void *user, uint64_t read_bytes, uint64_t total_bytes);

typedef struct gpufl__reader_limits {
    size_t max_line_bytes; /* longer lines are reported and skipped; 0: 64 MiB */
    unsigned max_segments; /* segments read per file; 0: 100000 */
    /* Called at most every GPUFL_READER_PROGRESS_NS while reading and once at
     * the end; NULL: never. */
    gpufl_reader_progress_fn progress;
    void *progress_user;
} gpufl__reader_limits_t;

#define GPUFL_READER_PROGRESS_NS 100000000 /* 0.1 s */

/*
 * Cutting bytes into lines. A cutter keeps the unfinished end of what it was
 * given until the next call; a line longer than max_line bytes is not kept:
 * its start is reported (GPUFL_READER_CUT_LONG) and its bytes dropped up to
 * its '\n' (GPUFL_READER_CUT_LONG_END). Caller-owned; zero it, set
 * max_line, and free it with gpufl__reader_cutter_fini.
 */
typedef enum gpufl__reader_cut {
    GPUFL_READER_CUT_LINE = 0,     /* a complete line (no '\n') */
    GPUFL_READER_CUT_LONG = 1,     /* an over-long line begins (counted, skipped) */
    GPUFL_READER_CUT_LONG_END = 2, /* the '\n' that ends the over-long line */
} gpufl__reader_cut_t;

typedef struct gpufl__reader_cutter {
    char *tail; /* the unfinished line */
    size_t tail_len, tail_alloc;
    size_t max_line; /* 0: the reader's default (64 MiB) */
    int skipping;    /* inside an over-long line */
} gpufl__reader_cutter_t;

/* What a cutter hands on: kind, and the line for GPUFL_READER_CUT_LINE
 * (valid during the call). Returns 0 or a negative GPUFL_E* code to stop. */
typedef int (*gpufl_reader_line_fn)(void *user, gpufl__reader_cut_t kind, const char *line,
                                    size_t len);

/* Cuts bytes into lines for fn. Returns 0, GPUFL_ENOMEM, or what fn returned. */
int gpufl__reader_cut(gpufl__reader_cutter_t *c, const char *bytes, size_t len,
                      gpufl_reader_line_fn fn, void *user);
/* The end of the input: drops what is left and returns 1 when that was an
 * unfinished line (a crash leaves one), else 0. */
int gpufl__reader_cut_end(gpufl__reader_cutter_t *c);
void gpufl__reader_cutter_fini(gpufl__reader_cutter_t *c);

/*
 * A reader of one session's lines, fed by file ("channel"): each file keeps
 * its own unfinished line, line numbers and segment, so the lines of the
 * three files may come interleaved in any way. Reading a directory and the
 * public feed (analysis_feed.c) both go through gpufl__reader_feed.
 */
typedef struct gpufl__reader_channel {
    gpufl__reader_pos_t pos;
    char name[64];
    uint64_t records_in_segment; /* lines that parsed, header included */
    int saw_segment_end;
    int started;           /* a segment began */
    char segment_next[64]; /* the `next` of segment_end */
    gpufl__reader_cutter_t cutter;
} gpufl__reader_channel_t;

typedef struct gpufl__reader {
    const gpufl__reader_ops_t *ops;
    void *user;
    gpufl__dict_t *dict;
    gpufl__reader_stats_t *stats;
    size_t max_line;
    /* 1: a line after a segment_end line begins the next segment (fed
     * lines); 0: segments begin with gpufl__reader_segment (files). */
    int follow_segments;
    gpufl__reader_channel_t ch[GPUFL_LOG_FILE_COUNT];
    gpufl__reader_channel_t *cur; /* the channel of the line being handled */
    gpufl__reader_scanner_t scanner;
} gpufl__reader_t;

/* Sets up r (stats zeroed). limits may be NULL (progress is not used here). */
void gpufl__reader_init(gpufl__reader_t *r, const gpufl__reader_ops_t *ops, void *user,
                        gpufl__dict_t *dict, const gpufl__reader_limits_t *limits,
                        gpufl__reader_stats_t *stats, int follow_segments);
void gpufl__reader_fini(gpufl__reader_t *r);
/* Begins segment `segment` of file: line numbers restart, the segment counts. */
void gpufl__reader_segment(gpufl__reader_t *r, gpufl__log_file_t file, unsigned segment);
/* Feeds bytes of file; a line may end in a later call. Returns 0 or what the
 * callbacks returned to stop (GPUFL_ENOMEM, ...). */
int gpufl__reader_feed(gpufl__reader_t *r, gpufl__log_file_t file, const char *bytes, size_t len);
/* One line already cut (what gpufl__reader_cut handed on). */
int gpufl__reader_feed_cut(gpufl__reader_t *r, gpufl__log_file_t file, gpufl__reader_cut_t kind,
                           const char *line, size_t len);
/* The end of file's input (or its segment): an unfinished line is counted
 * in truncated_lines. unfinished: 1 also counts one (a line the caller's own
 * cutter dropped), 0 adds none. */
void gpufl__reader_end(gpufl__reader_t *r, gpufl__log_file_t file, int unfinished);

/*
 * Reads the session in session_dir. dict receives the interned strings.
 * limits may be NULL. *stats is filled (zeroed first). Returns 0 when at
 * least one log file was read, GPUFL_ENOTFOUND when session_dir does not
 * exist, is not a directory or holds no log file, GPUFL_EIO when a file
 * cannot be read, GPUFL_ENOMEM, or what the callback returned to stop.
 * Sets gpufl_last_error() on failure.
 */
int gpufl__reader_read_session(const char *session_dir, const gpufl__reader_ops_t *ops, void *user,
                               gpufl__dict_t *dict, const gpufl__reader_limits_t *limits,
                               gpufl__reader_stats_t *stats);

/* ---------------------------------------------------------------------- */
/* Helpers for records                                                      */
/* ---------------------------------------------------------------------- */

/*
 * Looks up the batch columns `names` (n of them) of rec into cols[]. The
 * first n_required must be present; the others may be absent (cols[i] =
 * NULL: the reader treats their values as unknown). Checks that each present
 * one is an array and that every array member of rec has the same length,
 * put in *rows. Returns 0, or -1 with a reason in why.
 */
int gpufl__reader_columns(const json_t *rec, const char *const names[], json_t *cols[], size_t n,
                          size_t n_required, size_t *rows, char *why, size_t why_size);

/* Reads an integer (a JSON integer or a decimal string, for values above
 * 2^53). Returns 0 and sets *out, 1 for null or absent, -1 for another type. */
int gpufl__reader_int(const json_t *v, int64_t *out);
/* Reads a number (integer or real). Returns 0, 1 for null or absent, -1. */
int gpufl__reader_num(const json_t *v, double *out);

#endif
