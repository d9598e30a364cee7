// SPDX-License-Identifier: Apache-2.0
/*
 * test_sass.c - SASS disassembly: the parser on fixtures in nvdisasm's format
 * (tests/fixtures/sass), field by field and on damaged copies; the cubin's
 * architecture from its ELF header; finding nvdisasm; and whole runs through
 * a fake nvdisasm (tests/fakes/fake_nvdisasm.sh) named by GPUFL_NVDISASM.
 */
#include "test_util.h"

#include "nvidia/sass.h"

#include <stdbool.h>
#include <time.h>

#define FIXTURES GPUFL_TEST_SOURCE_DIR "/fixtures/sass"
#define FAKE     GPUFL_TEST_SOURCE_DIR "/fakes/fake_nvdisasm.sh"

static bool exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

static void write_text(const char *path, const char *text, mode_t mode) {
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    assert_int_equal(chmod(path, mode), 0);
}

/* Parses text from a buffer of exactly its length (no NUL after it). */
static int parse_exact(const char *text, size_t len, gpufl__sass_module_t **m, char *why,
                       size_t why_size) {
    char *copy = malloc(len ? len : 1);
    assert_non_null(copy);
    memcpy(copy, text, len);
    int rc = gpufl__sass_parse(m, copy, len, why, why_size);
    free(copy);
    return rc;
}

static const char *file_of(const gpufl__sass_module_t *m, const gpufl__sass_instruction_t *ins) {
    if (ins->file < 0) return NULL;
    assert_true((size_t)ins->file < m->file_count);
    return m->files[ins->file];
}

/* ---------------------------------------------------------------------- */

static void check_two_functions(const gpufl__sass_module_t *m) {
    assert_int_equal(m->function_count, 2);
    /* Sorted by name. */
    assert_string_equal(m->functions[0].name, "_Z1ff");
    assert_string_equal(m->functions[1].name, "_Z6kernelPfi");

    const gpufl__sass_function_t *k = gpufl__sass_find_function(m, "_Z6kernelPfi");
    assert_ptr_equal(k, &m->functions[1]);
    assert_int_equal(k->instruction_count, 20);
    static const struct {
        uint32_t offset;
        const char *text, *file;
        uint32_t line;
    } want[] = {
        {0x00, "LDC R1, c[0x0][0x28]", NULL, 0},
        {0x10, "S2R R0, SR_CTAID.X", "/home/user/src/saxpy.cu", 7},
        {0x20, "S2R R3, SR_TID.X", "/home/user/src/saxpy.cu", 7},
        {0x30, "ULDC UR4, c[0x0][0x0]", "/home/user/src/saxpy.cu", 7},
        {0x40, "IMAD R0, R0, UR4, R3", "/home/user/src/saxpy.cu", 7},
        {0x50, "ISETP.GE.AND P0, PT, R0, c[0x0][0x218], PT", "/home/user/src/saxpy.cu", 8},
        {0x60, "@P0 EXIT", "/home/user/src/saxpy.cu", 8},
        {0x70, "LDC.64 R2, c[0x0][0x210]", "/home/user/src/helpers.cuh", 3},
        {0x80, "ULDC.64 UR4, c[0x0][0x208]", "/home/user/src/helpers.cuh", 3},
        {0x90, "IMAD.WIDE R2, R0, 0x4, R2", "/home/user/src/helpers.cuh", 3},
        {0xa0, "LDG.E R4, desc[UR4][R2.64]", "/home/user/src/helpers.cuh", 3},
        {0xb0, "FSETP.GEU.AND P0, PT, |R4|, 1.17549435082228750797e-38, PT",
         "/home/user/src/saxpy.cu", 9},
        {0xc0, "@!P0 BRA `(.L_x_1)", "/home/user/src/saxpy.cu", 9},
        {0xd0, "MOV R20, 0x0", "/home/user/src/saxpy.cu", 9},
        {0xe0, "CALL.REL.NOINC `(_Z1ff)", "/home/user/src/saxpy.cu", 9},
        {0xf0, "STG.E desc[UR4][R2.64], R4", "/home/user/src/saxpy.cu", 10},
        {0x100, "EXIT", "/home/user/src/saxpy.cu", 10},
        {0x110, "FCHK P0, R4, R5", "/home/user/src/saxpy.cu", 10},
        {0x120, "BRA `(.L_x_2)", "/home/user/src/saxpy.cu", 10},
        {0x130, "NOP", "/home/user/src/saxpy.cu", 10},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const gpufl__sass_instruction_t *ins = &k->instructions[i];
        assert_int_equal(ins->offset_bytes, want[i].offset);
        assert_string_equal(ins->text, want[i].text);
        assert_int_equal(ins->line, want[i].line);
        if (want[i].file == NULL) {
            assert_int_equal(ins->file, -1);
        } else {
            assert_string_equal(file_of(m, ins), want[i].file);
        }
    }
    const gpufl__sass_function_t *f = gpufl__sass_find_function(m, "_Z1ff");
    assert_non_null(f);
    assert_int_equal(f->instruction_count, 2);
    assert_int_equal(f->instructions[0].offset_bytes, 0);
    assert_string_equal(f->instructions[0].text, "FFMA R4, R4, R4, 1");
    assert_string_equal(file_of(m, &f->instructions[0]), "/home/user/src/helpers.cuh");
    assert_int_equal(f->instructions[0].line, 2);
    assert_int_equal(f->instructions[1].offset_bytes, 0x10);
    assert_string_equal(f->instructions[1].text, "RET.REL.NODEC R20 `(_Z6kernelPfi)");
    assert_int_equal(f->instructions[1].line, 2);

    /* Each path once, in order of first use. */
    assert_int_equal(m->file_count, 2);
    assert_string_equal(m->files[0], "/home/user/src/saxpy.cu");
    assert_string_equal(m->files[1], "/home/user/src/helpers.cuh");
}

