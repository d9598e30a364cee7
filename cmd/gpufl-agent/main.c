// SPDX-License-Identifier: Apache-2.0
/*
 * main.c - gpufl-agent: ships the sessions of one or more log roots to gpufl-server, each
 * window once, through the library's upload (gpufl_upload_logs_result: the same loop and the
 * same cursor as `gpufl upload` and an application's own upload, so the three never send a
 * window twice). A pass over every root runs at start, whenever inotify reports a new file or
 * a finished write under a root, and every --rescan-s as a fallback (every --live-s while a
 * session runs, to ship its open windows' new lines); its counts are served on /metrics.
 */
#include "agent.h"
#include "flags.h"

#include <gpufl/gpufl.h>

#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define TOOL        "gpufl-agent" /* the messages' first word */
#define ROOTS_MAX   64
#define WATCHES_MAX 4096
#define KEY_MAX     512
#define DEBOUNCE_MS 200

static volatile sig_atomic_t stopping;

static void on_signal(int sig) {
    (void)sig;
    stopping = 1;
}

static void usage(FILE *out) {
    fprintf(out,
            "usage: gpufl-agent --log-path DIR [--log-path DIR ...] [--server URL]\n"
            "                   [--api-key-file FILE] [--once | --exit-when-drained]\n"
            "                   [--rescan-s N] [--live-s N] [--budget-s N]\n"
            "                   [--spool-max-mib N] [--listen ADDR:PORT | none]\n"
            "\n"
            "Ships the sessions under each log root to gpufl-server, each window once\n"
            "(docs/upload.md): at start, when a file appears or is finished under a root\n"
            "(inotify), and every --rescan-s seconds (default 5); the lines of sessions still\n"
            "running every --live-s seconds. What was delivered is kept in each root's\n"
            ".gpufl-upload.json, shared with `gpufl upload` and the applications' own upload.\n"
            "\n"
            "  --log-path DIR         a log root to watch (repeatable; GPUFL_AGENT_LOG_PATH,\n"
            "                         roots separated by ':')\n"
            "  --server URL           gpufl-server (default $GPUFL_BACKEND_URL)\n"
            "  --api-key-file FILE    the key's file, its first line (GPUFL_AGENT_API_KEY_FILE;\n"
            "                         else the key itself in $GPUFL_API_KEY)\n"
            "  --once                 one pass, then exit: 0 all delivered, 1 part, 2 none\n"
            "  --exit-when-drained    exit 0 once every session ended and is delivered\n"
            "  --rescan-s N           seconds between passes without events, 1..3600 (default 5;\n"
            "                         GPUFL_AGENT_RESCAN_S)\n"
            "  --live-s N             while a window is open (a running session), ship its new\n"
            "                         complete lines every N seconds, 0..3600 (default 1; 0:\n"
            "                         sealed windows only; GPUFL_AGENT_LIVE_S)\n"
            "  --budget-s N           the most one pass may spend retrying, 1..3600 (default 60)\n"
            "  --spool-max-mib N      while the server is away: past N MiB not delivered under a\n"
            "                         root, the oldest sealed windows are dropped, each leaving\n"
            "                         a spool_dropped record in its place, counted and logged;\n"
            "                         0..1048576 (default 4096; 0: no bound;\n"
            "                         GPUFL_AGENT_SPOOL_MAX_MIB)\n"
            "  --listen ADDR:PORT     /metrics and /healthz (default 127.0.0.1:9465; none: off;\n"
            "                         GPUFL_AGENT_LISTEN)\n"
            "  --help, --version\n");
}

/* A bad flag or variable: its one line (flags.h), exit status 2. */
static int bad(const char *flag, const char *value, const char *why) {
    cmd_bad(TOOL, flag, value, why);
    return 2;
}

static int parse_seconds(const char *flag, const char *v, int *out) {
    return cmd_parse_int(TOOL, flag, v, 1, 3600, out) ? 2 : 0;
}

