// SPDX-License-Identifier: Apache-2.0
/*
 * test_symbols.c - the address resolver: a call site in this file back to
 * its file, line, function and text; libc; bad addresses; an object
 * dlopen'ed after create; and the reduced mode without libdw.
 */
#include "test_util.h"

#include "core/symbols.h"

#include <dlfcn.h>
#include <limits.h>

typedef uintptr_t (*call_site_fn)(int *line);

/* Returns the address its caller resumes at; the caller passes its line. */
static __attribute__((noinline)) uintptr_t return_address_of_call(int line, int *line_out) {
    *line_out = line;
    return (uintptr_t)__builtin_return_address(0);
}

/* A call on a known line of this file, as a stack frame would show it. */
static __attribute__((noinline)) uintptr_t symbols_test_caller(int *line) {
    uintptr_t pc = return_address_of_call(__LINE__, line);
    __asm__ volatile("" ::: "memory"); /* keeps the call from becoming a jump */
    return pc;
}

/* Defined at the end of this file, under a #line naming another file. */
static uintptr_t fake_source_caller(int *line);

static int ends_with(const char *text, const char *suffix) {
    size_t n = strlen(text), m = strlen(suffix);
    return n >= m && strcmp(text + n - m, suffix) == 0;
}

static const char *exe_path(void) {
    static char path[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    assert_true(n > 0);
    path[n] = '\0';
    return path;
}

static void assert_empty_frame(const gpufl__frame_info_t *f) {
    assert_string_equal(f->module, "");
    assert_string_equal(f->function, "");
    assert_string_equal(f->file, "");
    assert_string_equal(f->source, "");
    assert_int_equal(f->module_offset, 0);
    assert_int_equal(f->function_offset, 0);
    assert_int_equal(f->line, 0);
}

static gpufl__symbols_t *create_full(unsigned int flags) {
    gpufl__symbols_t *s = NULL;
    char why[256] = "x";
    assert_int_equal(gpufl__symbols_create(&s, flags, why, sizeof why), 0);
    assert_non_null(s);
    assert_string_equal(why, ""); /* libdw-dev is a test dependency (scripts/deps.sh) */
    assert_true(gpufl__symbols_full(s));
    return s;
}

static void call_site_in_this_file(void **state) {
    (void)state;
    gpufl__symbols_t *s = create_full(GPUFL_SYMBOLS_SOURCE);
    int line = 0;
    uintptr_t pc = symbols_test_caller(&line);
    gpufl__frame_info_t f;
    assert_int_equal(gpufl__symbols_resolve(&f, s, pc, 1), 1);
    assert_true(ends_with(f.file, "/test_symbols.c"));
    assert_true(f.file[0] == '/'); /* joined with the compilation directory */
    assert_int_equal(f.line, line);
    assert_non_null(strstr(f.function, "symbols_test_caller"));
    assert_true(f.function_offset > 0 && f.function_offset < 4096);
    assert_string_equal(f.module, exe_path());
    assert_true(f.module_offset > 0 && f.module_offset <= pc);
    assert_non_null(strstr(f.source, "pc = return_address_of_call(__LINE__, line);"));
    assert_true(f.source[0] == ' ');                           /* indentation kept */
    assert_int_not_equal(f.source[strlen(f.source) - 1], ' '); /* trailing space trimmed */

    /* Cached: the same strings again. */
    gpufl__frame_info_t again;
    assert_int_equal(gpufl__symbols_resolve(&again, s, pc, 1), 1);
    assert_ptr_equal(again.file, f.file);
    assert_ptr_equal(again.function, f.function);
    assert_ptr_equal(again.source, f.source);
    assert_int_equal(again.line, f.line);

    /* The function's own address: offset 0, a line in this file. */
    assert_int_equal(gpufl__symbols_resolve(&f, s, (uintptr_t)symbols_test_caller, 0), 1);
    assert_non_null(strstr(f.function, "symbols_test_caller"));
    assert_int_equal(f.function_offset, 0);
    assert_true(ends_with(f.file, "/test_symbols.c"));
    assert_true(f.line > 0 && f.line <= line);
    gpufl__symbols_destroy(s);
}

static void libc_function(void **state) {
    (void)state;
    gpufl__symbols_t *s = create_full(0);
    uintptr_t pc = (uintptr_t)dlsym(RTLD_DEFAULT, "getpid");
    assert_true(pc != 0);
    gpufl__frame_info_t f;
    assert_int_equal(gpufl__symbols_resolve(&f, s, pc, 0), 1);
    assert_non_null(strstr(f.module, "libc"));
    assert_non_null(strstr(f.function, "getpid"));
    assert_int_equal(f.function_offset, 0);
    assert_string_equal(f.source, "");
    if (f.file[0] == '\0') assert_int_equal(f.line, 0); /* no libc6-dbg installed */
    gpufl__symbols_destroy(s);
}

static void bad_addresses(void **state) {
    (void)state;
    gpufl__symbols_t *s = create_full(GPUFL_SYMBOLS_SOURCE);
    /* Data, never code: the stack and the heap are in no object. (An
     * anonymous mmap would not do: it may land in the gap between two
     * segments of a library, which libdwfl counts as that library's.) */
    int on_stack = 0;
    char *on_heap = malloc(64);
    assert_non_null(on_heap);
    const uintptr_t bad[] = {0,
                             1,
                             4095,
                             (uintptr_t)-4096,
                             (uintptr_t)-1,
                             (uintptr_t)0xffffffff81000000u,
                             (uintptr_t)&on_stack,
                             (uintptr_t)on_heap + 16};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        for (int return_address = 0; return_address <= 1; return_address++) {
            gpufl__frame_info_t f;
            memset(&f, 0xAB, sizeof f);
            assert_int_equal(gpufl__symbols_resolve(&f, s, bad[i], return_address), 0);
            assert_empty_frame(&f);
        }
    }
    free(on_heap);
    gpufl__frame_info_t f;
    assert_int_equal(gpufl__symbols_resolve(&f, NULL, (uintptr_t)bad_addresses, 0), 0);
    assert_empty_frame(&f);
    gpufl__symbols_destroy(s);
    gpufl__symbols_destroy(NULL);
}

