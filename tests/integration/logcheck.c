// SPDX-License-Identifier: Apache-2.0
/*
 * logcheck.c - the log reader of the integration tests (see logcheck.h). Independent of the
 * library's own reader on purpose: it checks the files against docs/log-format.md directly.
 */
#include "logcheck.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *const lc_file_names[LC_NFILES] = {"device.log", "scope.log", "system.log"};
static const char *const file_stems[LC_NFILES] = {"device", "scope", "system"};

char *lc_read(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    char *buf = NULL;
    size_t n = 0, cap = 0, got;
    if (!f) return NULL;
    do {
        if (cap - n < 65536) {
            char *bigger = realloc(buf, cap = cap * 2 + 65536);
            if (!bigger) {
                free(buf);
                fclose(f);
                return NULL;
            }
            buf = bigger;
        }
        got = fread(buf + n, 1, cap - n - 1, f);
        n += got;
    } while (got > 0);
    fclose(f);
    buf[n] = '\0';
    if (len) *len = n;
    return buf;
}

int lc_mkdir_p(const char *path) {
    char tmp[4096];
    size_t n = strlen(path);
    if (n == 0 || n >= sizeof tmp) return -1;
    memcpy(tmp, path, n + 1);
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/') continue;
        *p = '\0';
        if (mkdir(tmp, 0755) != 0 && errno != EEXIST) return -1;
        *p = '/';
    }
    return mkdir(tmp, 0755) != 0 && errno != EEXIST ? -1 : 0;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path) != 0 ? -1 : 0;
}

int lc_rm_rf(const char *path) {
    struct stat st;
    if (lstat(path, &st) != 0) return errno == ENOENT ? 0 : -1;
    return nftw(path, remove_one, 16, FTW_DEPTH | FTW_PHYS);
}

int lc_only_session(const char *log_path, char *out, size_t size) {
    DIR *d = opendir(log_path);
    struct dirent *e;
    int n = 0;
    if (!d) return -1;
    while ((e = readdir(d)) != NULL) {
        char path[4096];
        struct stat st;
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        snprintf(path, sizeof path, "%s/%s", log_path, e->d_name);
        if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode)) continue;
        if (n++ == 0) snprintf(out, size, "%s", path);
    }
    closedir(d);
    return n == 1 ? 0 : -1;
}

/* ------------------------------------------------------------------ JSON prefixes */

enum { SCAN_BAD = 0, SCAN_DONE = 1, SCAN_EOF = 2 };

/* A string starting at t[*i] == '"'. */
static int scan_string(const char *t, size_t len, size_t *i) {
    size_t p = *i + 1;
    while (p < len) {
        unsigned char c = (unsigned char)t[p];
        if (c == '"') {
            *i = p + 1;
            return SCAN_DONE;
        }
        if (c < 0x20) return SCAN_BAD;
        if (c == '\\') {
            if (++p == len) return SCAN_EOF;
            if (t[p] == 'u') {
                for (int k = 0; k < 4; k++) {
                    if (++p == len) return SCAN_EOF;
                    if (!isxdigit((unsigned char)t[p])) return SCAN_BAD;
                }
            } else if (t[p] == '\0' || !strchr("\"\\/bfnrt", t[p])) {
                return SCAN_BAD;
            }
        }
        p++;
    }
    return SCAN_EOF;
}

static size_t digits(const char *t, size_t len, size_t p) {
    while (p < len && isdigit((unsigned char)t[p])) p++;
    return p;
}

