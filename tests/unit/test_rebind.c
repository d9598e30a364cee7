// SPDX-License-Identifier: Apache-2.0
/*
 * test_rebind.c - rebind.h on a real shared library: the import slot of
 * strdup in rebind_target.so is pointed at a replacement, so that the
 * library's strdup(NULL), which kills the process before, returns a copy
 * of "" after; a symbol the library does not import changes nothing; an
 * address in no library is refused with a reason. Bound at load time, the
 * slots lie in RELRO: each page is left with the protection it had. And the
 * engines' guard of CUPTI's strdup (engine.h) on a copy of its own.
 */
#include "gpufl/gpufl.h"
#include "nvidia/engine.h"
#include "nvidia/rebind.h"

#include <dlfcn.h>
#include <link.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
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

static copy_fn load_target_at(const char *path) {
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) fail_msg("cannot load the target: %s", dlerror());
    copy_fn f = NULL;
    void *p = dlsym(h, "rebind_target_copy");
    memcpy(&f, &p, sizeof f);
    assert_non_null(f);
    return f;
}

static copy_fn load_target(void) { return load_target_at(GPUFL_REBIND_TARGET_PATH); }

/* Whether copy(NULL) kills a child process (it does before the rebind). */
static int null_copy_dies(copy_fn copy) {
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        /* cmocka's handler would catch the fault and run the rest of the
         * suite in this child: the fault must end it. */
        signal(SIGSEGV, SIG_DFL);
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

/* Whether the page of addr is writable now, from /proc/self/maps. */
static int writable(uintptr_t addr) {
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    char line[512], perms[8] = "";
    unsigned long lo, hi;
    int found = 0;
    while (!found && fgets(line, sizeof line, f) != NULL)
        found = sscanf(line, "%lx-%lx %7s", &lo, &hi, perms) == 3 && addr >= lo && addr < hi;
    fclose(f);
    assert_true(found);
    return perms[1] == 'w';
}

/* The RELRO range of the library that holds `inside`, as loaded. */
typedef struct {
    uintptr_t inside, start, end;
} relro_t;

static int find_relro(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    relro_t *r = arg;
    uintptr_t start = 0, end = 0;
    int holds = 0;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        uintptr_t at = info->dlpi_addr + ph->p_vaddr;
        if (ph->p_type == PT_LOAD && r->inside >= at && r->inside - at < ph->p_memsz) holds = 1;
        if (ph->p_type == PT_GNU_RELRO) start = at, end = at + ph->p_memsz;
    }
    if (holds) r->start = start, r->end = end;
    return holds;
}

static relro_t relro_of(copy_fn copy) {
    relro_t r = {0};
    memcpy(&r.inside, &copy, sizeof r.inside);
    assert_int_equal(dl_iterate_phdr(find_relro, &r), 1);
    return r;
}

static void rebind_checked(copy_fn copy) {
    void *inside, *replacement;
    copy_fn safe = null_safe_strdup;
    memcpy(&inside, &copy, sizeof inside);
    memcpy(&replacement, &safe, sizeof replacement);
    char why[200] = "";
    assert_true(gpufl__rebind_import(inside, "strdup", replacement, why, sizeof why) >= 1);
    assert_false(null_copy_dies(copy));
}

/* Bound at load time, strdup's slot is in RELRO: written, and its page
 * read-only again after. */
static void rebinds_a_slot_in_relro(void **state) {
    (void)state;
    copy_fn copy = load_target_at(GPUFL_REBIND_TARGET_NOW_PATH);
    relro_t r = relro_of(copy);
    if (r.end - r.start < 16) skip();
    assert_false(writable(r.end - 8));
    rebind_checked(copy);
    assert_false(writable(r.end - 8));
}

/* The library's RELRO ending inside a page, as where pages are larger than
 * the linker's alignment (64 KiB pages on aarch64): the dynamic linker
 * leaves that last page writable, since the library's data shares it, and
 * the rebind must leave it so. Made here from the -z now target with its
 * PT_GNU_RELRO cut short by 8 bytes (strdup's slot stays inside). */
static void leaves_a_partial_relro_page_writable(void **state) {
    (void)state;
    long page = sysconf(_SC_PAGESIZE);
    FILE *in = fopen(GPUFL_REBIND_TARGET_NOW_PATH, "rb");
    assert_non_null(in);
    static unsigned char image[1 << 20];
    size_t len = fread(image, 1, sizeof image, in);
    fclose(in);
    assert_true(len > sizeof(ElfW(Ehdr)) && len < sizeof image);
    ElfW(Ehdr) eh;
    memcpy(&eh, image, sizeof eh);
    int cut = 0;
    for (size_t i = 0; i < eh.e_phnum; i++) {
        ElfW(Phdr) ph;
        size_t at = eh.e_phoff + i * eh.e_phentsize;
        assert_true(at + sizeof ph <= len);
        memcpy(&ph, image + at, sizeof ph);
        if (ph.p_type != PT_GNU_RELRO || ph.p_memsz < 16 || (ph.p_vaddr + ph.p_memsz) % page)
            continue;
        ph.p_memsz -= 8;
        ph.p_filesz = ph.p_filesz < ph.p_memsz ? ph.p_filesz : ph.p_memsz;
        memcpy(image + at, &ph, sizeof ph);
        cut = 1;
    }
    if (!cut) skip(); /* no RELRO ending on a page boundary to cut */
    char path[] = "/tmp/gpufl-test-rebind-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, image, len), (ssize_t)len);
    close(fd);
    copy_fn copy = load_target_at(path);
    unlink(path);
    relro_t r = relro_of(copy);
    assert_true(writable(r.end - 1)); /* as the dynamic linker left it */
    rebind_checked(copy);
    assert_true(writable(r.end - 1));
}

/* The engines' guard (engine.h): libcupti's strdup, here the target's,
 * copies NULL as "" and counts it; bound once a process, so a later call
 * gives the first answer and rebinds nothing. */
static void engine_guard_binds_once(void **state) {
    (void)state;
    copy_fn copy = load_target_at(GPUFL_REBIND_TARGET_ENGINE_PATH);
    void *inside;
    memcpy(&inside, &copy, sizeof inside);
    assert_true(null_copy_dies(copy));
    char why[200] = "";
    assert_int_equal(gpufl__engine_guard_names(inside, why, sizeof why), 0);
    uint64_t before = gpufl__engine_null_names();
    const char *volatile missing = NULL;
    char *r = copy(missing);
    assert_string_equal(r, "");
    free(r);
    r = copy("kept");
    assert_string_equal(r, "kept");
    free(r);
    assert_int_equal(gpufl__engine_null_names(), before + 1);
    int local = 0; /* no library there: the first answer stands all the same */
    assert_int_equal(gpufl__engine_guard_names(&local, why, sizeof why), 0);
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
        cmocka_unit_test(rebinds_a_slot_in_relro),
        cmocka_unit_test(leaves_a_partial_relro_page_writable),
        cmocka_unit_test(engine_guard_binds_once),
        cmocka_unit_test(refuses_an_address_in_no_library),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