static void parse_fixture(void **state) {
    (void)state;
    size_t len;
    char *text = tu_read_file(FIXTURES "/two_functions.txt", &len);
    gpufl__sass_module_t *m = NULL;
    char why[256] = "";
    assert_int_equal(parse_exact(text, len, &m, why, sizeof why), 0);
    check_two_functions(m);
    assert_string_equal(m->arch, "sm_90"); /* from .headerflags */

    assert_null(gpufl__sass_find_function(m, "_Z6kernelPf"));
    assert_null(gpufl__sass_find_function(m, "kernel"));
    assert_null(gpufl__sass_find_function(NULL, "_Z1ff"));
    const gpufl__sass_function_t *k = gpufl__sass_find_function(m, "_Z6kernelPfi");
    const gpufl__sass_instruction_t *ins = gpufl__sass_find_instruction(k, 0xc0);
    assert_non_null(ins);
    assert_string_equal(ins->text, "@!P0 BRA `(.L_x_1)");
    assert_null(gpufl__sass_find_instruction(k, 0xc4));
    assert_null(gpufl__sass_find_instruction(k, 0x140));
    assert_null(gpufl__sass_find_instruction(NULL, 0));
    gpufl__sass_module_free(m);
    gpufl__sass_module_free(NULL);

    /* CRLF line ends and no newline at the end read the same. */
    size_t crlf_len = 0;
    char *crlf = malloc(len * 2 + 1);
    for (size_t i = 0; i < len; i++) {
        if (text[i] == '\n') crlf[crlf_len++] = '\r';
        crlf[crlf_len++] = text[i];
    }
    assert_int_equal(parse_exact(crlf, crlf_len - 2, &m, why, sizeof why), 0);
    check_two_functions(m);
    gpufl__sass_module_free(m);
    free(crlf);
    free(text);
}

static void parse_variants(void **state) {
    (void)state;
    size_t len;
    char *text = tu_read_file(FIXTURES "/variants.txt", &len);
    gpufl__sass_module_t *m = NULL;
    char why[256] = "";
    assert_int_equal(parse_exact(text, len, &m, why, sizeof why), 0);
    assert_string_equal(m->arch, "");
    /* The data sections around it give no function and no instruction. */
    assert_int_equal(m->function_count, 1);
    const gpufl__sass_function_t *f = gpufl__sass_find_function(m, "_Z4stepPf");
    assert_non_null(f);
    assert_int_equal(f->instruction_count, 4);
    /* Encodings dropped; PTX lines are no source lines. */
    assert_string_equal(f->instructions[0].text, "LDC R1, c[0x0][0x28]");
    assert_string_equal(file_of(m, &f->instructions[0]), "/src/step.cu");
    assert_int_equal(f->instructions[0].line, 4);
    /* A block of PTX lines only: no source line. */
    assert_string_equal(f->instructions[1].text, "S2R R0, SR_TID.X");
    assert_int_equal(f->instructions[1].file, -1);
    assert_int_equal(f->instructions[1].line, 0);
    /* Line 0 is no line. */
    assert_string_equal(f->instructions[2].text, "NOP");
    assert_int_equal(f->instructions[2].file, -1);
    assert_int_equal(f->instructions[2].line, 0);
    /* The first source entry of a block, after a PTX one. */
    assert_string_equal(f->instructions[3].text, "@P1 EXIT");
    assert_int_equal(f->instructions[3].offset_bytes, 0x30);
    assert_string_equal(file_of(m, &f->instructions[3]), "/src/step.cu");
    assert_int_equal(f->instructions[3].line, 5);
    assert_int_equal(m->file_count, 1);
    gpufl__sass_module_free(m);
    free(text);
}

