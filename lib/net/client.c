// SPDX-License-Identifier: Apache-2.0
/*
 * client.c - the upload protocol's requests over libcurl, loaded with dlopen (client.h says
 * why). curl's header gives the types and option numbers; its functions come from the loaded
 * library. Answers are read into a capped buffer (64 KiB: an answer is a small JSON object).
 * Windows go zstd-compressed (libzstd, loaded the same way) to a server that takes zstd, else
 * gzipped (zlib).
 */
#include "net/client.h"

#include "util/dl.h"
#include "util/error.h"
#include "util/log.h"

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#define ANSWER_MAX (64 * 1024)

typedef struct curl_fns {
    CURLcode (*global_init)(long flags);
    CURL *(*easy_init)(void);
    CURLcode (*easy_setopt)(CURL *curl, CURLoption option, ...);
    CURLcode (*easy_perform)(CURL *curl);
    CURLcode (*easy_getinfo)(CURL *curl, CURLINFO info, ...);
    void (*easy_cleanup)(CURL *curl);
    struct curl_slist *(*slist_append)(struct curl_slist *list, const char *s);
    void (*slist_free_all)(struct curl_slist *list);
    const char *(*easy_strerror)(CURLcode code);
} curl_fns_t;

static gpufl__dl_t curl_dl;
static curl_fns_t fn;
static char curl_why[256];
static int curl_rc = 1; /* 1: not tried; 0 loaded; < 0 failed */
static pthread_mutex_t curl_lock = PTHREAD_MUTEX_INITIALIZER;

/* Loads libcurl once per process (curl_global_init is not thread-safe: under the lock). */
static int load_curl(char *why, size_t why_size) {
    pthread_mutex_lock(&curl_lock);
    if (curl_rc == 1) {
        static const char *const names[] = {"libcurl.so.4", "libcurl-gnutls.so.4", NULL};
        gpufl__dl_sym_t syms[] = {
            {{"curl_global_init"}, &fn.global_init, 1, -1},
            {{"curl_easy_init"}, &fn.easy_init, 1, -1},
            {{"curl_easy_setopt"}, &fn.easy_setopt, 1, -1},
            {{"curl_easy_perform"}, &fn.easy_perform, 1, -1},
            {{"curl_easy_getinfo"}, &fn.easy_getinfo, 1, -1},
            {{"curl_easy_cleanup"}, &fn.easy_cleanup, 1, -1},
            {{"curl_slist_append"}, &fn.slist_append, 1, -1},
            {{"curl_slist_free_all"}, &fn.slist_free_all, 1, -1},
            {{"curl_easy_strerror"}, &fn.easy_strerror, 1, -1},
        };
        curl_rc = gpufl__dl_open(&curl_dl, getenv("GPUFL_CURL_LIBRARY"), names,
                                 "install libcurl4 to upload", curl_why, sizeof curl_why);
        if (curl_rc == 0)
            curl_rc = gpufl__dl_resolve(&curl_dl, syms, sizeof syms / sizeof syms[0], curl_why,
                                        sizeof curl_why);
        if (curl_rc == 0 && fn.global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
            snprintf(curl_why, sizeof curl_why, "curl_global_init failed");
            curl_rc = GPUFL_ENOTSUP;
        }
    }
    int rc = curl_rc;
    snprintf(why, why_size, "%s", curl_why);
    pthread_mutex_unlock(&curl_lock);
    return rc;
}

/* libzstd's one-shot compression, declared here: libgpufl builds without zstd's header. */
typedef struct zstd_fns {
    size_t (*compress)(void *dst, size_t dst_cap, const void *src, size_t len, int level);
    size_t (*compress_bound)(size_t len);
    unsigned (*is_error)(size_t code);
    const char *(*error_name)(size_t code);
} zstd_fns_t;

static gpufl__dl_t zstd_dl;
static zstd_fns_t zfn;
static char zstd_why[256];
static int zstd_rc = 1; /* 1: not tried; 0 loaded; < 0 failed */
static pthread_mutex_t zstd_lock = PTHREAD_MUTEX_INITIALIZER;

/* Loads libzstd once per process (libzstd.so.1, or $GPUFL_ZSTD_LIBRARY); its absence only means
 * gzip, so why is for a debug line. */
