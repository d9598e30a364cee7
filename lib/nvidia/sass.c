// SPDX-License-Identifier: Apache-2.0
/*
 * sass.c - SASS of a captured cubin: nvdisasm run on a private copy of it,
 * its text parsed into functions, instructions and source lines. Slow and
 * blocking by nature (a process per module), so it belongs off the hot path.
 */
#include "nvidia/sass.h"

#include "util/error.h"
#include "util/strarena.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static atomic_int timeout_ms = GPUFL_SASS_TIMEOUT_MS;

void gpufl__sass_set_timeout_ms(int ms) {
    atomic_store(&timeout_ms, ms > 0 ? ms : GPUFL_SASS_TIMEOUT_MS);
}

static void say(char *why, size_t why_size, const char *fmt, ...) GPUFL__PRINTF(3, 4);
static void say(char *why, size_t why_size, const char *fmt, ...) {
    if (why == NULL || why_size == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, why_size, fmt, ap);
    va_end(ap);
}

/* ---------------------------------------------------------------------- */
/* Finding nvdisasm                                                         */
/* ---------------------------------------------------------------------- */

static bool is_executable_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && access(path, X_OK) == 0;
}

/* dir/bin/nvdisasm (bin_dir: with "/bin") into out when it is executable;
 * 1 found, 0 not, GPUFL_EINVAL when it does not fit. */
static int try_dir(const char *dir, size_t dir_len, bool bin_dir, char *out, size_t size) {
    char path[PATH_MAX];
    int n =
        snprintf(path, sizeof path, "%.*s%s/nvdisasm", (int)dir_len, dir, bin_dir ? "/bin" : "");
    if (n < 0 || (size_t)n >= sizeof path || !is_executable_file(path)) return 0;
    if ((size_t)n >= size) return GPUFL_EINVAL;
    memcpy(out, path, (size_t)n + 1);
    return 1;
}

int gpufl__sass_find_nvdisasm(char *out, size_t size, char *why, size_t why_size) {
    if (out == NULL || size == 0) {
        say(why, why_size, "no buffer for the path of nvdisasm");
        return GPUFL_EINVAL;
    }
    out[0] = '\0';
    const char *env = getenv("GPUFL_NVDISASM");
    if (env != NULL && env[0] != '\0') {
        if (!is_executable_file(env)) {
            struct stat st;
            bool missing = stat(env, &st) != 0;
            say(why, why_size, "GPUFL_NVDISASM=%.300s is not an executable file%s%s", env,
                missing ? ": " : "", missing ? strerror(errno) : "");
            return GPUFL_ENOTSUP;
        }
        if (strlen(env) >= size) {
            say(why, why_size, "the path of nvdisasm is longer than %zu bytes", size - 1);
            return GPUFL_EINVAL;
        }
        memcpy(out, env, strlen(env) + 1);
        return 0;
    }
    static const char *const homes[] = {"CUDA_HOME", "CUDA_PATH"};
    int found = 0;
    for (size_t i = 0; i < sizeof homes / sizeof homes[0] && found == 0; i++) {
        const char *home = getenv(homes[i]);
        if (home != NULL && home[0] != '\0') found = try_dir(home, strlen(home), true, out, size);
    }
    /* Only absolute directories of PATH: a library must not run a program
     * found relative to whatever the working directory happens to be. */
    const char *p = getenv("PATH");
    while (found == 0 && p != NULL && *p != '\0') {
        const char *colon = strchr(p, ':');
        size_t len = colon ? (size_t)(colon - p) : strlen(p);
        if (len > 0 && p[0] == '/') found = try_dir(p, len, false, out, size);
        p = colon ? colon + 1 : NULL;
    }
    if (found == GPUFL_EINVAL) {
        say(why, why_size, "the path of nvdisasm is longer than %zu bytes", size - 1);
        return GPUFL_EINVAL;
    }
    if (found == 0) {
        say(why, why_size, "nvdisasm not found on CUDA_HOME, CUDA_PATH or PATH");
        return GPUFL_ENOTSUP;
    }
    return 0;
}

/* ---------------------------------------------------------------------- */
/* The module's storage                                                     */
/* ---------------------------------------------------------------------- */

/* Strings live in an arena that never moves; the tables are plain arrays,
 * grown while parsing and freed with the module. */
struct gpufl__sass_arena {
    gpufl__strarena_t strings;
    gpufl__sass_instruction_t *instructions;
    gpufl__sass_function_t *functions;
    const char **files;
};

static const char *arena_strdup(struct gpufl__sass_arena *a, const char *s, size_t len) {
    return gpufl__strarena_copy(&a->strings, s, len);
}

static void arena_free(struct gpufl__sass_arena *a) {
    if (a == NULL) return;
    gpufl__strarena_free(&a->strings);
    free(a->instructions);
    free(a->functions);
    free(a->files);
    free(a);
}

void gpufl__sass_module_free(gpufl__sass_module_t *m) {
    if (m == NULL) return;
    arena_free(m->arena);
    free(m);
}

