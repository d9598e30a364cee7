// SPDX-License-Identifier: Apache-2.0
/*
 * upload.c - gpufl_upload_logs(): which sessions, which server and which key (the call's
 * options, then GPUFL_BACKEND_URL / GPUFL_API_KEY / GPUFL_API_PATH, then what the last
 * session's init resolved), handed to the upload module (lib/net/upload.c).
 */
#include "core/session.h"
#include "net/upload.h"
#include "util/error.h"
#include "util/log.h"

#include <dirent.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Whether the caller's struct (its size) holds field. */
#define HAS(o, field)                                                                              \
    ((o) && (o)->size >= offsetof(gpufl_upload_options_t, field) + sizeof((o)->field))

void gpufl_upload_options_init_sized(gpufl_upload_options_t *opts, size_t size) {
    if (size > sizeof *opts) size = sizeof *opts;
    if (size < sizeof opts->size) return;
    memset(opts, 0, size); /* only the caller's part: an older struct is shorter */
    opts->size = size;
}

static const char *pick(const char *given, const char *env, const char *from_init) {
    if (given && *given) return given;
    const char *e = getenv(env);
    if (e && *e) return e;
    return from_init && *from_init ? from_init : NULL;
}

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* A session directory holds one of the channel files. */
static int is_session_dir(const char *path) {
    static const char *const files[] = {"device.log", "scope.log", "system.log"};
    char p[4200];
    for (size_t i = 0; i < 3; i++)
        if (snprintf(p, sizeof p, "%s/%s", path, files[i]) < (int)sizeof p && access(p, F_OK) == 0)
            return 1;
    return 0;
}

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The session directories under root, sorted by name (ids sort by start time). */
static int list_sessions(char ***out, size_t *n, const char *root) {
    *out = NULL;
    *n = 0;
    DIR *d = opendir(root);
    if (!d) return gpufl__set_error(GPUFL_ENOTFOUND, "upload: cannot read the log root %s", root);
    struct dirent *e;
    size_t cap = 0;
    int rc = 0;
    while (rc == 0 && (e = readdir(d)) != NULL) {
        char path[4096];
        if (e->d_name[0] == '.') continue;
        if (snprintf(path, sizeof path, "%s/%s", root, e->d_name) >= (int)sizeof path ||
            !is_dir(path) || !is_session_dir(path))
            continue;
        if (*n == cap) {
            cap = cap ? cap * 2 : 16;
            char **grown = realloc(*out, cap * sizeof *grown);
            if (!grown) {
                rc = gpufl__set_error(GPUFL_ENOMEM, "upload: out of memory");
                break;
            }
            *out = grown;
        }
        if (!((*out)[*n] = strdup(path)))
            rc = gpufl__set_error(GPUFL_ENOMEM, "upload: out of memory");
        else
            (*n)++;
    }
    closedir(d);
    if (*n) qsort(*out, *n, sizeof **out, by_name);
    return rc;
}

static void parent_of(char *root, size_t size, const char *dir) {
    snprintf(root, size, "%s", dir);
    size_t len = strlen(root);
    while (len > 1 && root[len - 1] == '/') root[--len] = '\0';
    char *slash = strrchr(root, '/');
    if (slash == root)
        root[1] = '\0';
    else if (slash)
        *slash = '\0';
    else
        snprintf(root, size, ".");
}

static void fill(gpufl_upload_result_t *out, const gpufl__net_upload_result_t *r, int rc) {
    if (!out || out->size < offsetof(gpufl_upload_result_t, error) + sizeof out->error) return;
    size_t size = out->size;
    memset(out, 0, sizeof *out < size ? sizeof *out : size);
    out->size = size;
    out->success = rc == 0;
    out->events_uploaded = r->rows;
    out->windows = r->windows_sent + r->windows_duplicate;
    out->windows_duplicate = r->windows_duplicate;
    out->windows_before = r->windows_before;
    out->windows_open = r->windows_open;
    out->windows_quarantined = r->windows_quarantined;
    out->bytes = r->bytes;
    out->errors = r->windows_failed;
    out->retries = r->retries;
    out->sessions = r->sessions;
    out->sessions_completed = r->sessions_completed;
    snprintf(out->error, sizeof out->error, "%s", r->error[0] ? r->error : "");
    if (size >= offsetof(gpufl_upload_result_t, lines_damaged) + sizeof out->lines_damaged) {
        out->lines_damaged = r->lines_damaged;
        out->slices = r->slices_sent;
        out->windows_dropped = r->windows_dropped;
        out->bytes_dropped = r->bytes_dropped;
        out->spool_bytes = r->spool_bytes;
    }
}

