// SPDX-License-Identifier: Apache-2.0
/*
 * ingest_parse.c - what ingest checks before the store sees anything: the stream headers, the
 * body decompressed (gzip or zstd) under its caps as it arrives (a bomb stops at the cap, not at
 * the end),
 * and the window's lines parsed (jansson) into one gpufl__window_t that the store commits
 * whole. Any bad line refuses the whole window. No HTTP here: the fuzz targets link it alone.
 */
#include "server.h"

#include <gpufl/gpufl.h>

#include <ctype.h>
#include <inttypes.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>

#define ZSTD_WINDOW_LOG_LIMIT 27 /* zstd's own default limit of a decoder's window */
#define TYPES_MAX             64 /* distinct record types interned per window; more are copied per line */

/* ---- the body ----------------------------------------------------------------------------- */

int gpufl__encoding_parse(const char *value) {
    if (!value || !*value || !strcasecmp(value, "identity")) return GPUFL__ENC_IDENTITY;
    if (!strcasecmp(value, "gzip")) return GPUFL__ENC_GZIP;
    if (!strcasecmp(value, "zstd")) return GPUFL__ENC_ZSTD;
    return -1;
}

const char *gpufl__encoding_name(gpufl__encoding_t e) {
    return e == GPUFL__ENC_GZIP ? "gzip" : e == GPUFL__ENC_ZSTD ? "zstd" : "identity";
}

void gpufl__body_init(gpufl__body_t *b, gpufl__encoding_t encoding, size_t max_bytes) {
    memset(b, 0, sizeof *b);
    b->encoding = encoding;
    b->max_bytes = max_bytes;
    /* Compressed bytes past the decompressed cap cannot inflate to less. */
    b->max_in = max_bytes;
}

static int body_room(gpufl__body_t *b, size_t want) {
    if (b->len + want <= b->cap) return 0;
    if (b->len + want > b->max_bytes) return GPUFL_ENOMEM;
    size_t cap = b->cap ? b->cap : 64 * 1024;
    while (cap < b->len + want) cap *= 2;
    if (cap > b->max_bytes) cap = b->max_bytes;
    char *data = realloc(b->data, cap);
    if (!data) return GPUFL_ENOMEM;
    b->data = data;
    b->cap = cap;
    return 0;
}

/* Room for the decoder's next output: doubled while under the cap, then the last bytes to it;
 * ENOMEM when the cap is reached (413). */
static int body_out_room(gpufl__body_t *b) {
    if (b->len < b->cap) return 0;
    int rc = body_room(b, b->cap ? b->cap : 64 * 1024);
    return rc != 0 ? body_room(b, 1) : 0;
}

static int gzip_feed(gpufl__body_t *b, const void *data, size_t n) {
    z_stream *z = b->z;
    if (!z) {
        if (!(z = b->z = calloc(1, sizeof *z))) return GPUFL_ENOMEM;
    }
    z->next_in = (Bytef *)data;
    z->avail_in = (uInt)n;
    while (z->avail_in > 0) {
        if (!b->inflating) { /* a gzip member begins (RFC 1952 lets members follow each other) */
            if (inflateInit2(z, 16 + MAX_WBITS) != Z_OK) return GPUFL_ENOMEM;
            b->inflating = 1;
            b->ended = 0;
        }
        int rc = body_out_room(b);
        if (rc != 0) return rc; /* at the cap: 413 */
        z->next_out = (Bytef *)b->data + b->len;
        z->avail_out = (uInt)(b->cap - b->len);
        int zr = inflate(z, Z_NO_FLUSH);
        b->len = b->cap - z->avail_out;
        if (zr == Z_STREAM_END) {
            inflateEnd(z);
            b->inflating = 0;
            b->ended = 1;
        } else if (zr != Z_OK && zr != Z_BUF_ERROR) {
            return GPUFL_EFORMAT;
        }
    }
    return 0;
}

/* A window of up to 2^23 bytes (8 MiB) is what zstd's levels 1 to 19 use on a stream of
 * unknown size; a larger one is allowed up to the decompressed cap, never past zstd's default
 * limit (2^27): the decoder's memory per request stays bounded by what the body may hold. */
static int zstd_window_log_max(size_t max_bytes) {
    int log = 23;
    while (log < ZSTD_WINDOW_LOG_LIMIT && ((size_t)1 << log) < max_bytes) log++;
    return log;
}

