// SPDX-License-Identifier: Apache-2.0
/*
 * main.c - gpufl-server: flags and their GPUFL_SERVER_* variables, the admin subcommands (which
 * need only the database, no HTTP), and the serving loop: the main thread waits for SIGTERM or
 * SIGINT (and runs retention hourly), then stops accepting and drains the requests in flight.
 */
#include "flags.h"
#include "report.h"
#include "server.h"

#include <gpufl/gpufl.h>

#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define EXIT_USAGE     2
#define DRAIN_S        30   /* how long SIGTERM waits for the requests in flight */
#define RETAIN_EVERY_S 3600 /* retention runs at start and then this often */
#define PASSWORD_MAX   1024
#define PASSWORD_MIN   8

#define TOOL "gpufl-server" /* the messages' first word */

static void usage(FILE *f) {
    fprintf(
        f, "usage: gpufl-server [options]\n"
           "       gpufl-server [--db URL] admin workspace create NAME\n"
           "       gpufl-server [--db URL] admin key create --workspace NAME --role ROLE\n"
           "       gpufl-server [--db URL] admin key revoke --workspace NAME PREFIX\n"
           "       gpufl-server [--db URL] admin user create --workspace NAME [--password-file F] "
           "USER\n"
           "Stores the session logs gpufl sends (docs/protocol.md) and answers queries on them.\n"
           "\n"
           "  --listen ADDR:PORT     HTTP address (default 127.0.0.1:8080; port 0: any free one)\n"
           "  --db URL               sqlite:PATH (default sqlite:./gpufl-server.db) or\n"
           "                         postgresql://...\n"
           "  --retention-days N     drop what is older than N days, 1..36500 (default: keep all)\n"
           "  --max-body-mib N       cap of one request body, decompressed, 1..4096 (default 128)\n"
           "  --tls-cert FILE        serve HTTPS with this PEM certificate (and --tls-key)\n"
           "  --tls-key FILE         the certificate's PEM private key\n"
           "  --threads N            HTTP worker threads, 1..256 (default 8)\n"
           "  --max-windows N        windows parsed and stored at once, 1..4096 (default 8);\n"
           "                         more are answered 429 with Retry-After\n"
           "  --quiet-s N            build the report of a session that has had no window for\n"
           "                         N seconds, 1..604800 (default 300)\n"
           "  --cors-origin ORIGIN   let this one origin's pages call the API (default: CORS off)\n"
           "  --web-root DIR         the dashboard's built files, served at / (default\n"
           "                         " GPUFL_WEB_ROOT_DEFAULT ")\n"
           "  --help, --version\n"
           "\n"
           "Each flag can also be set by an environment variable, the flag winning:\n"
           "GPUFL_SERVER_LISTEN, GPUFL_SERVER_DB, GPUFL_SERVER_RETENTION_DAYS,\n"
           "GPUFL_SERVER_MAX_BODY_MIB, GPUFL_SERVER_TLS_CERT, GPUFL_SERVER_TLS_KEY,\n"
           "GPUFL_SERVER_THREADS, GPUFL_SERVER_MAX_WINDOWS, GPUFL_SERVER_QUIET_S,\n"
           "GPUFL_SERVER_CORS_ORIGIN, GPUFL_SERVER_WEB_ROOT.\n"
           "\n"
           "Signals: SIGTERM, SIGINT stop accepting, let the requests in flight finish (up to\n"
           "30 s) and exit 0. Exit status: 1 when the database or the listener cannot start\n"
           "(the port taken), 2 for a bad flag.\n");
}

static int parse_db(gpufl__server_settings_t *s, const char *text) {
    if (strncmp(text, "sqlite:", 7) != 0 && strncmp(text, "postgresql://", 13) != 0 &&
        strncmp(text, "postgres://", 11) != 0)
        return cmd_bad(TOOL, "--db", text, "expected sqlite:PATH or postgresql://...");
    if (!strcmp(text, "sqlite:")) return cmd_bad(TOOL, "--db", text, "no path after sqlite:");
    s->db_url = text;
    return 0;
}