/* A number: -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)? */
static int scan_number(const char *t, size_t len, size_t *i) {
    size_t p = *i;
    if (t[p] == '-' && ++p == len) return SCAN_EOF;
    if (t[p] == '0')
        p++;
    else if (isdigit((unsigned char)t[p]))
        p = digits(t, len, p);
    else
        return SCAN_BAD;
    if (p == len) return SCAN_EOF;
    if (t[p] == '.') {
        if (++p == len) return SCAN_EOF;
        if (!isdigit((unsigned char)t[p])) return SCAN_BAD;
        if ((p = digits(t, len, p)) == len) return SCAN_EOF;
    }
    if (t[p] == 'e' || t[p] == 'E') {
        if (++p == len) return SCAN_EOF;
        if ((t[p] == '+' || t[p] == '-') && ++p == len) return SCAN_EOF;
        if (!isdigit((unsigned char)t[p])) return SCAN_BAD;
        if ((p = digits(t, len, p)) == len) return SCAN_EOF;
    }
    *i = p;
    return SCAN_DONE;
}

static int scan_literal(const char *t, size_t len, size_t *i) {
    static const char *const words[] = {"true", "false", "null"};
    for (int k = 0; k < 3; k++) {
        size_t n = strlen(words[k]), m = len - *i < n ? len - *i : n;
        if (memcmp(t + *i, words[k], m) != 0) continue;
        if (m < n) return SCAN_EOF;
        *i += n;
        return SCAN_DONE;
    }
    return SCAN_BAD;
}

int lc_json_prefix_ok(const char *t, size_t len) {
    enum { VALUE, VALUE_OR_CLOSE, KEY, KEY_OR_CLOSE, COLON, COMMA_OR_CLOSE, DONE } want = VALUE;
    char stack[512];
    size_t depth = 0, i = 0;
    while (i < len) {
        char c = t[i];
        int r;
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
            i++;
            continue;
        }
        if (want == DONE) return 0;
        if (want == COLON) {
            if (c != ':') return 0;
            i++;
            want = VALUE;
            continue;
        }
        if ((c == '}' && (want == KEY_OR_CLOSE || want == COMMA_OR_CLOSE) &&
             stack[depth - 1] == '{') ||
            (c == ']' && (want == VALUE_OR_CLOSE || want == COMMA_OR_CLOSE) &&
             stack[depth - 1] == '[')) {
            depth--;
            i++;
            want = depth ? COMMA_OR_CLOSE : DONE;
            continue;
        }
        if (want == COMMA_OR_CLOSE) {
            if (c != ',') return 0;
            i++;
            want = stack[depth - 1] == '{' ? KEY : VALUE;
            continue;
        }
        if (want == KEY || want == KEY_OR_CLOSE) {
            if (c != '"') return 0;
            r = scan_string(t, len, &i);
            if (r != SCAN_DONE) return r == SCAN_EOF;
            want = COLON;
            continue;
        }
        /* a value */
        if (c == '{' || c == '[') {
            if (depth == sizeof stack) return 0;
            stack[depth++] = c;
            i++;
            want = c == '{' ? KEY_OR_CLOSE : VALUE_OR_CLOSE;
            continue;
        }
        if (c == '"')
            r = scan_string(t, len, &i);
        else if (c == '-' || isdigit((unsigned char)c))
            r = scan_number(t, len, &i);
        else
            r = scan_literal(t, len, &i);
        if (r != SCAN_DONE) return r == SCAN_EOF;
        want = depth ? COMMA_OR_CLOSE : DONE;
    }
    return 1;
}

/* ------------------------------------------------------------------ summaries */

typedef struct ids {
    long long *v;
    size_t n, cap;
} ids_t;

static int ids_push(ids_t *a, long long x) {
    if (a->n == a->cap) {
        long long *bigger = realloc(a->v, (a->cap = a->cap * 2 + 256) * sizeof *a->v);
        if (!bigger) return -1;
        a->v = bigger;
    }
    a->v[a->n++] = x;
    return 0;
}

static int cmp_ll(const void *a, const void *b) {
    long long x = *(const long long *)a, y = *(const long long *)b;
    return (x > y) - (x < y);
}

