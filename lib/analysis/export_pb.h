// SPDX-License-Identifier: Apache-2.0
/*
 * export_pb.h - the few protobuf wire-format encoders the Perfetto exporter
 * needs, written for it (the product links no protobuf library): varints,
 * fixed64 and doubles, length-delimited strings and nested messages, into a
 * capped gpufl__buf_t.
 *
 * A nested message is opened with gpufl__pb_begin() and closed with
 * gpufl__pb_end(), which writes its length in front of it: one byte is kept
 * for it, and the content is moved only for messages of 128 bytes or more.
 */
#ifndef GPUFL_ANALYSIS_EXPORT_PB_H
#define GPUFL_ANALYSIS_EXPORT_PB_H

#include "util/jsonw.h"

#include <stddef.h>
#include <stdint.h>

/* Messages open at once. */
#define GPUFL_PB_DEPTH_MAX 16

typedef struct gpufl__pb {
    gpufl__buf_t buf;
    size_t open[GPUFL_PB_DEPTH_MAX]; /* where each open message's content starts */
    int depth;
    int error; /* nesting too deep or unbalanced: the content is wrong */
} gpufl__pb_t;

void gpufl__pb_init(gpufl__pb_t *pb, size_t max_bytes);
void gpufl__pb_fini(gpufl__pb_t *pb);

/* Wire types. */
#define GPUFL_PB_VARINT 0
#define GPUFL_PB_I64    1
#define GPUFL_PB_LEN    2

/* Bytes the varint of v takes, 1..10. */
size_t gpufl__pb_varint_size(uint64_t v);
/* Field `field` as a varint (uint64, int64 in two's complement, bool, enum). */
void gpufl__pb_varint(gpufl__pb_t *pb, uint32_t field, uint64_t v);
void gpufl__pb_fixed64(gpufl__pb_t *pb, uint32_t field, uint64_t v);
void gpufl__pb_double(gpufl__pb_t *pb, uint32_t field, double v);
/* A string or bytes field of n bytes. */
void gpufl__pb_bytes(gpufl__pb_t *pb, uint32_t field, const void *s, size_t n);
/* A string field, cut at max_bytes on a UTF-8 character boundary. */
void gpufl__pb_string(gpufl__pb_t *pb, uint32_t field, const char *s, size_t max_bytes);
/* Opens / closes a nested message in field `field`. */
void gpufl__pb_begin(gpufl__pb_t *pb, uint32_t field);
void gpufl__pb_end(gpufl__pb_t *pb);

#endif
