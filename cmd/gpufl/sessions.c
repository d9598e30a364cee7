/*
 * sessions.c - `gpufl sessions`: the session directories under a log root,
 * newest first. Also the lookup the other subcommands use (the log root, the
 * latest session). Only each session's device.log header and its last
 * segment's tail are read, so listing a root of large sessions stays quick.
 */
#include "cli.h"

#include <jansson.h>

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define HEADER_LINE_MAX 65536 /* a header line is far shorter */
#define TAIL_BYTES      8192  /* session_end is the last line of the last segment */
#define SEGMENTS_MAX    100000

const char *cli_default_root(char *buf, size_t size) {
    const char *path = getenv("GPUFL_LOG_PATH");
    const char *app = getenv("GPUFL_APP_NAME");
    if (path && *path)
        snprintf(buf, size, "%s", path);
    else
        snprintf(buf, size, "%s.log", app && *app ? app : "gpufl");
    return buf;
}

static int is_file(const char *dir, const char *name) {
    char path[CLI_PATH_MAX];
    struct stat st;
    if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path) return 0;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

int cli_is_session_dir(const char *dir) {
    return is_file(dir, "device.log") || is_file(dir, "scope.log");
}

/* Reads the header (first line) of path into s. */
static void read_header(const char *path, cli_session_t *s) {
    FILE *f = fopen(path, "rb");
    if (!f) return;
    char *line = malloc(HEADER_LINE_MAX);
    if (line && fgets(line, HEADER_LINE_MAX, f)) {
        json_t *h = json_loads(line, JSON_DECODE_ANY, NULL);
        json_t *app = json_object_get(h, "app_name");
        json_t *epoch = json_object_get(h, "epoch_unix_us");
        if (json_is_string(app))
            snprintf(s->app_name, sizeof s->app_name, "%s", json_string_value(app));
        if (json_is_integer(epoch)) s->epoch_unix_us = json_integer_value(epoch);
        json_decref(h);
    }
    free(line);
    fclose(f);
}

/* The duration from the session_end line at the end of path, if any. */
static void read_end(const char *path, cli_session_t *s) {
    char buf[TAIL_BYTES + 1];
    FILE *f = fopen(path, "rb");
    if (!f) return;
    long start = 0;
    if (fseek(f, 0, SEEK_END) == 0) {
        long end = ftell(f);
        start = end > TAIL_BYTES ? end - TAIL_BYTES : 0;
    }
    size_t n = fseek(f, start, SEEK_SET) == 0 ? fread(buf, 1, TAIL_BYTES, f) : 0;
    fclose(f);
    buf[n] = '\0';
    char *at = NULL;
    for (char *p = buf; (p = strstr(p, "\"type\":\"session_end\"")) != NULL; p++) at = p;
    if (!at) return;
    while (at > buf && at[-1] != '\n') at--;
    char *nl = strchr(at, '\n');
    if (nl) *nl = '\0';
    json_t *e = json_loads(at, JSON_DECODE_ANY, NULL);
    json_t *d = json_object_get(e, "duration_ns");
    if (!json_is_integer(d)) d = json_object_get(e, "ts_ns");
    if (json_is_integer(d)) s->duration_ns = json_integer_value(d);
    json_decref(e);
}

static uint64_t dir_size(const char *dir) {
    uint64_t total = 0;
    DIR *d = opendir(dir);
    if (!d) return 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;) {
        char path[CLI_PATH_MAX];
        struct stat st;
        if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) >= sizeof path) continue;
        if (stat(path, &st) == 0 && S_ISREG(st.st_mode)) total += (uint64_t)st.st_size;
    }
    closedir(d);
    return total;
}

static void describe(cli_session_t *s) {
    char seg[CLI_PATH_MAX + 32];
    s->epoch_unix_us = -1;
    s->duration_ns = -1;
    const char *first = is_file(s->path, "device.log") ? "device.log" : "scope.log";
    snprintf(seg, sizeof seg, "%s/%s", s->path, first);
    read_header(seg, s);
    /* The last segment: device.log, device.log.1, ... as long as they exist. */
    char name[64];
    int last = 0;
    for (int i = 1; i < SEGMENTS_MAX; i++) {
        snprintf(name, sizeof name, "%s.%d", first, i);
        if (!is_file(s->path, name)) break;
        last = i;
    }
    if (last > 0) snprintf(seg, sizeof seg, "%s/%s.%d", s->path, first, last);
    read_end(seg, s);
    s->size_bytes = dir_size(s->path);
}

static int newest_first(const void *a, const void *b) {
    const cli_session_t *x = a, *y = b;
    if (x->epoch_unix_us != y->epoch_unix_us) return x->epoch_unix_us < y->epoch_unix_us ? 1 : -1;
    return -strcmp(x->name, y->name); /* session ids sort by start time */
}