/* One step of the zstd decoder: input from *in into the body; ended tells whether the last
 * frame is whole. ZSTD_decompressStream starts the next frame by itself (concatenated frames
 * decode as one body, like gzip members). */
static int zstd_step(gpufl__body_t *b, ZSTD_inBuffer *in) {
    int rc = body_out_room(b);
    if (rc != 0) return rc;
    ZSTD_outBuffer out = {b->data + b->len, b->cap - b->len, 0};
    size_t zr = ZSTD_decompressStream(b->z, &out, in);
    b->len += out.pos;
    if (ZSTD_isError(zr))
        /* A frame whose window is past what the cap allows would decode past the cap. */
        return ZSTD_getErrorCode(zr) == ZSTD_error_frameParameter_windowTooLarge ? GPUFL_ENOMEM
                                                                                 : GPUFL_EFORMAT;
    b->ended = zr == 0;
    /* Output left room: the decoder holds back nothing of what it was given. */
    return out.pos < out.size ? 1 : 0;
}

static int zstd_feed(gpufl__body_t *b, const void *data, size_t n) {
    if (!b->z) {
        if (!(b->z = ZSTD_createDCtx())) return GPUFL_ENOMEM;
        b->inflating = 1;
        ZSTD_DCtx_setParameter(b->z, ZSTD_d_windowLogMax, zstd_window_log_max(b->max_bytes));
    }
    ZSTD_inBuffer in = {data, n, 0};
    for (;;) {
        int rc = zstd_step(b, &in);
        if (rc < 0) return rc;
        if (in.pos == in.size && (rc == 1 || b->ended)) return 0;
    }
}

int gpufl__body_feed(gpufl__body_t *b, const void *data, size_t n) {
    if (n > b->max_in - b->in_bytes) return GPUFL_ENOMEM;
    b->in_bytes += n;
    if (b->encoding == GPUFL__ENC_GZIP) return gzip_feed(b, data, n);
    if (b->encoding == GPUFL__ENC_ZSTD) return zstd_feed(b, data, n);
    int rc = body_room(b, n);
    if (rc != 0) return rc;
    memcpy(b->data + b->len, data, n);
    b->len += n;
    return 0;
}

/* The end of a zstd body: what the decoder still holds is flushed; a frame not whole then was
 * cut short. An empty body (no decoder) is no zstd. */
static int zstd_finish(gpufl__body_t *b) {
    ZSTD_inBuffer in = {NULL, 0, 0};
    while (b->z && !b->ended) {
        size_t before = b->len;
        int rc = zstd_step(b, &in);
        if (rc < 0) return rc;
        if (!b->ended && b->len == before) return GPUFL_EFORMAT;
    }
    return b->ended ? 0 : GPUFL_EFORMAT;
}

int gpufl__body_finish(gpufl__body_t *b) {
    if (b->encoding == GPUFL__ENC_ZSTD) return zstd_finish(b);
    if (b->encoding != GPUFL__ENC_GZIP) return 0;
    /* Output space may still hold back the last bytes of a member. */
    while (b->inflating) {
        z_stream *z = b->z;
        if (b->len == b->cap && body_room(b, 1) != 0) return GPUFL_ENOMEM;
        z->next_out = (Bytef *)b->data + b->len;
        z->avail_out = (uInt)(b->cap - b->len);
        int zr = inflate(z, Z_FINISH);
        b->len = b->cap - z->avail_out;
        if (zr == Z_STREAM_END) {
            inflateEnd(z);
            b->inflating = 0;
            b->ended = 1;
        } else if (zr != Z_BUF_ERROR || z->avail_out != 0) {
            return GPUFL_EFORMAT; /* cut short, or not gzip */
        } else if (z->avail_out == 0 && b->len >= b->max_bytes) {
            return GPUFL_ENOMEM;
        }
    }
    return b->ended ? 0 : GPUFL_EFORMAT; /* an empty gzip body is no gzip */
}

void gpufl__body_fini(gpufl__body_t *b) {
    if (b->encoding == GPUFL__ENC_ZSTD) {
        ZSTD_freeDCtx(b->z);
    } else {
        if (b->z && b->inflating) inflateEnd(b->z);
        free(b->z);
    }
    free(b->data);
    memset(b, 0, sizeof *b);
}

/* ---- headers ------------------------------------------------------------------------------ */