static int parse_live(const char *flag, const char *v, int *out) {
    return cmd_parse_int(TOOL, flag, v, 0, 3600, out) ? 2 : 0;
}

typedef struct agent {
    const char *roots[ROOTS_MAX];
    int nroots;
    const char *server;
    char key[KEY_MAX];
    int once, drain, rescan_s, live_s, budget_s, spool_max_mib;
    int open_windows; /* the last pass left windows open: the next comes after live_s */
    const char *listen;
    int inotify_fd;
    int watches;
    agent_stats_t *stats;
} agent_t;

/* Watches dir for new files, renames and finished writes (and, for a root, new sessions). */
static void watch(agent_t *a, const char *dir) {
    if (a->inotify_fd < 0 || a->watches >= WATCHES_MAX) return;
    if (inotify_add_watch(a->inotify_fd, dir,
                          IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_ONLYDIR) >= 0)
        a->watches++;
}

/* A root and its session directories (re-adding a watch is harmless: inotify keeps one). */
static void watch_root(agent_t *a, const char *root) {
    watch(a, root);
    DIR *d = opendir(root);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        char path[PATH_MAX];
        if (e->d_name[0] == '.') continue;
        if (snprintf(path, sizeof path, "%s/%s", root, e->d_name) >= (int)sizeof path) continue;
        struct stat st;
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) watch(a, path);
    }
    if (d) closedir(d);
}

/* One pass over every root. Returns 0 when everything sealed is delivered, 1 otherwise, 2
 * when nothing could be tried. *drained: every session ended and was delivered. */
static int pass(agent_t *a, int *drained) {
    int worst = 0;
    *drained = 1;
    a->open_windows = 0;
    for (int i = 0; i < a->nroots && !stopping; i++) {
        gpufl_upload_options_t o;
        gpufl_upload_options_init(&o);
        o.log_path = a->roots[i];
        o.all = 1;
        o.backend_url = a->server;
        o.api_key = a->key[0] ? a->key : NULL;
        o.budget_ms = (int64_t)a->budget_s * 1000;
        o.tails = a->live_s > 0;
        o.spool_max_bytes = (int64_t)a->spool_max_mib << 20;
        gpufl_upload_result_t r = {.size = sizeof r};
        int rc = gpufl_upload_logs_result(&r, &o);
        if (rc == GPUFL_ENOTFOUND) continue; /* no session under this root yet */
        agent_stats_add(a->stats, &r, rc);
        if (rc < 0) {
            fprintf(stderr, "gpufl-agent: %s: %s\n", a->roots[i], gpufl_last_error());
            worst = 2;
            *drained = 0;
            continue;
        }
        if (r.windows)
            fprintf(stderr, "gpufl-agent: %s: %lld window(s) delivered (%lld records)\n",
                    a->roots[i], (long long)r.windows, (long long)r.events_uploaded);
        if (rc > 0) {
            fprintf(stderr, "gpufl-agent: %s: %lld window(s) not delivered: %s\n", a->roots[i],
                    (long long)(r.errors + r.windows_quarantined), r.error);
            if (worst < 1) worst = r.windows || r.windows_before ? 1 : 2;
        }
        if (rc != 0 || r.windows_open > 0 || r.sessions_completed < r.sessions) *drained = 0;
        if (r.windows_open > 0) a->open_windows = 1;
        if (r.windows_dropped)
            fprintf(stderr,
                    "gpufl-agent: %s: the spool passed %d MiB undelivered: %lld window(s) "
                    "dropped unsent (%lld bytes), each replaced by a spool_dropped record\n",
                    a->roots[i], a->spool_max_mib, (long long)r.windows_dropped,
                    (long long)r.bytes_dropped);
        if (a->inotify_fd >= 0) watch_root(a, a->roots[i]);
    }
    return worst;
}

/* Waits up to timeout_ms for inotify events (then a short quiet time, so that a burst of
 * writes makes one pass). Returns 1 when something changed. */
