// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_ingest_body.c - fuzz target for gpufl-server's ingest body: the gzip, zstd or identity
 * decoder
 * fed in uneven pieces under a small cap, then the window parser. Every input must end in a
 * window whose lines cover the body exactly, or in a 400/413 whose problems name real lines.
 * The first byte picks the mode: bit 0 gzip (bit 6 zstd, over it), bit 1 keep damaged lines,
 * bits 2-3 the channel, bit 4 a slice at an offset (no header line first; a stored dict line
 * defines id 1), bit 5 that slice's final.
 */
#include "fuzz_target.h"

#include "server.h"

#include <gpufl/gpufl.h>

#include <sodium.h>
#include <string.h>

#define CAP_BYTES (256 * 1024)

static void check_window(const gpufl__window_t *w, const gpufl__ingest_headers_t *h,
                         const char *data, size_t len) {
    size_t newlines = 0;
    for (size_t i = 0; i < len; i++) newlines += data[i] == '\n';
    FUZZ_CHECK(w->n_lines == newlines && (len > 0 || (h->offset > 0 && h->final)));
    FUZZ_CHECK(len == 0 || data[len - 1] == '\n');
    FUZZ_CHECK(w->offset == h->offset && w->more == !h->final);
    FUZZ_CHECK(w->bytes == (int64_t)len && !strcmp(w->session_id, h->session_id));
    const char *at = data;
    int64_t rows = 0;
    for (size_t i = 0; i < w->n_lines; i++) {
        const gpufl__line_t *l = &w->lines[i];
        FUZZ_CHECK(l->text == at && l->text[l->len] == '\n'); /* consecutive, whole lines */
        at += l->len + 1;
        FUZZ_CHECK(l->type != NULL || (h->keep_damaged && (i > 0 || h->offset > 0)));
        FUZZ_CHECK(l->rows >= 0);
        rows += l->rows;
    }
    FUZZ_CHECK(rows == w->rows);
    uint8_t sha[32];
    crypto_hash_sha256(sha, (const unsigned char *)data, len);
    FUZZ_CHECK(memcmp(sha, w->sha256, 32) == 0);
    /* The rows as the store reads them: one rowset at a time, each within the cap and the
     * window's time span. */
    const gpufl__rows_source_t *src = &w->rows_source;
    const gpufl__rowset_t *rs;
    FUZZ_CHECK(src->begin(src->arg) == 0);
    while (src->next(src->arg, &rs) == 0 && rs) {
        FUZZ_CHECK(rs->n_rows > 0 && rs->n_rows <= GPUFL__ROWSET_MAX_ROWS);
        FUZZ_CHECK(gpufl__store_table_known(rs->table));
        int64_t lo = w->time_min_ns, hi = w->time_max_ns;
        gpufl__rowset_time_span(rs, &lo, &hi);
        FUZZ_CHECK(lo == w->time_min_ns && hi == w->time_max_ns);
        for (size_t c = 0; c < rs->n_rows * rs->table->n_columns; c++) {
            const gpufl__cell_t *cell = &rs->cells[c];
            const gpufl__column_t *col = &rs->table->columns[c % rs->table->n_columns];
            FUZZ_CHECK(cell->kind == GPUFL__CELL_NULL ||
                       (cell->kind == GPUFL__CELL_INT && col->type == GPUFL__COL_INT) ||
                       (cell->kind == GPUFL__CELL_REAL && col->type == GPUFL__COL_REAL) ||
                       (cell->kind == GPUFL__CELL_TEXT && col->type == GPUFL__COL_TEXT));
            if (cell->kind == GPUFL__CELL_TEXT)
                FUZZ_CHECK(cell->u.t.s && strlen(cell->u.t.s) >= cell->u.t.len);
        }
    }
}

static void check_refusal(int status, json_t *error, size_t len) {
    FUZZ_CHECK(status == 400 || status == 413);
    FUZZ_CHECK(json_is_string(json_object_get(error, "error")));
    json_t *lines = json_object_get(error, "lines"), *p;
    size_t i;
    FUZZ_CHECK(json_array_size(lines) <= GPUFL__PROBLEMS_MAX);
    if (lines) /* as many listed as there are, up to the cap */
        FUZZ_CHECK(json_array_size(lines) ==
                       (size_t)json_integer_value(json_object_get(error, "malformed")) ||
                   json_array_size(lines) == GPUFL__PROBLEMS_MAX ||
                   !json_object_get(error, "malformed"));
    json_array_foreach(lines, i, p) {
        json_int_t n = json_integer_value(json_object_get(p, "line"));
        FUZZ_CHECK(n >= 1 && (size_t)n <= len + 1);
        FUZZ_CHECK(json_is_string(json_object_get(p, "reason")));
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char *const channels[] = {"device", "scope", "system", "device"};
    if (size < 1 || sodium_init() < 0) return 0;
    gpufl__ingest_headers_t h = {.sequence = 0, .wire_version = GPUFL__WIRE_VERSION, .final = 1};
    strcpy(h.session_id, "fuzz-session");
    strcpy(h.window_id, "fuzz-window");
    strcpy(h.channel, channels[(data[0] >> 2) & 3]);
    h.encoding = (data[0] >> 6) & 1 ? GPUFL__ENC_ZSTD
                 : data[0] & 1      ? GPUFL__ENC_GZIP
                                    : GPUFL__ENC_IDENTITY;
    h.keep_damaged = (data[0] >> 1) & 1;
    static const char stored_dict[] = "{\"type\":\"dict\",\"v\":1,\"id\":[1],\"str\":[\"k\"]}";
    const gpufl__line_t dicts[] = {{stored_dict, sizeof stored_dict - 1, "dict", 0}};
    if ((data[0] >> 4) & 1) {
        h.offset = 100;
        h.final = (data[0] >> 5) & 1;
    }
    data++, size--;

    gpufl__body_t body;
    gpufl__body_init(&body, h.encoding, CAP_BYTES);
    int rc = 0;
    /* Uneven pieces, as the network delivers them. */
    for (size_t at = 0, piece = 1; at < size && rc == 0; at += piece, piece = piece * 3 % 997 + 1)
        rc = gpufl__body_feed(&body, data + at, piece < size - at ? piece : size - at);
    if (rc == 0) rc = gpufl__body_finish(&body);
    FUZZ_CHECK(rc == 0 || rc == GPUFL_ENOMEM || rc == GPUFL_EFORMAT);
    FUZZ_CHECK(body.len <= CAP_BYTES);
    if (h.encoding == GPUFL__ENC_IDENTITY && rc == 0)
        FUZZ_CHECK(body.len == size && (!size || !memcmp(body.data, data, size)));
    if (rc == 0) {
        gpufl__parsed_t *p = NULL;
        json_t *error = NULL;
        int status = gpufl__ingest_parse(&p, &error, &h, 1, body.data ? body.data : "", body.len,
                                         dicts, h.offset ? 1 : 0);
        if (status == 0)
            check_window(gpufl__parsed_window(p), &h, body.data, body.len);
        else if (status != GPUFL_ENOMEM)
            check_refusal(status, error, body.len);
        gpufl__parsed_destroy(p);
        json_decref(error);
    }
    gpufl__body_fini(&body);
    return 0;
}
