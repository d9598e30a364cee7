// SPDX-License-Identifier: Apache-2.0
/*
 * test_util.h - helpers shared by the unit tests: fresh log directories
 * under the tree the schema test validates, reading session files back as
 * JSON (jansson), and pulling batch columns out of them.
 */
#ifndef GPUFL_TEST_UTIL_H
#define GPUFL_TEST_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include "util/colcode.h"

#include <gpufl/gpufl.h>
#include <jansson.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#ifdef GPUFL_FAKE_NVML_PATH
/* Writes json as the fake NVML's script (tests/fakes/fake_nvml.c) under the
 * scratch tree, named for suite, and points the library at the fake. */
static inline void tu_fake_nvml(const char *suite, const char *json) {
    static char path[1024];
    snprintf(path, sizeof path, "%s/../test-scratch/%s_script.json", GPUFL_TEST_LOG_ROOT, suite);
    assert_int_equal(system("mkdir -p " GPUFL_TEST_LOG_ROOT "/../test-scratch"), 0);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(json, f);
    fclose(f);
    setenv("GPUFL_FAKE_NVML", path, 1);
    setenv("GPUFL_NVML_LIBRARY", GPUFL_FAKE_NVML_PATH, 1);
}
#endif

/* A new, empty directory GPUFL_TEST_LOG_ROOT/<suite>/<name>. */
static inline const char *tu_log_dir(const char *suite, const char *name) {
    static char path[1024];
    char cmd[2200];
    snprintf(path, sizeof path, "%s/%s/%s", GPUFL_TEST_LOG_ROOT, suite, name);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", path, path);
    assert_int_equal(system(cmd), 0);
    return path;
}

/* The path of tests/fixtures/<rel> (valid until the next call). */
static inline const char *tu_fixture(const char *rel) {
    static char path[4096];
    snprintf(path, sizeof path, "%s/fixtures/%s", GPUFL_TEST_SOURCE_DIR, rel);
    return path;
}

/* A new, empty directory outside the validated tree, for tests that write
 * deliberately synthetic or damaged lines. */
static inline const char *tu_scratch_dir(const char *suite, const char *name) {
    static char path[1024];
    char cmd[2200];
    snprintf(path, sizeof path, "%s/../test-scratch/%s/%s", GPUFL_TEST_LOG_ROOT, suite, name);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && mkdir -p '%s'", path, path);
    assert_int_equal(system(cmd), 0);
    return path;
}

/* The running (or last) session's directory. */
static inline const char *tu_session_dir(void) {
    static char dir[4096];
    assert_true(gpufl_session_dir(dir, sizeof dir) > 0);
    return dir;
}

typedef struct tu_lines {
    json_t **v;
    size_t n;
} tu_lines_t;

/* Reads every line of dir/file; each must be complete, valid JSON. */
static inline tu_lines_t tu_read(const char *dir, const char *file) {
    tu_lines_t L = {NULL, 0};
    char path[4200], *line = NULL;
    size_t cap = 0;
    ssize_t len;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    FILE *f = fopen(path, "r");
    if (!f) fail_msg("cannot open %s", path);
    while ((len = getline(&line, &cap, f)) > 0) {
        json_error_t err;
        if (line[len - 1] != '\n') fail_msg("%s: last line has no newline", path);
        json_t *j = json_loadb(line, (size_t)len, 0, &err);
        if (!j) fail_msg("%s line %zu: %s", path, L.n + 1, err.text);
        /* compact lines read as the plain lines they stand for, as every reader reads them */
        char why[160];
        if (gpufl__colcode_decode_json(j, why, sizeof why))
            fail_msg("%s line %zu: %s", path, L.n + 1, why);
        L.v = realloc(L.v, (L.n + 1) * sizeof *L.v);
        L.v[L.n++] = j;
    }
    free(line);
    fclose(f);
    return L;
}

static inline void tu_free(tu_lines_t *L) {
    for (size_t i = 0; i < L->n; i++) json_decref(L->v[i]);
    free(L->v);
    L->v = NULL;
    L->n = 0;
}

