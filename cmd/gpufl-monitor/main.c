// SPDX-License-Identifier: Apache-2.0
/*
 * main.c - gpufl-monitor: flags and their environment variables, signals,
 * and the sampling loop. The main thread is the sampling thread: it waits
 * for a signal at most one interval, then publishes a new snapshot.
 * SIGTERM/SIGINT end the session cleanly (exit 0); SIGHUP reopens the logs.
 */
#include "flags.h"
#include "monitor.h"

#include <gpufl/gpufl.h>

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define EXIT_USAGE 2

#define TOOL "gpufl-monitor" /* the messages' first word */

static void usage(FILE *f) {
    fprintf(
        f,
        "usage: gpufl-monitor [options]\n"
        "Samples every GPU (MIG instances as devices) and the host until SIGTERM or SIGINT,\n"
        "writes gpufl session logs and serves the latest readings over HTTP.\n"
        "\n"
        "  --interval-ms N       sampling period in ms, 10..3600000 (default 1000)\n"
        "  --log-path DIR        directory of session directories (default ./gpufl-monitor.log)\n"
        "  --listen ADDR:PORT    HTTP address (default 127.0.0.1:9464; port 0: any free one;\n"
        "                        'none': no HTTP). Serves /metrics, /healthz, /api/v1/gpus\n"
        "  --window-s N          seal a log window (a new numbered segment of each file) every\n"
        "                        N seconds, 1..86400 (default 10)\n"
        "  --otlp-endpoint URL   push every sample as OTLP/HTTP JSON to URL/v1/metrics\n"
        "                        (http:// or https://)\n"
        "  --dcgm-compat         also serve dcgm-exporter's series names\n"
        "  --help, --version\n"
        "\n"
        "Each flag can also be set by an environment variable, the flag winning:\n"
        "GPUFL_MONITOR_INTERVAL_MS, GPUFL_MONITOR_LOG_PATH, GPUFL_MONITOR_LISTEN,\n"
        "GPUFL_MONITOR_WINDOW_S, GPUFL_MONITOR_OTLP_ENDPOINT, GPUFL_MONITOR_DCGM_COMPAT (1/0).\n"
        "\n"
        "Signals: SIGTERM, SIGINT end the session (exit 0); SIGHUP ends it and starts a new\n"
        "session in a new session directory under the log path (log rotation tools' reopen).\n"
        "Exit status: 0 after a signal, 1 when the session or the listener cannot start (the\n"
        "port taken), 2 for a bad flag.\n");
}

static int parse_bool(const char *what, const char *text, int *out) {
    if (!strcmp(text, "1") || !strcasecmp(text, "true") || !strcasecmp(text, "yes") ||
        !strcasecmp(text, "on"))
        *out = 1;
    else if (!strcmp(text, "0") || !strcasecmp(text, "false") || !strcasecmp(text, "no") ||
             !strcasecmp(text, "off") || !*text)
        *out = 0;
    else
        return cmd_bad(TOOL, what, text, "expected 1 or 0");
    return 0;
}

static int parse_otlp(mon_settings_t *s, const char *text) {
    if (strncmp(text, "http://", 7) != 0 && strncmp(text, "https://", 8) != 0)
        return cmd_bad(TOOL, "--otlp-endpoint", text, "expected an http:// or https:// URL");
    const char *host = strstr(text, "://") + 3;
    if (!*host || *host == '/')
        return cmd_bad(TOOL, "--otlp-endpoint", text, "the URL names no host");
    s->otlp_endpoint = text;
    return 0;
}

enum { OPT_INTERVAL = 256, OPT_LOG_PATH, OPT_LISTEN, OPT_WINDOW, OPT_OTLP, OPT_DCGM, OPT_VERSION };

/* One flag's value, from the command line or its variable. */
static int apply(mon_settings_t *s, int opt, const char *v) {
    switch (opt) {
    case OPT_INTERVAL: return cmd_parse_int(TOOL, "--interval-ms", v, 10, 3600000, &s->interval_ms);
    case OPT_LOG_PATH:
        if (!*v) return cmd_bad(TOOL, "--log-path", v, "empty");
        s->log_path = v;
        return 0;
    case OPT_LISTEN:
        return cmd_parse_listen(TOOL, v, 1, s->listen_host, sizeof s->listen_host, &s->listen_port);
    case OPT_WINDOW: return cmd_parse_int(TOOL, "--window-s", v, 1, 86400, &s->window_s);
    case OPT_OTLP: return parse_otlp(s, v);
    case OPT_DCGM: return parse_bool("GPUFL_MONITOR_DCGM_COMPAT", v, &s->dcgm_compat);
    default: return -1;
    }
}