static int wait_events(agent_t *a, int timeout_ms) {
    if (a->inotify_fd < 0) {
        struct timespec t = {timeout_ms / 1000, (long)(timeout_ms % 1000) * 1000000L};
        nanosleep(&t, NULL);
        return 0;
    }
    struct pollfd p = {a->inotify_fd, POLLIN, 0};
    int got = 0;
    char buf[16384];
    while (!stopping && poll(&p, 1, got ? DEBOUNCE_MS : timeout_ms) > 0) {
        while (read(a->inotify_fd, buf, sizeof buf) > 0) {
        }
        got = 1;
    }
    return got;
}

static int run(agent_t *a) {
    int drained = 0, rc = 0;
    for (;;) {
        rc = pass(a, &drained);
        if (a->once || stopping) return a->once ? rc : 0;
        if (a->drain && drained) {
            fprintf(stderr, "gpufl-agent: every session delivered: exiting\n");
            return 0;
        }
        wait_events(a, a->open_windows && a->live_s > 0 && a->live_s < a->rescan_s
                           ? a->live_s * 1000
                           : a->rescan_s * 1000);
        if (stopping) return 0;
    }
}

int main(int argc, char **argv) {
    enum {
        OPT_LOG = 1,
        OPT_SERVER,
        OPT_KEY,
        OPT_ONCE,
        OPT_DRAIN,
        OPT_RESCAN,
        OPT_BUDGET,
        OPT_LIVE,
        OPT_SPOOL,
        OPT_LISTEN,
        OPT_HELP,
        OPT_VERSION
    };
    static const struct option longs[] = {{"log-path", required_argument, NULL, OPT_LOG},
                                          {"server", required_argument, NULL, OPT_SERVER},
                                          {"api-key-file", required_argument, NULL, OPT_KEY},
                                          {"once", no_argument, NULL, OPT_ONCE},
                                          {"exit-when-drained", no_argument, NULL, OPT_DRAIN},
                                          {"rescan-s", required_argument, NULL, OPT_RESCAN},
                                          {"budget-s", required_argument, NULL, OPT_BUDGET},
                                          {"live-s", required_argument, NULL, OPT_LIVE},
                                          {"spool-max-mib", required_argument, NULL, OPT_SPOOL},
                                          {"listen", required_argument, NULL, OPT_LISTEN},
                                          {"help", no_argument, NULL, OPT_HELP},
                                          {"version", no_argument, NULL, OPT_VERSION},
                                          {NULL, 0, NULL, 0}};
    agent_t a = {.rescan_s = 5,
                 .live_s = 1,
                 .spool_max_mib = 4096,
                 .budget_s = 60,
                 .listen = "127.0.0.1:9465",
                 .inotify_fd = -1};
    const char *key_file = NULL;
    char *env_roots = NULL;
    int opt, rc, listen_given = 0, rescan_given = 0, live_given = 0, spool_given = 0;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "", longs, NULL)) != -1) {
        switch (opt) {
        case OPT_LOG:
            if (a.nroots == ROOTS_MAX) return bad("--log-path", optarg, "too many roots");
            a.roots[a.nroots++] = optarg;
            break;
        case OPT_SERVER: a.server = optarg; break;
        case OPT_KEY: key_file = optarg; break;
        case OPT_ONCE: a.once = 1; break;
        case OPT_DRAIN: a.drain = 1; break;
        case OPT_RESCAN:
            if ((rc = parse_seconds("--rescan-s", optarg, &a.rescan_s))) return rc;
            rescan_given = 1;
            break;
        case OPT_BUDGET:
            if ((rc = parse_seconds("--budget-s", optarg, &a.budget_s))) return rc;
            break;
        case OPT_LIVE:
            if ((rc = parse_live("--live-s", optarg, &a.live_s))) return rc;
            live_given = 1;
            break;
        case OPT_SPOOL:
            if (cmd_parse_int(TOOL, "--spool-max-mib", optarg, 0, 1048576, &a.spool_max_mib))
                return 2;
            spool_given = 1;
            break;
        case OPT_LISTEN:
            a.listen = optarg;
            listen_given = 1;
            break;
        case OPT_HELP: usage(stdout); return 0;
        case OPT_VERSION: printf("gpufl-agent %s\n", gpufl_version()); return 0;
        default:
            fprintf(stderr, "gpufl-agent: unknown or incomplete option '%s' (see --help)\n",
                    argv[optind - 1]);
            return 2;
        }
    }
    if (optind < argc) return bad("argument", argv[optind], "the agent takes options only");
    /* Each flag's variable, where the flag was not given. */
    if (!key_file && getenv("GPUFL_AGENT_API_KEY_FILE") && *getenv("GPUFL_AGENT_API_KEY_FILE"))
        key_file = getenv("GPUFL_AGENT_API_KEY_FILE");
    if (!listen_given && getenv("GPUFL_AGENT_LISTEN") && *getenv("GPUFL_AGENT_LISTEN"))
        a.listen = getenv("GPUFL_AGENT_LISTEN");
    if (!rescan_given && getenv("GPUFL_AGENT_RESCAN_S") &&
        (rc = parse_seconds("GPUFL_AGENT_RESCAN_S", getenv("GPUFL_AGENT_RESCAN_S"), &a.rescan_s)))
        return rc;
    if (!live_given && getenv("GPUFL_AGENT_LIVE_S") &&
        (rc = parse_live("GPUFL_AGENT_LIVE_S", getenv("GPUFL_AGENT_LIVE_S"), &a.live_s)))
        return rc;
    if (!spool_given && getenv("GPUFL_AGENT_SPOOL_MAX_MIB") &&
        cmd_parse_int(TOOL, "GPUFL_AGENT_SPOOL_MAX_MIB", getenv("GPUFL_AGENT_SPOOL_MAX_MIB"), 0,
                      1048576, &a.spool_max_mib))
        return 2;
    if (a.nroots == 0 && getenv("GPUFL_AGENT_LOG_PATH") && *getenv("GPUFL_AGENT_LOG_PATH")) {
        env_roots = strdup(getenv("GPUFL_AGENT_LOG_PATH"));
        for (char *save = NULL, *r = strtok_r(env_roots, ":", &save); r && a.nroots < ROOTS_MAX;
             r = strtok_r(NULL, ":", &save))
            a.roots[a.nroots++] = r;
    }
    if (a.nroots == 0) {
        fprintf(stderr, "gpufl-agent: no log root: give --log-path DIR (see --help)\n");
        return 2;
    }
    if (a.once && a.drain) return bad("--exit-when-drained", "", "--once already exits");
    if (key_file && cmd_read_key(TOOL, key_file, a.key, sizeof a.key) != 0) return 2;
    if (!a.server && !getenv("GPUFL_BACKEND_URL")) {
        fprintf(stderr, "gpufl-agent: no server: give --server URL or set GPUFL_BACKEND_URL\n");
        return 2;
    }
    if (!a.key[0] && !getenv("GPUFL_API_KEY")) {
        fprintf(stderr, "gpufl-agent: no API key: give --api-key-file or set GPUFL_API_KEY\n");
        return 2;
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);
    char why[256];
    if (agent_stats_start(&a.stats, a.once ? "none" : a.listen, why, sizeof why) != 0) {
        fprintf(stderr, "gpufl-agent: %s\n", why);
        free(env_roots);
        return 1;
    }
    if (!a.once) {
        a.inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
        if (a.inotify_fd < 0)
            fprintf(stderr, "gpufl-agent: inotify unavailable (%s): rescanning every %d s\n",
                    strerror(errno), a.rescan_s);
        for (int i = 0; i < a.nroots; i++) watch_root(&a, a.roots[i]);
    }
    rc = run(&a);
    if (a.inotify_fd >= 0) close(a.inotify_fd);
    agent_stats_stop(a.stats);
    memset(a.key, 0, sizeof a.key);
    free(env_roots);
    return rc;
}