static void expect_format_error(const char *text, const char *needle) {
    gpufl__sass_module_t *m = (gpufl__sass_module_t *)&m; /* must be reset to NULL */
    char why[256] = "";
    assert_int_equal(parse_exact(text, strlen(text), &m, why, sizeof why), GPUFL_EFORMAT);
    assert_null(m);
    if (strstr(why, needle) == NULL) fail_msg("'%s' lacks '%s'", why, needle);
}

#define FN(name) ".text." name ":\n"

static void parse_errors(void **state) {
    (void)state;
    expect_format_error("", "no function");
    expect_format_error("this is not a disassembly\n", "no function in the disassembly (1 lines)");
    expect_format_error("/*0000*/ NOP ;\n", "no function");
    expect_format_error(FN("f") "/*0010*/ NOP ;\n/*0010*/ NOP ;\n",
                        "line 3: instruction offsets do not increase");
    expect_format_error(FN("f") "/*0010*/ NOP ;\n" FN("g") "/*0000*/ NOP ;\n" FN("f"),
                        "function f appears twice");
    expect_format_error(FN("f") "/*100000000*/ NOP ;\n", "line 2: offset out of range");
    expect_format_error(FN("f") "/*10000000000000000000*/ NOP ;\n", "offset out of range");
    expect_format_error(FN("f") "//## File \"/a.cu\"\n", "line 2: line info without a line number");
    expect_format_error(FN("f") "//## File \"/a.cu\", line x\n", "bad line number");
    expect_format_error(FN("f") "//## File \"/a.cu\", line 99999999999\n", "bad line number");
    expect_format_error(FN("f") "//## Line 3\n", "line info without File");
    expect_format_error(FN("f") "//## File /a.cu, line 3\n", "quoted path");
    expect_format_error(".text.:\n", "without a function name");

    size_t big = GPUFL_SASS_NAME_MAX_BYTES + 1;
    char *name = malloc(big + 16);
    memcpy(name, ".text.", 6);
    memset(name + 6, 'x', big);
    memcpy(name + 6 + big, ":\n", 3);
    expect_format_error(name, "function name too long");
    free(name);

    gpufl__sass_module_t *m;
    char why[64];
    assert_int_equal(gpufl__sass_parse(&m, NULL, 3, why, sizeof why), GPUFL_EINVAL);
    assert_int_equal(gpufl__sass_parse(NULL, "x", 1, why, sizeof why), GPUFL_EINVAL);
    /* No room for a message is fine. */
    assert_int_equal(gpufl__sass_parse(&m, "x", 1, NULL, 0), GPUFL_EFORMAT);

    /* Lines of other shapes are left alone: labels, directives, bare comments. */
    const char *ok = FN("f") "/* 0x000fe40000000f00 */\n/*zz*/ NOP\n/*0000*/ .byte 0x1\n"
                             "/*0000*/\n/*0000*/ ;\n/*0010*/ NOP ; // trailing\n";
    assert_int_equal(parse_exact(ok, strlen(ok), &m, why, sizeof why), 0);
    assert_int_equal(m->functions[0].instruction_count, 1);
    assert_int_equal(m->functions[0].instructions[0].offset_bytes, 0x10);
    assert_string_equal(m->functions[0].instructions[0].text, "NOP");
    gpufl__sass_module_free(m);
}

/* Damaged copies of the fixture: truncated, bytes changed, lines swapped.
 * Each must parse or fail cleanly (ASan in CI checks every read). */
