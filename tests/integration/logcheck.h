// SPDX-License-Identifier: Apache-2.0
/*
 * logcheck.h - reads gpufl session logs for the integration tests: finds a session directory,
 * parses every line of its three files with jansson and sums up scopes and session ends.
 */
#ifndef GPUFL_TEST_LOGCHECK_H
#define GPUFL_TEST_LOGCHECK_H

#include <jansson.h>
#include <stddef.h>

enum { LC_DEVICE, LC_SCOPE, LC_SYSTEM, LC_NFILES };
extern const char *const lc_file_names[LC_NFILES]; /* "device.log", ... */

typedef struct lc_summary {
    size_t lines[LC_NFILES];     /* complete, valid lines */
    int truncated[LC_NFILES];    /* the file ends in a partial line (a valid JSON prefix) */
    int session_ends[LC_NFILES]; /* session_end records */
    int end_is_last[LC_NFILES];  /* the last complete line is session_end */
    long long header_pid;        /* pid of the scope.log header, -1 if none */
    size_t begins, ends;         /* scope_begin and scope_end rows */
    size_t unmatched;            /* begin ids without exactly one end, plus ends without begin */
    size_t implicit_ends;        /* scope_end rows with implicit=1 */
    long long max_depth;         /* the largest scope_begin depth */
    json_t *scope_counts;        /* object: scope name -> number of scope_begin rows */
    json_t *system_records;      /* array: the system_start / system_stop records */
} lc_summary_t;

/* Reads the whole file; NULL on error. *len gets its size. Free with free(). */
char *lc_read(const char *path, size_t *len);
/* mkdir -p; 0 or -1. */
int lc_mkdir_p(const char *path);
/* rm -rf; 0 when path is gone afterwards. */
int lc_rm_rf(const char *path);
/* Finds the only subdirectory of log_path (the session). 0, or -1 when there are 0 or >1. */
int lc_only_session(const char *log_path, char *out, size_t size);

/* 1 when text[0..len) can be continued into one valid JSON value, i.e. it is a valid JSON text
 * that may have lost its tail. */
int lc_json_prefix_ok(const char *text, size_t len);

/*
 * Parses the three files of session_dir. Every complete line must be a JSON object with a string
 * "type" and an integer "v", the first line a header of that file. With allow_truncated, a last
 * line without '\n' is accepted when it is a valid JSON prefix; otherwise it is an error. Returns
 * 0, or -1 after printing why to stderr. Free with lc_summary_free().
 */
int lc_summarize(const char *session_dir, int allow_truncated, lc_summary_t *s);
void lc_summary_free(lc_summary_t *s);
/* Number of scope_begin rows named name. */
int lc_scope_count(const lc_summary_t *s, const char *name);
/* The record system_start/system_stop (type) of window name, or NULL. Borrowed reference. */
json_t *lc_system_record(const lc_summary_t *s, const char *type, const char *name);

#endif
