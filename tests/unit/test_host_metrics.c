/*
 * test_host_metrics.c - host_metrics against fake /proc and /sys/fs/cgroup
 * trees made of real files in a temporary directory, plus one plausibility
 * check against the real system.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <gpufl/gpufl.h>

#include "host/host_metrics.h"

#define SECOND_NS INT64_C(1000000000)

/* The fake root of one test; removed with everything in it afterwards. */
struct fake_root {
    char path[256];
};

/* ---------------------------------------------------------------------- */
/* Fake trees                                                               */
/* ---------------------------------------------------------------------- */

/* Creates the directories leading to root/relative. */
static void make_parents(const char *root, const char *relative) {
    char path[1024];
    int length = snprintf(path, sizeof path, "%s/%s", root, relative);
    assert_true(length > 0 && (size_t)length < sizeof path);
    for (char *slash = path + strlen(root) + 1; (slash = strchr(slash, '/')) != NULL; slash++) {
        *slash = '\0';
        if (mkdir(path, 0755) != 0 && errno != EEXIST)
            fail_msg("mkdir %s: %s", path, strerror(errno));
        *slash = '/';
    }
}

/* Writes a whole file below the fake root, replacing what was there. */
static void write_file(const char *root, const char *relative, const char *content) {
    char path[1024];
    make_parents(root, relative);
    snprintf(path, sizeof path, "%s/%s", root, relative);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        fail_msg("open %s: %s", path, strerror(errno));
    size_t length = strlen(content);
    assert_int_equal(write(fd, content, length), (ssize_t)length);
    close(fd);
}

static void write_filef(const char *root, const char *relative, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void write_filef(const char *root, const char *relative, const char *fmt, ...) {
    char content[4096];
    va_list ap;
    va_start(ap, fmt);
    int length = vsnprintf(content, sizeof content, fmt, ap);
    va_end(ap);
    assert_true(length >= 0 && (size_t)length < sizeof content);
    write_file(root, relative, content);
}

static void remove_file(const char *root, const char *relative) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", root, relative);
    assert_int_equal(unlink(path), 0);
}

/* /proc/stat with four CPUs and a "cpu " total line (guest fields last). */
static void write_proc_stat(const char *root, uint64_t user, uint64_t system, uint64_t idle,
                            uint64_t iowait, uint64_t guest) {
    write_filef(root, "proc/stat",
                "cpu  %llu 0 %llu %llu %llu 0 0 0 %llu 0\n"
                "cpu0 1 0 1 1 0 0 0 0 0 0\ncpu1 1 0 1 1 0 0 0 0 0 0\n"
                "cpu2 1 0 1 1 0 0 0 0 0 0\ncpu3 1 0 1 1 0 0 0 0 0 0\n"
                "intr 12345 0 0 0\nctxt 999\nbtime 1700000000\nprocesses 100\n",
                (unsigned long long)user, (unsigned long long)system, (unsigned long long)idle,
                (unsigned long long)iowait, (unsigned long long)guest);
}

/* /proc/self/stat: fields 3..13 after the command name, then utime and stime. */
static void write_self_stat(const char *root, const char *comm, uint64_t utime, uint64_t stime) {
    write_filef(root, "proc/self/stat",
                "4242 (%s) S 1 4242 4242 0 -1 4194304 100 0 0 0 %llu %llu 0 0 20 0 1 0 "
                "12345 1000000 250 18446744073709551615 1 1 0 0 0 0 0 0 0 0 0 0 17 3\n",
                comm, (unsigned long long)utime, (unsigned long long)stime);
}

/* The files every fake root has: a 16 GB host with 12 GB available, of which
 * 9 GB is page cache (so used must not be MemTotal - MemFree). */
static void write_base_proc(const char *root) {
    write_proc_stat(root, 100, 100, 700, 100, 0);
    write_file(root, "proc/meminfo",
               "MemTotal:       16384000 kB\n"
               "MemFree:         1000000 kB\n"
               "MemAvailable:   12000000 kB\n"
               "Buffers:          100000 kB\n"
               "Cached:          9000000 kB\n");
    write_self_stat(root, "gpufl_test", 1000, 500);
    write_file(root, "proc/self/statm", "5000 250 100 10 0 300 0\n");
    write_file(root, "proc/sys/kernel/hostname", "fakehost\n");
    write_file(root, "proc/sys/kernel/osrelease", "6.1.0-fake\n");
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw) {
    (void)st;
    (void)type;
    (void)ftw;
    return remove(path);
}

