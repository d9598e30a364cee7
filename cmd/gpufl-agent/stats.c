// SPDX-License-Identifier: Apache-2.0
/*
 * stats.c - gpufl-agent's counters and its /metrics (Prometheus text 0.0.4) and /healthz,
 * served by libmicrohttpd. A scrape reads the counters under a mutex: never a pass.
 */
#include "agent.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

struct agent_stats {
    pthread_mutex_t lock;
    struct MHD_Daemon *daemon;
    long long passes, windows_sent, windows_duplicate, windows_failed, retries, auth_refused;
    long long slices_sent, bytes_sent, windows_dropped, bytes_dropped;
    long long spool_bytes;                       /* gauge: the last pass's */
    long long windows_open, windows_quarantined; /* gauges: the last pass's */
    double last_pass_s, last_delivered_s;        /* wall clock; 0: never */
};

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

void agent_stats_add(agent_stats_t *s, const gpufl_upload_result_t *r, int rc) {
    pthread_mutex_lock(&s->lock);
    s->passes++;
    s->windows_sent += r->windows - r->windows_duplicate;
    s->windows_duplicate += r->windows_duplicate;
    s->windows_failed += r->errors;
    s->retries += r->retries;
    s->slices_sent += r->slices;
    s->bytes_sent += r->bytes;
    s->windows_dropped += r->windows_dropped;
    s->bytes_dropped += r->bytes_dropped;
    s->spool_bytes = r->spool_bytes;
    s->windows_open = r->windows_open;
    s->windows_quarantined = r->windows_quarantined;
    if (rc < 0 || strstr(r->error, "refused the key")) s->auth_refused++;
    s->last_pass_s = now_s();
    if (rc == 0) s->last_delivered_s = s->last_pass_s;
    pthread_mutex_unlock(&s->lock);
}