static int load_zstd(char *why, size_t why_size) {
    pthread_mutex_lock(&zstd_lock);
    if (zstd_rc == 1) {
        static const char *const names[] = {"libzstd.so.1", NULL};
        gpufl__dl_sym_t syms[] = {
            {{"ZSTD_compress"}, &zfn.compress, 1, -1},
            {{"ZSTD_compressBound"}, &zfn.compress_bound, 1, -1},
            {{"ZSTD_isError"}, &zfn.is_error, 1, -1},
            {{"ZSTD_getErrorName"}, &zfn.error_name, 1, -1},
        };
        zstd_rc = gpufl__dl_open(&zstd_dl, getenv("GPUFL_ZSTD_LIBRARY"), names,
                                 "install libzstd1 to upload with zstd", zstd_why, sizeof zstd_why);
        if (zstd_rc == 0)
            zstd_rc = gpufl__dl_resolve(&zstd_dl, syms, sizeof syms / sizeof syms[0], zstd_why,
                                        sizeof zstd_why);
    }
    int rc = zstd_rc;
    snprintf(why, why_size, "%s", zstd_why);
    pthread_mutex_unlock(&zstd_lock);
    return rc;
}

/* What a client compresses windows with: decided before its first window (choose_encoding). */
typedef enum { ENCODING_UNKNOWN = 0, ENCODING_GZIP, ENCODING_ZSTD } encoding_t;

struct gpufl__net_client {
    char base[2048];
    char api_path[256];
    char auth[512];    /* "Authorization: Bearer <key>" */
    char key_name[32]; /* "gpfl_<prefix>…" */
    int64_t timeout_ms;
    CURL *curl;
    encoding_t encoding;
};

int gpufl__net_client_create(gpufl__net_client_t **out, const char *base_url, const char *api_path,
                             const char *api_key, int64_t timeout_ms) {
    *out = NULL;
    char why[256];
    if (!base_url ||
        (strncmp(base_url, "http://", 7) != 0 && strncmp(base_url, "https://", 8) != 0))
        return gpufl__set_error(GPUFL_EINVAL,
                                "upload: the server URL must start with http:// or https:// "
                                "(got '%s')",
                                base_url ? base_url : "");
    if (!api_key || !*api_key || strlen(api_key) > 400 || strpbrk(api_key, "\r\n "))
        return gpufl__set_error(GPUFL_EINVAL, "upload: an API key is needed (GPUFL_API_KEY)");
    /* GPUFL_UPLOAD_ENCODING=gzip keeps gzip whatever the server takes (to compare, or for a
     * proxy that cannot pass zstd); auto (or unset) asks the server. */
    const char *forced = getenv("GPUFL_UPLOAD_ENCODING");
    if (forced && *forced && strcmp(forced, "gzip") != 0 && strcmp(forced, "auto") != 0)
        return gpufl__set_error(
            GPUFL_EINVAL, "upload: GPUFL_UPLOAD_ENCODING '%.64s': expected auto or gzip", forced);
    int rc = load_curl(why, sizeof why);
    if (rc != 0) return gpufl__set_error(GPUFL_ENOTSUP, "upload: %s", why);
    gpufl__net_client_t *c = calloc(1, sizeof *c);
    if (!c) return gpufl__set_error(GPUFL_ENOMEM, "upload: out of memory");
    snprintf(c->base, sizeof c->base, "%s", base_url);
    size_t n = strlen(c->base);
    while (n > 0 && c->base[n - 1] == '/') c->base[--n] = '\0';
    snprintf(c->api_path, sizeof c->api_path, "%s", api_path && *api_path ? api_path : "/api/v1");
    snprintf(c->auth, sizeof c->auth, "Authorization: Bearer %s", api_key);
    snprintf(c->key_name, sizeof c->key_name, "%.15s…", api_key);
    c->timeout_ms = timeout_ms > 0 ? timeout_ms : 60000;
    c->encoding = forced && !strcmp(forced, "gzip") ? ENCODING_GZIP : ENCODING_UNKNOWN;
    c->curl = fn.easy_init();
    if (!c->curl) {
        free(c);
        return gpufl__set_error(GPUFL_ENOMEM, "upload: curl_easy_init failed");
    }
    *out = c;
    return 0;
}

void gpufl__net_client_destroy(gpufl__net_client_t *c) {
    if (!c) return;
    if (c->curl) fn.easy_cleanup(c->curl);
    memset(c->auth, 0, sizeof c->auth); /* the key */
    free(c);
}

const char *gpufl__net_client_key_name(const gpufl__net_client_t *c) { return c->key_name; }