static int parse_settings(mon_settings_t *s, int argc, char **argv) {
    static const struct option flags[] = {{"interval-ms", required_argument, NULL, OPT_INTERVAL},
                                          {"log-path", required_argument, NULL, OPT_LOG_PATH},
                                          {"listen", required_argument, NULL, OPT_LISTEN},
                                          {"window-s", required_argument, NULL, OPT_WINDOW},
                                          {"otlp-endpoint", required_argument, NULL, OPT_OTLP},
                                          {"dcgm-compat", no_argument, NULL, OPT_DCGM},
                                          {"help", no_argument, NULL, 'h'},
                                          {"version", no_argument, NULL, OPT_VERSION},
                                          {NULL, 0, NULL, 0}};
    static const struct {
        const char *var;
        int opt;
    } vars[] = {
        {"GPUFL_MONITOR_INTERVAL_MS", OPT_INTERVAL}, {"GPUFL_MONITOR_LOG_PATH", OPT_LOG_PATH},
        {"GPUFL_MONITOR_LISTEN", OPT_LISTEN},        {"GPUFL_MONITOR_WINDOW_S", OPT_WINDOW},
        {"GPUFL_MONITOR_OTLP_ENDPOINT", OPT_OTLP},   {"GPUFL_MONITOR_DCGM_COMPAT", OPT_DCGM}};
    memset(s, 0, sizeof *s);
    s->interval_ms = 1000;
    s->window_s = 10;
    snprintf(s->listen_host, sizeof s->listen_host, "127.0.0.1");
    s->listen_port = 9464;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i].var);
        if (v && apply(s, vars[i].opt, v)) return EXIT_USAGE;
    }
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, "h", flags, NULL)) != -1) {
        if (opt == 'h') {
            usage(stdout);
            return 0;
        }
        if (opt == OPT_VERSION) {
            printf("gpufl-monitor %s\n", gpufl_version());
            return 0;
        }
        if (opt == OPT_DCGM) {
            s->dcgm_compat = 1;
            continue;
        }
        if (opt == '?' || opt == ':') {
            const char *arg = argv[optind - 1];
            fprintf(stderr, "gpufl-monitor: %s '%s' (see --help)\n",
                    optopt ? "missing value for" : "unknown flag", arg);
            return EXIT_USAGE;
        }
        if (apply(s, opt, optarg)) return EXIT_USAGE;
    }
    if (optind < argc) {
        fprintf(stderr, "gpufl-monitor: unexpected argument '%s' (see --help)\n", argv[optind]);
        return EXIT_USAGE;
    }
    return -1; /* run */
}

int main(int argc, char **argv) {
    mon_settings_t s;
    int rc = parse_settings(&s, argc, argv);
    if (rc >= 0) return rc;
    mon_crash_install(gpufl_version());

    /* Signals are taken by sigtimedwait below: blocked in every thread,
     * which inherit the mask (the collector's, the HTTP server's). */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    sigaddset(&sigs, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);

    mon_monitor_t *m;
    if (mon_monitor_start(&m, &s)) return 1;
    mon_http_t *http = NULL;
    if (s.listen_host[0]) {
        char why[512];
        int port;
        if (mon_http_start(&http, &port, &s, m, why, sizeof why)) {
            fprintf(stderr, "gpufl-monitor: %s\n", why);
            mon_monitor_stop(m);
            return 1;
        }
        fprintf(stderr, "gpufl-monitor: listening on http://%s:%d/metrics\n", s.listen_host, port);
    }
    char dir[4096];
    if (gpufl_session_dir(dir, sizeof dir) > 0) {
        fprintf(stderr, "gpufl-monitor: logs in %s\n", dir);
        mon_crash_set_dir(dir);
    }

    struct timespec wait = {s.interval_ms / 1000, (long)(s.interval_ms % 1000) * 1000000L};
    rc = 0;
    for (;;) {
        int sig = sigtimedwait(&sigs, NULL, &wait);
        if (sig == SIGTERM || sig == SIGINT) break;
        if (sig == SIGHUP && mon_monitor_reopen(m) != 0) {
            rc = 1;
            break;
        }
        mon_monitor_sample(m);
    }
    mon_http_stop(http);
    mon_monitor_stop(m);
    return rc;
}