/* Grows *v (elements of elem bytes, *cap of them) to hold need; false when
 * out of memory. */
static bool grow(void **v, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return true;
    size_t n = *cap ? *cap : 64;
    while (n < need) n *= 2;
    if (n > SIZE_MAX / elem) return false;
    void *p = realloc(*v, n * elem);
    if (p == NULL) return false;
    *v = p;
    *cap = n;
    return true;
}

/* ---------------------------------------------------------------------- */
/* Parsing                                                                  */
/* ---------------------------------------------------------------------- */

typedef struct function_build {
    const char *name;
    size_t first, count; /* its instructions in the module's array */
} function_build_t;

typedef struct parser {
    struct gpufl__sass_arena *arena;
    size_t line_no;
    char *why;
    size_t why_size;
    char arch[16];

    gpufl__sass_instruction_t *instructions;
    size_t instruction_count, instruction_cap;
    function_build_t *functions;
    size_t function_count, function_cap;
    const char **files;
    size_t file_count, file_cap;
    /* Open-addressing set of file indexes by path (capacity a power of 2). */
    int32_t *file_slots;
    size_t file_slot_cap;

    bool in_function; /* the current section is a function's code */
    bool in_block;    /* the last line-info comment had no instruction after it yet */
    bool block_located;
    int32_t file; /* the location of the instructions that follow */
    uint32_t line;
} parser_t;

static int fail(parser_t *p, int code, const char *what) {
    say(p->why, p->why_size, "line %zu: %s", p->line_no, what);
    return code;
}

static bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static bool starts_with(const char *s, const char *e, const char *prefix) {
    size_t n = strlen(prefix);
    return (size_t)(e - s) >= n && memcmp(s, prefix, n) == 0;
}

static const char *skip_space(const char *s, const char *e) {
    while (s < e && is_space(*s)) s++;
    return s;
}

static const char *trim_end(const char *s, const char *e) {
    while (e > s && is_space(e[-1])) e--;
    return e;
}

/* Bounded search for a needle of n bytes. */
static const char *find(const char *s, const char *e, const char *needle) {
    size_t n = strlen(needle);
    for (; (size_t)(e - s) >= n; s++)
        if (memcmp(s, needle, n) == 0) return s;
    return NULL;
}