gpufl__net_verdict_t gpufl__net_verdict(long status) {
    if (status >= 200 && status < 300) return GPUFL__NET_ACKED;
    if (status == 401 || status == 403) return GPUFL__NET_AUTH;
    if (status == 409) return GPUFL__NET_CONFLICT;
    if (status == 413) return GPUFL__NET_TOO_LARGE;
    if (status == 416) return GPUFL__NET_REALIGN;
    if (status == 0 || status == 408 || status == 429 || (status >= 500 && status != 501))
        return GPUFL__NET_RETRY;
    return GPUFL__NET_REFUSED;
}

/* The answer body, capped. */
typedef struct sink {
    char *data;
    size_t len;
    int64_t retry_after_s;
} sink_t;

static size_t on_body(char *p, size_t size, size_t n, void *user) {
    sink_t *s = user;
    size_t bytes = size * n, room = ANSWER_MAX - s->len;
    size_t take = bytes < room ? bytes : room;
    memcpy(s->data + s->len, p, take);
    s->len += take;
    return bytes; /* the rest is dropped, not an error */
}

static size_t on_header(char *p, size_t size, size_t n, void *user) {
    sink_t *s = user;
    size_t bytes = size * n;
    if (bytes > 12 && strncasecmp(p, "Retry-After:", 12) == 0) {
        long long v = strtoll(p + 12, NULL, 10);
        s->retry_after_s = v >= 0 && v < 86400 ? v : -1;
    }
    return bytes;
}