static void parse_damaged(void **state) {
    (void)state;
    size_t len;
    char *text = tu_read_file(FIXTURES "/two_functions.txt", &len);
    char *copy = malloc(len);
    uint64_t seed = 0x9e3779b97f4a7c15ull;
    int parsed = 0, failed = 0;
    static const char junk[] = "\"/*//##\n\r\t:;.0fF@ ,x\xff";
    for (size_t cut = 0; cut <= len; cut += 7) {
        gpufl__sass_module_t *m = NULL;
        int rc = parse_exact(text, cut, &m, NULL, 0);
        assert_true(rc == 0 || rc == GPUFL_EFORMAT);
        rc == 0 ? parsed++ : failed++;
        gpufl__sass_module_free(m);
    }
    for (int round = 0; round < 3000; round++) {
        memcpy(copy, text, len);
        int edits = 1 + round % 8;
        for (int e = 0; e < edits; e++) {
            seed = seed * 6364136223846793005ull + 1442695040888963407ull;
            size_t at = (size_t)(seed >> 33) % len;
            copy[at] = junk[(seed >> 20) % (sizeof junk - 1)];
        }
        gpufl__sass_module_t *m = NULL;
        char why[128];
        int rc = parse_exact(copy, len, &m, why, sizeof why);
        assert_true(rc == 0 || rc == GPUFL_EFORMAT);
        if (rc == 0) {
            parsed++;
            for (size_t i = 0; i < m->function_count; i++) {
                const gpufl__sass_function_t *f = &m->functions[i];
                assert_ptr_equal(gpufl__sass_find_function(m, f->name), f);
                for (size_t j = 0; j < f->instruction_count; j++) {
                    assert_true(f->instructions[j].file < (int32_t)m->file_count);
                    assert_true(strlen(f->instructions[j].text) < GPUFL_SASS_TEXT_MAX_BYTES);
                    if (j > 0)
                        assert_true(f->instructions[j].offset_bytes >
                                    f->instructions[j - 1].offset_bytes);
                }
            }
        } else {
            failed++;
        }
        gpufl__sass_module_free(m);
    }
    assert_true(parsed > 0 && failed > 0);
    free(copy);
    free(text);
}

/* ---------------------------------------------------------------------- */

static void cubin_arch(void **state) {
    (void)state;
    unsigned char h[64];
    char arch[16];
    tu_cubin_header(h, 8, 0x9005a04); /* CUDA 13, sm_90 */
    assert_int_equal(gpufl__sass_cubin_arch(h, sizeof h, arch, sizeof arch), 0);
    assert_string_equal(arch, "sm_90");
    tu_cubin_header(h, 8, 0x9007802); /* CUDA 13, sm_120 */
    assert_int_equal(gpufl__sass_cubin_arch(h, sizeof h, arch, sizeof arch), 0);
    assert_string_equal(arch, "sm_120");
    tu_cubin_header(h, 7, 0x500550); /* CUDA 12, sm_80 */
    assert_int_equal(gpufl__sass_cubin_arch(h, sizeof h, arch, sizeof arch), 0);
    assert_string_equal(arch, "sm_80");

    assert_int_equal(gpufl__sass_cubin_arch(h, 63, arch, sizeof arch), GPUFL_EFORMAT);
    assert_string_equal(arch, "");
    assert_int_equal(gpufl__sass_cubin_arch(NULL, 64, arch, sizeof arch), GPUFL_EFORMAT);
    h[18] = 62; /* x86-64 */
    assert_int_equal(gpufl__sass_cubin_arch(h, sizeof h, arch, sizeof arch), GPUFL_EFORMAT);
    tu_cubin_header(h, 8, 0x9000004); /* no SM */
    assert_int_equal(gpufl__sass_cubin_arch(h, sizeof h, arch, sizeof arch), GPUFL_EFORMAT);
    tu_cubin_header(h, 8, 0x9005a04);
    h[4] = 1; /* 32-bit */
    assert_int_equal(gpufl__sass_cubin_arch(h, sizeof h, arch, sizeof arch), GPUFL_EFORMAT);
}

static void cubin_arch_of_real_cubin(void **state) {
    (void)state;
#ifdef GPUFL_SASS_CUBIN
    if (!exists(GPUFL_SASS_CUBIN)) {
        print_message("nvcc could not build %s: its architecture is not checked\n",
                      GPUFL_SASS_CUBIN);
        skip();
    }
    size_t len;
    char *cubin = tu_read_file(GPUFL_SASS_CUBIN, &len);
    char arch[16];
    assert_int_equal(gpufl__sass_cubin_arch(cubin, len, arch, sizeof arch), 0);
    assert_string_equal(arch, "sm_90");
    free(cubin);
#else
    print_message("no nvcc at build time: the real cubin's architecture is not checked\n");
    skip();
#endif
}