static json_t *error_json(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static json_t *error_json(const char *fmt, ...) {
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    return json_pack("{s:s}", "error", text);
}

json_t *gpufl__ingest_supported(void) { return json_pack("[i]", GPUFL__WIRE_VERSION); }

json_t *gpufl__ingest_encodings(void) { return json_pack("[sss]", "gzip", "identity", "zstd"); }

/* A header value as an answer may quote it: printable ASCII, cut to 64 characters (a value
 * that is not UTF-8 would make no JSON string at all). */
static const char *shown(const char *value, char buf[72]) {
    if (!value) return "(absent)";
    size_t n = 0;
    for (; value[n] && n < 64; n++) buf[n] = value[n] >= 0x20 && value[n] < 0x7f ? value[n] : '?';
    snprintf(buf + n, 72 - n, "%s", value[n] ? "..." : "");
    return buf;
}

/* Ids are printable and short: they end up in the database, in logs and in URLs. */
int gpufl__ingest_id_ok(const char *s) {
    size_t n = strlen(s);
    if (n == 0 || n > GPUFL__ID_MAX) return 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (!isalnum(c) && c != '.' && c != '-' && c != '_' && c != ':') return 0;
    }
    return 1;
}

static int parse_int64(const char *s, int64_t lo, int64_t hi, int64_t *out) {
    char *end;
    if (!s || !isdigit((unsigned char)s[0])) return -1;
    long long v = strtoll(s, &end, 10);
    if (*end || v < lo || v > hi) return -1;
    *out = v;
    return 0;
}

/* The headers of a window in slices; absent, they say "the whole window" (offset 0, final). */
static int slice_headers_parse(gpufl__ingest_headers_t *h, gpufl__header_fn get, void *arg,
                               json_t **error) {
    char buf[72];
    const char *offset = get(arg, "X-GpuFlight-Window-Offset");
    if (offset && parse_int64(offset, 0, GPUFL__OFFSET_MAX, &h->offset) != 0) {
        *error = error_json("X-GpuFlight-Window-Offset '%s': expected an integer 0..%" PRId64,
                            shown(offset, buf), GPUFL__OFFSET_MAX);
        return 400;
    }
    const char *final = get(arg, "X-GpuFlight-Window-Final");
    if (final && strcmp(final, "0") != 0 && strcmp(final, "1") != 0) {
        *error = error_json("X-GpuFlight-Window-Final '%s': expected 1 (the body ends the "
                            "window) or 0 (more may follow)",
                            shown(final, buf));
        return 400;
    }
    h->final = !final || !strcmp(final, "1");
    const char *crc = get(arg, "X-GpuFlight-Window-Prefix-Crc32");
    int64_t v = 0;
    if ((crc || h->offset > 0) && parse_int64(crc, 0, UINT32_MAX, &v) != 0) {
        *error = error_json("X-GpuFlight-Window-Prefix-Crc32 '%s': expected the crc32 of the "
                            "window's bytes before X-GpuFlight-Window-Offset, an unsigned "
                            "decimal 0..4294967295 (required when the offset is above 0)",
                            shown(crc, buf));
        return 400;
    }
    h->prefix_crc32 = (uint32_t)v;
    return 0;
}