static size_t count_unmatched(ids_t *b, ids_t *e) {
    size_t i = 0, j = 0, bad = 0;
    qsort(b->v, b->n, sizeof *b->v, cmp_ll);
    qsort(e->v, e->n, sizeof *e->v, cmp_ll);
    while (i < b->n || j < e->n) {
        long long id = i < b->n && (j >= e->n || b->v[i] <= e->v[j]) ? b->v[i] : e->v[j];
        size_t nb = 0, ne = 0;
        while (i < b->n && b->v[i] == id) i++, nb++;
        while (j < e->n && e->v[j] == id) j++, ne++;
        if (nb != 1 || ne != 1) bad++;
    }
    return bad;
}

/* Column `key` of a batch record, an array; NULL (and a message) if not. */
static json_t *column(json_t *rec, const char *key, const char *where) {
    json_t *a = json_object_get(rec, key);
    if (!json_is_array(a)) fprintf(stderr, "%s: batch column '%s' missing\n", where, key);
    return json_is_array(a) ? a : NULL;
}

static int take_line(lc_summary_t *s, int f, json_t *rec, const char *where, json_t *dict,
                     ids_t *begins, ids_t *ends) {
    const char *type = json_string_value(json_object_get(rec, "type"));
    if (strcmp(type, "session_end") == 0) s->session_ends[f]++;
    if (strcmp(type, "header") == 0 && f == LC_SCOPE)
        s->header_pid = json_integer_value(json_object_get(rec, "pid"));
    if (strcmp(type, "dict") == 0) {
        json_t *id = column(rec, "id", where), *str = column(rec, "str", where);
        if (!id || !str || json_array_size(id) != json_array_size(str)) return -1;
        for (size_t k = 0; k < json_array_size(id); k++) {
            char key[32];
            snprintf(key, sizeof key, "%lld", (long long)json_integer_value(json_array_get(id, k)));
            json_object_set(dict, key, json_array_get(str, k));
        }
    } else if (strcmp(type, "scope_begin") == 0) {
        json_t *id = column(rec, "id", where), *name = column(rec, "name", where),
               *depth = column(rec, "depth", where);
        if (!id || !name || !depth || json_array_size(id) != json_array_size(name) ||
            json_array_size(id) != json_array_size(depth))
            return -1;
        for (size_t k = 0; k < json_array_size(id); k++) {
            long long d = json_integer_value(json_array_get(depth, k));
            if (d > s->max_depth) s->max_depth = d;
            char key[32];
            snprintf(key, sizeof key, "%lld",
                     (long long)json_integer_value(json_array_get(name, k)));
            const char *n = json_string_value(json_object_get(dict, key));
            if (!n) {
                fprintf(stderr, "%s: name id %s is not defined by an earlier dict line\n", where,
                        key);
                return -1;
            }
            json_t *count = json_object_get(s->scope_counts, n);
            json_object_set_new(s->scope_counts, n,
                                json_integer(count ? json_integer_value(count) + 1 : 1));
            if (ids_push(begins, json_integer_value(json_array_get(id, k)))) return -1;
            s->begins++;
        }
    } else if (strcmp(type, "scope_end") == 0) {
        json_t *id = column(rec, "id", where), *implicit = column(rec, "implicit", where);
        if (!id || !implicit || json_array_size(id) != json_array_size(implicit)) return -1;
        for (size_t k = 0; k < json_array_size(id); k++) {
            if (ids_push(ends, json_integer_value(json_array_get(id, k)))) return -1;
            s->implicit_ends += json_integer_value(json_array_get(implicit, k)) != 0;
            s->ends++;
        }
    } else if (strcmp(type, "system_start") == 0 || strcmp(type, "system_stop") == 0) {
        json_array_append(s->system_records, rec);
    }
    return 0;
}