/* ---------------------------------------------------------------------- */

typedef struct saved_env {
    const char *name;
    char *value;
} saved_env_t;

static saved_env_t saved[] = {{"GPUFL_NVDISASM", NULL},
                              {"CUDA_HOME", NULL},
                              {"CUDA_PATH", NULL},
                              {"PATH", NULL},
                              {"TMPDIR", NULL},
                              {"FAKE_NVDISASM_MODE", NULL},
                              {"FAKE_NVDISASM_FIXTURE", NULL},
                              {"FAKE_NVDISASM_RECORD", NULL}};

static int save_env(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof saved / sizeof saved[0]; i++) {
        const char *v = getenv(saved[i].name);
        saved[i].value = v ? strdup(v) : NULL;
    }
    return 0;
}

static int restore_env(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof saved / sizeof saved[0]; i++) {
        if (saved[i].value)
            setenv(saved[i].name, saved[i].value, 1);
        else
            unsetenv(saved[i].name);
        free(saved[i].value);
        saved[i].value = NULL;
    }
    gpufl__sass_set_timeout_ms(0);
    return 0;
}

/* dir/name, an executable shell script. */
static void make_tool(const char *dir, const char *sub, mode_t mode) {
    char path[1200], cmd[2600];
    snprintf(path, sizeof path, "%s%s", dir, sub);
    snprintf(cmd, sizeof cmd, "mkdir -p \"$(dirname '%s')\"", path);
    assert_int_equal(system(cmd), 0);
    write_text(path, "#!/bin/sh\nexit 0\n", mode);
}

static void find_nvdisasm(void **state) {
    (void)state;
    const char *root = tu_scratch_dir("sass", "find");
    char home[1100], cpath[1100], a[1100], b[1100], out[1200], want[1200], why[256];
    snprintf(home, sizeof home, "%s/home", root);
    snprintf(cpath, sizeof cpath, "%s/cuda_path", root);
    snprintf(a, sizeof a, "%s/a", root);
    snprintf(b, sizeof b, "%s/b", root);
    make_tool(home, "/bin/nvdisasm", 0755);
    make_tool(cpath, "/bin/nvdisasm", 0755);
    make_tool(a, "/nvdisasm", 0644); /* not executable: passed over */
    make_tool(b, "/nvdisasm", 0755);
    unsetenv("GPUFL_NVDISASM");

    setenv("CUDA_HOME", home, 1);
    setenv("CUDA_PATH", cpath, 1);
    setenv("PATH", b, 1);
    assert_int_equal(gpufl__sass_find_nvdisasm(out, sizeof out, why, sizeof why), 0);
    snprintf(want, sizeof want, "%s/bin/nvdisasm", home);
    assert_string_equal(out, want);

    setenv("CUDA_HOME", root, 1); /* no bin/nvdisasm there */
    assert_int_equal(gpufl__sass_find_nvdisasm(out, sizeof out, why, sizeof why), 0);
    snprintf(want, sizeof want, "%s/bin/nvdisasm", cpath);
    assert_string_equal(out, want);

    unsetenv("CUDA_HOME");
    setenv("CUDA_PATH", "", 1);
    char path[4000];
    snprintf(path, sizeof path, "relative/dir::%s:%s:/nonexistent", a, b);
    setenv("PATH", path, 1);
    assert_int_equal(gpufl__sass_find_nvdisasm(out, sizeof out, why, sizeof why), 0);
    snprintf(want, sizeof want, "%s/nvdisasm", b);
    assert_string_equal(out, want);
    /* A buffer too small for the path. */
    assert_int_equal(gpufl__sass_find_nvdisasm(out, 8, why, sizeof why), GPUFL_EINVAL);

    snprintf(path, sizeof path, "%s:/nonexistent:", a);
    setenv("PATH", path, 1);
    assert_int_equal(gpufl__sass_find_nvdisasm(out, sizeof out, why, sizeof why), GPUFL_ENOTSUP);
    assert_string_equal(why, "nvdisasm not found on CUDA_HOME, CUDA_PATH or PATH");
    assert_string_equal(out, "");
    unsetenv("PATH");
    assert_int_equal(gpufl__sass_find_nvdisasm(out, sizeof out, why, sizeof why), GPUFL_ENOTSUP);

    /* GPUFL_NVDISASM wins, and must name an executable file. */
    snprintf(want, sizeof want, "%s/nvdisasm", b);
    setenv("GPUFL_NVDISASM", want, 1);
    setenv("CUDA_HOME", home, 1);
    assert_int_equal(gpufl__sass_find_nvdisasm(out, sizeof out, why, sizeof why), 0);
    assert_string_equal(out, want);
    snprintf(want, sizeof want, "%s/nvdisasm", a);
    setenv("GPUFL_NVDISASM", want, 1);
    assert_int_equal(gpufl__sass_find_nvdisasm(out, sizeof out, why, sizeof why), GPUFL_ENOTSUP);
    assert_non_null(strstr(why, "GPUFL_NVDISASM="));
    assert_non_null(strstr(why, "is not an executable file"));
    snprintf(want, sizeof want, "%s/missing", root);
    setenv("GPUFL_NVDISASM", want, 1);
    assert_int_equal(gpufl__sass_find_nvdisasm(out, sizeof out, why, sizeof why), GPUFL_ENOTSUP);
    assert_non_null(strstr(why, "No such file or directory"));
    setenv("GPUFL_NVDISASM", home, 1); /* a directory */
    assert_int_equal(gpufl__sass_find_nvdisasm(out, sizeof out, why, sizeof why), GPUFL_ENOTSUP);
    assert_int_equal(gpufl__sass_find_nvdisasm(NULL, 0, why, sizeof why), GPUFL_EINVAL);
}

