// SPDX-License-Identifier: Apache-2.0
/*
 * export_pb.c - protobuf wire-format encoding for the Perfetto exporter
 * (see export_pb.h): little-endian base-128 varints, 8-byte fixed fields,
 * and length-delimited fields whose length is patched in when they close.
 */
#include "analysis/export_pb.h"

#include <string.h>

void gpufl__pb_init(gpufl__pb_t *pb, size_t max_bytes) {
    memset(pb, 0, sizeof *pb);
    gpufl__buf_init(&pb->buf, max_bytes);
}

void gpufl__pb_fini(gpufl__pb_t *pb) {
    gpufl__buf_fini(&pb->buf);
    memset(pb, 0, sizeof *pb);
}

size_t gpufl__pb_varint_size(uint64_t v) {
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static char *put_varint(char *p, uint64_t v) {
    while (v >= 0x80) {
        *p++ = (char)(0x80 | (v & 0x7f));
        v >>= 7;
    }
    *p++ = (char)v;
    return p;
}

/* Tag and value in one reserve: 10 bytes of tag at most, 10 of varint. */
static void put_tag_varint(gpufl__pb_t *pb, uint32_t field, int wire, int has_value, uint64_t v) {
    if (gpufl__buf_reserve(&pb->buf, 20)) return;
    char *p = pb->buf.data + pb->buf.len;
    p = put_varint(p, ((uint64_t)field << 3) | (uint64_t)wire);
    if (has_value) p = put_varint(p, v);
    pb->buf.len = (size_t)(p - pb->buf.data);
}

void gpufl__pb_varint(gpufl__pb_t *pb, uint32_t field, uint64_t v) {
    put_tag_varint(pb, field, GPUFL_PB_VARINT, 1, v);
}

void gpufl__pb_fixed64(gpufl__pb_t *pb, uint32_t field, uint64_t v) {
    put_tag_varint(pb, field, GPUFL_PB_I64, 0, 0);
    if (gpufl__buf_reserve(&pb->buf, 8)) return;
    unsigned char *p = (unsigned char *)pb->buf.data + pb->buf.len;
    for (int i = 0; i < 8; i++) p[i] = (unsigned char)(v >> (8 * i));
    pb->buf.len += 8;
}

void gpufl__pb_double(gpufl__pb_t *pb, uint32_t field, double v) {
    uint64_t bits;
    memcpy(&bits, &v, sizeof bits);
    gpufl__pb_fixed64(pb, field, bits);
}

void gpufl__pb_bytes(gpufl__pb_t *pb, uint32_t field, const void *s, size_t n) {
    put_tag_varint(pb, field, GPUFL_PB_LEN, 1, n);
    gpufl__buf_put(&pb->buf, s, n);
}

void gpufl__pb_string(gpufl__pb_t *pb, uint32_t field, const char *s, size_t max_bytes) {
    size_t n = strlen(s);
    if (n > max_bytes) {
        n = max_bytes;
        while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--; /* not inside a character */
    }
    gpufl__pb_bytes(pb, field, s, n);
}

void gpufl__pb_begin(gpufl__pb_t *pb, uint32_t field) {
    if (pb->depth == GPUFL_PB_DEPTH_MAX) {
        pb->error = 1;
        return;
    }
    put_tag_varint(pb, field, GPUFL_PB_LEN, 1, 0); /* one byte kept for the length */
    pb->open[pb->depth++] = pb->buf.len;
}

void gpufl__pb_end(gpufl__pb_t *pb) {
    if (pb->depth == 0) {
        pb->error = 1;
        return;
    }
    size_t start = pb->open[--pb->depth];
    if (pb->buf.overflow || start > pb->buf.len) return;
    size_t len = pb->buf.len - start, n = gpufl__pb_varint_size(len);
    if (n > 1) {
        if (gpufl__buf_reserve(&pb->buf, n - 1)) return;
        memmove(pb->buf.data + start + n - 1, pb->buf.data + start, len);
        pb->buf.len += n - 1;
    }
    put_varint(pb->buf.data + start - 1, len);
}