int gpufl__ingest_headers_parse(gpufl__ingest_headers_t *h, gpufl__header_fn get, void *arg,
                                json_t **error) {
    char buf[72];
    memset(h, 0, sizeof *h);
    *error = NULL;
    const char *version = get(arg, "X-GpuFlight-Wire-Version");
    int64_t v;
    if (!version || parse_int64(version, 0, 1000000, &v) != 0 || v != GPUFL__WIRE_VERSION) {
        *error = error_json("X-GpuFlight-Wire-Version '%s' is not a wire version this server "
                            "accepts",
                            shown(version, buf));
        json_object_set_new(*error, "supported", gpufl__ingest_supported());
        return 400;
    }
    h->wire_version = (int)v;
    const char *enc = get(arg, "Content-Encoding");
    int encoding = gpufl__encoding_parse(enc);
    if (encoding < 0) {
        *error =
            error_json("Content-Encoding '%s' is not accepted: " GPUFL__ENCODINGS, shown(enc, buf));
        return 415;
    }
    h->encoding = (gpufl__encoding_t)encoding;
    const char *sid = get(arg, "X-GpuFlight-Session-Id");
    if (!sid || !gpufl__ingest_id_ok(sid)) {
        *error = error_json("X-GpuFlight-Session-Id '%s': expected 1 to 128 characters of "
                            "letters, digits and . - _ :",
                            shown(sid, buf));
        return 400;
    }
    snprintf(h->session_id, sizeof h->session_id, "%s", sid);
    const char *ch = get(arg, "X-GpuFlight-Window-Channel");
    if (!ch || (strcmp(ch, "device") && strcmp(ch, "scope") && strcmp(ch, "system"))) {
        *error = error_json("X-GpuFlight-Window-Channel '%s': expected device, scope or system",
                            shown(ch, buf));
        return 400;
    }
    snprintf(h->channel, sizeof h->channel, "%s", ch);
    const char *seq = get(arg, "X-GpuFlight-Window-Sequence");
    if (parse_int64(seq, 0, INT32_MAX, &h->sequence) != 0) {
        *error = error_json("X-GpuFlight-Window-Sequence '%s': expected an integer 0..2147483647",
                            shown(seq, buf));
        return 400;
    }
    const char *wid = get(arg, "X-GpuFlight-Window-Id");
    if (!wid || !gpufl__ingest_id_ok(wid)) {
        *error = error_json("X-GpuFlight-Window-Id '%s': expected 1 to 128 characters of letters, "
                            "digits and . - _ :",
                            shown(wid, buf));
        return 400;
    }
    snprintf(h->window_id, sizeof h->window_id, "%s", wid);
    const char *idem = get(arg, "Idempotency-Key");
    if (idem && strcmp(idem, wid) != 0) {
        *error =
            error_json("Idempotency-Key '%s' differs from X-GpuFlight-Window-Id", shown(idem, buf));
        return 400;
    }
    const char *damaged = get(arg, "X-GpuFlight-Damaged-Lines");
    if (damaged && strcmp(damaged, "keep") != 0 && strcmp(damaged, "refuse") != 0) {
        *error = error_json("X-GpuFlight-Damaged-Lines '%s': expected keep or refuse",
                            shown(damaged, buf));
        return 400;
    }
    h->keep_damaged = damaged && !strcmp(damaged, "keep");
    return slice_headers_parse(h, get, arg, error);
}

/* ---- the window --------------------------------------------------------------------------- */

struct gpufl__parsed {
    gpufl__window_t w;
    gpufl__line_t *lines;
    gpufl__rows_t *rows;
    json_t *damaged;
    const char *types[TYPES_MAX];
    size_t n_types;
};

const gpufl__window_t *gpufl__parsed_window(const gpufl__parsed_t *p) { return &p->w; }
json_t *gpufl__parsed_damaged(const gpufl__parsed_t *p) { return p->damaged; }

void gpufl__parsed_destroy(gpufl__parsed_t *p) {
    if (!p) return;
    gpufl__rows_destroy(p->rows);
    json_decref(p->damaged);
    free(p->lines);
    free(p);
}

static const char *intern_type(gpufl__parsed_t *p, const char *type) {
    for (size_t i = 0; i < p->n_types; i++)
        if (!strcmp(p->types[i], type)) return p->types[i];
    const char *kept = gpufl__rows_keep(p->rows, type, strlen(type));
    if (kept && p->n_types < TYPES_MAX) p->types[p->n_types++] = kept;
    return kept;
}

static const char *keep_member(gpufl__parsed_t *p, json_t *obj, const char *name) {
    json_t *v = json_object_get(obj, name);
    if (!json_is_string(v)) return NULL;
    return gpufl__rows_keep(p->rows, json_string_value(v), json_string_length(v));
}

static int64_t int_member(json_t *obj, const char *name, int64_t fallback) {
    json_t *v = json_object_get(obj, name);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : fallback;
}

