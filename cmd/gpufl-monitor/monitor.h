// SPDX-License-Identifier: Apache-2.0
/*
 * monitor.h - the parts of gpufl-monitor and what they share: the settings
 * (main.c), the session and the snapshot it publishes (monitor.c), the HTTP
 * server (http.c) and the JSON API (api.c).
 */
#ifndef GPUFL_MONITOR_MONITOR_H
#define GPUFL_MONITOR_MONITOR_H

#include "readings.h"

#include <stddef.h>
#include <stdint.h>

typedef struct mon_settings {
    int interval_ms;           /* sampling period */
    int window_s;              /* seal a log window this often */
    const char *log_path;      /* NULL: the library's default */
    char listen_host[64];      /* "" : no HTTP */
    int listen_port;           /* 0: an ephemeral port (said on stderr) */
    const char *otlp_endpoint; /* NULL: no OTLP push */
    int dcgm_compat;
} mon_settings_t;

/* ---- monitor.c: the session and the snapshot ---- */

typedef struct mon_monitor mon_monitor_t;

/* Starts the session (Monitor engine, continuous host and GPU sampling) and
 * the readings; 0, or -1 with the reason on stderr. */
int mon_monitor_start(mon_monitor_t **out, const mon_settings_t *s);
/* Reads the latest rows and publishes them as the snapshot (the sampling
 * thread, once per interval). */
void mon_monitor_sample(mon_monitor_t *m);
/* Ends the session and starts a new one in a new session directory (SIGHUP). */
int mon_monitor_reopen(mon_monitor_t *m);
/* Ends the session cleanly and frees m. */
void mon_monitor_stop(mon_monitor_t *m);
/* Copies the published snapshot into *out, under a lock held only for the
 * copy; scrapes never wait for the sampling itself. */
void mon_monitor_snapshot(mon_snapshot_t *out, mon_monitor_t *m);
/* 1 when sampling keeps up; else 0 and why (a 503 from /healthz). */
int mon_monitor_healthy(mon_monitor_t *m, char *why, size_t size);
/* Counts one scrape of /metrics (mon_self_t.scrapes_total). */
void mon_monitor_count_scrape(mon_monitor_t *m);

/* ---- otlp.c: the OTLP/HTTP push ---- */

typedef struct mon_otlp mon_otlp_t;
/* Starts the push thread for <endpoint>/v1/metrics, each request timed out
 * after one interval (0.5 s to 10 s); 0, or -1 with the reason in why. */
int mon_otlp_start(mon_otlp_t **out, const char *endpoint, int interval_ms, char *why, size_t size);
/* Hands s to the push thread without waiting on it: s replaces a snapshot
 * still pending (counted as dropped). o NULL: nothing. */
void mon_otlp_offer(mon_otlp_t *o, const mon_snapshot_t *s);
/* The export and drop counters into self (o NULL: left as they are). */
void mon_otlp_counts(mon_otlp_t *o, mon_self_t *self);
/* Stops the thread (after a request in flight) and frees o. */
void mon_otlp_stop(mon_otlp_t *o);

/* ---- http.c: the server ---- */

typedef struct mon_http mon_http_t;
/* Listens on s->listen_host:s->listen_port; 0, or -1 with the reason in
 * why (the port taken, ...). *port: the port bound. */
int mon_http_start(mon_http_t **out, int *port, const mon_settings_t *s, mon_monitor_t *m,
                   char *why, size_t size);
void mon_http_stop(mon_http_t *h);

/* ---- crash.c: a fatal signal's last words ---- */

/* Installs the handler of SIGSEGV, SIGBUS, SIGFPE, SIGILL and SIGABRT: one
 * line (signal, address, thread) and the backtrace to stderr and to the
 * session directory's crash.txt, then the signal's default action. */
void mon_crash_install(const char *gpufl_version);
/* Where crash.txt goes: the current session's directory (after a reopen, the
 * new one). */
void mon_crash_set_dir(const char *session_dir);

/* ---- api.c: /api/v1/gpus ---- */

/* The snapshot's identities and readings as JSON; 0, or -1 past the cap. */
int mon_render_gpus_json(mon_buf_t *out, const mon_snapshot_t *s);

/* Appends n bytes to out, growing it up to out->max; -1 past it. */
int mon_buf_put(mon_buf_t *out, const char *p, size_t n);

#endif