static void module_loaded_after_create(void **state) {
    (void)state;
    gpufl__symbols_t *s = create_full(GPUFL_SYMBOLS_SOURCE);
    gpufl__frame_info_t f;
    int line = 0;
    /* Something resolved before, so the process was reported without it. */
    assert_int_equal(gpufl__symbols_resolve(&f, s, symbols_test_caller(&line), 1), 1);
    void *plugin = dlopen(GPUFL_SYMBOLS_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(plugin);
    call_site_fn call_site;
    void *address = dlsym(plugin, "symbols_plugin_call_site");
    assert_non_null(address);
    memcpy(&call_site, &address, sizeof address);
    uintptr_t pc = call_site(&line);
    assert_int_equal(gpufl__symbols_resolve(&f, s, pc, 1), 1);
    assert_true(ends_with(f.module, "symbols_plugin.so"));
    assert_non_null(strstr(f.function, "symbols_plugin_call_site"));
    assert_true(ends_with(f.file, "/symbols_plugin.c"));
    assert_int_equal(f.line, line);
    assert_non_null(strstr(f.source, "plugin_return_address(__LINE__, line)"));
    gpufl__symbols_destroy(s);
    dlclose(plugin);
}

static void reduced_mode_without_libdw(void **state) {
    (void)state;
    gpufl__symbols_t *s = NULL;
    char why[256] = "";
    setenv("GPUFL_LIBDW_PATH", "/nonexistent/libdw.so.1", 1);
    int rc = gpufl__symbols_create(&s, GPUFL_SYMBOLS_SOURCE, why, sizeof why);
    unsetenv("GPUFL_LIBDW_PATH");
    assert_int_equal(rc, 0);
    assert_non_null(s);
    assert_false(gpufl__symbols_full(s));
    assert_non_null(strstr(why, "libdw"));
    assert_non_null(strstr(why, "not found"));
    assert_non_null(strstr(why, "no file or line"));

    gpufl__frame_info_t f;
    uintptr_t pc = (uintptr_t)dlsym(RTLD_DEFAULT, "getpid");
    assert_int_equal(gpufl__symbols_resolve(&f, s, pc, 0), 1);
    assert_non_null(strstr(f.module, "libc"));
    assert_non_null(strstr(f.function, "getpid"));
    assert_int_equal(f.function_offset, 0);
    assert_string_equal(f.file, "");
    assert_int_equal(f.line, 0);
    assert_string_equal(f.source, "");

    /* An exported function of a library loaded after create. */
    void *plugin = dlopen(GPUFL_SYMBOLS_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
    assert_non_null(plugin);
    uintptr_t exported = (uintptr_t)dlsym(plugin, "symbols_plugin_call_site");
    assert_int_equal(gpufl__symbols_resolve(&f, s, exported + 4, 1), 1);
    assert_string_equal(f.function, "symbols_plugin_call_site");
    assert_int_equal(f.function_offset, 4);
    assert_true(ends_with(f.module, "symbols_plugin.so"));
    assert_true(f.module_offset > 0 && f.module_offset < exported);
    assert_string_equal(f.file, "");

    /* The main program: module known, its static functions not exported. */
    int line = 0;
    assert_int_equal(gpufl__symbols_resolve(&f, s, symbols_test_caller(&line), 1), 1);
    assert_string_equal(f.module, exe_path());
    assert_string_equal(f.file, "");
    assert_int_equal(f.line, 0);
    assert_int_equal(gpufl__symbols_resolve(&f, s, 0, 1), 0);
    assert_int_equal(gpufl__symbols_resolve(&f, s, (uintptr_t)-4096, 0), 0);
    assert_empty_frame(&f);
    gpufl__symbols_destroy(s);

    /* A library that loads but is not libdw: the symbol it lacks is named. */
    setenv("GPUFL_LIBDW_PATH", GPUFL_SYMBOLS_PLUGIN_PATH, 1);
    rc = gpufl__symbols_create(&s, 0, why, sizeof why);
    unsetenv("GPUFL_LIBDW_PATH");
    assert_int_equal(rc, 0);
    assert_false(gpufl__symbols_full(s));
    assert_non_null(strstr(why, "lacks dwfl_begin"));
    gpufl__symbols_destroy(s);
    dlclose(plugin);
}

static void source_off_by_default(void **state) {
    (void)state;
    gpufl__symbols_t *s = create_full(0);
    int line = 0;
    gpufl__frame_info_t f;
    assert_int_equal(gpufl__symbols_resolve(&f, s, symbols_test_caller(&line), 1), 1);
    assert_int_equal(f.line, line);
    assert_true(ends_with(f.file, "/test_symbols.c"));
    assert_string_equal(f.source, "");
    gpufl__symbols_destroy(s);
}

/* The text of a line as the JSON writer will get it: valid UTF-8, at most
 * 240 bytes, never cut inside a character. */
static void source_text_is_clean_utf8(void **state) {
    (void)state;
    gpufl__symbols_t *s = create_full(GPUFL_SYMBOLS_SOURCE);
    int line = 0;
    uintptr_t pc = fake_source_caller(&line);
    assert_true(line > 1);
    FILE *file = fopen(GPUFL_SYMBOLS_FAKE_SOURCE, "w");
    assert_non_null(file);
    for (int i = 1; i < line; i++) fprintf(file, "/* line %d */\n", i);
    /* 17 bytes once cleaned ("\xff" and the "\xc3" before '(' are no
     * UTF-8), then two-byte characters: the 112th would end at byte 241. */
    fputs("\tcall();  \xff\xc3( \xe2\x82\xac", file);
    for (int i = 0; i < 150; i++) fputs("\xc3\xa9", file);
    fputs("   \r\nint next;\n", file);
    fclose(file);

    char expected[256] = "\tcall();  ?\?( \xe2\x82\xac";
    for (int i = 0; i < 111; i++) strcat(expected, "\xc3\xa9");
    gpufl__frame_info_t f;
    assert_int_equal(gpufl__symbols_resolve(&f, s, pc, 1), 1);
    assert_string_equal(f.file, GPUFL_SYMBOLS_FAKE_SOURCE);
    assert_int_equal(f.line, line);
    assert_int_equal(strlen(f.source), 239);
    assert_string_equal(f.source, expected);
    remove(GPUFL_SYMBOLS_FAKE_SOURCE);
    gpufl__symbols_destroy(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(call_site_in_this_file),
        cmocka_unit_test(libc_function),
        cmocka_unit_test(bad_addresses),
        cmocka_unit_test(module_loaded_after_create),
        cmocka_unit_test(reduced_mode_without_libdw),
        cmocka_unit_test(source_off_by_default),
        cmocka_unit_test(source_text_is_clean_utf8),
    };
    return cmocka_run_group_tests_name("symbols", tests, NULL, NULL);
}

/* Last in the file: the line table names this code GPUFL_SYMBOLS_FAKE_SOURCE,
 * a file the test writes with bytes that are not UTF-8. */
#line 3 GPUFL_SYMBOLS_FAKE_SOURCE
static __attribute__((noinline)) uintptr_t fake_source_caller(int *line) {
    uintptr_t pc = return_address_of_call(__LINE__, line);
    __asm__ volatile("" ::: "memory");
    return pc;
}