static inline const char *tu_type(json_t *j) {
    return json_string_value(json_object_get(j, "type"));
}

static inline size_t tu_count(const tu_lines_t *L, const char *type) {
    size_t n = 0;
    for (size_t i = 0; i < L->n; i++) n += strcmp(tu_type(L->v[i]), type) == 0;
    return n;
}

/* The first line of that type, or NULL. */
static inline json_t *tu_first(const tu_lines_t *L, const char *type) {
    for (size_t i = 0; i < L->n; i++)
        if (strcmp(tu_type(L->v[i]), type) == 0) return L->v[i];
    return NULL;
}

/* The first event with that code, or NULL. */
static inline json_t *tu_event(const tu_lines_t *L, const char *code) {
    for (size_t i = 0; i < L->n; i++) {
        const char *c = json_string_value(json_object_get(L->v[i], "code"));
        if (strcmp(tu_type(L->v[i]), "event") == 0 && c && strcmp(c, code) == 0) return L->v[i];
    }
    return NULL;
}

/* The last line of that type, or NULL. */
static inline json_t *tu_last(const tu_lines_t *L, const char *type) {
    for (size_t i = L->n; i > 0; i--)
        if (strcmp(tu_type(L->v[i - 1]), type) == 0) return L->v[i - 1];
    return NULL;
}

/* Column `col` of every batch of `type`, concatenated (integers). */
static inline int64_t *tu_column(const tu_lines_t *L, const char *type, const char *col,
                                 size_t *n) {
    int64_t *out = NULL;
    *n = 0;
    for (size_t i = 0; i < L->n; i++) {
        if (strcmp(tu_type(L->v[i]), type) != 0) continue;
        json_t *a = json_object_get(L->v[i], col);
        if (!json_is_array(a)) fail_msg("%s has no column %s", type, col);
        out = realloc(out, (*n + json_array_size(a) + 1) * sizeof *out);
        for (size_t k = 0; k < json_array_size(a); k++)
            out[(*n)++] = json_integer_value(json_array_get(a, k));
    }
    return out;
}

/* The string of dict id `id` as defined in these lines, or NULL. */
static inline const char *tu_dict(const tu_lines_t *L, int64_t id) {
    for (size_t i = 0; i < L->n; i++) {
        if (strcmp(tu_type(L->v[i]), "dict") != 0) continue;
        json_t *ids = json_object_get(L->v[i], "id"), *strs = json_object_get(L->v[i], "str");
        for (size_t k = 0; k < json_array_size(ids); k++)
            if (json_integer_value(json_array_get(ids, k)) == id)
                return json_string_value(json_array_get(strs, k));
    }
    return NULL;
}

/* The whole file at path, NUL-terminated (malloc'd); its length in *len (may be NULL). */
static inline char *tu_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (f == NULL) fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *b = malloc((size_t)n + 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    b[n] = '\0';
    if (len) *len = (size_t)n;
    return b;
}

static inline int tu_exists(const char *dir, const char *file) {
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    return stat(path, &st) == 0;
}

static inline long tu_file_size(const char *dir, const char *file) {
    char path[4200];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, file);
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Threads of this process (to check that nothing was started). */
static inline int tu_thread_count(void) {
    int n = 0;
    DIR *d = opendir("/proc/self/task");
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (e->d_name[0] != '.') n++;
    if (d) closedir(d);
    return n;
}

/* The thread count once it settles at want (up to 2 s): a joined thread
 * can stay listed in /proc for a moment after pthread_join returns. */
static inline int tu_thread_count_settled(int want) {
    int n = tu_thread_count();
    for (int i = 0; i < 200 && n != want; i++) {
        usleep(10000);
        n = tu_thread_count();
    }
    return n;
}

/* Options pointing at a log dir, with a short flush interval for tests. */
static inline gpufl_options_t tu_options(const char *log_path) {
    gpufl_options_t o;
    gpufl_options_init(&o);
    o.app_name = "unit";
    o.log_path = log_path;
    return o;
}

/* Captures the library's warnings. */
typedef struct tu_log_capture {
    int warnings;
    char last[1024];
} tu_log_capture_t;