static uint64_t hash_bytes(const char *s, size_t len) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (size_t i = 0; i < len; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static int32_t *file_slot(parser_t *p, const char *path, size_t len) {
    size_t mask = p->file_slot_cap - 1;
    for (size_t i = (size_t)hash_bytes(path, len) & mask;; i = (i + 1) & mask) {
        int32_t *slot = &p->file_slots[i];
        if (*slot < 0) return slot;
        const char *f = p->files[*slot];
        if (strncmp(f, path, len) == 0 && f[len] == '\0') return slot;
    }
}

/* The index of path in the file table, added when new; negative on error. */
static int intern_file(parser_t *p, const char *path, size_t len, int32_t *index) {
    if (len > GPUFL_SASS_NAME_MAX_BYTES) return fail(p, GPUFL_EFORMAT, "source path too long");
    if (p->file_slot_cap == 0 || (p->file_count + 1) * 2 > p->file_slot_cap) {
        size_t cap = p->file_slot_cap ? p->file_slot_cap * 2 : 64;
        int32_t *slots = malloc(cap * sizeof *slots);
        if (slots == NULL) return fail(p, GPUFL_ENOMEM, "out of memory");
        for (size_t i = 0; i < cap; i++) slots[i] = -1;
        free(p->file_slots);
        p->file_slots = slots;
        p->file_slot_cap = cap;
        for (size_t i = 0; i < p->file_count; i++)
            *file_slot(p, p->files[i], strlen(p->files[i])) = (int32_t)i;
    }
    int32_t *slot = file_slot(p, path, len);
    if (*slot >= 0) {
        *index = *slot;
        return 0;
    }
    if (p->file_count >= GPUFL_SASS_FILES_MAX)
        return fail(p, GPUFL_EFORMAT, "too many source files");
    if (!grow((void **)&p->files, &p->file_cap, p->file_count + 1, sizeof *p->files))
        return fail(p, GPUFL_ENOMEM, "out of memory");
    const char *s = arena_strdup(p->arena, path, len);
    if (s == NULL) return fail(p, GPUFL_ENOMEM, "out of memory");
    p->files[p->file_count] = s;
    *slot = (int32_t)p->file_count;
    *index = (int32_t)p->file_count++;
    return 0;
}

static void reset_location(parser_t *p) {
    p->in_block = false;
    p->block_located = false;
    p->file = -1;
    p->line = 0;
}

/* The code section of function `name` begins (or goes on, when it is the
 * current one: its header comment, .section line and label all name it). */
static int enter_function(parser_t *p, const char *name, const char *e) {
    size_t len = (size_t)(e - name);
    if (len == 0) return fail(p, GPUFL_EFORMAT, "code section without a function name");
    if (len > GPUFL_SASS_NAME_MAX_BYTES) return fail(p, GPUFL_EFORMAT, "function name too long");
    if (p->in_function && p->function_count > 0) {
        const char *cur = p->functions[p->function_count - 1].name;
        if (strncmp(cur, name, len) == 0 && cur[len] == '\0') return 0;
    }
    if (p->function_count >= GPUFL_SASS_FUNCTIONS_MAX)
        return fail(p, GPUFL_EFORMAT, "too many functions");
    if (!grow((void **)&p->functions, &p->function_cap, p->function_count + 1,
              sizeof *p->functions))
        return fail(p, GPUFL_ENOMEM, "out of memory");
    const char *s = arena_strdup(p->arena, name, len);
    if (s == NULL) return fail(p, GPUFL_ENOMEM, "out of memory");
    p->functions[p->function_count++] = (function_build_t){s, p->instruction_count, 0};
    p->in_function = true;
    reset_location(p);
    return 0;
}

/* A section begins: a function's code when its name is .text.<function>. */
static int enter_section(parser_t *p, const char *name, const char *e) {
    if (starts_with(name, e, ".text.")) return enter_function(p, name + 6, e);
    p->in_function = false;
    reset_location(p);
    return 0;
}

/* `//## File "<path>", line <n>[ inlined at "<path>", line <m>]`: the first
 * entry of a block is the innermost frame; the ones after it are its callers. */
static int line_info(parser_t *p, const char *s, const char *e) {
    s = skip_space(s + 4, e);
    if (!starts_with(s, e, "File")) return fail(p, GPUFL_EFORMAT, "line info without File");
    s = skip_space(s + 4, e);
    if (s >= e || *s != '"') return fail(p, GPUFL_EFORMAT, "line info without a quoted path");
    const char *path = s + 1;
    const char *path_end = find(path, e, "\", line ");
    if (path_end == NULL) return fail(p, GPUFL_EFORMAT, "line info without a line number");
    s = path_end + 8;
    uint64_t line = 0;
    const char *digits = s;
    while (s < e && *s >= '0' && *s <= '9' && line <= UINT32_MAX)
        line = line * 10 + (uint64_t)(*s++ - '0');
    if (s == digits || line > UINT32_MAX)
        return fail(p, GPUFL_EFORMAT, "line info with a bad line number");

    if (!p->in_function) return 0;
    if (!p->in_block) {
        p->in_block = true;
        p->block_located = false;
        p->file = -1;
        p->line = 0;
    }
    /* nvdisasm's lines of the PTX (.nv_debug_ptx_txt) are not source lines. */
    size_t path_len = (size_t)(path_end - path);
    if (path_len == 17 && memcmp(path, ".nv_debug_ptx_txt", 17) == 0) return 0;
    if (p->block_located) return 0;
    p->block_located = true;
    if (line == 0) return 0;
    int32_t index;
    int rc = intern_file(p, path, path_len, &index);
    if (rc != 0) return rc;
    p->file = index;
    p->line = (uint32_t)line;
    return 0;
}

/* `/ *0010* /   @P0 BRA `(.L_x_1) ;   / * 0x... * /`. Lines of other shapes
 * that start with a comment (encoding continuations) are not instructions. */
static int instruction(parser_t *p, const char *s, const char *e) {
    const char *h = s + 2;
    uint64_t offset = 0;
    size_t digits = 0;
    for (; h < e; h++, digits++) {
        char c = *h;
        unsigned v;
        if (c >= '0' && c <= '9')
            v = (unsigned)(c - '0');
        else if (c >= 'a' && c <= 'f')
            v = (unsigned)(c - 'a' + 10);
        else if (c >= 'A' && c <= 'F')
            v = (unsigned)(c - 'A' + 10);
        else
            break;
        if (offset <= UINT32_MAX) offset = offset << 4 | v; /* stops once out of range */
    }
    if (digits == 0 || !starts_with(h, e, "*/")) return 0;
    if (!p->in_function) return 0;
    if (offset > UINT32_MAX) return fail(p, GPUFL_EFORMAT, "offset out of range");

    const char *t = skip_space(h + 2, e);
    const char *end = e;
    const char *c1 = find(t, e, "/*"), *c2 = find(t, e, "//");
    if (c1 != NULL) end = c1;
    if (c2 != NULL && c2 < end) end = c2;
    end = trim_end(t, end);
    if (end > t && end[-1] == ';') end = trim_end(t, end - 1);
    if (end == t || *t == '.') return 0; /* data (.byte, .word) or nothing */

    if (p->function_count > 0) {
        const function_build_t *f = &p->functions[p->function_count - 1];
        if (f->count > 0 && p->instructions[p->instruction_count - 1].offset_bytes >= offset)
            return fail(p, GPUFL_EFORMAT, "instruction offsets do not increase");
    }
    if (p->instruction_count >= GPUFL_SASS_INSTRUCTIONS_MAX)
        return fail(p, GPUFL_EFORMAT, "too many instructions");
    if (!grow((void **)&p->instructions, &p->instruction_cap, p->instruction_count + 1,
              sizeof *p->instructions))
        return fail(p, GPUFL_ENOMEM, "out of memory");

    /* Runs of blanks become one space (nvdisasm pads the predicate column). */
    char text[GPUFL_SASS_TEXT_MAX_BYTES];
    size_t n = 0;
    for (const char *c = t; c < end && n < sizeof text - 1; c++) {
        if (is_space(*c)) {
            if (n > 0 && text[n - 1] == ' ') continue;
            text[n++] = ' ';
        } else {
            text[n++] = *c == '\0' ? ' ' : *c;
        }
    }
    const char *stored = arena_strdup(p->arena, text, n);
    if (stored == NULL) return fail(p, GPUFL_ENOMEM, "out of memory");
    p->instructions[p->instruction_count++] =
        (gpufl__sass_instruction_t){(uint32_t)offset, p->file, p->line, stored};
    p->functions[p->function_count - 1].count++;
    p->in_block = false;
    return 0;
}

/* `.headerflags @"EF_CUDA_TEXMODE_UNIFIED EF_CUDA_64BIT_ADDRESS EF_CUDA_SM80 ..."`. */
static void header_flags(parser_t *p, const char *s, const char *e) {
    const char *f = find(s, e, "EF_CUDA_SM");
    if (f == NULL || p->arch[0] != '\0') return;
    f += 10;
    unsigned sm = 0;
    int digits = 0;
    while (f < e && *f >= '0' && *f <= '9' && digits < 4)
        sm = sm * 10 + (unsigned)(*f++ - '0'), digits++;
    if (digits == 0 || digits > 3 || sm == 0) return;
    char suffix = (f < e && (*f == 'a' || *f == 'f')) ? *f : '\0';
    snprintf(p->arch, sizeof p->arch, "sm_%u%s", sm,
             suffix == 'a'   ? "a"
             : suffix == 'f' ? "f"
                             : "");
}

static int parse_line(parser_t *p, const char *s, const char *e) {
    s = skip_space(s, e);
    e = trim_end(s, e);
    if (s == e) return 0;
    if (starts_with(s, e, "//##")) return line_info(p, s, e);
    if (starts_with(s, e, "//-")) {
        /* `//---------- .text._Z6kernelPf ----------`: a section header. */
        const char *n = s + 2;
        while (n < e && *n == '-') n++;
        n = skip_space(n, e);
        if (n >= e || *n != '.') return 0;
        const char *ne = n;
        while (ne < e && !is_space(*ne)) ne++;
        return enter_section(p, n, ne);
    }
    if (starts_with(s, e, "/*")) return instruction(p, s, e);
    if (starts_with(s, e, ".section") && (size_t)(e - s) > 8 && is_space(s[8])) {
        const char *n = skip_space(s + 8, e), *ne = n;
        while (ne < e && *ne != ',' && !is_space(*ne)) ne++;
        return enter_section(p, n, ne);
    }
    if (starts_with(s, e, ".headerflags")) {
        header_flags(p, s, e);
        return 0;
    }
    if (starts_with(s, e, ".text.") && e[-1] == ':') return enter_function(p, s + 6, e - 1);
    return 0; /* labels, directives, other comments */
}

static int compare_functions(const void *a, const void *b) {
    return strcmp(((const gpufl__sass_function_t *)a)->name,
                  ((const gpufl__sass_function_t *)b)->name);
}

/* The parsed tables become the module's: functions sorted by name. */
static int finish(parser_t *p, gpufl__sass_module_t *m) {
    struct gpufl__sass_arena *a = p->arena;
    if (p->function_count == 0) {
        say(p->why, p->why_size, "no function in the disassembly (%zu lines)", p->line_no);
        return GPUFL_EFORMAT;
    }
    a->functions = calloc(p->function_count, sizeof *a->functions);
    if (a->functions == NULL) {
        say(p->why, p->why_size, "out of memory");
        return GPUFL_ENOMEM;
    }
    for (size_t i = 0; i < p->function_count; i++) {
        const function_build_t *f = &p->functions[i];
        a->functions[i] = (gpufl__sass_function_t){
            f->name, f->count ? p->instructions + f->first : NULL, f->count};
    }
    qsort(a->functions, p->function_count, sizeof *a->functions, compare_functions);
    for (size_t i = 1; i < p->function_count; i++)
        if (strcmp(a->functions[i - 1].name, a->functions[i].name) == 0) {
            say(p->why, p->why_size, "function %.200s appears twice", a->functions[i].name);
            return GPUFL_EFORMAT;
        }
    a->instructions = p->instructions;
    p->instructions = NULL;
    a->files = p->files;
    p->files = NULL;
    m->functions = a->functions;
    m->function_count = p->function_count;
    m->files = a->files;
    m->file_count = p->file_count;
    memcpy(m->arch, p->arch, sizeof m->arch);
    return 0;
}

int gpufl__sass_parse(gpufl__sass_module_t **out, const char *text, size_t len, char *why,
                      size_t why_size) {
    if (out == NULL || (text == NULL && len > 0)) {
        say(why, why_size, "no text or no place for the module");
        return GPUFL_EINVAL;
    }
    *out = NULL;
    gpufl__sass_module_t *m = calloc(1, sizeof *m);
    parser_t p = {.why = why, .why_size = why_size, .file = -1};
    if (m == NULL || (p.arena = calloc(1, sizeof *p.arena)) == NULL) {
        free(m);
        say(why, why_size, "out of memory");
        return GPUFL_ENOMEM;
    }
    m->arena = p.arena;
    int rc = 0;
    const char *s = text, *end = text + len;
    while (rc == 0 && s < end) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        const char *e = nl ? nl : end;
        p.line_no++;
        rc = parse_line(&p, s, e);
        s = nl ? nl + 1 : end;
    }
    if (rc == 0) rc = finish(&p, m);
    free(p.instructions);
    free(p.functions);
    free(p.files);
    free(p.file_slots);
    if (rc != 0) {
        gpufl__sass_module_free(m);
        return rc;
    }
    *out = m;
    return 0;
}