enum {
    OPT_LISTEN = 256,
    OPT_DB,
    OPT_RETENTION,
    OPT_MAX_BODY,
    OPT_TLS_CERT,
    OPT_TLS_KEY,
    OPT_THREADS,
    OPT_MAX_WINDOWS,
    OPT_QUIET,
    OPT_CORS_ORIGIN,
    OPT_WEB_ROOT,
    OPT_VERSION
};

/* One flag's value, from the command line or its variable. */
static int apply(gpufl__server_settings_t *s, int opt, const char *v) {
    int mib;
    switch (opt) {
    case OPT_LISTEN:
        return cmd_parse_listen(TOOL, v, 0, s->listen_host, sizeof s->listen_host, &s->listen_port);
    case OPT_DB: return parse_db(s, v);
    case OPT_RETENTION:
        return cmd_parse_int(TOOL, "--retention-days", v, 1, 36500, &s->retention_days);
    case OPT_MAX_BODY:
        if (cmd_parse_int(TOOL, "--max-body-mib", v, 1, 4096, &mib)) return -1;
        s->max_body_bytes = (int64_t)mib << 20;
        return 0;
    case OPT_TLS_CERT:
        if (!*v) return cmd_bad(TOOL, "--tls-cert", v, "empty");
        s->tls_cert_path = v;
        return 0;
    case OPT_TLS_KEY:
        if (!*v) return cmd_bad(TOOL, "--tls-key", v, "empty");
        s->tls_key_path = v;
        return 0;
    case OPT_THREADS: return cmd_parse_int(TOOL, "--threads", v, 1, 256, &s->threads);
    case OPT_MAX_WINDOWS: return cmd_parse_int(TOOL, "--max-windows", v, 1, 4096, &s->max_windows);
    case OPT_QUIET: return cmd_parse_int(TOOL, "--quiet-s", v, 1, 604800, &s->quiet_s);
    case OPT_CORS_ORIGIN:
        if (strncmp(v, "http://", 7) != 0 && strncmp(v, "https://", 8) != 0)
            return cmd_bad(TOOL, "--cors-origin", v, "expected an origin, http(s)://HOST[:PORT]");
        s->cors_origin = v;
        return 0;
    case OPT_WEB_ROOT:
        if (!*v) return cmd_bad(TOOL, "--web-root", v, "empty");
        s->web_root = v;
        return 0;
    default: return -1;
    }
}

static const struct option flags[] = {{"listen", required_argument, NULL, OPT_LISTEN},
                                      {"db", required_argument, NULL, OPT_DB},
                                      {"retention-days", required_argument, NULL, OPT_RETENTION},
                                      {"max-body-mib", required_argument, NULL, OPT_MAX_BODY},
                                      {"tls-cert", required_argument, NULL, OPT_TLS_CERT},
                                      {"tls-key", required_argument, NULL, OPT_TLS_KEY},
                                      {"threads", required_argument, NULL, OPT_THREADS},
                                      {"max-windows", required_argument, NULL, OPT_MAX_WINDOWS},
                                      {"quiet-s", required_argument, NULL, OPT_QUIET},
                                      {"cors-origin", required_argument, NULL, OPT_CORS_ORIGIN},
                                      {"web-root", required_argument, NULL, OPT_WEB_ROOT},
                                      {"help", no_argument, NULL, 'h'},
                                      {"version", no_argument, NULL, OPT_VERSION},
                                      {NULL, 0, NULL, 0}};

static int unknown_flag(char **argv) {
    fprintf(stderr, "gpufl-server: %s '%s' (see --help)\n",
            optopt ? "missing value for" : "unknown flag", argv[optind - 1]);
    return EXIT_USAGE;
}