static inline void tu_capture_hook(gpufl_log_level_t level, const char *message, void *user) {
    tu_log_capture_t *c = user;
    if (level >= GPUFL_LOG_WARN) {
        c->warnings++;
        snprintf(c->last, sizeof c->last, "%s", message);
    }
}

/* A 64-byte CUDA ELF header (64-bit, little endian, EM_CUDA) of the given
 * ABI version (8: CUDA 13, OS/ABI 0x41; earlier: 0x33) and e_flags. */
static inline void tu_cubin_header(unsigned char *b, unsigned abi_version, uint32_t flags) {
    memset(b, 0, 64);
    memcpy(b,
           "\x7f"
           "ELF",
           4);
    b[4] = 2, b[5] = 1, b[6] = 1; /* 64-bit, little endian, version */
    b[7] = abi_version >= 8 ? 0x41 : 0x33;
    b[8] = (unsigned char)abi_version;
    b[16] = 2, b[18] = 190; /* executable, EM_CUDA */
    for (int i = 0; i < 4; i++) b[48 + i] = (unsigned char)(flags >> (8 * i));
}

/* Writes into b (at least 512 bytes) the smallest cubin gpufl reads: a
 * CUDA 13 sm_90 ELF header, a symbol table naming the n functions (symbol
 * i + 1 is names[i]) and its string table; no code. Returns its size. */
static inline size_t tu_fake_cubin(unsigned char *b, const char *const *names, size_t n) {
    memset(b, 0, 512);
    tu_cubin_header(b, 8, 0x9005a04); /* CUDA 13, sm_90 */
    /* Strings at 64, symbols (24 bytes each, the first empty) after them,
     * then three section headers (null, .symtab, .strtab) of 64 bytes. */
    size_t str = 64, at = 1;
    for (size_t i = 0; i < n; i++) {
        size_t len = strlen(names[i]) + 1;
        memcpy(b + str + at, names[i], len);
        at += len;
    }
    size_t sym = (str + at + 7) & ~(size_t)7, syms = (n + 1) * 24;
    for (size_t i = 0, name = 1; i < n; i++) {
        unsigned char *e = b + sym + (i + 1) * 24;
        for (int k = 0; k < 4; k++) e[k] = (unsigned char)(name >> (8 * k));
        e[4] = 0x12; /* global function */
        name += strlen(names[i]) + 1;
    }
    size_t sh = (sym + syms + 7) & ~(size_t)7;
    struct {
        uint32_t type, link;
        size_t off, size, entsize;
    } s[3] = {{0, 0, 0, 0, 0}, {2, 2, sym, syms, 24}, {3, 0, str, at, 0}};
    for (int k = 0; k < 3; k++) {
        unsigned char *h = b + sh + (size_t)k * 64;
        for (int j = 0; j < 4; j++) h[4 + j] = (unsigned char)(s[k].type >> (8 * j));
        for (int j = 0; j < 8; j++) {
            h[24 + j] = (unsigned char)((uint64_t)s[k].off >> (8 * j));
            h[32 + j] = (unsigned char)((uint64_t)s[k].size >> (8 * j));
            h[56 + j] = (unsigned char)((uint64_t)s[k].entsize >> (8 * j));
        }
        for (int j = 0; j < 4; j++) h[40 + j] = (unsigned char)(s[k].link >> (8 * j));
    }
    for (int j = 0; j < 8; j++) b[40 + j] = (unsigned char)((uint64_t)sh >> (8 * j));
    b[58] = 64, b[60] = 3; /* e_shentsize, e_shnum */
    return sh + 3 * 64;
}

/* Fails unless a and b agree within a relative tolerance rel (absolute
 * where |b| < 1), naming the expression. */
#define TU_ASSERT_NEAR(a, b, rel)                                                                  \
    do {                                                                                           \
        double a_ = (a), b_ = (b);                                                                 \
        if (fabs(a_ - b_) > (rel) * (fabs(b_) > 1 ? fabs(b_) : 1))                                 \
            fail_msg("%s = %.12g, expected %.12g", #a, a_, b_);                                    \
    } while (0)

#endif