/* ---------------------------------------------------------------------- */

/* A copy of the fake, executable, in the scratch dir of the test; TMPDIR
 * there too, so that the temporary cubins can be counted. */
static const char *fake_setup(const char *name, char *tmpdir, size_t tmpdir_size) {
    static char fake[1200];
    const char *root = tu_scratch_dir("sass", name);
    char cmd[2600];
    snprintf(fake, sizeof fake, "%s/nvdisasm", root);
    snprintf(cmd, sizeof cmd, "cp '%s' '%s' && chmod 755 '%s'", FAKE, fake, fake);
    assert_int_equal(system(cmd), 0);
    snprintf(tmpdir, tmpdir_size, "%s/tmp", root);
    assert_int_equal(mkdir(tmpdir, 0700), 0);
    setenv("TMPDIR", tmpdir, 1);
    setenv("GPUFL_NVDISASM", fake, 1);
    setenv("FAKE_NVDISASM_FIXTURE", FIXTURES "/two_functions.txt", 1);
    unsetenv("FAKE_NVDISASM_RECORD");
    unsetenv("FAKE_NVDISASM_MODE");
    return fake;
}

static size_t count_entries(const char *dir) {
    DIR *d = opendir(dir);
    assert_non_null(d);
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0) n++;
    closedir(d);
    return n;
}

static void disassemble_with_fake(void **state) {
    (void)state;
    char tmpdir[1200], record[1300], found[1200], why[256];
    fake_setup("run", tmpdir, sizeof tmpdir);
    snprintf(record, sizeof record, "%s/../record", tmpdir);
    setenv("FAKE_NVDISASM_RECORD", record, 1);
    assert_int_equal(gpufl__sass_find_nvdisasm(found, sizeof found, why, sizeof why), 0);

    unsigned char cubin[96];
    tu_cubin_header(cubin, 7, 0x500550); /* sm_80: the ELF header wins over .headerflags */
    for (size_t i = 64; i < sizeof cubin; i++) cubin[i] = (unsigned char)i;
    gpufl__sass_module_t *m = NULL;
    assert_int_equal(gpufl__sass_disassemble(&m, found, cubin, sizeof cubin, why, sizeof why), 0);
    check_two_functions(m);
    assert_string_equal(m->arch, "sm_80");
    gpufl__sass_module_free(m);

    /* nvdisasm saw the options and a private copy of the cubin, since removed. */
    size_t len;
    char *args = tu_read_file(record, &len);
    assert_non_null(strstr(args, "--print-code\n"));
    assert_non_null(strstr(args, "--print-line-info\n"));
    assert_non_null(strstr(args, "--print-line-info-inline\n"));
    char *cubin_arg = strstr(args, tmpdir);
    assert_non_null(cubin_arg);
    *strchr(cubin_arg, '\n') = '\0';
    assert_non_null(strstr(cubin_arg, "/gpufl-cubin-"));
    assert_false(exists(cubin_arg));
    free(args);
    char copy_path[1400];
    snprintf(copy_path, sizeof copy_path, "%s.cubin", record);
    char *copy = tu_read_file(copy_path, &len);
    assert_int_equal(len, sizeof cubin);
    assert_memory_equal(copy, cubin, sizeof cubin);
    free(copy);
    assert_int_equal(count_entries(tmpdir), 0);
}