/* -1: run (or an admin command at argv[*first]); else the exit status. */
static int parse_settings(gpufl__server_settings_t *s, int argc, char **argv, int *first) {
    static const struct {
        const char *var;
        int opt;
    } vars[] = {{"GPUFL_SERVER_LISTEN", OPT_LISTEN},
                {"GPUFL_SERVER_DB", OPT_DB},
                {"GPUFL_SERVER_RETENTION_DAYS", OPT_RETENTION},
                {"GPUFL_SERVER_MAX_BODY_MIB", OPT_MAX_BODY},
                {"GPUFL_SERVER_TLS_CERT", OPT_TLS_CERT},
                {"GPUFL_SERVER_TLS_KEY", OPT_TLS_KEY},
                {"GPUFL_SERVER_THREADS", OPT_THREADS},
                {"GPUFL_SERVER_MAX_WINDOWS", OPT_MAX_WINDOWS},
                {"GPUFL_SERVER_QUIET_S", OPT_QUIET},
                {"GPUFL_SERVER_CORS_ORIGIN", OPT_CORS_ORIGIN},
                {"GPUFL_SERVER_WEB_ROOT", OPT_WEB_ROOT}};
    memset(s, 0, sizeof *s);
    snprintf(s->listen_host, sizeof s->listen_host, "127.0.0.1");
    s->listen_port = 8080;
    s->db_url = "sqlite:./gpufl-server.db";
    s->max_body_bytes = (int64_t)128 << 20;
    s->threads = 8;
    s->max_windows = 8;
    s->quiet_s = 300;
    s->web_root = GPUFL_WEB_ROOT_DEFAULT;
    for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
        const char *v = getenv(vars[i].var);
        if (v && *v && apply(s, vars[i].opt, v)) return EXIT_USAGE;
    }
    /* A test hook (docs/server.md): makes the 429 bound reachable on demand. */
    const char *delay = getenv("GPUFL_SERVER_TEST_STORE_DELAY_MS");
    if (delay && cmd_parse_int(TOOL, "GPUFL_SERVER_TEST_STORE_DELAY_MS", delay, 0, 60000,
                               &s->store_delay_ms))
        return EXIT_USAGE;
    opterr = 0;
    int opt;
    /* "+": flags end at the first word, so `admin ...` keeps its own flags. */
    while ((opt = getopt_long(argc, argv, "+h", flags, NULL)) != -1) {
        if (opt == 'h') {
            usage(stdout);
            return 0;
        }
        if (opt == OPT_VERSION) {
            printf("gpufl-server %s (wire version %d)\n", gpufl_version(), GPUFL__WIRE_VERSION);
            return 0;
        }
        if (opt == '?' || opt == ':') return unknown_flag(argv);
        if (apply(s, opt, optarg)) return EXIT_USAGE;
    }
    *first = optind;
    if (optind < argc && strcmp(argv[optind], "admin") != 0) {
        fprintf(stderr, "gpufl-server: unexpected argument '%s' (see --help)\n", argv[optind]);
        return EXIT_USAGE;
    }
    if (optind == argc && (!s->tls_cert_path) != (!s->tls_key_path)) {
        fprintf(stderr, "gpufl-server: --tls-cert and --tls-key go together (see --help)\n");
        return EXIT_USAGE;
    }
    return -1;
}

/* ---- admin -------------------------------------------------------------------------------- */

typedef struct admin {
    gpufl__store_t *store;
    const gpufl__store_ops_t *ops;
} admin_t;

static int open_store(admin_t *a, const char *url) {
    int rc = gpufl__store_open(&a->store, &a->ops, url);
    if (rc != 0) {
        fprintf(stderr, "gpufl-server: cannot open the database %s: %s\n", url, gpufl_last_error());
        return 1;
    }
    return 0;
}

static int find_workspace(admin_t *a, int64_t *id, const char *name) {
    int rc = a->ops->workspace_find(a->store, id, name);
    if (rc == GPUFL_ENOTFOUND)
        fprintf(stderr, "gpufl-server: no workspace '%s' (admin workspace create NAME)\n", name);
    else if (rc != 0)
        fprintf(stderr, "gpufl-server: %s\n", gpufl_last_error());
    return rc == 0 ? 0 : 1;
}

/* The admin subcommands' own flags: --workspace, --role, --password-file, --db, --help. */
typedef struct admin_args {
    const char *workspace, *role, *password_file;
    const char *positional;
    int help;
} admin_args_t;

static int need_workspace(const admin_args_t *a, const char *usage_line) {
    if (a->workspace && *a->workspace) return -1;
    fprintf(stderr, "gpufl-server: --workspace NAME is needed (usage: %s)\n", usage_line);
    return EXIT_USAGE;
}

