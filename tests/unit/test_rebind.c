/*
 * test_rebind.c - rebind.h on a real shared library: the import slot of
 * strdup in rebind_target.so is pointed at a replacement, so that the
 * library's strdup(NULL), which kills the process before, returns a copy
 * of "" after; a symbol the library does not import changes nothing; an
 * address in no library is refused with a reason.
 */
#include "gpufl/gpufl.h"
#include "nvidia/rebind.h"

#include <dlfcn.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

typedef char *(*copy_fn)(const char *);

static int replaced_calls;

static char *null_safe_strdup(const char *s) {
    replaced_calls++;
    return strdup(s ? s : "");
}

static copy_fn load_target(void) {
    void *h = dlopen(GPUFL_REBIND_TARGET_PATH, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) fail_msg("cannot load the target: %s", dlerror());
    copy_fn f = NULL;
    void *p = dlsym(h, "rebind_target_copy");
    memcpy(&f, &p, sizeof f);
    assert_non_null(f);
    return f;
}

/* Whether copy(NULL) kills a child process (it does before the rebind). */
static int null_copy_dies(copy_fn copy) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        const char *volatile missing = NULL;
        char *r = copy(missing);
        _exit(r != NULL && r[0] == '\0' ? 0 : 3);
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    return !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void rebinds_one_library_import(void **state) {
    (void)state;
    copy_fn copy = load_target();
    void *inside;
    memcpy(&inside, &copy, sizeof inside);
    assert_true(null_copy_dies(copy));
    char why[200] = "";
    void *replacement;
    copy_fn safe = null_safe_strdup;
    memcpy(&replacement, &safe, sizeof replacement);
    assert_true(gpufl__rebind_import(inside, "strdup", replacement, why, sizeof why) >= 1);
    assert_false(null_copy_dies(copy));
    char *r = copy("abc");
    assert_string_equal(r, "abc");
    free(r);
    assert_int_equal(replaced_calls, 1);
    /* The process's own strdup is libc's still. */
    r = strdup("x");
    assert_string_equal(r, "x");
    free(r);
    assert_int_equal(replaced_calls, 1);
    /* A symbol the library does not import: nothing to rewrite. */
    assert_int_equal(
        gpufl__rebind_import(inside, "gpufl_not_imported", replacement, why, sizeof why), 0);
}

static void refuses_an_address_in_no_library(void **state) {
    (void)state;
    char why[200] = "";
    int local = 0;
    assert_int_equal(gpufl__rebind_import(&local, "strdup", NULL, why, sizeof why), GPUFL_EINVAL);
    assert_non_null(strstr(why, "no library"));
    assert_int_equal(gpufl__rebind_import(NULL, "strdup", NULL, why, sizeof why), GPUFL_EINVAL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(rebinds_one_library_import),
        cmocka_unit_test(refuses_an_address_in_no_library),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