int cli_sessions_list(const char *root, cli_session_t **out, size_t *count) {
    cli_session_t *list = NULL;
    size_t n = 0, alloc = 0;
    *out = NULL;
    *count = 0;
    DIR *d = opendir(root);
    if (!d) {
        fprintf(stderr, "gpufl: cannot read log root '%s': %s\n", root, strerror(errno));
        return CLI_FAILED;
    }
    for (struct dirent *e; (e = readdir(d)) != NULL && n < CLI_SESSIONS_MAX;) {
        char path[CLI_PATH_MAX];
        if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof list->name) continue;
        if ((size_t)snprintf(path, sizeof path, "%s/%s", root, e->d_name) >= sizeof path) continue;
        if (!cli_is_session_dir(path)) continue;
        if (n == alloc) {
            size_t grow = alloc ? alloc * 2 : 16;
            cli_session_t *bigger = realloc(list, grow * sizeof *list);
            if (!bigger) {
                fprintf(stderr, "gpufl: out of memory listing '%s'\n", root);
                free(list);
                closedir(d);
                return CLI_FAILED;
            }
            list = bigger;
            alloc = grow;
        }
        cli_session_t *s = &list[n++];
        memset(s, 0, sizeof *s);
        snprintf(s->name, sizeof s->name, "%s", e->d_name);
        snprintf(s->path, sizeof s->path, "%s", path);
        describe(s);
    }
    closedir(d);
    if (n > 1) qsort(list, n, sizeof *list, newest_first);
    *out = list;
    *count = n;
    return CLI_OK;
}

static void format_start(int64_t unix_us, char *buf, size_t size) {
    if (unix_us < 0) {
        snprintf(buf, size, "-");
        return;
    }
    time_t secs = (time_t)(unix_us / 1000000);
    struct tm tm;
    gmtime_r(&secs, &tm);
    strftime(buf, size, "%Y-%m-%d %H:%M:%S", &tm);
}

static void format_duration(int64_t ns, char *buf, size_t size) {
    if (ns < 0)
        snprintf(buf, size, "running or died");
    else if (ns < 60 * (int64_t)1000000000)
        snprintf(buf, size, "%.3f s", (double)ns / 1e9);
    else
        snprintf(buf, size, "%dh%02dm%02ds", (int)(ns / 3600000000000),
                 (int)(ns / 60000000000 % 60), (int)(ns / 1000000000 % 60));
}

static void format_size(uint64_t bytes, char *buf, size_t size) {
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024 && u < 4) v /= 1024, u++;
    if (u == 0)
        snprintf(buf, size, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, size, "%.1f %s", v, units[u]);
}

int cli_sessions(int argc, char **argv) {
    const char *root = NULL;
    char def[CLI_PATH_MAX];
    for (int i = 1; i < argc; i++) {
        if (cli_is_help(argv[i])) {
            cli_print_usage("sessions", stdout);
            return CLI_OK;
        }
        if (argv[i][0] == '-' && argv[i][1] != '\0')
            return cli_usage_error("sessions", "unknown option '%s'", argv[i]);
        if (root) return cli_usage_error("sessions", "more than one ROOT given");
        root = argv[i];
    }
    if (!root) root = cli_default_root(def, sizeof def);

    cli_session_t *list;
    size_t n;
    int rc = cli_sessions_list(root, &list, &n);
    if (rc) return rc;
    if (n == 0) {
        printf("no sessions found under '%s'\n", root);
        free(list);
        return CLI_OK;
    }
    int width = (int)strlen("SESSION");
    for (size_t i = 0; i < n; i++)
        if ((int)strlen(list[i].name) > width) width = (int)strlen(list[i].name);
    printf("%s%-*s  %-19s  %-16s  %-15s  %s%s\n", cli_bold(stdout), width, "SESSION", "START (UTC)",
           "APP", "DURATION", "SIZE", cli_reset(stdout));
    for (size_t i = 0; i < n; i++) {
        char start[32], duration[32], size[32];
        format_start(list[i].epoch_unix_us, start, sizeof start);
        format_duration(list[i].duration_ns, duration, sizeof duration);
        format_size(list[i].size_bytes, size, sizeof size);
        printf("%-*s  %-19s  %-16s  %-15s  %s\n", width, list[i].name, start,
               *list[i].app_name ? list[i].app_name : "-", duration, size);
    }
    free(list);
    return CLI_OK;
}

static int is_directory(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

int cli_resolve_session(const char *arg, char *dir, size_t size) {
    char root[CLI_PATH_MAX];
    cli_default_root(root, sizeof root);
    if (arg == NULL) {
        cli_session_t *list;
        size_t n;
        if (!is_directory(root)) {
            fprintf(stderr,
                    "gpufl: no session found: log root '%s' does not exist (set GPUFL_LOG_PATH "
                    "or name a session directory)\n",
                    root);
            return CLI_FAILED;
        }
        int rc = cli_sessions_list(root, &list, &n);
        if (rc) return rc;
        if (n == 0) {
            fprintf(stderr, "gpufl: no session found under '%s'\n", root);
            free(list);
            return CLI_FAILED;
        }
        snprintf(dir, size, "%s", list[0].path);
        free(list);
        return CLI_OK;
    }
    if (is_directory(arg)) {
        if (!cli_is_session_dir(arg)) {
            fprintf(stderr, "gpufl: '%s' is not a session directory (no device.log or scope.log)\n",
                    arg);
            return CLI_FAILED;
        }
        snprintf(dir, size, "%s", arg);
        return CLI_OK;
    }
    if (strchr(arg, '/') == NULL && (size_t)snprintf(dir, size, "%s/%s", root, arg) < size &&
        is_directory(dir) && cli_is_session_dir(dir))
        return CLI_OK;
    fprintf(stderr, "gpufl: no such session: '%s' (neither a directory nor a session under '%s')\n",
            arg, root);
    return CLI_FAILED;
}