/* The header line: it must name the request's session, channel and sequence. */
static int check_header(gpufl__parsed_t *p, const gpufl__ingest_headers_t *h, json_t *doc,
                        char *why, size_t size) {
    json_t *sid = json_object_get(doc, "session_id"), *file = json_object_get(doc, "file");
    if (!json_is_string(sid) || strcmp(json_string_value(sid), h->session_id) != 0) {
        snprintf(why, size, "the header's session_id differs from X-GpuFlight-Session-Id");
        return GPUFL_EFORMAT;
    }
    if (!json_is_string(file) || strcmp(json_string_value(file), h->channel) != 0) {
        snprintf(why, size, "the header's file differs from X-GpuFlight-Window-Channel");
        return GPUFL_EFORMAT;
    }
    json_t *segment = json_object_get(doc, "segment");
    if (segment && (!json_is_integer(segment) || json_integer_value(segment) != h->sequence)) {
        snprintf(why, size, "the header's segment differs from X-GpuFlight-Window-Sequence");
        return GPUFL_EFORMAT;
    }
    gpufl__session_facts_t *f = &p->w.facts;
    f->app_name = keep_member(p, doc, "app_name");
    f->hostname = keep_member(p, doc, "hostname");
    f->job_id = keep_member(p, doc, "job_id");
    f->gpufl_version = keep_member(p, doc, "gpufl_version");
    f->pid = int_member(doc, "pid", 0);
    f->epoch_unix_us = int_member(doc, "epoch_unix_us", 0);
    return 0;
}

/* One line: its type, its rows, and what it tells of the session. */
static int parse_line(gpufl__parsed_t *p, const gpufl__ingest_headers_t *h, size_t line_no,
                      gpufl__line_t *line, char *why, size_t size) {
    json_error_t err;
    json_t *doc = json_loadb(line->text, line->len, JSON_REJECT_DUPLICATES, &err);
    int rc = GPUFL_EFORMAT;
    if (!doc) {
        snprintf(why, size, "not JSON: %s (column %d)", err.text, err.column);
        return rc;
    }
    json_t *type = json_object_get(doc, "type"), *v = json_object_get(doc, "v");
    if (!json_is_object(doc))
        snprintf(why, size, "not a JSON object");
    else if (!json_is_string(type))
        snprintf(why, size, "no string \"type\"");
    else if (!json_is_integer(v))
        snprintf(why, size, "no integer \"v\"");
    else if (line_no == 1 && h->offset == 0 && strcmp(json_string_value(type), "header") != 0)
        snprintf(why, size, "a window begins with its file's header line");
    else
        rc = 0;
    if (rc != 0) goto done;
    const char *t = json_string_value(type);
    line->rows = 0;
    if (line_no == 1 && h->offset == 0)
        rc = check_header(p, h, doc, why, size);
    else if (!strcmp(t, "dict"))
        rc = gpufl__rows_dict(p->rows, line_no, doc, why, size);
    else
        rc = gpufl__rows_check(p->rows, line_no, t, doc, &line->rows, why, size);
    if (rc != 0) goto done;
    if (!strcmp(t, "capabilities")) p->w.facts.engine = keep_member(p, doc, "engine");
    if (!strcmp(t, "session_end")) p->w.facts.end_ns = int_member(doc, "ts_ns", -1);
    if (!(line->type = intern_type(p, t))) rc = GPUFL_ENOMEM;
done:
    json_decref(doc);
    return rc;
}

/* The dict lines the window's earlier slices stored: their ids resolve this slice's dict
 * columns (as line 0, before every line of the body). They were checked when they came. */
static int load_dicts(gpufl__parsed_t *p, const gpufl__line_t *dicts, size_t n, json_t **error) {
    for (size_t i = 0; i < n; i++) {
        json_error_t err;
        json_t *doc = json_loadb(dicts[i].text, dicts[i].len, 0, &err);
        char why[256] = "a stored dict line is not JSON";
        int rc = doc ? gpufl__rows_dict(p->rows, 0, doc, why, sizeof why) : GPUFL_EFORMAT;
        json_decref(doc);
        if (rc == GPUFL_ENOMEM) {
            *error = error_json("%s", why);
            return 413;
        }
        if (rc) return GPUFL_EIO; /* the window's stored lines are damaged: not the sender's */
    }
    return 0;
}

static void add_problem(json_t *problems, size_t *n, size_t line_no, char *why) {
    /* jansson's messages quote the input, which need not be UTF-8 */
    for (char *c = why; *c; c++)
        if (*c < 0x20 || *c >= 0x7f) *c = '?';
    if ((*n)++ < GPUFL__PROBLEMS_MAX)
        json_array_append_new(problems,
                              json_pack("{s:I,s:s}", "line", (json_int_t)line_no, "reason", why));
}