static int summarize_file(const char *dir, int f, int allow_truncated, lc_summary_t *s,
                          json_t *dict, ids_t *begins, ids_t *ends) {
    char path[4096], where[4200];
    size_t len, line_no = 0;
    char *text;
    const char *p, *last_type = "";
    int rc = 0;

    snprintf(path, sizeof path, "%s/%s", dir, lc_file_names[f]);
    text = lc_read(path, &len);
    if (!text) {
        fprintf(stderr, "%s: cannot read\n", path);
        return -1;
    }
    for (p = text; rc == 0 && p < text + len;) {
        const char *nl = memchr(p, '\n', (size_t)(text + len - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(text + len - p);
        json_error_t err;
        json_t *rec;
        line_no++;
        snprintf(where, sizeof where, "%s:%zu", path, line_no);
        if (!nl) { /* the tail, cut short by a kill */
            if (!allow_truncated) {
                fprintf(stderr, "%s: the last line has no newline\n", where);
                rc = -1;
            } else if (!lc_json_prefix_ok(p, n) || p[0] != '{') {
                fprintf(stderr, "%s: the last line is not the start of a JSON object: %.80s\n",
                        where, p);
                rc = -1;
            }
            s->truncated[f] = 1;
            break;
        }
        rec = json_loadb(p, n, JSON_REJECT_DUPLICATES, &err);
        if (!rec || !json_is_object(rec) || !json_is_string(json_object_get(rec, "type")) ||
            !json_is_integer(json_object_get(rec, "v"))) {
            fprintf(stderr, "%s: not a JSON object with type and v (%s): %.80s\n", where,
                    rec ? "wrong shape" : err.text, p);
            json_decref(rec);
            rc = -1;
            break;
        }
        if (line_no == 1 &&
            (strcmp(json_string_value(json_object_get(rec, "type")), "header") != 0 ||
             !json_is_string(json_object_get(rec, "file")) ||
             strcmp(json_string_value(json_object_get(rec, "file")), file_stems[f]) != 0)) {
            fprintf(stderr, "%s: the first line is not the header of this file\n", where);
            rc = -1;
        }
        if (rc == 0) rc = take_line(s, f, rec, where, dict, begins, ends);
        last_type = strcmp(json_string_value(json_object_get(rec, "type")), "session_end") == 0
                        ? "session_end"
                        : "other";
        s->lines[f]++;
        json_decref(rec);
        p = nl + 1;
    }
    s->end_is_last[f] = strcmp(last_type, "session_end") == 0;
    free(text);
    return rc;
}

int lc_summarize(const char *session_dir, int allow_truncated, lc_summary_t *s) {
    ids_t begins = {0}, ends = {0};
    json_t *dict = json_object();
    int rc = 0;
    memset(s, 0, sizeof *s);
    s->header_pid = -1;
    s->scope_counts = json_object();
    s->system_records = json_array();
    /* scope.log first: it holds the dict lines the other files may use. */
    static const int order[LC_NFILES] = {LC_SCOPE, LC_DEVICE, LC_SYSTEM};
    for (int k = 0; k < LC_NFILES && rc == 0; k++)
        rc = summarize_file(session_dir, order[k], allow_truncated, s, dict, &begins, &ends);
    s->unmatched = count_unmatched(&begins, &ends);
    free(begins.v);
    free(ends.v);
    json_decref(dict);
    return rc;
}

void lc_summary_free(lc_summary_t *s) {
    json_decref(s->scope_counts);
    json_decref(s->system_records);
    s->scope_counts = s->system_records = NULL;
}

int lc_scope_count(const lc_summary_t *s, const char *name) {
    return (int)json_integer_value(json_object_get(s->scope_counts, name));
}

json_t *lc_system_record(const lc_summary_t *s, const char *type, const char *name) {
    size_t k;
    json_t *rec;
    json_array_foreach(s->system_records, k, rec) {
        const char *t = json_string_value(json_object_get(rec, "type"));
        const char *n = json_string_value(json_object_get(rec, "name"));
        if (t && n && strcmp(t, type) == 0 && strcmp(n, name) == 0) return rec;
    }
    return NULL;
}