int gpufl_upload_logs_result(gpufl_upload_result_t *out, const gpufl_upload_options_t *opts) {
    gpufl__net_upload_result_t r;
    memset(&r, 0, sizeof r);
    fill(out, &r, 0);
    if (gpufl__session_disabled()) return GPUFL_EDISABLED; /* switched off: nothing to send */
    if (gpufl_is_active())
        return gpufl__set_error(GPUFL_EINVAL, "upload: a session is running: upload after "
                                              "gpufl_shutdown() (all network I/O runs then)");
    char url[2048] = "", key[512] = "", path[256] = "", last[4096] = "";
    gpufl__session_upload_defaults(url, sizeof url, key, sizeof key, path, sizeof path);
    gpufl__net_upload_options_t o = {0};
    o.base_url = pick(HAS(opts, backend_url) ? opts->backend_url : NULL, "GPUFL_BACKEND_URL", url);
    o.api_key = pick(HAS(opts, api_key) ? opts->api_key : NULL, "GPUFL_API_KEY", key);
    o.api_path = pick(HAS(opts, api_path) ? opts->api_path : NULL, "GPUFL_API_PATH", path);
    o.budget_ms = HAS(opts, budget_ms) ? opts->budget_ms : 0;
    o.timeout_ms = HAS(opts, timeout_ms) ? opts->timeout_ms : 0;
    o.tails = HAS(opts, tails) && opts->tails;
    o.spool_max_bytes = HAS(opts, spool_max_bytes) ? opts->spool_max_bytes : 0;
    if (!o.base_url)
        return gpufl__set_error(GPUFL_EINVAL, "upload: no server: set backend_url (or "
                                              "GPUFL_BACKEND_URL)");
    if (!o.api_key)
        return gpufl__set_error(GPUFL_EINVAL, "upload: no API key: set api_key (or GPUFL_API_KEY)");

    const char *log_path =
        HAS(opts, log_path) && opts->log_path && *opts->log_path ? opts->log_path : NULL;
    const char *session =
        HAS(opts, session) && opts->session && *opts->session ? opts->session : NULL;
    int all = HAS(opts, all) && opts->all;
    char root[4096], one[4200];
    char **dirs = NULL;
    size_t n = 0;
    int rc = 0;
    if (session && is_dir(session) && is_session_dir(session)) {
        snprintf(one, sizeof one, "%s", session); /* a session directory */
        parent_of(root, sizeof root, one);
    } else if (log_path) {
        snprintf(root, sizeof root, "%s", log_path);
        if (session) snprintf(one, sizeof one, "%s/%s", log_path, session);
    } else if (gpufl_session_dir(last, sizeof last) > 0) {
        parent_of(root, sizeof root, last);
        snprintf(one, sizeof one, "%s", session ? session : last);
        if (session) snprintf(one, sizeof one, "%s/%s", root, session);
    } else {
        return gpufl__set_error(GPUFL_ENOTFOUND,
                                "upload: which logs? no session ran in this process: set "
                                "log_path (or session)");
    }
    const char *pick_one[1] = {one};
    if (session || (!log_path && !all)) {
        if (!is_dir(one))
            return gpufl__set_error(GPUFL_ENOTFOUND, "upload: no session directory %s", one);
        rc = gpufl__net_upload(&r, &o, root, pick_one, 1);
    } else {
        rc = list_sessions(&dirs, &n, root);
        if (rc == 0 && n == 0)
            rc = gpufl__set_error(GPUFL_ENOTFOUND, "upload: no session under %s", root);
        if (rc == 0)
            rc = all ? gpufl__net_upload(&r, &o, root, (const char *const *)dirs, n)
                     : gpufl__net_upload(&r, &o, root, (const char *const *)&dirs[n - 1], 1);
        for (size_t i = 0; i < n; i++) free(dirs[i]);
        free(dirs);
    }
    fill(out, &r, rc);
    if (rc > 0) {
        gpufl__set_error(GPUFL_EIO, "%s", r.error[0] ? r.error : "upload: not everything was sent");
        gpufl__warn("%s", gpufl_last_error());
    }
    return rc;
}

int gpufl_upload_logs(const gpufl_upload_options_t *opts) {
    return gpufl_upload_logs_result(NULL, opts);
}
