// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_ingest_headers.c - fuzz target for gpufl-server's stream header checks: the input is a
 * block of "Name: value" lines; every block must parse into fields that keep their promises
 * (printable ids of at most 128 characters, a known channel, the one wire version, a slice's
 * offset within 0..2^53 and, above 0, its prefix crc32 given) or be refused with a 400/415 and
 * an error message.
 */
#include "fuzz_target.h"

#include "server.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define FIELDS_MAX 32

typedef struct fields {
    char *name[FIELDS_MAX], *value[FIELDS_MAX];
    size_t n;
} fields_t;

static const char *lookup(void *arg, const char *name) {
    fields_t *f = arg;
    for (size_t i = 0; i < f->n; i++) /* the first of repeated names wins, as in libmicrohttpd */
        if (!strcasecmp(f->name[i], name)) return f->value[i];
    return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    fields_t f = {0};
    for (char *line = text, *next; line && f.n < FIELDS_MAX; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        char *colon = strchr(line, ':');
        if (!colon) continue;
        *colon = '\0';
        char *value = colon + 1;
        while (*value == ' ') value++;
        f.name[f.n] = line;
        f.value[f.n++] = value;
    }
    gpufl__ingest_headers_t h;
    json_t *error = NULL;
    int status = gpufl__ingest_headers_parse(&h, lookup, &f, &error);
    if (status == 0) {
        FUZZ_CHECK(error == NULL);
        FUZZ_CHECK(gpufl__ingest_id_ok(h.session_id) && gpufl__ingest_id_ok(h.window_id));
        FUZZ_CHECK(!strcmp(h.channel, "device") || !strcmp(h.channel, "scope") ||
                   !strcmp(h.channel, "system"));
        FUZZ_CHECK(h.wire_version == GPUFL__WIRE_VERSION);
        FUZZ_CHECK(h.sequence >= 0 && h.sequence <= INT32_MAX);
        const char *idem = lookup(&f, "Idempotency-Key");
        FUZZ_CHECK(!idem || !strcmp(idem, h.window_id));
        FUZZ_CHECK(!strcmp(lookup(&f, "X-GpuFlight-Session-Id"), h.session_id));
        FUZZ_CHECK(h.offset >= 0 && h.offset <= GPUFL__OFFSET_MAX);
        FUZZ_CHECK(h.offset == 0 || lookup(&f, "X-GpuFlight-Window-Prefix-Crc32"));
        const char *final = lookup(&f, "X-GpuFlight-Window-Final");
        FUZZ_CHECK(h.final == (!final || !strcmp(final, "1")));
        FUZZ_CHECK(!final || !strcmp(final, "0") || !strcmp(final, "1"));
    } else {
        FUZZ_CHECK(status == 400 || status == 415);
        FUZZ_CHECK(json_is_string(json_object_get(error, "error")));
        if (json_object_get(error, "supported"))
            FUZZ_CHECK(json_integer_value(json_array_get(json_object_get(error, "supported"), 0)) ==
                       GPUFL__WIRE_VERSION);
    }
    json_decref(error);
    free(text);
    return 0;
}