const gpufl__sass_function_t *gpufl__sass_find_function(const gpufl__sass_module_t *m,
                                                        const char *mangled_name) {
    if (m == NULL || mangled_name == NULL) return NULL;
    size_t lo = 0, hi = m->function_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(m->functions[mid].name, mangled_name);
        if (c == 0) return &m->functions[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

const gpufl__sass_instruction_t *gpufl__sass_find_instruction(const gpufl__sass_function_t *f,
                                                              uint32_t offset_bytes) {
    if (f == NULL) return NULL;
    size_t lo = 0, hi = f->instruction_count;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        uint32_t o = f->instructions[mid].offset_bytes;
        if (o == offset_bytes) return &f->instructions[mid];
        if (o < offset_bytes)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

/* ---------------------------------------------------------------------- */
/* The cubin's ELF header                                                   */
/* ---------------------------------------------------------------------- */

#define ELF_EM_CUDA 190

static uint32_t le32(const unsigned char *b) {
    return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

int gpufl__sass_cubin_arch(const void *cubin, size_t size, char *out, size_t out_size) {
    const unsigned char *b = cubin;
    if (out != NULL && out_size > 0) out[0] = '\0';
    /* e_ident[16], e_type, e_machine (18), e_version, e_entry, e_phoff,
     * e_shoff, then e_flags at 48 in a 64-bit little-endian ELF header. */
    if (b == NULL || size < 64 ||
        memcmp(b,
               "\x7f"
               "ELF",
               4) != 0 ||
        b[4] != 2 || b[5] != 1 || (b[18] | b[19] << 8) != ELF_EM_CUDA)
        return GPUFL_EFORMAT;
    uint32_t flags = le32(b + 48);
    /* ABI version 8 (CUDA 13's cubins, ELFOSABI 0x41) keeps the SM in bits
     * 8-15; the earlier ones in bits 0-7. */
    unsigned sm = b[8] >= 8 ? (flags >> 8) & 0xff : flags & 0xff;
    if (sm == 0) return GPUFL_EFORMAT;
    if (out != NULL) snprintf(out, out_size, "sm_%u", sm);
    return 0;
}

static uint64_t le64(const unsigned char *b) { return le32(b) | (uint64_t)le32(b + 4) << 32; }

/* The geometry of a cubin's ELF symbol table and its string table, checked
 * to lie inside the image. */
typedef struct {
    uint64_t off, count, entsize, str_off, str_len;
} symtab_t;

static int find_symtab(const void *cubin, size_t size, symtab_t *t) {
    const unsigned char *b = cubin;
    if (gpufl__sass_cubin_arch(cubin, size, NULL, 0) != 0) return GPUFL_EFORMAT;
    /* Section headers: e_shoff at 40, e_shentsize at 58, e_shnum at 60. */
    uint64_t shoff = le64(b + 40);
    unsigned shentsize = b[58] | b[59] << 8, shnum = b[60] | b[61] << 8;
    if (shentsize < 64 || shoff > size || (uint64_t)shnum * shentsize > size - shoff)
        return GPUFL_EFORMAT;
    for (unsigned s = 0; s < shnum; s++) {
        const unsigned char *sh = b + shoff + (uint64_t)s * shentsize;
        if (le32(sh + 4) != 2) continue; /* SHT_SYMTAB */
        uint64_t off = le64(sh + 24), len = le64(sh + 32), entsize = le64(sh + 56);
        uint32_t link = le32(sh + 40);
        if (entsize < 24 || off > size || len > size - off || link >= shnum) return GPUFL_EFORMAT;
        const unsigned char *str = b + shoff + (uint64_t)link * shentsize;
        uint64_t str_off = le64(str + 24), str_len = le64(str + 32);
        if (str_off > size || str_len > size - str_off) return GPUFL_EFORMAT;
        *t = (symtab_t){off, len / entsize, entsize, str_off, str_len};
        return 0;
    }
    return GPUFL_EFORMAT;
}

/* The name of symbol i (NUL-terminated inside the string table), or NULL. */
static const char *symbol_at(const void *cubin, const symtab_t *t, uint64_t i) {
    const unsigned char *b = cubin;
    uint32_t at = le32(b + t->off + i * t->entsize); /* st_name */
    if (at >= t->str_len || memchr(b + t->str_off + at, '\0', t->str_len - at) == NULL) return NULL;
    return (const char *)b + t->str_off + at;
}

int gpufl__sass_symbol_index(const void *cubin, size_t size, const char *name, uint32_t *index) {
    symtab_t t;
    if (name == NULL || index == NULL || find_symtab(cubin, size, &t) != 0) return GPUFL_EFORMAT;
    for (uint64_t i = 0; i < t.count; i++) {
        const char *sym = symbol_at(cubin, &t, i);
        if (sym != NULL && strcmp(sym, name) == 0) {
            *index = (uint32_t)i;
            return 0;
        }
    }
    return GPUFL_EFORMAT;
}

const char *gpufl__sass_symbol_name(const void *cubin, size_t size, uint32_t index) {
    symtab_t t;
    if (find_symtab(cubin, size, &t) != 0 || index == 0 || index >= t.count) return NULL;
    const char *sym = symbol_at(cubin, &t, index);
    return sym != NULL && sym[0] != '\0' ? sym : NULL;
}

/* ---------------------------------------------------------------------- */
/* Running nvdisasm                                                         */
/* ---------------------------------------------------------------------- */

static int64_t now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void close_fd(int *fd) {
    if (*fd >= 0) close(*fd);
    *fd = -1;
}

static void kill_and_reap(pid_t pid) {
    kill(pid, SIGKILL);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR) {
    }
}

/* The cubin into a new private file; its path into path. */
static int write_temp(const void *cubin, size_t size, char *path, size_t path_size, char *why,
                      size_t why_size) {
    const char *dir = getenv("TMPDIR");
    if (dir == NULL || dir[0] == '\0') dir = "/tmp";
    int n = snprintf(path, path_size, "%s/gpufl-cubin-XXXXXX", dir);
    if (n < 0 || (size_t)n >= path_size) {
        path[0] = '\0';
        say(why, why_size, "temporary directory path too long: %.200s", dir);
        return GPUFL_EIO;
    }
    int fd = mkostemp(path, O_CLOEXEC);
    if (fd < 0) {
        say(why, why_size, "cannot create a temporary file in %.200s: %s", dir, strerror(errno));
        path[0] = '\0';
        return GPUFL_EIO;
    }
    const char *b = cubin;
    size_t done = 0;
    while (done < size) {
        ssize_t w = write(fd, b + done, size - done);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            say(why, why_size, "cannot write %s: %s", path, w < 0 ? strerror(errno) : "no space");
            close(fd);
            return GPUFL_EIO;
        }
        done += (size_t)w;
    }
    if (close(fd) != 0) {
        say(why, why_size, "cannot write %s: %s", path, strerror(errno));
        return GPUFL_EIO;
    }
    return 0;
}

typedef struct child {
    pid_t pid;
    int out_fd, err_fd;
} child_t;

static int spawn(const char *nvdisasm, const char *cubin_path, const char *only, child_t *c,
                 char *why, size_t why_size) {
    int out_pipe[2] = {-1, -1}, err_pipe[2] = {-1, -1};
    if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) {
        say(why, why_size, "cannot create a pipe: %s", strerror(errno));
        close_fd(&out_pipe[0]);
        close_fd(&out_pipe[1]);
        return GPUFL_EIO;
    }
    char *argv[9] = {(char *)nvdisasm, "--print-code", "--print-line-info",
                     "--print-line-info-inline", "--no-dataflow"};
    int argc = 5;
    if (only != NULL) {
        argv[argc++] = "--cuda-function-index";
        argv[argc++] = (char *)only;
    }
    argv[argc++] = (char *)cubin_path;
    argv[argc] = NULL;
    posix_spawn_file_actions_t fa;
    posix_spawnattr_t attr;
    int rc = posix_spawn_file_actions_init(&fa);
    if (rc == 0) {
        rc = posix_spawnattr_init(&attr);
        if (rc != 0) posix_spawn_file_actions_destroy(&fa);
    }
    if (rc == 0) {
        /* The child starts with no signal blocked and SIGPIPE at its default,
         * whatever the application did to its own. */
        sigset_t none, pipe_only;
        sigemptyset(&none);
        sigemptyset(&pipe_only);
        sigaddset(&pipe_only, SIGPIPE);
        if ((rc = posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0)) == 0 &&
            (rc = posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1)) == 0 &&
            (rc = posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2)) == 0 &&
            (rc = posix_spawnattr_setsigmask(&attr, &none)) == 0 &&
            (rc = posix_spawnattr_setsigdefault(&attr, &pipe_only)) == 0 &&
            (rc = posix_spawnattr_setflags(&attr,
                                           POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF)) == 0)
            rc = posix_spawn(&c->pid, nvdisasm, &fa, &attr, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        posix_spawnattr_destroy(&attr);
    }
    close_fd(&out_pipe[1]);
    close_fd(&err_pipe[1]);
    if (rc != 0) {
        say(why, why_size, "cannot run %.300s: %s", nvdisasm, strerror(rc));
        close_fd(&out_pipe[0]);
        close_fd(&err_pipe[0]);
        return GPUFL_EIO;
    }
    c->out_fd = out_pipe[0];
    c->err_fd = err_pipe[0];
    return 0;
}