/* -1 to go on, else the exit status (0 after --help). */
static int admin_parse(admin_args_t *out, gpufl__server_settings_t *s, int argc, char **argv,
                       const char *usage_line, int need_positional, int needs_workspace) {
    static const struct option aflags[] = {{"workspace", required_argument, NULL, 'w'},
                                           {"role", required_argument, NULL, 'r'},
                                           {"password-file", required_argument, NULL, 'p'},
                                           {"db", required_argument, NULL, 'd'},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};
    memset(out, 0, sizeof *out);
    optind = 1;
    opterr = 0;
    int opt;
    while ((opt = getopt_long(argc, argv, "+h", aflags, NULL)) != -1) {
        switch (opt) {
        case 'w': out->workspace = optarg; break;
        case 'r': out->role = optarg; break;
        case 'p': out->password_file = optarg; break;
        case 'd':
            if (parse_db(s, optarg)) return EXIT_USAGE;
            break;
        case 'h': printf("usage: gpufl-server [--db URL] %s\n", usage_line); return 0;
        default: return unknown_flag(argv);
        }
    }
    if (need_positional && optind + 1 != argc) {
        fprintf(stderr, "gpufl-server: usage: gpufl-server [--db URL] %s\n", usage_line);
        return EXIT_USAGE;
    }
    if (!need_positional && optind != argc) {
        fprintf(stderr, "gpufl-server: unexpected argument '%s' (usage: %s)\n", argv[optind],
                usage_line);
        return EXIT_USAGE;
    }
    out->positional = need_positional ? argv[optind] : NULL;
    return needs_workspace ? need_workspace(out, usage_line) : -1;
}

/* Opens the database and finds the workspace named (when one is): 0, or 1 with the reason
 * said and nothing left open. */
static int admin_open(admin_t *a, const gpufl__server_settings_t *s, const char *workspace,
                      int64_t *ws) {
    if (open_store(a, s->db_url)) return 1;
    if (!workspace || find_workspace(a, ws, workspace) == 0) return 0;
    a->ops->close(a->store);
    return 1;
}

static int admin_workspace_create(gpufl__server_settings_t *s, int argc, char **argv) {
    const char *u = "admin workspace create NAME";
    admin_args_t args;
    admin_t a;
    int rc = admin_parse(&args, s, argc, argv, u, 1, 0);
    int64_t id;
    if (rc >= 0) return rc;
    if (admin_open(&a, s, NULL, NULL)) return 1;
    rc = a.ops->workspace_create(a.store, &id, args.positional);
    if (rc != 0)
        fprintf(stderr, "gpufl-server: workspace '%s' not created: %s\n", args.positional,
                gpufl_last_error());
    else
        fprintf(stderr, "gpufl-server: workspace '%s' created\n", args.positional);
    a.ops->close(a.store);
    return rc == 0 ? 0 : 1;
}

static int admin_key_create(gpufl__server_settings_t *s, int argc, char **argv) {
    const char *u = "admin key create --workspace NAME --role ingest|read|admin";
    admin_args_t args;
    admin_t a;
    int rc = admin_parse(&args, s, argc, argv, u, 0, 1);
    if (rc >= 0) return rc;
    gpufl__role_t role = args.role ? gpufl__auth_role_parse(args.role) : 0;
    if (!role) {
        cmd_bad(TOOL, "--role", args.role ? args.role : "", "expected ingest, read or admin");
        return EXIT_USAGE;
    }
    int64_t ws, id;
    if (admin_open(&a, s, args.workspace, &ws)) return 1;
    char key[GPUFL__KEY_LEN + 1], prefix[GPUFL__KEY_PREFIX_LEN + 1];
    uint8_t hash[32];
    gpufl__auth_key_generate(key, prefix, hash);
    if (a.ops->key_create(a.store, &id, ws, role, prefix, hash) != 0) {
        fprintf(stderr, "gpufl-server: key not created: %s\n", gpufl_last_error());
        rc = 1;
    } else {
        /* The key is shown this once; the server keeps only its hash. */
        printf("%s\n", key);
        fprintf(stderr, "gpufl-server: %s key %s created in workspace '%s'\n", args.role, prefix,
                args.workspace);
        rc = 0;
    }
    sodium_memzero(key, sizeof key);
    a.ops->close(a.store);
    return rc;
}