/* gzip of body (a member zlib writes with a gzip wrapper). */
static int gzip(unsigned char **out, size_t *out_len, const char *body, size_t len) {
    z_stream z;
    memset(&z, 0, sizeof z);
    /* Level 1: six times faster than the default on session logs, for 6 % more bytes (measured
     * in bench/agent_bench.py's results): the agent's CPU is the goal that binds. */
    if (deflateInit2(&z, 1, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        return gpufl__set_error(GPUFL_ENOMEM, "upload: zlib could not start");
    size_t cap = deflateBound(&z, (uLong)len) + 32;
    unsigned char *buf = malloc(cap);
    if (!buf) {
        deflateEnd(&z);
        return gpufl__set_error(GPUFL_ENOMEM, "upload: out of memory to compress a window");
    }
    z.next_in = (unsigned char *)(uintptr_t)body;
    z.avail_in = (uInt)len;
    z.next_out = buf;
    z.avail_out = (uInt)cap;
    int zr = deflate(&z, Z_FINISH);
    *out_len = cap - z.avail_out;
    deflateEnd(&z);
    if (zr != Z_STREAM_END) {
        free(buf);
        return gpufl__set_error(GPUFL_EIO, "upload: zlib could not compress a window");
    }
    *out = buf;
    return 0;
}

/* zstd of body, level 1: one frame, compressed in one call into a buffer that always holds it
 * (ZSTD_compressBound). */
static int zstd(unsigned char **out, size_t *out_len, const char *body, size_t len) {
    size_t cap = zfn.compress_bound(len);
    unsigned char *buf = zfn.is_error(cap) ? NULL : malloc(cap);
    if (!buf) return gpufl__set_error(GPUFL_ENOMEM, "upload: out of memory to compress a window");
    size_t n = zfn.compress(buf, cap, body, len, 1);
    if (zfn.is_error(n)) {
        free(buf);
        return gpufl__set_error(GPUFL_EIO, "upload: zstd could not compress a window: %s",
                                zfn.error_name(n));
    }
    *out = buf;
    *out_len = n;
    return 0;
}

/* The answer's fields into *a; the parsed body to *doc when asked (else freed). */
static void read_answer(gpufl__net_answer_t *a, const sink_t *s, json_t **doc) {
    json_t *j = json_loadb(s->data, s->len, 0, NULL);
    json_t *err = json_object_get(j, "error"), *rows = json_object_get(j, "rows");
    const char *window = json_string_value(json_object_get(j, "window"));
    if (json_is_string(err)) snprintf(a->message, sizeof a->message, "%s", json_string_value(err));
    if (json_is_integer(rows)) a->rows = json_integer_value(rows);
    a->duplicate = window && strcmp(window, "duplicate") == 0;
    json_t *stored = json_object_get(j, "stored_bytes"), *final = json_object_get(j, "final");
    if (json_is_integer(stored) && json_integer_value(stored) >= 0)
        a->stored_bytes = json_integer_value(stored);
    if (json_is_boolean(final)) a->final = json_is_true(final);
    size_t i;
    json_t *line;
    json_array_foreach(json_object_get(j, "damaged"), i, line) {
        size_t at = strlen(a->damaged_list);
        if (json_is_integer(line) && at + 24 < sizeof a->damaged_list)
            snprintf(a->damaged_list + at, sizeof a->damaged_list - at, "%s%lld", at ? ", " : "",
                     (long long)json_integer_value(line));
        a->damaged++;
    }
    if (doc)
        *doc = j;
    else
        json_decref(j);
}

/* One request: a POST of body (a GET when body is NULL) to path with extra headers; the answer
 * into *a, its parsed body into *doc when doc is given. */
static int request(gpufl__net_client_t *c, gpufl__net_answer_t *a, const char *path,
                   struct curl_slist *headers, const void *body, size_t len, json_t **doc) {
    char url[2400];
    sink_t s = {malloc(ANSWER_MAX), 0, -1};
    memset(a, 0, sizeof *a);
    a->retry_after_s = -1;
    a->rows = -1;
    a->stored_bytes = -1;
    a->final = -1;
    if (!s.data) return gpufl__set_error(GPUFL_ENOMEM, "upload: out of memory");
    snprintf(url, sizeof url, "%s%s%s", c->base, c->api_path, path);
    struct curl_slist *h = fn.slist_append(headers, c->auth);
    CURL *k = c->curl;
    fn.easy_setopt(k, CURLOPT_URL, url);
    if (body) {
        fn.easy_setopt(k, CURLOPT_POST, 1L);
        fn.easy_setopt(k, CURLOPT_POSTFIELDS, body);
        fn.easy_setopt(k, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    } else {
        fn.easy_setopt(k, CURLOPT_HTTPGET, 1L);
    }
    fn.easy_setopt(k, CURLOPT_HTTPHEADER, h);
    fn.easy_setopt(k, CURLOPT_WRITEFUNCTION, on_body);
    fn.easy_setopt(k, CURLOPT_WRITEDATA, &s);
    fn.easy_setopt(k, CURLOPT_HEADERFUNCTION, on_header);
    fn.easy_setopt(k, CURLOPT_HEADERDATA, &s);
    fn.easy_setopt(k, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
    fn.easy_setopt(k, CURLOPT_CONNECTTIMEOUT_MS, 10000L);
    fn.easy_setopt(k, CURLOPT_NOSIGNAL, 1L);
    CURLcode cr = fn.easy_perform(k);
    if (cr == CURLE_OK) {
        fn.easy_getinfo(k, CURLINFO_RESPONSE_CODE, &a->status);
        a->retry_after_s = s.retry_after_s;
        read_answer(a, &s, doc);
        if (!a->message[0] && a->status != 200)
            snprintf(a->message, sizeof a->message, "HTTP %ld", a->status);
    } else {
        a->status = 0;
        snprintf(a->message, sizeof a->message, "%s", fn.easy_strerror(cr));
    }
    a->verdict = gpufl__net_verdict(a->status);
    fn.easy_setopt(k, CURLOPT_HTTPHEADER, (struct curl_slist *)NULL);
    fn.slist_free_all(h);
    free(s.data);
    return 0;
}

/* The encoding of this client's windows, decided once: zstd when libzstd loads and the
 * server's version answer lists it in "encodings"; gzip for an older server (no "encodings"),
 * a failed request, or no libzstd. */
static encoding_t choose_encoding(gpufl__net_client_t *c) {
    if (c->encoding != ENCODING_UNKNOWN) return c->encoding;
    char why[256];
    c->encoding = ENCODING_GZIP;
    if (load_zstd(why, sizeof why) != 0) {
        gpufl__debug("upload: %s; windows go gzipped", why);
        return c->encoding;
    }
    gpufl__net_answer_t a;
    json_t *doc = NULL;
    if (request(c, &a, "/info/version", NULL, NULL, 0, &doc) == 0 &&
        a.verdict == GPUFL__NET_ACKED) {
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(doc, "encodings"), i, e) {
            if (json_is_string(e) && !strcmp(json_string_value(e), "zstd"))
                c->encoding = ENCODING_ZSTD;
        }
    }
    json_decref(doc);
    gpufl__debug("upload: windows go %s to %s (version answer: %s)",
                 c->encoding == ENCODING_ZSTD ? "zstd" : "gzipped", c->base,
                 a.message[0] ? a.message : "200");
    return c->encoding;
}

int gpufl__net_client_send_window(gpufl__net_client_t *c, gpufl__net_answer_t *a,
                                  const char *session_id, const char *channel, int64_t sequence,
                                  const char *window_id, const gpufl__net_slice_t *slice,
                                  const char *body, size_t len) {
    unsigned char *gz = NULL;
    size_t gz_len = 0;
    int zst = choose_encoding(c) == ENCODING_ZSTD;
    int rc = zst ? zstd(&gz, &gz_len, body, len) : gzip(&gz, &gz_len, body, len);
    if (rc != 0) return rc;
    char line[512];
    struct curl_slist *h = NULL;
    const char *const fixed[] = {"Content-Type: application/x-ndjson",
                                 zst ? "Content-Encoding: zstd" : "Content-Encoding: gzip",
                                 "X-GpuFlight-Wire-Version: 1"};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++) h = fn.slist_append(h, fixed[i]);
    snprintf(line, sizeof line, "X-GpuFlight-Session-Id: %s", session_id);
    h = fn.slist_append(h, line);
    snprintf(line, sizeof line, "X-GpuFlight-Window-Channel: %s", channel);
    h = fn.slist_append(h, line);
    snprintf(line, sizeof line, "X-GpuFlight-Window-Sequence: %lld", (long long)sequence);
    h = fn.slist_append(h, line);
    snprintf(line, sizeof line, "X-GpuFlight-Window-Id: %s", window_id);
    h = fn.slist_append(h, line);
    snprintf(line, sizeof line, "Idempotency-Key: %s", window_id);
    h = fn.slist_append(h, line);
    /* Logs go as they are on disk: a line damaged there (a crash, a bad write) is stored as
     * written and named in the answer, never a reason to refuse the window. */
    h = fn.slist_append(h, "X-GpuFlight-Damaged-Lines: keep");
    if (slice->offset > 0 || !slice->final) {
        /* Absent, they mean a whole sealed window: sent only for a slice. */
        snprintf(line, sizeof line, "X-GpuFlight-Window-Offset: %lld", (long long)slice->offset);
        h = fn.slist_append(h, line);
        snprintf(line, sizeof line, "X-GpuFlight-Window-Final: %d", slice->final ? 1 : 0);
        h = fn.slist_append(h, line);
        if (slice->offset > 0) {
            snprintf(line, sizeof line, "X-GpuFlight-Window-Prefix-Crc32: %lu",
                     (unsigned long)slice->prefix_crc);
            h = fn.slist_append(h, line);
        }
    }
    rc = h ? request(c, a, "/events/stream", h, gz, gz_len, NULL)
           : gpufl__set_error(GPUFL_ENOMEM, "upload: out of memory");
    free(gz);
    return rc;
}

int gpufl__net_client_complete(gpufl__net_client_t *c, gpufl__net_answer_t *a,
                               const char *session_id) {
    char body[256];
    int n = snprintf(body, sizeof body, "{\"session_id\":\"%s\"}", session_id);
    struct curl_slist *h = fn.slist_append(NULL, "Content-Type: application/json");
    if (!h) return gpufl__set_error(GPUFL_ENOMEM, "upload: out of memory");
    return request(c, a, "/events/session-complete", h, body, (size_t)n, NULL);
}

int gpufl__net_client_windows(gpufl__net_client_t *c, gpufl__net_answer_t *a,
                              const char *session_id, const char *channel, int64_t after,
                              gpufl__net_window_cb each, void *user, int64_t *next_after) {
    char path[512];
    json_t *doc = NULL;
    *next_after = -1;
    snprintf(path, sizeof path, "/events/windows?session_id=%s&channel=%s&after=%lld", session_id,
             channel, (long long)after);
    int rc = request(c, a, path, NULL, NULL, 0, &doc);
    if (rc == 0 && a->verdict == GPUFL__NET_ACKED) {
        size_t i;
        json_t *w;
        json_array_foreach(json_object_get(doc, "windows"), i, w) {
            json_t *seq = json_object_get(w, "sequence"), *bytes = json_object_get(w, "bytes");
            json_t *final = json_object_get(w, "final");
            if (json_is_integer(seq))
                each(user, json_integer_value(seq),
                     json_is_integer(bytes) ? json_integer_value(bytes) : -1,
                     json_is_boolean(final) ? json_is_true(final) : 1);
        }
        json_t *next = json_object_get(doc, "next_after");
        if (json_is_integer(next)) *next_after = json_integer_value(next);
    }
    json_decref(doc);
    return rc;
}