static void expect_run_error(const char *nvdisasm, const char *mode, int code, const char *needle,
                             const char *tmpdir) {
    unsigned char cubin[64];
    tu_cubin_header(cubin, 8, 0x9005a04);
    if (mode) setenv("FAKE_NVDISASM_MODE", mode, 1);
    gpufl__sass_module_t *m = (gpufl__sass_module_t *)&m;
    char why[512] = "";
    int rc = gpufl__sass_disassemble(&m, nvdisasm, cubin, sizeof cubin, why, sizeof why);
    if (rc != code || strstr(why, needle) == NULL)
        fail_msg("mode %s: %d '%s', expected %d '%s'", mode ? mode : "-", rc, why, code, needle);
    assert_null(m);
    assert_null(strchr(why, '\n'));
    assert_int_equal(count_entries(tmpdir), 0); /* the temporary cubin is gone */
}

static void disassemble_errors(void **state) {
    (void)state;
    char tmpdir[1200];
    const char *fake = fake_setup("errors", tmpdir, sizeof tmpdir);

    expect_run_error(
        fake, "fail", GPUFL_EIO,
        "nvdisasm exited with status 1: nvdisasm fatal   : Could not open input file '", tmpdir);
    char why[512];
    gpufl__sass_module_t *m;
    expect_run_error(fake, "noisy", GPUFL_EIO,
                     "nvdisasm exited with status 2: nvdisasm warning : line 0 of a long", tmpdir);
    expect_run_error(fake, "garbage", GPUFL_EFORMAT,
                     "cannot parse nvdisasm's output: no function in the disassembly", tmpdir);
    expect_run_error(fake, "signal", GPUFL_EIO, "nvdisasm killed by signal 11", tmpdir);

    gpufl__sass_set_timeout_ms(300);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    expect_run_error(fake, "sleep", GPUFL_EIO, "nvdisasm timed out after 300 ms", tmpdir);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    assert_true(t1.tv_sec - t0.tv_sec < 10);
    gpufl__sass_set_timeout_ms(0);

    char missing[1300];
    snprintf(missing, sizeof missing, "%s/../no-such-nvdisasm", tmpdir);
    expect_run_error(missing, NULL, GPUFL_EIO, "cannot run ", tmpdir);
    expect_run_error(missing, NULL, GPUFL_EIO, "No such file or directory", tmpdir);

    /* Not a cubin: refused before anything runs. */
    unsigned char text[80];
    memset(text, 'x', sizeof text);
    assert_int_equal(gpufl__sass_disassemble(&m, fake, text, sizeof text, why, sizeof why),
                     GPUFL_EFORMAT);
    assert_non_null(strstr(why, "not a CUDA cubin"));
    assert_int_equal(gpufl__sass_disassemble(&m, NULL, text, sizeof text, why, sizeof why),
                     GPUFL_EINVAL);
    assert_int_equal(gpufl__sass_disassemble(&m, fake, NULL, 0, why, sizeof why), GPUFL_EINVAL);

    /* A temporary directory that cannot be written. */
    unsetenv("FAKE_NVDISASM_MODE");
    setenv("TMPDIR", "/nonexistent-gpufl-dir", 1);
    tu_cubin_header(text, 8, 0x9005a04);
    assert_int_equal(gpufl__sass_disassemble(&m, fake, text, sizeof text, why, sizeof why),
                     GPUFL_EIO);
    assert_non_null(strstr(why, "cannot create a temporary file in /nonexistent-gpufl-dir"));
}

/* One function alone: nvdisasm gets its symbol's index; the index is found
 * in a real cubin's symbol table as readelf numbers it; a name the table
 * lacks and a damaged table are refused before anything runs. */