static int admin_key_revoke(gpufl__server_settings_t *s, int argc, char **argv) {
    const char *u = "admin key revoke --workspace NAME PREFIX";
    admin_args_t args;
    admin_t a;
    int rc = admin_parse(&args, s, argc, argv, u, 1, 1);
    if (rc >= 0) return rc;
    /* The prefix alone, or with its gpfl_ head. */
    const char *prefix = args.positional;
    if (!strncmp(prefix, "gpfl_", 5)) prefix += 5;
    if (strlen(prefix) < GPUFL__KEY_PREFIX_LEN ||
        (prefix[GPUFL__KEY_PREFIX_LEN] && prefix[GPUFL__KEY_PREFIX_LEN] != '_')) {
        cmd_bad(TOOL, "PREFIX", args.positional, "expected the key's 10-character prefix");
        return EXIT_USAGE;
    }
    char p[GPUFL__KEY_PREFIX_LEN + 1];
    memcpy(p, prefix, GPUFL__KEY_PREFIX_LEN);
    p[GPUFL__KEY_PREFIX_LEN] = '\0';
    int64_t ws;
    if (admin_open(&a, s, args.workspace, &ws)) return 1;
    rc = a.ops->key_revoke(a.store, ws, p);
    if (rc == GPUFL_ENOTFOUND)
        fprintf(stderr, "gpufl-server: no key %s in workspace '%s'\n", p, args.workspace);
    else if (rc != 0)
        fprintf(stderr, "gpufl-server: %s\n", gpufl_last_error());
    else
        fprintf(stderr, "gpufl-server: key %s revoked (refused within %d s by running servers)\n",
                p, GPUFL__KEY_CACHE_S);
    a.ops->close(a.store);
    return rc == 0 ? 0 : 1;
}

/* The first line of a file, or of stdin ("-" or no file): never argv, which others can see. */
static int read_password(char *out, size_t size, const char *path) {
    FILE *f = path && strcmp(path, "-") != 0 ? fopen(path, "r") : stdin;
    if (!f) {
        fprintf(stderr, "gpufl-server: cannot read %s: %s\n", path, strerror(errno));
        return 1;
    }
    if (!fgets(out, (int)size, f)) out[0] = '\0';
    if (f != stdin) fclose(f);
    out[strcspn(out, "\r\n")] = '\0';
    if (strlen(out) < PASSWORD_MIN) {
        fprintf(stderr, "gpufl-server: the password needs at least %d characters\n", PASSWORD_MIN);
        return 1;
    }
    return 0;
}

static int admin_user_create(gpufl__server_settings_t *s, int argc, char **argv) {
    const char *u = "admin user create --workspace NAME [--password-file FILE] USER\n"
                    "(the password: the first line of FILE, or of stdin)";
    admin_args_t args;
    admin_t a;
    int rc = admin_parse(&args, s, argc, argv, u, 1, 1);
    if (rc >= 0) return rc;
    char password[PASSWORD_MAX], hash[crypto_pwhash_STRBYTES];
    if (read_password(password, sizeof password, args.password_file)) return 1;
    rc = gpufl__auth_password_hash(hash, sizeof hash, password);
    sodium_memzero(password, sizeof password);
    if (rc != 0) {
        fprintf(stderr, "gpufl-server: the password could not be hashed (memory)\n");
        return 1;
    }
    int64_t ws, id;
    if (admin_open(&a, s, args.workspace, &ws)) return 1;
    rc = a.ops->user_create(a.store, &id, ws, args.positional, hash);
    if (rc != 0)
        fprintf(stderr, "gpufl-server: user '%s' not created: %s\n", args.positional,
                gpufl_last_error());
    else
        fprintf(stderr, "gpufl-server: user '%s' created in workspace '%s'\n", args.positional,
                args.workspace);
    a.ops->close(a.store);
    return rc == 0 ? 0 : 1;
}