/* The exposition; one family a metric, each with HELP and TYPE. */
static char *render(agent_stats_t *s) {
    char *out = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&out, &len);
    if (!f) return NULL;
    pthread_mutex_lock(&s->lock);
    struct {
        const char *name, *type, *help;
        double value;
    } rows[] = {
        {"gpufl_agent_passes_total", "counter", "Passes over the log roots.", (double)s->passes},
        {"gpufl_agent_windows_sent_total", "counter", "Windows the server stored.",
         (double)s->windows_sent},
        {"gpufl_agent_windows_duplicate_total", "counter",
         "Windows the server already had (a retry after a lost answer, another sender).",
         (double)s->windows_duplicate},
        {"gpufl_agent_windows_failed_total", "counter",
         "Windows not delivered in a pass (the server away, a refusal); tried again later.",
         (double)s->windows_failed},
        {"gpufl_agent_slices_sent_total", "counter",
         "Parts of windows the server acknowledged: new lines of open windows (live tails), and "
         "windows split to fit the server's body cap.",
         (double)s->slices_sent},
        {"gpufl_agent_bytes_sent_total", "counter",
         "Bytes of session logs the server acknowledged (before gzip).", (double)s->bytes_sent},
        {"gpufl_agent_dropped_windows_total", "counter",
         "Windows dropped unsent to keep the spool's bound while the server was away (each "
         "replaced by a spool_dropped record).",
         (double)s->windows_dropped},
        {"gpufl_agent_dropped_bytes_total", "counter", "Bytes of the windows dropped unsent.",
         (double)s->bytes_dropped},
        {"gpufl_agent_spool_bytes", "gauge", "Bytes under the roots not on the server, last pass.",
         (double)s->spool_bytes},
        {"gpufl_agent_retries_total", "counter", "Requests sent again after a retryable answer.",
         (double)s->retries},
        {"gpufl_agent_key_refused_total", "counter",
         "Passes that stopped because the key was refused or nothing could be tried.",
         (double)s->auth_refused},
        {"gpufl_agent_windows_open", "gauge",
         "Windows not sealed yet (running sessions, or sessions that died), last pass.",
         (double)s->windows_open},
        {"gpufl_agent_windows_quarantined", "gauge",
         "Windows the server refused for good (409), kept aside, last pass.",
         (double)s->windows_quarantined},
        {"gpufl_agent_last_pass_timestamp_seconds", "gauge", "When the last pass ended.",
         s->last_pass_s},
        {"gpufl_agent_lag_seconds", "gauge",
         "Seconds since every sealed window was last on the server (0 while it is).",
         s->last_delivered_s > 0 && s->last_delivered_s < s->last_pass_s
             ? now_s() - s->last_delivered_s
             : 0},
    };
    pthread_mutex_unlock(&s->lock);
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n%s %.17g\n", rows[i].name, rows[i].help,
                rows[i].name, rows[i].type, rows[i].name, rows[i].value);
    fclose(f);
    return out;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *c, const char *url,
                              const char *method, const char *version, const char *upload,
                              size_t *upload_size, void **state) {
    (void)version, (void)upload, (void)upload_size, (void)state;
    agent_stats_t *s = cls;
    unsigned status = MHD_HTTP_OK;
    const char *type = "text/plain; version=0.0.4; charset=utf-8";
    char *body;
    if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0) {
        status = MHD_HTTP_METHOD_NOT_ALLOWED;
        body = strdup("GET only\n");
    } else if (!strcmp(url, "/metrics")) {
        body = render(s);
    } else if (!strcmp(url, "/healthz")) {
        body = strdup("ok\n");
    } else {
        status = MHD_HTTP_NOT_FOUND;
        body = strdup("not found: /metrics, /healthz\n");
    }
    if (!body) return MHD_NO;
    struct MHD_Response *r =
        MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
    if (!r) {
        free(body);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    enum MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

/* A listening socket on ADDR:PORT (IPv4), so a taken port is said with its errno. */
static int listen_on(const char *where, char *why, size_t size) {
    char host[64];
    const char *colon = strrchr(where, ':');
    char *end;
    long port = colon ? strtol(colon + 1, &end, 10) : -1;
    if (!colon || colon == where || (size_t)(colon - where) >= sizeof host || *end || port < 0 ||
        port > 65535) {
        snprintf(why, size, "bad --listen '%s': expected ADDR:PORT or none", where);
        return -1;
    }
    memcpy(host, where, (size_t)(colon - where));
    host[colon - where] = '\0';
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1) {
        snprintf(why, size, "bad --listen '%s': '%s' is not an IPv4 address", where, host);
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0) {
        snprintf(why, size, "socket: %s", strerror(errno));
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0 || listen(fd, 64) != 0) {
        snprintf(why, size, "cannot listen on %s: %s", where, strerror(errno));
        close(fd);
        return -1;
    }
    socklen_t len = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &len);
    fprintf(stderr, "gpufl-agent: metrics on http://%s:%d/metrics\n", host, ntohs(a.sin_port));
    return fd;
}

int agent_stats_start(agent_stats_t **out, const char *where, char *why, size_t size) {
    *out = NULL;
    agent_stats_t *s = calloc(1, sizeof *s);
    if (!s) {
        snprintf(why, size, "out of memory");
        return -1;
    }
    pthread_mutex_init(&s->lock, NULL);
    if (strcmp(where, "none") != 0) {
        int fd = listen_on(where, why, size);
        if (fd < 0) {
            free(s);
            return -1;
        }
        s->daemon = MHD_start_daemon(MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_INTERNAL_POLLING_THREAD,
                                     0, NULL, NULL, handle, s, MHD_OPTION_LISTEN_SOCKET, fd,
                                     MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)(32 * 1024),
                                     MHD_OPTION_CONNECTION_LIMIT, 64u,
                                     MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
        if (!s->daemon) {
            close(fd);
            free(s);
            snprintf(why, size, "the HTTP server did not start on %s", where);
            return -1;
        }
    }
    *out = s;
    return 0;
}

void agent_stats_stop(agent_stats_t *s) {
    if (!s) return;
    if (s->daemon) MHD_stop_daemon(s->daemon);
    pthread_mutex_destroy(&s->lock);
    free(s);
}