typedef struct output {
    char *text;
    size_t len, cap;
    char err[GPUFL_SASS_STDERR_KEPT_BYTES];
    size_t err_len;
} output_t;

/* Bumped by gpufl__sass_cancel_running: runs begun before stop. */
static atomic_uint cancel_generation;

void gpufl__sass_cancel_running(void) { atomic_fetch_add(&cancel_generation, 1); }

#define CANCEL_CHECK_MS 100 /* how soon a running nvdisasm notices a cancel */

/* Reads the child's stdout and stderr to their ends, or until the deadline
 * or a cancel. */
static int read_output(child_t *c, output_t *o, int64_t deadline, int limit_ms, unsigned gen,
                       char *why, size_t why_size) {
    while (c->out_fd >= 0 || c->err_fd >= 0) {
        int64_t left = deadline - now_ms();
        if (left <= 0) {
            say(why, why_size, "nvdisasm timed out after %d ms", limit_ms);
            return GPUFL_EIO;
        }
        if (atomic_load(&cancel_generation) != gen) {
            say(why, why_size, "cancelled: the session ended while nvdisasm ran");
            return GPUFL_EIO;
        }
        struct pollfd pf[2] = {{c->out_fd, POLLIN, 0}, {c->err_fd, POLLIN, 0}};
        int n = poll(pf, 2, left > CANCEL_CHECK_MS ? CANCEL_CHECK_MS : (int)left);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            say(why, why_size, "poll on nvdisasm's output: %s", strerror(errno));
            return GPUFL_EIO;
        }
        if (n == 0) continue; /* the deadline check above ends it */
        if (pf[0].revents != 0) {
            if (o->cap - o->len < 65536) {
                if (o->cap >= GPUFL_SASS_OUTPUT_CAP_BYTES) {
                    say(why, why_size, "nvdisasm's output passed %zu MiB",
                        GPUFL_SASS_OUTPUT_CAP_BYTES >> 20);
                    return GPUFL_EIO;
                }
                size_t cap = o->cap ? o->cap * 2 : (size_t)1 << 20;
                if (cap > GPUFL_SASS_OUTPUT_CAP_BYTES) cap = GPUFL_SASS_OUTPUT_CAP_BYTES;
                char *t = realloc(o->text, cap);
                if (t == NULL) {
                    say(why, why_size, "out of memory for nvdisasm's output");
                    return GPUFL_ENOMEM;
                }
                o->text = t;
                o->cap = cap;
            }
            ssize_t r = read(c->out_fd, o->text + o->len, o->cap - o->len);
            if (r > 0)
                o->len += (size_t)r;
            else if (r == 0 || (errno != EINTR && errno != EAGAIN))
                close_fd(&c->out_fd);
        }
        if (pf[1].revents != 0) {
            char scratch[4096];
            ssize_t r = read(c->err_fd, scratch, sizeof scratch);
            if (r > 0) {
                size_t keep = sizeof o->err - 1 - o->err_len;
                if (keep > (size_t)r) keep = (size_t)r;
                memcpy(o->err + o->err_len, scratch, keep);
                o->err_len += keep;
                o->err[o->err_len] = '\0';
            } else if (r == 0 || (errno != EINTR && errno != EAGAIN)) {
                close_fd(&c->err_fd);
            }
        }
    }
    return 0;
}