int gpufl__ingest_parse(gpufl__parsed_t **out, json_t **error, const gpufl__ingest_headers_t *h,
                        int64_t workspace_id, const char *data, size_t len,
                        const gpufl__line_t *dicts, size_t n_dicts) {
    *out = NULL;
    *error = NULL;
    if (len == 0 && h->offset == 0) {
        *error = error_json("%s", "an empty window: a window holds at least its header line");
        return 400;
    }
    if (len == 0 && !h->final) {
        *error = error_json("%s", "an empty slice that does not end the window "
                                  "(X-GpuFlight-Window-Final: 0): nothing to store");
        return 400;
    }
    size_t n_lines = 0;
    for (const char *c = data; (c = memchr(c, '\n', (size_t)(data + len - c))); c++) n_lines++;
    if (len && data[len - 1] != '\n') {
        char text[160];
        snprintf(text, sizeof text, "line %zu is incomplete (no newline at the end of the window)",
                 n_lines + 1);
        *error = error_json("%s", text);
        json_object_set_new(*error, "lines",
                            json_pack("[{s:I,s:s}]", "line", (json_int_t)(n_lines + 1), "reason",
                                      "incomplete last line"));
        return 400;
    }
    gpufl__parsed_t *p = calloc(1, sizeof *p);
    json_t *problems = json_array();
    /* No typed rows are kept here: the lines are checked now, and built again one rowset at a
     * time while the store writes them (gpufl__rows_source), so a request holds its body, its
     * line index and one rowset, whatever the window's size. */
    if (p && problems) gpufl__rows_create(&p->rows);
    if (!p || !problems || !p->rows ||
        !(p->lines = calloc(n_lines ? n_lines : 1, sizeof *p->lines)) ||
        !(p->damaged = json_array())) {
        json_decref(problems);
        gpufl__parsed_destroy(p);
        return GPUFL_ENOMEM;
    }
    gpufl__rows_lenient(p->rows, h->keep_damaged);
    p->w.facts.end_ns = -1;
    size_t n_problems = 0;
    const char *at = data;
    int status = load_dicts(p, dicts, n_dicts, error);
    for (size_t i = 0; i < n_lines && !status; i++) {
        const char *nl = memchr(at, '\n', (size_t)(data + len - at));
        gpufl__line_t *line = &p->lines[i];
        line->text = at;
        line->len = (size_t)(nl - at);
        at = nl + 1;
        char why[256] = "out of memory";
        int lrc = GPUFL_ENOMEM;
        if (line->len > GPUFL__LINE_MAX_BYTES)
            snprintf(why, sizeof why, "line %zu holds %zu bytes, more than the %u MiB a line may",
                     i + 1, line->len, GPUFL__LINE_MAX_BYTES >> 20);
        else
            lrc = parse_line(p, h, i + 1, line, why, sizeof why);
        if (lrc == GPUFL_ENOMEM) {
            *error = error_json("%s", why);
            status = 413;
            break;
        }
        if (lrc != 0 && h->keep_damaged && (i > 0 || h->offset > 0)) { /* kept, untyped */
            line->type = NULL;
            line->rows = 0;
            json_array_append_new(p->damaged, json_integer((json_int_t)(i + 1)));
        } else if (lrc != 0) {
            add_problem(problems, &n_problems, i + 1, why);
        }
        p->w.rows += line->rows;
    }
    if (!status && n_problems) {
        char text[160];
        snprintf(text, sizeof text, "%zu malformed line%s: nothing of the window was stored",
                 n_problems, n_problems == 1 ? "" : "s");
        *error = json_pack("{s:s,s:O,s:I}", "error", text, "lines", problems, "malformed",
                           (json_int_t)n_problems);
        status = 400;
    }
    json_decref(problems);
    if (status) {
        gpufl__parsed_destroy(p);
        return status;
    }
    gpufl__window_t *w = &p->w;
    w->workspace_id = workspace_id;
    w->session_id = h->session_id;
    w->channel = h->channel;
    w->sequence = h->sequence;
    w->window_id = h->window_id;
    w->wire_version = h->wire_version;
    w->bytes = (int64_t)len;
    crypto_hash_sha256(w->sha256, (const unsigned char *)data, len);
    w->data = (const uint8_t *)data;
    w->offset = h->offset;
    w->more = !h->final;
    w->prefix_crc32 = h->prefix_crc32;
    w->lines = p->lines;
    w->n_lines = n_lines;
    gpufl__rows_source(p->rows, p->lines, n_lines, &w->rows_source);
    gpufl__rows_time_span(p->rows, &w->time_min_ns, &w->time_max_ns);
    *out = p;
    return 0;
}