static int setup_root(void **state) {
    struct fake_root *fake = calloc(1, sizeof *fake);
    if (fake == NULL)
        return -1;
    const char *tmp = getenv("TMPDIR");
    snprintf(fake->path, sizeof fake->path, "%s/gpufl_host_XXXXXX",
             tmp != NULL && tmp[0] != '\0' ? tmp : "/tmp");
    if (mkdtemp(fake->path) == NULL) {
        free(fake);
        return -1;
    }
    *state = fake;
    return 0;
}

static int teardown_root(void **state) {
    struct fake_root *fake = *state;
    int rc = nftw(fake->path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
    free(fake);
    return rc;
}

static void assert_close(double actual, double expected) {
    double difference = actual - expected;
    if (difference > 1e-9 || difference < -1e-9)
        fail_msg("%.12f != %.12f", actual, expected);
}

/* Inits a reader on the fake root, asserting success. */
static void init_reader(gpufl_host_reader_t *r, const char *root) {
    int rc = gpufl__host_reader_init(r, root);
    if (rc != 0)
        fail_msg("init on %s: %d (%s)", root != NULL ? root : "(real system)", rc, gpufl_last_error());
}

static void sample_ok(gpufl_host_reader_t *r, int64_t now_ns, gpufl_host_sample_t *out) {
    memset(out, 0, sizeof *out);
    int rc = gpufl__host_sample(r, now_ns, out);
    if (rc != 0)
        fail_msg("sample: %d (%s)", rc, gpufl_last_error());
}

/* ---------------------------------------------------------------------- */
/* /proc                                                                    */
/* ---------------------------------------------------------------------- */

static void test_info_and_memory(void **state) {
    struct fake_root *fake = *state;
    gpufl_host_reader_t r;
    gpufl_host_sample_t s;
    char root_with_slash[300];
    write_base_proc(fake->path);
    snprintf(root_with_slash, sizeof root_with_slash, "%s/", fake->path);

    /* A v2 line without a mounted cgroup tree finds no cgroup. */
    write_file(fake->path, "proc/self/cgroup", "0::/\n");
    init_reader(&r, root_with_slash);
    assert_string_equal(r.info.hostname, "fakehost");
    assert_string_equal(r.info.kernel_release, "6.1.0-fake");
    assert_int_equal(r.info.cpu_count, 4);
    assert_int_equal(r.info.mem_total_bytes, INT64_C(16384000) * 1024);
    assert_int_equal(r.info.cgroup_version, 0);
    assert_string_equal(r.info.cgroup_path, "");
    assert_int_equal(r.info.cg_mem_limit_bytes, GPUFL_HOST_UNKNOWN);
    assert_true(r.info.cg_cpu_limit_cores < 0);

    s.ts_ns = 777;
    assert_int_equal(gpufl__host_sample(&r, SECOND_NS, &s), 0);
    assert_int_equal(s.ts_ns, 777); /* the caller's field */
    assert_int_equal(s.mem_total_bytes, INT64_C(16384000) * 1024);
    assert_int_equal(s.mem_used_bytes, (INT64_C(16384000) - 12000000) * 1024);
    assert_int_equal(s.proc_rss_bytes, 250 * sysconf(_SC_PAGESIZE));
    assert_close(s.cpu_pct, -1);
    assert_close(s.proc_cpu_pct, -1);
    assert_int_equal(s.cg_mem_used_bytes, GPUFL_HOST_UNKNOWN);
    assert_int_equal(s.cg_mem_limit_bytes, GPUFL_HOST_UNKNOWN);
    assert_close(s.cg_cpu_pct, -1);
    assert_true(s.cg_cpu_limit_cores < 0);
    gpufl__host_reader_fini(&r);
}

static void test_host_cpu_pct(void **state) {
    struct fake_root *fake = *state;
    gpufl_host_reader_t r;
    gpufl_host_sample_t s;
    write_base_proc(fake->path);
    write_proc_stat(fake->path, 100, 100, 700, 100, 50); /* busy 200 of 1000 */
    init_reader(&r, fake->path);

    sample_ok(&r, 1 * SECOND_NS, &s);
    assert_close(s.cpu_pct, -1);

    /* +150 user +50 system +200 idle +100 iowait, guest (inside user) +30:
     * busy +200 of total +500. */
    write_proc_stat(fake->path, 250, 150, 900, 200, 80);
    sample_ok(&r, 2 * SECOND_NS, &s);
    assert_close(s.cpu_pct, 40);

    /* A total that shrinks (a CPU went offline) has no rate... */
    write_proc_stat(fake->path, 200, 100, 900, 100, 0);
    sample_ok(&r, 3 * SECOND_NS, &s);
    assert_close(s.cpu_pct, -1);

    /* ...and the next interval is measured from it: busy +100 of +400. */
    write_proc_stat(fake->path, 300, 100, 1200, 100, 0);
    sample_ok(&r, 4 * SECOND_NS, &s);
    assert_close(s.cpu_pct, 25);

    /* iowait going backwards (it does on some kernels) makes busy outgrow
     * total: busy +90 of total +10 is still at most 100%. */
    write_proc_stat(fake->path, 350, 100, 1200, 60, 0);
    sample_ok(&r, 5 * SECOND_NS, &s);
    assert_close(s.cpu_pct, 100);
    gpufl__host_reader_fini(&r);
}

static void test_process_cpu_pct(void **state) {
    struct fake_root *fake = *state;
    gpufl_host_reader_t r;
    gpufl_host_sample_t s;
    uint64_t hz = (uint64_t)sysconf(_SC_CLK_TCK);
    write_base_proc(fake->path);
    init_reader(&r, fake->path);

    sample_ok(&r, 10 * SECOND_NS, &s);
    assert_close(s.proc_cpu_pct, -1);

    /* One second of user and one of system time over four seconds: 50%. */
    write_self_stat(fake->path, "gpufl_test", 1000 + hz, 500 + hz);
    sample_ok(&r, 14 * SECOND_NS, &s);
    assert_close(s.proc_cpu_pct, 50);

    /* Three seconds over one: more than one CPU is fine for a process. */
    write_self_stat(fake->path, "gpufl_test", 1000 + 4 * hz, 500 + hz);
    sample_ok(&r, 15 * SECOND_NS, &s);
    assert_close(s.proc_cpu_pct, 300);

    /* No time passed: no rate. */
    sample_ok(&r, 15 * SECOND_NS, &s);
    assert_close(s.proc_cpu_pct, -1);
    gpufl__host_reader_fini(&r);
}

static void test_comm_with_spaces_and_parens(void **state) {
    struct fake_root *fake = *state;
    gpufl_host_reader_t r;
    gpufl_host_sample_t s;
    uint64_t hz = (uint64_t)sysconf(_SC_CLK_TCK);
    /* Parsing after the first ')' would take "7 7" as utime and stime. */
    const char *comm = "a) b (c) 7 7 7 7 7 7 7 7 7 7 7 7 7 7 )";
    write_base_proc(fake->path);
    write_self_stat(fake->path, comm, 1000, 500);
    init_reader(&r, fake->path);

    sample_ok(&r, SECOND_NS, &s);
    write_self_stat(fake->path, comm, 1000 + hz, 500);
    sample_ok(&r, 3 * SECOND_NS, &s);
    assert_close(s.proc_cpu_pct, 50);
    gpufl__host_reader_fini(&r);
}

/* ---------------------------------------------------------------------- */
/* cgroups                                                                  */
/* ---------------------------------------------------------------------- */

static void test_cgroup_v2_limited(void **state) {
    struct fake_root *fake = *state;
    const char *root = fake->path;
    gpufl_host_reader_t r;
    gpufl_host_sample_t s;
    write_base_proc(root);
    write_file(root, "proc/self/cgroup", "0::/app.slice/job.scope\n");
    write_file(root, "sys/fs/cgroup/app.slice/job.scope/memory.max", "536870912\n");
    write_file(root, "sys/fs/cgroup/app.slice/job.scope/memory.current", "123456789\n");
    write_file(root, "sys/fs/cgroup/app.slice/job.scope/cpu.max", "150000 100000\n");
    write_file(root, "sys/fs/cgroup/app.slice/job.scope/cpu.stat",
               "usage_usec 1000000\nuser_usec 600000\nsystem_usec 400000\n");
    /* The root's own files must not be used while the cgroup's exist. */
    write_file(root, "sys/fs/cgroup/cpu.stat", "usage_usec 999999999\n");
    write_file(root, "sys/fs/cgroup/memory.current", "1\n");
    init_reader(&r, root);

    assert_int_equal(r.info.cgroup_version, 2);
    assert_string_equal(r.info.cgroup_path, "/app.slice/job.scope");
    assert_int_equal(r.info.cg_mem_limit_bytes, 536870912);
    assert_close(r.info.cg_cpu_limit_cores, 1.5);

    sample_ok(&r, SECOND_NS, &s);
    assert_int_equal(s.cg_mem_used_bytes, 123456789);
    assert_int_equal(s.cg_mem_limit_bytes, 536870912);
    assert_close(s.cg_cpu_limit_cores, 1.5);
    assert_close(s.cg_cpu_pct, -1);

    /* 0.3 s of CPU over one second. */
    write_file(root, "sys/fs/cgroup/app.slice/job.scope/cpu.stat",
               "usage_usec 1300000\nuser_usec 800000\nsystem_usec 500000\n");
    sample_ok(&r, 2 * SECOND_NS, &s);
    assert_close(s.cg_cpu_pct, 30);
    gpufl__host_reader_fini(&r);
}

static void test_cgroup_v2_unlimited(void **state) {
    struct fake_root *fake = *state;
    const char *root = fake->path;
    gpufl_host_reader_t r;
    gpufl_host_sample_t s;
    write_base_proc(root);
    write_file(root, "proc/self/cgroup", "0::/user.slice\n");
    write_file(root, "sys/fs/cgroup/user.slice/memory.max", "max\n");
    write_file(root, "sys/fs/cgroup/user.slice/memory.current", "4096\n");
    write_file(root, "sys/fs/cgroup/user.slice/cpu.max", "max 100000\n");
    write_file(root, "sys/fs/cgroup/user.slice/cpu.stat", "usage_usec 5\n");
    init_reader(&r, root);

    assert_int_equal(r.info.cgroup_version, 2);
    assert_int_equal(r.info.cg_mem_limit_bytes, GPUFL_HOST_UNKNOWN);
    assert_true(r.info.cg_cpu_limit_cores < 0);
    sample_ok(&r, SECOND_NS, &s);
    assert_int_equal(s.cg_mem_used_bytes, 4096);
    assert_int_equal(s.cg_mem_limit_bytes, GPUFL_HOST_UNKNOWN);
    assert_true(s.cg_cpu_limit_cores < 0);
    gpufl__host_reader_fini(&r);
}

/* Inside a container without its own cgroup namespace the path names a host
 * cgroup that does not exist here: the mounted root is the container's. */
static void test_cgroup_v2_falls_back_to_root(void **state) {
    struct fake_root *fake = *state;
    const char *root = fake->path;
    gpufl_host_reader_t r;
    gpufl_host_sample_t s;
    write_base_proc(root);
    write_file(root, "proc/self/cgroup", "0::/kubepods/pod1/ctr1\n");
    write_file(root, "sys/fs/cgroup/memory.max", "1073741824\n");
    write_file(root, "sys/fs/cgroup/memory.current", "52428800\n");
    write_file(root, "sys/fs/cgroup/cpu.max", "50000 100000\n");
    write_file(root, "sys/fs/cgroup/cpu.stat", "usage_usec 200\n");
    init_reader(&r, root);

    assert_int_equal(r.info.cgroup_version, 2);
    assert_string_equal(r.info.cgroup_path, "/kubepods/pod1/ctr1");
    assert_int_equal(r.info.cg_mem_limit_bytes, 1073741824);
    assert_close(r.info.cg_cpu_limit_cores, 0.5);
    sample_ok(&r, SECOND_NS, &s);
    assert_int_equal(s.cg_mem_used_bytes, 52428800);
    write_file(root, "sys/fs/cgroup/cpu.stat", "usage_usec 100200\n");
    sample_ok(&r, 2 * SECOND_NS, &s);
    assert_close(s.cg_cpu_pct, 10);
    gpufl__host_reader_fini(&r);
}

/* The cgroup's directory exists but lacks a file (controller not enabled):
 * the root's file describes another cgroup and must not stand in for it. */
static void test_cgroup_v2_missing_file_stays_unknown(void **state) {
    struct fake_root *fake = *state;
    const char *root = fake->path;
    gpufl_host_reader_t r;
    gpufl_host_sample_t s;
    write_base_proc(root);
    write_file(root, "proc/self/cgroup", "0::/job\n");
    write_file(root, "sys/fs/cgroup/job/cpu.stat", "usage_usec 1\n");
    write_file(root, "sys/fs/cgroup/memory.max", "1073741824\n");
    write_file(root, "sys/fs/cgroup/memory.current", "52428800\n");
    init_reader(&r, root);

    assert_int_equal(r.info.cgroup_version, 2);
    assert_int_equal(r.info.cg_mem_limit_bytes, GPUFL_HOST_UNKNOWN);
    sample_ok(&r, SECOND_NS, &s);
    assert_int_equal(s.cg_mem_used_bytes, GPUFL_HOST_UNKNOWN);
    gpufl__host_reader_fini(&r);
}

static void test_cgroup_v1_reordered_and_unlimited(void **state) {
    struct fake_root *fake = *state;
    const char *root = fake->path;
    gpufl_host_reader_t r;
    gpufl_host_sample_t s;
    write_base_proc(root);
    /* A hybrid host: the "0::/" line must not win over the v1 controllers. */
    write_file(root, "proc/self/cgroup",
               "12:pids:/docker/abc\n11:name=systemd:/docker/abc\n5:cpuacct,cpu:/docker/abc\n"
               "3:memory:/docker/abc\n0::/\n");
    write_file(root, "sys/fs/cgroup/memory/docker/abc/memory.limit_in_bytes",
               "9223372036854771712\n");
    write_file(root, "sys/fs/cgroup/memory/docker/abc/memory.usage_in_bytes", "268435456\n");
    write_file(root, "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_quota_us", "200000\n");
    write_file(root, "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpu.cfs_period_us", "100000\n");
    write_file(root, "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpuacct.usage", "5000000000\n");
    init_reader(&r, root);

    assert_int_equal(r.info.cgroup_version, 1);
    assert_string_equal(r.info.cgroup_path, "/docker/abc");
    assert_int_equal(r.info.cg_mem_limit_bytes, GPUFL_HOST_UNKNOWN);
    assert_close(r.info.cg_cpu_limit_cores, 2.0);

    sample_ok(&r, SECOND_NS, &s);
    assert_int_equal(s.cg_mem_used_bytes, 268435456);
    assert_int_equal(s.cg_mem_limit_bytes, GPUFL_HOST_UNKNOWN);
    assert_close(s.cg_cpu_limit_cores, 2.0);
    assert_close(s.cg_cpu_pct, -1);

    /* 0.75 s of CPU (in nanoseconds) over one second. */
    write_file(root, "sys/fs/cgroup/cpu,cpuacct/docker/abc/cpuacct.usage", "5750000000\n");
    sample_ok(&r, 2 * SECOND_NS, &s);
    assert_close(s.cg_cpu_pct, 75);
    gpufl__host_reader_fini(&r);
}

static void test_cgroup_v1_limited_memory_no_quota(void **state) {
    struct fake_root *fake = *state;
    const char *root = fake->path;
    gpufl_host_reader_t r;
    write_base_proc(root);
    write_file(root, "proc/self/cgroup", "4:memory:/job\n2:cpu,cpuacct:/job\n");
    write_file(root, "sys/fs/cgroup/memory/job/memory.limit_in_bytes", "2147483648\n");
    write_file(root, "sys/fs/cgroup/memory/job/memory.usage_in_bytes", "1024\n");
    write_file(root, "sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_quota_us", "-1\n");
    write_file(root, "sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_period_us", "100000\n");
    init_reader(&r, root);

    assert_int_equal(r.info.cgroup_version, 1);
    assert_int_equal(r.info.cg_mem_limit_bytes, INT64_C(2147483648));
    assert_true(r.info.cg_cpu_limit_cores < 0);
    gpufl__host_reader_fini(&r);

    /* The memory controller alone is enough to find the cgroup. */
    write_file(root, "proc/self/cgroup", "4:memory:/job\n");
    write_file(root, "sys/fs/cgroup/cpu,cpuacct/job/cpu.cfs_quota_us", "50000\n");
    init_reader(&r, root);
    assert_int_equal(r.info.cgroup_version, 1);
    assert_string_equal(r.info.cgroup_path, "/job");
    assert_int_equal(r.info.cg_mem_limit_bytes, INT64_C(2147483648));
    assert_true(r.info.cg_cpu_limit_cores < 0); /* no cpu line: its quota is not ours */
    gpufl__host_reader_fini(&r);
}

/* ---------------------------------------------------------------------- */
/* Errors and bad input                                                     */
/* ---------------------------------------------------------------------- */

static void test_missing_root_is_eio(void **state) {
    struct fake_root *fake = *state;
    gpufl_host_reader_t r;
    char missing[300];
    snprintf(missing, sizeof missing, "%s/does-not-exist", fake->path);

    gpufl__host_reader_fini(NULL); /* accepted */
    assert_int_equal(gpufl__host_reader_init(&r, missing), GPUFL_EIO);
    assert_true(strlen(gpufl_last_error()) > 0);
    assert_non_null(strstr(gpufl_last_error(), "meminfo"));

    /* meminfo alone is not enough. */
    write_file(fake->path, "proc/meminfo", "MemTotal: 1 kB\n");
    assert_int_equal(gpufl__host_reader_init(&r, fake->path), GPUFL_EIO);
    assert_non_null(strstr(gpufl_last_error(), "proc/stat"));
}

static void test_root_too_long_is_einval(void **state) {
    (void)state;
    gpufl_host_reader_t r;
    char root[400];
    memset(root, 'x', sizeof root - 1);
    root[0] = '/';
    root[sizeof root - 1] = '\0';
    assert_int_equal(gpufl__host_reader_init(&r, root), GPUFL_EINVAL);
    assert_true(strlen(gpufl_last_error()) > 0);
}

/* Files that vanish after init: EIO for the host files, the rest unknown. */
static void test_files_vanish_after_init(void **state) {
    struct fake_root *fake = *state;
    gpufl_host_reader_t r;
    gpufl_host_sample_t s;
    write_base_proc(fake->path);
    init_reader(&r, fake->path);
    sample_ok(&r, SECOND_NS, &s);

    remove_file(fake->path, "proc/stat");
    remove_file(fake->path, "proc/self/stat");
    assert_int_equal(gpufl__host_sample(&r, 2 * SECOND_NS, &s), GPUFL_EIO);
    assert_non_null(strstr(gpufl_last_error(), "proc/stat"));
    assert_close(s.cpu_pct, -1);
    assert_close(s.proc_cpu_pct, -1);
    assert_int_equal(s.mem_used_bytes, (INT64_C(16384000) - 12000000) * 1024);

    /* Back again: a rate needs two readable samples in a row, not a stale one. */
    write_proc_stat(fake->path, 500, 500, 5000, 100, 0);
    write_self_stat(fake->path, "gpufl_test", 9000, 9000);
    sample_ok(&r, 3 * SECOND_NS, &s);
    assert_close(s.cpu_pct, -1);
    assert_close(s.proc_cpu_pct, -1);
    gpufl__host_reader_fini(&r);
}

static void assert_all_unknown(const gpufl_host_sample_t *s) {
    assert_close(s->cpu_pct, -1);
    assert_close(s->proc_cpu_pct, -1);
    assert_int_equal(s->mem_used_bytes, GPUFL_HOST_UNKNOWN);
    assert_int_equal(s->mem_total_bytes, GPUFL_HOST_UNKNOWN);
    assert_int_equal(s->proc_rss_bytes, GPUFL_HOST_UNKNOWN);
    assert_int_equal(s->cg_mem_used_bytes, GPUFL_HOST_UNKNOWN);
    assert_int_equal(s->cg_mem_limit_bytes, GPUFL_HOST_UNKNOWN);
    assert_close(s->cg_cpu_pct, -1);
    assert_true(s->cg_cpu_limit_cores < 0);
}

/* Writes the same content to every file the reader looks at. */
static void write_every_file(const char *root, const char *content) {
    static const char *const files[] = {
        "proc/stat", "proc/meminfo", "proc/self/stat", "proc/self/statm",
        "proc/sys/kernel/hostname", "proc/sys/kernel/osrelease", "sys/fs/cgroup/job/memory.max",
        "sys/fs/cgroup/job/memory.current", "sys/fs/cgroup/job/cpu.max",
        "sys/fs/cgroup/job/cpu.stat"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        write_file(root, files[i], content);
    write_file(root, "proc/self/cgroup", "0::/job\n");
}

static void check_all_unknown_for(const char *root, const char *content) {
    gpufl_host_reader_t r;
    gpufl_host_sample_t s;
    write_every_file(root, content);
    init_reader(&r, root);
    assert_int_equal(r.info.cpu_count, GPUFL_HOST_UNKNOWN);
    assert_int_equal(r.info.mem_total_bytes, GPUFL_HOST_UNKNOWN);
    assert_int_equal(r.info.cg_mem_limit_bytes, GPUFL_HOST_UNKNOWN);
    assert_true(r.info.cg_cpu_limit_cores < 0);
    for (int i = 1; i <= 3; i++) {
        sample_ok(&r, i * SECOND_NS, &s);
        assert_all_unknown(&s);
    }
    gpufl__host_reader_fini(&r);
}

static void test_garbage_and_empty_files(void **state) {
    struct fake_root *fake = *state;
    check_all_unknown_for(fake->path, "");
    check_all_unknown_for(fake->path, "garbage ) ( : \x01\x7f\n\n\n");
    check_all_unknown_for(fake->path, "12abc 34xyz\n");
    check_all_unknown_for(fake->path, "-5 -7\n");
    check_all_unknown_for(fake->path, "99999999999999999999999 1\n");
}

/* Right keys with wrong values: overflow, missing fields, zero periods. */
static void test_malformed_values(void **state) {
    struct fake_root *fake = *state;
    const char *root = fake->path;
    gpufl_host_reader_t r;
    gpufl_host_sample_t s;
    write_base_proc(root);
    write_file(root, "proc/stat", "cpu  99999999999999999999999 0 0 0\ncpu0 1 2 3 4\n");
    write_file(root, "proc/meminfo", "MemTotal: 18446744073709551615 kB\nMemAvailable: 1 kB\n");
    write_file(root, "proc/self/stat", "4242 (x) S 1 2 3\n"); /* too few fields */
    write_file(root, "proc/self/statm", "5000\n");
    write_file(root, "proc/self/cgroup", "0::/job\n");
    write_file(root, "sys/fs/cgroup/job/cpu.max", "150000 0\n");
    write_file(root, "sys/fs/cgroup/job/memory.max", "150000 extra\n");
    write_file(root, "sys/fs/cgroup/job/cpu.stat", "usage_usec\nuser_usec 5\n");
    init_reader(&r, root);
    assert_int_equal(r.info.cpu_count, 1);
    assert_int_equal(r.info.mem_total_bytes, GPUFL_HOST_UNKNOWN); /* overflows in bytes */
    assert_true(r.info.cg_cpu_limit_cores < 0);
    assert_int_equal(r.info.cg_mem_limit_bytes, 150000); /* the number is whole */
    sample_ok(&r, SECOND_NS, &s);
    sample_ok(&r, 2 * SECOND_NS, &s);
    assert_close(s.cpu_pct, -1);
    assert_close(s.proc_cpu_pct, -1);
    assert_int_equal(s.proc_rss_bytes, GPUFL_HOST_UNKNOWN);
    assert_close(s.cg_cpu_pct, -1);
    gpufl__host_reader_fini(&r);
}

static void test_bad_cgroup_lines(void **state) {
    struct fake_root *fake = *state;
    const char *root = fake->path;
    gpufl_host_reader_t r;
    write_base_proc(root);
    write_file(root, "sys/fs/cgroup/memory.max", "1\n");
    write_file(root, "sys/fs/cgroup/memory/memory.limit_in_bytes", "1\n");
    /* No usable line: no colons, a relative path, a way out of the tree. */
    write_file(root, "proc/self/cgroup",
               "garbage\n::\n0::relative/path\n3:memory:/../../etc\n0::/a/..\n1:name=x:/\n");
    init_reader(&r, root);
    assert_int_equal(r.info.cgroup_version, 0);
    assert_string_equal(r.info.cgroup_path, "");
    gpufl__host_reader_fini(&r);

    /* Lines for cgroups whose hierarchies are not mounted find nothing either. */
    write_file(root, "proc/self/cgroup", "3:cpu,cpuacct:/job\n");
    init_reader(&r, root);
    assert_int_equal(r.info.cgroup_version, 0);
    gpufl__host_reader_fini(&r);
}

/* ---------------------------------------------------------------------- */
/* The real system                                                          */
/* ---------------------------------------------------------------------- */

static int64_t monotonic_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * SECOND_NS + ts.tv_nsec;
}

static void test_real_system(void **state) {
    (void)state;
    gpufl_host_reader_t r, slash;
    gpufl_host_sample_t s;
    init_reader(&r, NULL);
    assert_true(r.info.mem_total_bytes > 0);
    assert_true(r.info.cpu_count >= 1);
    assert_true(r.info.hostname[0] != '\0');
    assert_true(r.info.kernel_release[0] != '\0');
    assert_in_range(r.info.cgroup_version, 0, 2);

    init_reader(&slash, "/");
    assert_int_equal(slash.info.cpu_count, r.info.cpu_count);
    assert_string_equal(slash.root, "");

    sample_ok(&r, monotonic_ns(), &s);
    /* Burn some CPU so both the host and the process counters move. */
    volatile uint64_t sink = 0;
    for (int64_t start = monotonic_ns(); monotonic_ns() - start < 60 * 1000 * 1000;)
        sink += 1;
    assert_true(sink > 0);
    sample_ok(&r, monotonic_ns(), &s);
    assert_true(s.cpu_pct >= 0 && s.cpu_pct <= 100);
    assert_true(s.proc_cpu_pct >= 0);
    assert_true(s.mem_total_bytes > 0);
    assert_true(s.mem_used_bytes > 0 && s.mem_used_bytes <= s.mem_total_bytes);
    assert_true(s.proc_rss_bytes > 0);
    gpufl__host_reader_fini(&r);
    gpufl__host_reader_fini(&slash);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_info_and_memory, setup_root, teardown_root),
        cmocka_unit_test_setup_teardown(test_host_cpu_pct, setup_root, teardown_root),
        cmocka_unit_test_setup_teardown(test_process_cpu_pct, setup_root, teardown_root),
        cmocka_unit_test_setup_teardown(test_comm_with_spaces_and_parens, setup_root,
                                        teardown_root),
        cmocka_unit_test_setup_teardown(test_cgroup_v2_limited, setup_root, teardown_root),
        cmocka_unit_test_setup_teardown(test_cgroup_v2_unlimited, setup_root, teardown_root),
        cmocka_unit_test_setup_teardown(test_cgroup_v2_falls_back_to_root, setup_root,
                                        teardown_root),
        cmocka_unit_test_setup_teardown(test_cgroup_v2_missing_file_stays_unknown, setup_root,
                                        teardown_root),
        cmocka_unit_test_setup_teardown(test_cgroup_v1_reordered_and_unlimited, setup_root,
                                        teardown_root),
        cmocka_unit_test_setup_teardown(test_cgroup_v1_limited_memory_no_quota, setup_root,
                                        teardown_root),
        cmocka_unit_test_setup_teardown(test_missing_root_is_eio, setup_root, teardown_root),
        cmocka_unit_test(test_root_too_long_is_einval),
        cmocka_unit_test_setup_teardown(test_files_vanish_after_init, setup_root, teardown_root),
        cmocka_unit_test_setup_teardown(test_garbage_and_empty_files, setup_root, teardown_root),
        cmocka_unit_test_setup_teardown(test_malformed_values, setup_root, teardown_root),
        cmocka_unit_test_setup_teardown(test_bad_cgroup_lines, setup_root, teardown_root),
        cmocka_unit_test(test_real_system),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