/* Waits for the child until the deadline. 0 with *status, or the child is
 * gone (reaped by someone else: *status 0), or GPUFL_EIO on timeout. */
static int wait_child(pid_t pid, int *status, int64_t deadline) {
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid) return 0;
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) { /* ECHILD: SIGCHLD ignored, or another thread reaped it */
            *status = 0;
            return 0;
        }
        if (now_ms() >= deadline) return GPUFL_EIO;
        struct timespec pause = {0, 2 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
}

/* The first line of nvdisasm's stderr, for messages. */
static const char *first_line(char *err, size_t len) {
    char *s = err;
    while (s < err + len && (*s == '\n' || is_space(*s))) s++;
    char *nl = memchr(s, '\n', (size_t)(err + len - s));
    if (nl != NULL) *nl = '\0';
    char *e = s + strlen(s);
    while (e > s && is_space(e[-1])) *--e = '\0';
    return s;
}

static int disassemble(const char *nvdisasm, const void *cubin, size_t size,
                       const char *const *functions, size_t nfunctions, gpufl__sass_module_t **out,
                       char *why, size_t why_size);

int gpufl__sass_disassemble(gpufl__sass_module_t **out, const char *nvdisasm, const void *cubin,
                            size_t size, char *why, size_t why_size) {
    return disassemble(nvdisasm, cubin, size, NULL, 0, out, why, why_size);
}

