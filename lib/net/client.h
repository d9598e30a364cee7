// SPDX-License-Identifier: Apache-2.0
/*
 * client.h - one request of the upload protocol (docs/protocol.md) over libcurl, and what its
 * answer means for the sender. libcurl is loaded when the first upload starts
 * (libcurl.so.4, or $GPUFL_CURL_LIBRARY), never linked: an application that records but never
 * uploads does not map it, and a machine without it gets a clear error instead of a failed
 * start. Windows go compressed with zstd level 1 when the server's GET /info/version lists
 * "zstd" in "encodings" and libzstd.so.1 (or $GPUFL_ZSTD_LIBRARY) loads, likewise with dlopen;
 * else gzipped with zlib (level 1): a server older than zstd, a failed version request, no
 * libzstd (a debug line says which), or GPUFL_UPLOAD_ENCODING=gzip. A client asks once, before
 * its first window.
 */
#ifndef GPUFL_NET_CLIENT_H
#define GPUFL_NET_CLIENT_H

#include <stddef.h>
#include <stdint.h>

typedef struct gpufl__net_client gpufl__net_client_t;

/* What the sender does with an answer. */
typedef enum {
    GPUFL__NET_ACKED = 1, /* 2xx: stored or a duplicate; the cursor advances */
    GPUFL__NET_RETRY,     /* network error, 408, 429, 5xx but 501: again later, same bytes */
    GPUFL__NET_AUTH,      /* 401/403: the key is refused; stop, naming its prefix */
    GPUFL__NET_TOO_LARGE, /* 413: past the server's body cap */
    GPUFL__NET_CONFLICT,  /* 409: other bytes under this window: quarantined, reported */
    GPUFL__NET_REALIGN,   /* 416: the slice does not start where the server's bytes end */
    GPUFL__NET_REFUSED,   /* any other answer (400, 404, 415, 501): not retried */
} gpufl__net_verdict_t;

/* Where a request's body lies in its window (docs/protocol.md, "A window in slices"): a whole
 * sealed window is {0, 1, 0}; the live tail of an open window, or a part of a window split
 * after a 413, starts at offset and proves the bytes before it by their crc32. */
typedef struct gpufl__net_slice {
    int64_t offset;      /* of the body within the window's bytes */
    int final;           /* the body ends the sealed window */
    uint32_t prefix_crc; /* zlib's crc32 of the window's bytes [0, offset) */
} gpufl__net_slice_t;

typedef struct gpufl__net_answer {
    long status; /* HTTP status; 0 when no answer came */
    gpufl__net_verdict_t verdict;
    int64_t retry_after_s; /* Retry-After, -1 when absent */
    int duplicate;         /* 200 with "window": "duplicate" */
    int64_t rows;          /* the answer's "rows", -1 when absent */
    int64_t stored_bytes;  /* the answer's "stored_bytes": the server's end of the window, -1 */
    int final;             /* the answer's "final": 1, 0, or -1 when absent */
    int64_t damaged;       /* lines the server stored as written, not read: damaged on disk */
    char damaged_list[96]; /* their line numbers within the body, "4, 9, ..." */
    char message[512];     /* the server's "error", or the transport's */
} gpufl__net_answer_t;

/*
 * A client for one server: base_url ("https://host:port", no path), api_path (the routes'
 * prefix, default "/api/v1"), the API key (sent as a bearer token, never logged: messages
 * name its prefix only), timeout_ms per request. Returns 0, GPUFL_ENOTSUP (no libcurl, with
 * why), GPUFL_EINVAL (a URL or key that cannot be used, or GPUFL_UPLOAD_ENCODING other than
 * auto or gzip).
 */
int gpufl__net_client_create(gpufl__net_client_t **out, const char *base_url, const char *api_path,
                             const char *api_key, int64_t timeout_ms);
void gpufl__net_client_destroy(gpufl__net_client_t *c);

/* The key's public part for messages: "gpfl_abcdefghij…". */
const char *gpufl__net_client_key_name(const gpufl__net_client_t *c);

/* POSTs one slice of a window (its lines, compressed here; may be empty only to seal a window
 * whose bytes are all stored) and reads the answer into *a. Returns 0 when an answer (or a
 * transport error, verdict RETRY) is in *a; GPUFL_ENOMEM. */
int gpufl__net_client_send_window(gpufl__net_client_t *c, gpufl__net_answer_t *a,
                                  const char *session_id, const char *channel, int64_t sequence,
                                  const char *window_id, const gpufl__net_slice_t *slice,
                                  const char *body, size_t len);

/* POSTs session-complete for session_id. As send_window. */
int gpufl__net_client_complete(gpufl__net_client_t *c, gpufl__net_answer_t *a,
                               const char *session_id);

/* Asks which windows of a session's channel the server already has (sequences after `after`,
 * one page): each is passed to each(user, sequence, bytes, final), bytes the server's end of
 * the window (-1 and final 1 when the server does not say: a whole window); *next_after is the
 * next page's `after`, or -1 when this was the last. A session id holds only URL-safe
 * characters (window.h). Returns 0 when *a holds an answer (ACKED: the list was read). */
typedef void (*gpufl__net_window_cb)(void *user, int64_t sequence, int64_t bytes, int final);
int gpufl__net_client_windows(gpufl__net_client_t *c, gpufl__net_answer_t *a,
                              const char *session_id, const char *channel, int64_t after,
                              gpufl__net_window_cb each, void *user, int64_t *next_after);

/* The verdict of an HTTP status (0: no answer). */
gpufl__net_verdict_t gpufl__net_verdict(long status);

#endif
