// SPDX-License-Identifier: Apache-2.0
/*
 * jsonw.h - a capped byte buffer with the JSON encoders the writer needs.
 *
 * The encoders are hand-written for speed (the writer must keep up with
 * millions of events a second): integers without printf, strings escaped
 * and checked as UTF-8 (invalid bytes become U+FFFD, so a name cut in the
 * middle of a character still yields valid JSON).
 */
#ifndef GPUFL_UTIL_JSONW_H
#define GPUFL_UTIL_JSONW_H

#include <stddef.h>
#include <stdint.h>

typedef struct gpufl__buf {
    char *data;
    size_t len;
    size_t cap;
    size_t max;   /* hard cap on cap */
    int overflow; /* a put did not fit under max; the content is incomplete */
} gpufl__buf_t;

void gpufl__buf_init(gpufl__buf_t *b, size_t max_bytes);
void gpufl__buf_fini(gpufl__buf_t *b);
/* Makes room for n more bytes; 0 or -1 (sets overflow) past max or on ENOMEM. */
int gpufl__buf_reserve(gpufl__buf_t *b, size_t n);
void gpufl__buf_put(gpufl__buf_t *b, const char *s, size_t n);
void gpufl__buf_puts(gpufl__buf_t *b, const char *s);
void gpufl__buf_putc(gpufl__buf_t *b, char c);
void gpufl__buf_put_i64(gpufl__buf_t *b, int64_t v);
/* Writes v in decimal at p (room for 20 bytes needed) and returns the end. */
char *gpufl__fmt_i64(char *p, int64_t v);
/* A number with 1 to 3 decimals; negative values are written as null (unknown). */
void gpufl__buf_put_fixed(gpufl__buf_t *b, double v, int decimals);
/* Length of the valid UTF-8 sequence at s (n bytes left; 1..4), or 0 if invalid. */
size_t gpufl__utf8_seq(const unsigned char *s, size_t n);
/* A JSON string of n bytes of s, quoted and escaped. */
void gpufl__buf_put_str(gpufl__buf_t *b, const char *s, size_t n);
/* "key": and a comma before it unless it follows '{' or '['. */
void gpufl__buf_key(gpufl__buf_t *b, const char *key);
/* The common record opening: {"type":"<type>","v":1 */
void gpufl__buf_record(gpufl__buf_t *b, const char *type);
/* The same for a record type past its first version: {"type":"<type>","v":<version> */
void gpufl__buf_record_v(gpufl__buf_t *b, const char *type, int version);

/* Shorthands for the common "key":value members. */
void gpufl__buf_kv_i64(gpufl__buf_t *b, const char *key, int64_t v);
void gpufl__buf_kv_str(gpufl__buf_t *b, const char *key, const char *s);
/* "key":v, or "key":null when v is negative (unknown). */
void gpufl__buf_kv_opt(gpufl__buf_t *b, const char *key, int64_t v);

#endif