int gpufl__sass_disassemble_function(gpufl__sass_module_t **out, const char *nvdisasm,
                                     const void *cubin, size_t size, const char *function,
                                     char *why, size_t why_size) {
    return gpufl__sass_disassemble_functions(out, nvdisasm, cubin, size, &function, 1, why,
                                             why_size);
}

int gpufl__sass_disassemble_functions(gpufl__sass_module_t **out, const char *nvdisasm,
                                      const void *cubin, size_t size, const char *const *functions,
                                      size_t n, char *why, size_t why_size) {
    if (functions == NULL || n == 0 || functions[0] == NULL) {
        if (out != NULL) *out = NULL;
        say(why, why_size, "no function name");
        return GPUFL_EINVAL;
    }
    return disassemble(nvdisasm, cubin, size, functions, n, out, why, why_size);
}

static int disassemble(const char *nvdisasm, const void *cubin, size_t size,
                       const char *const *functions, size_t nfunctions, gpufl__sass_module_t **out,
                       char *why, size_t why_size) {
    if (out != NULL) *out = NULL;
    if (nvdisasm == NULL || cubin == NULL || out == NULL) {
        say(why, why_size, "no nvdisasm, cubin or place for the module");
        return GPUFL_EINVAL;
    }
    char arch[16];
    if (gpufl__sass_cubin_arch(cubin, size, arch, sizeof arch) != 0) {
        say(why, why_size, "not a CUDA cubin (no 64-bit CUDA ELF header in %zu bytes)", size);
        return GPUFL_EFORMAT;
    }
    /* The symbols' indices, comma-separated; names the table lacks are
     * left out (they are missing from the module, which the caller sees). */
    char only[4096] = "";
    size_t used = 0, found = 0;
    for (size_t i = 0; i < nfunctions; i++) {
        uint32_t index;
        if (functions[i] == NULL || gpufl__sass_symbol_index(cubin, size, functions[i], &index))
            continue;
        int n = snprintf(only + used, sizeof only - used, "%s%u", found ? "," : "", index);
        if (n < 0 || (size_t)n >= sizeof only - used) break;
        used += (size_t)n;
        found++;
    }
    if (functions != NULL && found == 0) {
        say(why, why_size, "the cubin's symbol table has no %.200s", functions[0]);
        return GPUFL_EFORMAT;
    }
    char path[PATH_MAX] = "";
    int rc = write_temp(cubin, size, path, sizeof path, why, why_size);
    output_t *o = calloc(1, sizeof *o);
    child_t c = {-1, -1, -1};
    if (rc == 0 && o == NULL) {
        say(why, why_size, "out of memory");
        rc = GPUFL_ENOMEM;
    }
    if (rc != 0) goto remove_temp;

    int limit_ms = atomic_load(&timeout_ms);
    int64_t deadline = now_ms() + limit_ms;
    unsigned gen = atomic_load(&cancel_generation);
    if ((rc = spawn(nvdisasm, path, functions ? only : NULL, &c, why, why_size)) != 0)
        goto remove_temp;
    rc = read_output(&c, o, deadline, limit_ms, gen, why, why_size);
    close_fd(&c.out_fd);
    close_fd(&c.err_fd);
    int status = 0;
    if (rc == 0 && wait_child(c.pid, &status, deadline) != 0) {
        say(why, why_size, "nvdisasm timed out after %d ms", limit_ms);
        rc = GPUFL_EIO;
    }
    if (rc != 0) {
        kill_and_reap(c.pid);
        goto remove_temp;
    }
    if (WIFSIGNALED(status)) {
        say(why, why_size, "nvdisasm killed by signal %d%s%s", WTERMSIG(status),
            o->err_len ? ": " : "", first_line(o->err, o->err_len));
        rc = GPUFL_EIO;
    } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        const char *line = first_line(o->err, o->err_len);
        say(why, why_size, "nvdisasm exited with status %d%s%.300s", WEXITSTATUS(status),
            line[0] ? ": " : "", line);
        rc = GPUFL_EIO;
    }
    if (rc != 0) goto remove_temp;

    char parse_why[256];
    rc = gpufl__sass_parse(out, o->text, o->len, parse_why, sizeof parse_why);
    if (rc != 0) {
        say(why, why_size, "cannot parse nvdisasm's output: %s", parse_why);
        goto remove_temp;
    }
    memcpy((*out)->arch, arch, sizeof arch);

remove_temp:
    if (path[0] != '\0') unlink(path);
    if (o != NULL) free(o->text);
    free(o);
    return rc;
}