static void disassemble_one_function(void **state) {
    (void)state;
    char tmpdir[1200], record[1300], found[1200], why[256];
    fake_setup("one", tmpdir, sizeof tmpdir);
    snprintf(record, sizeof record, "%s/../record-one", tmpdir);
    setenv("FAKE_NVDISASM_RECORD", record, 1);
    assert_int_equal(gpufl__sass_find_nvdisasm(found, sizeof found, why, sizeof why), 0);
    unsigned char cubin[512];
    const char *const names[] = {"_Z1ff", "_Z6kernelPfi"};
    size_t size = tu_fake_cubin(cubin, names, 2);
    uint32_t index = 0;
    assert_int_equal(gpufl__sass_symbol_index(cubin, size, "_Z6kernelPfi", &index), 0);
    assert_int_equal(index, 2);
    /* The reverse, for PC records CUPTI gives without a name: symbol 0 is
     * the ELF null symbol, and an index past the table names nothing. */
    assert_string_equal(gpufl__sass_symbol_name(cubin, size, 2), "_Z6kernelPfi");
    assert_string_equal(gpufl__sass_symbol_name(cubin, size, 1), "_Z1ff");
    assert_null(gpufl__sass_symbol_name(cubin, size, 0));
    assert_null(gpufl__sass_symbol_name(cubin, size, 3));
    gpufl__sass_module_t *m = NULL;
    assert_int_equal(
        gpufl__sass_disassemble_function(&m, found, cubin, size, "_Z6kernelPfi", why, sizeof why),
        0);
    assert_non_null(gpufl__sass_find_function(m, "_Z6kernelPfi"));
    gpufl__sass_module_free(m);
    size_t len;
    char *args = tu_read_file(record, &len);
    assert_non_null(strstr(args, "--cuda-function-index\n2\n"));
    free(args);
    assert_int_equal(
        gpufl__sass_disassemble_function(&m, found, cubin, size, "_Z7missingv", why, sizeof why),
        GPUFL_EFORMAT);
    assert_non_null(strstr(why, "symbol table has no _Z7missingv"));
    /* Several functions of one module in one run; a name the table lacks is left out. */
    const char *const several[] = {"_Z6kernelPfi", "_Z7missingv", "_Z1ff"};
    assert_int_equal(
        gpufl__sass_disassemble_functions(&m, found, cubin, size, several, 3, why, sizeof why), 0);
    gpufl__sass_module_free(m);
    args = tu_read_file(record, &len);
    assert_non_null(strstr(args, "--cuda-function-index\n2,1\n"));
    free(args);
    /* A section table pointing past the image. */
    unsigned char bad[512];
    memcpy(bad, cubin, sizeof bad);
    bad[40] = 0xf0, bad[41] = 0xff;
    assert_int_equal(gpufl__sass_symbol_index(bad, size, "_Z6kernelPfi", &index), GPUFL_EFORMAT);
    assert_null(gpufl__sass_symbol_name(bad, size, 2));
    for (size_t cut = 0; cut < size; cut += 7) { /* never reads past the image */
        (void)gpufl__sass_symbol_index(cubin, cut, "_Z6kernelPfi", &index);
        (void)gpufl__sass_symbol_name(cubin, cut, 2);
    }
    unsetenv("FAKE_NVDISASM_RECORD");
#ifdef GPUFL_SASS_CUBIN
    if (exists(GPUFL_SASS_CUBIN)) {
        char *real = tu_read_file(GPUFL_SASS_CUBIN, &len);
        assert_int_equal(gpufl__sass_symbol_index(real, len, "_Z5scalePfi", &index), 0);
        assert_int_equal(index, 12); /* as readelf -s numbers it (nvcc 13.0) */
        assert_string_equal(gpufl__sass_symbol_name(real, len, 12), "_Z5scalePfi");
        free(real);
    }
#endif
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parse_fixture),
        cmocka_unit_test(parse_variants),
        cmocka_unit_test(parse_errors),
        cmocka_unit_test(parse_damaged),
        cmocka_unit_test(cubin_arch),
        cmocka_unit_test(cubin_arch_of_real_cubin),
        cmocka_unit_test_setup_teardown(find_nvdisasm, save_env, restore_env),
        cmocka_unit_test_setup_teardown(disassemble_with_fake, save_env, restore_env),
        cmocka_unit_test_setup_teardown(disassemble_one_function, save_env, restore_env),
        cmocka_unit_test_setup_teardown(disassemble_errors, save_env, restore_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