static int admin(gpufl__server_settings_t *s, int argc, char **argv) {
    static const struct {
        const char *object, *verb;
        int (*fn)(gpufl__server_settings_t *s, int argc, char **argv);
    } commands[] = {{"workspace", "create", admin_workspace_create},
                    {"key", "create", admin_key_create},
                    {"key", "revoke", admin_key_revoke},
                    {"user", "create", admin_user_create}};
    if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    for (size_t i = 0; argc >= 3 && i < sizeof commands / sizeof commands[0]; i++)
        if (!strcmp(argv[1], commands[i].object) && !strcmp(argv[2], commands[i].verb))
            return commands[i].fn(s, argc - 2, argv + 2);
    fprintf(stderr, "gpufl-server: unknown admin command '%s%s%s' (see --help)\n",
            argc >= 2 ? argv[1] : "", argc >= 3 ? " " : "", argc >= 3 ? argv[2] : "");
    return EXIT_USAGE;
}

/* ---- serving ------------------------------------------------------------------------------ */

static void retain(gpufl__server_t *srv) {
    if (!srv->settings->retention_days) return;
    if (srv->ops->retain(srv->store, srv->settings->retention_days) != 0)
        fprintf(stderr, "gpufl-server: retention failed: %s\n", gpufl_last_error());
}

static int serve(const gpufl__server_settings_t *s) {
    /* Signals are taken by sigtimedwait below: blocked in every thread, which inherit the mask
     * (libmicrohttpd's, the key flusher's). */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    gpufl__server_t srv = {.settings = s};
    atomic_init(&srv.windows_busy, 0);
    admin_t a;
    if (open_store(&a, s->db_url)) return 1;
    srv.store = a.store;
    srv.ops = a.ops;
    int rc = gpufl__auth_create(&srv.auth, srv.store, srv.ops);
    if (rc == 0 && (rc = gpufl__live_create(&srv.live)) != 0) gpufl__auth_destroy(srv.auth);
    if (rc != 0) {
        fprintf(stderr, "gpufl-server: cannot start: %s\n", gpufl_strerror(rc));
        srv.ops->close(srv.store);
        return 1;
    }
    gpufl__http_t *http;
    char why[512];
    int port;
    if (gpufl__http_start(&http, &port, &srv, why, sizeof why)) {
        fprintf(stderr, "gpufl-server: %s\n", why);
        gpufl__live_destroy(srv.live);
        gpufl__auth_destroy(srv.auth);
        srv.ops->close(srv.store);
        return 1;
    }
    fprintf(stderr, "gpufl-server: listening on %s://%s%s%s:%d/ (database %s)\n",
            s->tls_cert_path ? "https" : "http", strchr(s->listen_host, ':') ? "[" : "",
            s->listen_host, strchr(s->listen_host, ':') ? "]" : "", port,
            strncmp(s->db_url, "sqlite:", 7) == 0 ? s->db_url : "postgresql");
    if (gpufl__reports_start(&srv.reports, &srv) != 0)
        fprintf(stderr, "gpufl-server: the report builder did not start: reports are built "
                        "when asked for\n");
    retain(&srv);
    struct timespec wait = {RETAIN_EVERY_S, 0};
    for (;;) {
        int sig = sigtimedwait(&sigs, NULL, &wait);
        if (sig == SIGTERM || sig == SIGINT) break;
        if (sig < 0 && errno == EAGAIN) retain(&srv);
    }
    fprintf(stderr, "gpufl-server: stopping: draining the requests in flight\n");
    gpufl__http_stop(http, DRAIN_S);
    gpufl__reports_stop(srv.reports);
    gpufl__live_destroy(srv.live);
    gpufl__auth_destroy(srv.auth); /* flushes last_used */
    srv.ops->close(srv.store);
    fprintf(stderr, "gpufl-server: stopped\n");
    return 0;
}

int main(int argc, char **argv) {
    gpufl__server_settings_t s;
    int first = argc;
    int rc = parse_settings(&s, argc, argv, &first);
    if (rc >= 0) return rc;
    if (gpufl__auth_init() != 0) {
        fprintf(stderr, "gpufl-server: libsodium did not initialise\n");
        return 1;
    }
    if (first < argc) return admin(&s, argc - first, argv + first);
    return serve(&s);
}
