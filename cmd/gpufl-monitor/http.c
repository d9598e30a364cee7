// SPDX-License-Identifier: Apache-2.0
/*
 * http.c - gpufl-monitor's HTTP server on libmicrohttpd: /metrics,
 * /healthz and /api/v1/gpus, GET (and HEAD) only.
 *
 * The socket is bound here, so a port already taken is said with its errno;
 * libmicrohttpd parses the requests (no parser of ours) and caps each
 * connection's memory, which bounds the request line and headers. A request
 * renders a copy of the published snapshot: it never waits on NVML.
 */
#include "monitor.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define REQUEST_MEMORY_BYTES (32 * 1024) /* request line + headers of one connection */
#define CONNECTIONS_MAX      1024
#define RESPONSE_MAX_BYTES   ((size_t)16 << 20)

struct mon_http {
    struct MHD_Daemon *daemon;
    mon_monitor_t *monitor;
    int dcgm_compat;
};

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *type,
                             char *body, size_t len) {
    struct MHD_Response *r = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (status == MHD_HTTP_METHOD_NOT_ALLOWED) MHD_add_response_header(r, "Allow", "GET, HEAD");
    enum MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

static enum MHD_Result reply_text(struct MHD_Connection *c, unsigned status, const char *text) {
    size_t n = strlen(text);
    char *body = malloc(n + 1);
    if (!body) return MHD_NO;
    memcpy(body, text, n + 1);
    return reply(c, status, "text/plain; charset=utf-8", body, n);
}

typedef int (*render_fn)(mon_buf_t *out, const mon_snapshot_t *s, int openmetrics, int dcgm);

static int render_metrics(mon_buf_t *out, const mon_snapshot_t *s, int openmetrics, int dcgm) {
    return mon_render_metrics(out, s, openmetrics, dcgm);
}

static int render_gpus(mon_buf_t *out, const mon_snapshot_t *s, int openmetrics, int dcgm) {
    (void)openmetrics;
    (void)dcgm;
    return mon_render_gpus_json(out, s);
}

/* Renders a copy of the snapshot with fn and sends it. */
static enum MHD_Result reply_rendered(struct MHD_Connection *c, mon_http_t *h, render_fn fn,
                                      int openmetrics, const char *type) {
    mon_snapshot_t *snap = malloc(sizeof *snap);
    mon_buf_t out = {.max = RESPONSE_MAX_BYTES};
    if (!snap) return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
    mon_monitor_snapshot(snap, h->monitor);
    int rc = fn(&out, snap, openmetrics, h->dcgm_compat);
    free(snap);
    if (rc != 0) {
        free(out.data);
        return reply_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "response past its size cap\n");
    }
    if (!out.data) out.data = calloc(1, 1);
    return reply(c, MHD_HTTP_OK, type, out.data, out.len);
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload_data,
                              size_t *upload_data_size, void **con_cls) {
    mon_http_t *h = cls;
    (void)version;
    (void)upload_data;
    /* A body is never read: the first call for a request answers it. */
    if (*upload_data_size) *upload_data_size = 0;
    (void)con_cls;
    int get = strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    int known = strcmp(url, "/metrics") == 0 || strcmp(url, "/healthz") == 0 ||
                strcmp(url, "/api/v1/gpus") == 0;
    if (!known) return reply_text(c, MHD_HTTP_NOT_FOUND, "not found\n");
    if (!get) return reply_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET and HEAD\n");
    if (strcmp(url, "/metrics") == 0) {
        const char *accept = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Accept");
        int om = accept && strstr(accept, "application/openmetrics-text") != NULL;
        mon_monitor_count_scrape(h->monitor);
        return reply_rendered(c, h, render_metrics, om, mon_metrics_content_type(om));
    }
    if (strcmp(url, "/api/v1/gpus") == 0)
        return reply_rendered(c, h, render_gpus, 0, "application/json");
    char why[256], line[300];
    if (mon_monitor_healthy(h->monitor, why, sizeof why)) return reply_text(c, MHD_HTTP_OK, "ok\n");
    snprintf(line, sizeof line, "%s\n", why);
    return reply_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, line);
}

static int listen_socket(const mon_settings_t *s, int *port, char *why, size_t size) {
    struct sockaddr_storage ss = {0};
    socklen_t len;
    int one = 1, family;
    if (strchr(s->listen_host, ':')) { /* an IPv6 address */
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;
        family = a->sin6_family = AF_INET6;
        a->sin6_port = htons((uint16_t)s->listen_port);
        if (inet_pton(AF_INET6, s->listen_host, &a->sin6_addr) != 1) goto bad_address;
        len = sizeof *a;
    } else {
        struct sockaddr_in *a = (struct sockaddr_in *)&ss;
        family = a->sin_family = AF_INET;
        a->sin_port = htons((uint16_t)s->listen_port);
        if (inet_pton(AF_INET, s->listen_host, &a->sin_addr) != 1) goto bad_address;
        len = sizeof *a;
    }
    int fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        snprintf(why, size, "socket: %s", strerror(errno));
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&ss, len) != 0 || listen(fd, 128) != 0) {
        snprintf(why, size, "cannot listen on %s:%d: %s", s->listen_host, s->listen_port,
                 strerror(errno));
        close(fd);
        return -1;
    }
    getsockname(fd, (struct sockaddr *)&ss, &len);
    *port = ntohs(family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                     : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
bad_address:
    snprintf(why, size, "'%s' is not an IP address", s->listen_host);
    return -1;
}

int mon_http_start(mon_http_t **out, int *port, const mon_settings_t *s, mon_monitor_t *m,
                   char *why, size_t size) {
    *out = NULL;
    int fd = listen_socket(s, port, why, size);
    if (fd < 0) return -1;
    mon_http_t *h = calloc(1, sizeof *h);
    if (!h) {
        close(fd);
        snprintf(why, size, "out of memory");
        return -1;
    }
    h->monitor = m;
    h->dcgm_compat = s->dcgm_compat;
    h->daemon = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_INTERNAL_POLLING_THREAD, 0,
                                 NULL, NULL, handle, h, MHD_OPTION_LISTEN_SOCKET, fd,
                                 MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)REQUEST_MEMORY_BYTES,
                                 MHD_OPTION_CONNECTION_LIMIT, (unsigned)CONNECTIONS_MAX,
                                 MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_END);
    if (!h->daemon) {
        close(fd);
        free(h);
        snprintf(why, size, "the HTTP server did not start on %s:%d", s->listen_host, *port);
        return -1;
    }
    *out = h;
    return 0;
}

void mon_http_stop(mon_http_t *h) {
    if (!h) return;
    MHD_stop_daemon(h->daemon);
    free(h);
}
