// SPDX-License-Identifier: Apache-2.0
/*
 * test_host_metrics.c - host_metrics against fake /proc and /sys/fs/cgroup
 * trees made of real files in a temporary directory (kept descriptors,
 * cgroup directories resolved at init, limits re-read at runtime, init/fini
 * pairing), plus a plausibility check against the real system and a fork()
 * test: a reader made in the parent must describe the child in the child.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/times.h>
#include <sys/wait.h>
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
    if (fd < 0) fail_msg("open %s: %s", path, strerror(errno));
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

/* True when fd is the file at root/relative now (same inode). */
static int same_file(int fd, const char *root, const char *relative) {
    char path[1024];
    struct stat by_fd, by_path;
    snprintf(path, sizeof path, "%s/%s", root, relative);
    return fd >= 0 && fstat(fd, &by_fd) == 0 && stat(path, &by_path) == 0 &&
           by_fd.st_dev == by_path.st_dev && by_fd.st_ino == by_path.st_ino;
}

/* Replaces root/relative by a new file (a new inode) with rename(). */
static void replace_file(const char *root, const char *relative, const char *content) {
    char temporary[512], from[1024], to[1024];
    snprintf(temporary, sizeof temporary, "%s.new", relative);
    write_file(root, temporary, content);
    snprintf(from, sizeof from, "%s/%s", root, temporary);
    snprintf(to, sizeof to, "%s/%s", root, relative);
    assert_int_equal(rename(from, to), 0);
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
    if (fake == NULL) return -1;
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
    if (difference > 1e-9 || difference < -1e-9) fail_msg("%.12f != %.12f", actual, expected);
}

/* The clock of readers on a fake root: every read happens at fake_now_ns,
 * unless fake_reads holds times, which the reads take one by one (host
 * CPU, process CPU, cgroup CPU: the order a sample reads its counters). */
static int64_t fake_now_ns;
static int64_t fake_reads[8];
static size_t fake_read_count, fake_read_next;

static int64_t fake_clock(void) {
    if (fake_read_next < fake_read_count) return fake_reads[fake_read_next++];
    return fake_now_ns;
}

/* Inits a reader, asserting success; on a fake root it runs on fake_clock. */
static void init_reader(gpufl__host_reader_t *r, const char *root) {
    int rc = gpufl__host_reader_init(r, root);
    if (rc != 0)
        fail_msg("init on %s: %d (%s)", root != NULL ? root : "(real system)", rc,
                 gpufl_last_error());
    if (root != NULL && strcmp(root, "/") != 0) gpufl__host_reader_set_clock(r, fake_clock);
}

/* Samples with every read at now_ns (a real-system reader ignores it). */
static int sample_at(gpufl__host_reader_t *r, int64_t now_ns, gpufl__host_sample_t *out) {
    memset(out, 0, sizeof *out);
    fake_now_ns = now_ns;
    fake_read_count = fake_read_next = 0;
    return gpufl__host_sample(out, r);
}

static void sample_ok(gpufl__host_reader_t *r, int64_t now_ns, gpufl__host_sample_t *out) {
    int rc = sample_at(r, now_ns, out);
    if (rc != 0) fail_msg("sample: %d (%s)", rc, gpufl_last_error());
}

/* ---------------------------------------------------------------------- */
/* /proc                                                                    */
/* ---------------------------------------------------------------------- */

static void test_info_and_memory(void **state) {
    struct fake_root *fake = *state;
    gpufl__host_reader_t r;
    gpufl__host_sample_t s;
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
    assert_int_equal(gpufl__host_sample(&s, &r), 0);
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
    gpufl__host_reader_t r;
    gpufl__host_sample_t s;
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
    gpufl__host_reader_t r;
    gpufl__host_sample_t s;
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
    gpufl__host_reader_t r;
    gpufl__host_sample_t s;
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
/* CPU figures: real intervals, the shortest one, clamps                    */
/* ---------------------------------------------------------------------- */

/* A v2 cgroup "job" with CPU usage usage_usec; cpuset NULL: no cpuset file. */
static void write_cgroup_cpu(const char *root, uint64_t usage_usec, const char *cpuset) {
    write_file(root, "proc/self/cgroup", "0::/job\n");
    write_filef(root, "sys/fs/cgroup/job/cpu.stat", "usage_usec %llu\n",
                (unsigned long long)usage_usec);
    if (cpuset != NULL) write_file(root, "sys/fs/cgroup/job/cpuset.cpus.effective", cpuset);
}

/* Sets the process's CPU ticks (utime) and the cgroup's usage, samples with
 * every read at now_ns, and checks the two figures. */
static void expect_figures(gpufl__host_reader_t *r, const char *root, uint64_t utime,
                           uint64_t usage_usec, const char *cpuset, int64_t now_ns, double proc_pct,
                           double cg_pct) {
    gpufl__host_sample_t s;
    write_self_stat(root, "gpufl_test", utime, 500);
    write_cgroup_cpu(root, usage_usec, cpuset);
    sample_ok(r, now_ns, &s);
    assert_close(s.proc_cpu_pct, proc_pct);
    assert_close(s.cg_cpu_pct, cg_pct);
}

/* The reads of the next sample happen at these times, in the order
 * host CPU, process CPU, cgroup CPU. */
static void script_reads(int64_t host_ns, int64_t proc_ns, int64_t cg_ns) {
    fake_reads[0] = host_ns;
    fake_reads[1] = proc_ns;
    fake_reads[2] = cg_ns;
    fake_read_count = 3;
    fake_read_next = 0;
}

static void sample_scripted(gpufl__host_reader_t *r, gpufl__host_sample_t *out) {
    memset(out, 0, sizeof *out);
    int rc = gpufl__host_sample(out, r);
    if (rc != 0) fail_msg("sample: %d (%s)", rc, gpufl_last_error());
    assert_int_equal(fake_read_next, 3); /* each counter read took its own time */
}

/* The rate is over the real time between the two reads of a counter, not
 * over the sampling period: a sample meant for t = 2 s whose reads happen
 * at 1.5 s (process) and 1.25 s (cgroup) after baselines read at 1 s. */
static void test_rates_over_real_read_interval(void **state) {
    struct fake_root *fake = *state;
    const char *root = fake->path;
    gpufl__host_reader_t r;
    gpufl__host_sample_t s;
    uint64_t hz = (uint64_t)sysconf(_SC_CLK_TCK);
    write_base_proc(root);
    write_cgroup_cpu(root, 1000000, NULL);
    init_reader(&r, root);
    sample_ok(&r, 1 * SECOND_NS, &s);

    /* Half a second of process CPU, a quarter second of cgroup CPU. */
    write_self_stat(root, "gpufl_test", 1000 + hz / 2, 500);
    write_cgroup_cpu(root, 1250000, NULL);
    script_reads(2 * SECOND_NS, SECOND_NS + SECOND_NS / 2, SECOND_NS + SECOND_NS / 4);
    sample_scripted(&r, &s);
    assert_close(s.proc_cpu_pct, 100); /* over the 0.5 s between its reads */
    assert_close(s.cg_cpu_pct, 100);   /* over the 0.25 s between its reads */

    /* The next interval starts at those reads, not at 2 s: 0.5 s of process
     * CPU from 1.5 s to 2.5 s, 0.75 s of cgroup CPU from 1.25 s to 2.75 s. */
    write_self_stat(root, "gpufl_test", 1000 + hz, 500);
    write_cgroup_cpu(root, 2000000, NULL);
    script_reads(3 * SECOND_NS, 2 * SECOND_NS + SECOND_NS / 2, 2 * SECOND_NS + 3 * SECOND_NS / 4);
    sample_scripted(&r, &s);
    assert_close(s.proc_cpu_pct, 50);
    assert_close(s.cg_cpu_pct, 50);
    gpufl__host_reader_fini(&r);
}

/* A counter that advances by more than the CPUs could run in the interval
 * (a lagging cgroup counter catching up, a tick boundary) is clamped to 100 %
 * per CPU the process may use: the online CPUs (4 here), or its cpuset's. */
static void test_rates_clamped_to_allowed_cpus(void **state) {
    struct fake_root *fake = *state;
    const char *root = fake->path;
    gpufl__host_reader_t r;
    gpufl__host_sample_t s;
    uint64_t hz = (uint64_t)sysconf(_SC_CLK_TCK);
    write_base_proc(root);
    write_cgroup_cpu(root, 0, NULL);
    init_reader(&r, root);
    assert_int_equal(r.info.cpus_allowed, 4);
    sample_ok(&r, 1 * SECOND_NS, &s);

    /* 10 s of process CPU and 6 s of cgroup CPU in 1 s on 4 CPUs; then what
     * fits stays as it is. */
    expect_figures(&r, root, 1000 + 10 * hz, 6000000, NULL, 2 * SECOND_NS, 400, 400);
    expect_figures(&r, root, 1000 + 13 * hz, 9500000, NULL, 3 * SECOND_NS, 300, 350);
    gpufl__host_reader_fini(&r);

    /* A cpuset of 2 CPUs (of 4 online) bounds both at 200 %. */
    write_self_stat(root, "gpufl_test", 1000, 500);
    write_cgroup_cpu(root, 0, "0,2\n");
    init_reader(&r, root);
    assert_int_equal(r.info.cpus_allowed, 2);
    sample_ok(&r, 1 * SECOND_NS, &s);
    /* 236 % of one CPU, on 2 CPUs */
    expect_figures(&r, root, 1000 + 3 * hz, 2360000, "0,2\n", 2 * SECOND_NS, 200, 200);
    gpufl__host_reader_fini(&r);
}

/* The CPUs a cpuset allows: lists, ranges, v1's file, and lists that are
 * wider than the online CPUs or unreadable (then the online CPUs count). */
static void test_cpus_allowed_from_cpuset(void **state) {
    struct fake_root *fake = *state;
    const char *root = fake->path;
    static const struct {
        const char *list;
        int expected;
    } cases[] = {{"0-1\n", 2},
                 {"0,2-3\n", 3},
                 {"3\n", 1},
                 {"0-7\n", 4},
                 {"\n", 4},
                 {"1-0\n", 4},
                 {"0-\n", 4},
                 {"a-b\n", 4},
                 {"0,,1\n", 4},
                 {"0-99999999999999999999\n", 4},
                 {"0-4294967295\n", 4}};
    gpufl__host_reader_t r;
    write_base_proc(root);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        write_cgroup_cpu(root, 0, cases[i].list);
        init_reader(&r, root);
        if (r.info.cpus_allowed != cases[i].expected)
            fail_msg("cpuset '%s': %d CPUs, expected %d", cases[i].list, r.info.cpus_allowed,
                     cases[i].expected);
        gpufl__host_reader_fini(&r);
    }

    /* v1: the cpuset hierarchy, with its own path. */
    write_file(root, "proc/self/cgroup", "5:cpuset:/pinned\n4:memory:/job\n");
    write_file(root, "sys/fs/cgroup/memory/job/memory.usage_in_bytes", "1\n");
    write_file(root, "sys/fs/cgroup/cpuset/pinned/cpuset.effective_cpus", "1-2\n");
    init_reader(&r, root);
    assert_int_equal(r.info.cgroup_version, 1);
    assert_int_equal(r.info.cpus_allowed, 2);

    /* Re-read with the limits: a cpuset widened at runtime. */
    write_file(root, "sys/fs/cgroup/cpuset/pinned/cpuset.effective_cpus", "0-2\n");
    gpufl__host_sample_t s;
    for (int n = 1; n <= GPUFL_HOST_LIMITS_EVERY; n++) sample_ok(&r, n * SECOND_NS, &s);
    assert_int_equal(r.cpus_allowed, 3);
    assert_int_equal(r.info.cpus_allowed, 2); /* the record of init */
    gpufl__host_reader_fini(&r);
}

/* Samples every 10 ms of a process that keeps one CPU busy: its tick
 * counter gains 0, 1 or 2 ticks per sample, which over 10 ms would read
 * 0 %, 100 % or 200 % (and 125 % over a late 8 ms). Figures come only over
 * GPUFL_HOST_CPU_MIN_TICKS ticks or more, each within one tick of the truth,
 * and the samples between carry none. */
static void test_short_period_accumulates(void **state) {
    struct fake_root *fake = *state;
    const char *root = fake->path;
    gpufl__host_reader_t r;
    gpufl__host_sample_t s;
    long hz = sysconf(_SC_CLK_TCK);
    int64_t tick_ns = SECOND_NS / hz;
    write_base_proc(root);
    init_reader(&r, root);
    assert_int_equal(r.info.clock_ticks_per_s, hz);
    assert_int_equal(r.info.cpu_min_interval_ns, GPUFL_HOST_CPU_MIN_TICKS * tick_ns);

    int figures = 0, between = 0;
    int64_t last_figure_ns = SECOND_NS;
    double lowest = 1e9, highest = -1;
    for (int k = 0; k <= 300; k++) {
        /* 10 ms apart, each 0 to 6 ms late (scattered by a multiplicative
         * hash), the tick counter 3.7 ms out of phase */
        int64_t late_us = (int64_t)((uint32_t)k * 2654435761u % 6000u);
        int64_t now = SECOND_NS + k * INT64_C(10000000) + late_us * 1000;
        write_self_stat(root, "gpufl_test", (uint64_t)((now + 3700000) / tick_ns), 0);
        write_proc_stat(root, 100 + (uint64_t)(now / tick_ns), 0, 3 * (uint64_t)(now / tick_ns), 0,
                        0); /* one of 4 CPUs busy */
        sample_ok(&r, now, &s);
        if (k == 0) continue;
        if (s.proc_cpu_pct < 0) {
            assert_true(now - last_figure_ns < r.info.cpu_min_interval_ns);
            assert_close(s.cpu_pct, -1);
            between++;
            continue;
        }
        assert_true(now - last_figure_ns >= r.info.cpu_min_interval_ns);
        last_figure_ns = now;
        figures++;
        if (s.proc_cpu_pct < lowest) lowest = s.proc_cpu_pct;
        if (s.proc_cpu_pct > highest) highest = s.proc_cpu_pct;
        assert_true(s.cpu_pct >= 0 && s.cpu_pct <= 100);
    }
    /* about one figure per 9 ticks of 10 ms, and never 0 % nor 125 % */
    assert_in_range(figures, 25, 34);
    assert_true(between > 200);
    if (lowest < 100.0 * (GPUFL_HOST_CPU_MIN_TICKS - 1) / GPUFL_HOST_CPU_MIN_TICKS ||
        highest > 100.0 * (GPUFL_HOST_CPU_MIN_TICKS + 1) / GPUFL_HOST_CPU_MIN_TICKS)
        fail_msg("process CPU between %.1f %% and %.1f %%: more than a tick from 100 %%", lowest,
                 highest);
    gpufl__host_reader_fini(&r);
}

/* The session's last sample (gpufl__host_sample_final) gives a figure over
 * 2 ticks or more since the baseline, where a plain sample needs 9: a
 * session of 60 ms then still gets one, over those 60 ms. */
static void test_final_sample_short_interval(void **state) {
    struct fake_root *fake = *state;
    const char *root = fake->path;
    gpufl__host_reader_t r;
    gpufl__host_sample_t s;
    long hz = sysconf(_SC_CLK_TCK);
    int64_t tick_ns = SECOND_NS / hz;
    write_base_proc(root);
    init_reader(&r, root);
    write_self_stat(root, "gpufl_test", 1000, 0);
    sample_ok(&r, SECOND_NS, &s); /* baseline */
    /* 3 ticks later: too soon for a plain sample, which keeps the baseline */
    write_self_stat(root, "gpufl_test", 1003, 0);
    sample_ok(&r, SECOND_NS + 3 * tick_ns, &s);
    assert_close(s.proc_cpu_pct, -1);
    /* 6 ticks after the baseline, 3 of them busy: 50 % over the whole 6 */
    write_self_stat(root, "gpufl_test", 1003, 0);
    memset(&s, 0, sizeof s);
    fake_now_ns = SECOND_NS + 6 * tick_ns;
    fake_read_count = fake_read_next = 0;
    assert_int_equal(gpufl__host_sample_final(&s, &r), 0);
    assert_close(s.proc_cpu_pct, 50);
    /* under 2 ticks since that figure: none even at the end */
    fake_now_ns += tick_ns;
    assert_int_equal(gpufl__host_sample_final(&s, &r), 0);
    assert_close(s.proc_cpu_pct, -1);
    /* and a plain sample still needs 9 ticks afterwards */
    write_self_stat(root, "gpufl_test", 1005, 0);
    sample_ok(&r, SECOND_NS + 9 * tick_ns, &s);
    assert_close(s.proc_cpu_pct, -1);
    gpufl__host_reader_fini(&r);
}

/* After a rebase (the start of an active stretch) the next reads are new
 * baselines: no figure covers the idle time before them. */
static void test_rebase_starts_afresh(void **state) {
    struct fake_root *fake = *state;
    const char *root = fake->path;
    gpufl__host_reader_t r;
    gpufl__host_sample_t s;
    uint64_t hz = (uint64_t)sysconf(_SC_CLK_TCK);
    write_base_proc(root);
    write_cgroup_cpu(root, 0, NULL);
    init_reader(&r, root);
    sample_ok(&r, 1 * SECOND_NS, &s);
    gpufl__host_reader_rebase(&r);
    assert_int_equal(r.have_prev, 0);
    /* 50 ms on: too soon, and rebased; then 0.1 s over the 0.2 s since */
    expect_figures(&r, root, 1000 + hz, 1000000, NULL, SECOND_NS + SECOND_NS / 20, -1, -1);
    expect_figures(&r, root, 1000 + hz + hz / 10, 1100000, NULL, SECOND_NS + SECOND_NS / 4, 50, 50);
    gpufl__host_reader_fini(&r);
}

/* ---------------------------------------------------------------------- */
/* cgroups                                                                  */
/* ---------------------------------------------------------------------- */

static void test_cgroup_v2_limited(void **state) {
    struct fake_root *fake = *state;
    const char *root = fake->path;
    gpufl__host_reader_t r;
    gpufl__host_sample_t s;
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
    gpufl__host_reader_t r;
    gpufl__host_sample_t s;
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
    gpufl__host_reader_t r;
    gpufl__host_sample_t s;
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
    gpufl__host_reader_t r;
    gpufl__host_sample_t s;
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
    gpufl__host_reader_t r;
    gpufl__host_sample_t s;
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
    gpufl__host_reader_t r;
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

/* cgroup v1 with controllers in separate hierarchies at different paths,
 * as on a host where memory:/a/b sits next to cpuacct:/ and cpu:/. Each
 * controller's files come from its own directory, resolved at init; decoys
 * at the other controllers' paths must not be read. */
static void test_cgroup_v1_split_paths(void **state) {
    struct fake_root *fake = *state;
    const char *root = fake->path;
    gpufl__host_reader_t r;
    gpufl__host_sample_t s;
    char expected[1024];
    write_base_proc(root);
    write_file(root, "proc/self/cgroup",
               "9:name=systemd:/\n4:memory:/a/b\n2:cpuacct:/\n1:cpu:/\n0::/\n");
    write_file(root, "sys/fs/cgroup/memory/a/b/memory.usage_in_bytes", "1000\n");
    write_file(root, "sys/fs/cgroup/memory/a/b/memory.limit_in_bytes", "2147483648\n");
    write_file(root, "sys/fs/cgroup/memory/memory.usage_in_bytes", "999999\n");
    write_file(root, "sys/fs/cgroup/cpuacct/cpuacct.usage", "1000000000\n");
    write_file(root, "sys/fs/cgroup/cpuacct/a/b/cpuacct.usage", "5\n");
    write_file(root, "sys/fs/cgroup/cpu/cpu.cfs_quota_us", "50000\n");
    write_file(root, "sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n");
    write_file(root, "sys/fs/cgroup/cpu/a/b/cpu.cfs_quota_us", "400000\n");
    write_file(root, "sys/fs/cgroup/cpu/a/b/cpu.cfs_period_us", "100000\n");
    init_reader(&r, root);

    assert_int_equal(r.info.cgroup_version, 1);
    assert_string_equal(r.info.cgroup_path, "/a/b");
    snprintf(expected, sizeof expected, "%s/sys/fs/cgroup/memory/a/b", root);
    assert_string_equal(r.cg_mem_dir, expected);
    snprintf(expected, sizeof expected, "%s/sys/fs/cgroup/cpuacct", root);
    assert_string_equal(r.cg_cpu_usage_dir, expected);
    snprintf(expected, sizeof expected, "%s/sys/fs/cgroup/cpu", root);
    assert_string_equal(r.cg_cpu_limit_dir, expected);
    assert_true(same_file(r.fds[GPUFL_HOST_FILE_CG_MEM], root,
                          "sys/fs/cgroup/memory/a/b/memory.usage_in_bytes"));
    assert_true(
        same_file(r.fds[GPUFL_HOST_FILE_CG_CPU], root, "sys/fs/cgroup/cpuacct/cpuacct.usage"));
    assert_int_equal(r.info.cg_mem_limit_bytes, INT64_C(2147483648));
    assert_close(r.info.cg_cpu_limit_cores, 0.5);

    sample_ok(&r, SECOND_NS, &s);
    assert_int_equal(s.cg_mem_used_bytes, 1000);
    assert_int_equal(s.cg_mem_limit_bytes, INT64_C(2147483648));
    assert_close(s.cg_cpu_limit_cores, 0.5);
    write_file(root, "sys/fs/cgroup/cpuacct/cpuacct.usage", "1250000000\n");
    sample_ok(&r, 2 * SECOND_NS, &s);
    assert_close(s.cg_cpu_pct, 25);
    gpufl__host_reader_fini(&r);

    /* Three different paths; the separate hierarchies' own directories win. */
    write_file(root, "proc/self/cgroup", "4:memory:/a/b\n3:cpuacct:/x\n2:cpu:/y\n");
    write_file(root, "sys/fs/cgroup/cpuacct/x/cpuacct.usage", "7000\n");
    write_file(root, "sys/fs/cgroup/cpu/y/cpu.cfs_quota_us", "300000\n");
    write_file(root, "sys/fs/cgroup/cpu/y/cpu.cfs_period_us", "100000\n");
    init_reader(&r, root);
    assert_string_equal(r.info.cgroup_path, "/a/b");
    assert_true(
        same_file(r.fds[GPUFL_HOST_FILE_CG_CPU], root, "sys/fs/cgroup/cpuacct/x/cpuacct.usage"));
    assert_close(r.info.cg_cpu_limit_cores, 3.0);
    gpufl__host_reader_fini(&r);

    /* Without a memory line the cgroup path is the cpuacct one. */
    write_file(root, "proc/self/cgroup", "3:cpuacct:/x\n2:cpu:/y\n");
    init_reader(&r, root);
    assert_int_equal(r.info.cgroup_version, 1);
    assert_string_equal(r.info.cgroup_path, "/x");
    assert_string_equal(r.cg_mem_dir, "");
    assert_int_equal(r.fds[GPUFL_HOST_FILE_CG_MEM], -1);
    sample_ok(&r, SECOND_NS, &s);
    assert_int_equal(s.cg_mem_used_bytes, GPUFL_HOST_UNKNOWN);
    assert_int_equal(s.cg_mem_limit_bytes, GPUFL_HOST_UNKNOWN);
    assert_close(s.cg_cpu_limit_cores, 3.0);
    gpufl__host_reader_fini(&r);
}

/* Samples n_from..n_to (1-based sample counts) and checks the limits they carry. */
static void expect_limits(gpufl__host_reader_t *r, int n_from, int n_to, int64_t mem_limit,
                          double cpu_limit) {
    gpufl__host_sample_t s;
    for (int n = n_from; n <= n_to; n++) {
        sample_ok(r, n * SECOND_NS, &s);
        if (s.cg_mem_limit_bytes != mem_limit || s.cg_cpu_limit_cores != cpu_limit)
            fail_msg("sample %d: limits %lld and %.3f, expected %lld and %.3f", n,
                     (long long)s.cg_mem_limit_bytes, s.cg_cpu_limit_cores, (long long)mem_limit,
                     cpu_limit);
    }
}

/* Limits resized at runtime show from the GPUFL_HOST_LIMITS_EVERY-th sample
 * on; the info keeps the limits read at init. Limit files are opened by
 * path, so a rename() replacement shows too. */
static void test_cgroup_v2_limits_change_at_runtime(void **state) {
    struct fake_root *fake = *state;
    const char *root = fake->path;
    gpufl__host_reader_t r;
    assert_int_equal(GPUFL_HOST_LIMITS_EVERY, 50);
    write_base_proc(root);
    write_file(root, "proc/self/cgroup", "0::/job\n");
    write_file(root, "sys/fs/cgroup/job/memory.max", "536870912\n");
    write_file(root, "sys/fs/cgroup/job/cpu.max", "150000 100000\n");
    write_file(root, "sys/fs/cgroup/job/memory.current", "1\n");
    write_file(root, "sys/fs/cgroup/job/cpu.stat", "usage_usec 1\n");
    init_reader(&r, root);

    write_file(root, "sys/fs/cgroup/job/memory.max", "1073741824\n");
    write_file(root, "sys/fs/cgroup/job/cpu.max", "max 100000\n");
    expect_limits(&r, 1, 49, 536870912, 1.5);
    expect_limits(&r, 50, 50, 1073741824, -1);

    replace_file(root, "sys/fs/cgroup/job/memory.max", "max\n");
    replace_file(root, "sys/fs/cgroup/job/cpu.max", "250000 100000\n");
    expect_limits(&r, 51, 99, 1073741824, -1);
    expect_limits(&r, 100, 101, GPUFL_HOST_UNKNOWN, 2.5);
    assert_int_equal(r.info.cg_mem_limit_bytes, 536870912);
    assert_close(r.info.cg_cpu_limit_cores, 1.5);
    gpufl__host_reader_fini(&r);
}

static void test_cgroup_v1_limits_change_at_runtime(void **state) {
    struct fake_root *fake = *state;
    const char *root = fake->path;
    gpufl__host_reader_t r;
    write_base_proc(root);
    write_file(root, "proc/self/cgroup", "4:memory:/a/b\n2:cpuacct:/\n1:cpu:/\n");
    write_file(root, "sys/fs/cgroup/memory/a/b/memory.limit_in_bytes", "9223372036854771712\n");
    write_file(root, "sys/fs/cgroup/cpu/cpu.cfs_quota_us", "-1\n");
    write_file(root, "sys/fs/cgroup/cpu/cpu.cfs_period_us", "100000\n");
    init_reader(&r, root);
    assert_int_equal(r.info.cg_mem_limit_bytes, GPUFL_HOST_UNKNOWN);

    write_file(root, "sys/fs/cgroup/memory/a/b/memory.limit_in_bytes", "268435456\n");
    write_file(root, "sys/fs/cgroup/cpu/cpu.cfs_quota_us", "200000\n");
    expect_limits(&r, 1, 49, GPUFL_HOST_UNKNOWN, -1);
    expect_limits(&r, 50, 51, 268435456, 2.0);
    gpufl__host_reader_fini(&r);
}

/* A cgroup file missing at init (a controller not enabled) is not looked up
 * at every sample, only with the limits, and kept once found. */
static void test_missing_cgroup_file_looked_for_with_limits(void **state) {
    struct fake_root *fake = *state;
    const char *root = fake->path;
    gpufl__host_reader_t r;
    gpufl__host_sample_t s;
    write_base_proc(root);
    write_file(root, "proc/self/cgroup", "0::/job\n");
    write_file(root, "sys/fs/cgroup/job/cpu.stat", "usage_usec 1\n");
    init_reader(&r, root);
    assert_int_equal(r.fds[GPUFL_HOST_FILE_CG_MEM], -1);
    assert_true(r.absent & (1u << GPUFL_HOST_FILE_CG_MEM));

    write_file(root, "sys/fs/cgroup/job/memory.current", "8192\n");
    for (int n = 1; n < GPUFL_HOST_LIMITS_EVERY; n++) {
        sample_ok(&r, n * SECOND_NS, &s);
        assert_int_equal(s.cg_mem_used_bytes, GPUFL_HOST_UNKNOWN);
    }
    sample_ok(&r, GPUFL_HOST_LIMITS_EVERY * SECOND_NS, &s);
    assert_int_equal(s.cg_mem_used_bytes, 8192);
    assert_true(same_file(r.fds[GPUFL_HOST_FILE_CG_MEM], root, "sys/fs/cgroup/job/memory.current"));
    assert_false(r.absent & (1u << GPUFL_HOST_FILE_CG_MEM));
    write_file(root, "sys/fs/cgroup/job/memory.current", "16384\n");
    sample_ok(&r, (GPUFL_HOST_LIMITS_EVERY + 1) * SECOND_NS, &s);
    assert_int_equal(s.cg_mem_used_bytes, 16384);
    gpufl__host_reader_fini(&r);
}

/* ---------------------------------------------------------------------- */
/* Errors and bad input                                                     */
/* ---------------------------------------------------------------------- */

static void test_missing_root_is_eio(void **state) {
    struct fake_root *fake = *state;
    gpufl__host_reader_t r;
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

/* Open descriptors of this process. */
static int count_open_fds(void) {
    DIR *directory = opendir("/proc/self/fd");
    assert_non_null(directory);
    int count = 0;
    for (struct dirent *entry; (entry = readdir(directory)) != NULL;)
        count += entry->d_name[0] != '.';
    closedir(directory);
    return count;
}

static void assert_no_fds(const gpufl__host_reader_t *r) {
    for (int i = 0; i < GPUFL_HOST_FILE_COUNT; i++) assert_int_equal(r->fds[i], -1);
}

/* fini pairs with every init, failed ones included, and closes nothing twice. */
static void test_fini_after_failed_init(void **state) {
    struct fake_root *fake = *state;
    const char *root = fake->path;
    gpufl__host_reader_t r;
    gpufl__host_sample_t s;
    int baseline = count_open_fds();

    /* meminfo is opened (and would be kept) before proc/stat is missed. */
    write_file(root, "proc/meminfo", "MemTotal: 1 kB\n");
    assert_int_equal(gpufl__host_reader_init(&r, root), GPUFL_EIO);
    assert_int_equal(count_open_fds(), baseline);
    assert_no_fds(&r);
    gpufl__host_reader_fini(&r);
    gpufl__host_reader_fini(&r);
    assert_int_equal(count_open_fds(), baseline);
    assert_int_equal(sample_at(&r, SECOND_NS, &s), GPUFL_EINVAL);

    /* A proc/stat that opens but cannot be read. */
    char stat_path[1024];
    snprintf(stat_path, sizeof stat_path, "%s/proc/stat", root);
    assert_int_equal(mkdir(stat_path, 0755), 0);
    assert_int_equal(gpufl__host_reader_init(&r, root), GPUFL_EIO);
    assert_non_null(strstr(gpufl_last_error(), "proc/stat"));
    assert_int_equal(count_open_fds(), baseline);
    gpufl__host_reader_fini(&r);
    assert_int_equal(rmdir(stat_path), 0);

    /* A bad root fails before anything is opened. */
    char long_root[400];
    memset(long_root, 'x', sizeof long_root - 1);
    long_root[0] = '/';
    long_root[sizeof long_root - 1] = '\0';
    assert_int_equal(gpufl__host_reader_init(&r, long_root), GPUFL_EINVAL);
    assert_no_fds(&r);
    gpufl__host_reader_fini(&r);
    assert_int_equal(count_open_fds(), baseline);

    /* A good init holds its descriptors until fini; a second fini and a
     * sample after fini touch none. */
    write_base_proc(root);
    write_file(root, "proc/self/cgroup", "0::/job\n");
    write_file(root, "sys/fs/cgroup/job/memory.current", "1\n");
    write_file(root, "sys/fs/cgroup/job/cpu.stat", "usage_usec 1\n");
    init_reader(&r, root);
    assert_int_equal(count_open_fds(), baseline + GPUFL_HOST_FILE_COUNT);
    sample_ok(&r, SECOND_NS, &s);
    assert_int_equal(count_open_fds(), baseline + GPUFL_HOST_FILE_COUNT);
    gpufl__host_reader_fini(&r);
    assert_int_equal(count_open_fds(), baseline);
    assert_no_fds(&r);
    gpufl__host_reader_fini(&r);
    assert_int_equal(sample_at(&r, 2 * SECOND_NS, &s), GPUFL_EINVAL);
    assert_int_equal(count_open_fds(), baseline);

    /* A zero-filled reader owns no descriptor (its fds of 0 are not closed). */
    memset(&r, 0, sizeof r);
    gpufl__host_reader_fini(&r);
    assert_int_equal(count_open_fds(), baseline);
}

static void test_root_too_long_is_einval(void **state) {
    (void)state;
    gpufl__host_reader_t r;
    char root[400];
    memset(root, 'x', sizeof root - 1);
    root[0] = '/';
    root[sizeof root - 1] = '\0';
    assert_int_equal(gpufl__host_reader_init(&r, root), GPUFL_EINVAL);
    assert_true(strlen(gpufl_last_error()) > 0);
}

/* A file without a kept descriptor (as when open failed at init, EMFILE) is
 * opened by path at each sample until that works, then kept; a kept
 * descriptor that fails to read is dropped and the path opened again. A
 * sample that returns GPUFL_EIO still fills the other fields. */
static void test_unkept_and_failing_files(void **state) {
    struct fake_root *fake = *state;
    const char *root = fake->path;
    gpufl__host_reader_t r;
    gpufl__host_sample_t s;
    uint64_t hz = (uint64_t)sysconf(_SC_CLK_TCK);
    write_base_proc(root);
    write_file(root, "proc/self/cgroup", "0::/job\n");
    write_file(root, "sys/fs/cgroup/job/memory.current", "4096\n");
    init_reader(&r, root);
    sample_ok(&r, SECOND_NS, &s);

    /* No descriptor and no file: EIO, everything else still read. */
    close(r.fds[GPUFL_HOST_FILE_STAT]);
    r.fds[GPUFL_HOST_FILE_STAT] = -1;
    remove_file(root, "proc/stat");
    assert_int_equal(sample_at(&r, 2 * SECOND_NS, &s), GPUFL_EIO);
    assert_non_null(strstr(gpufl_last_error(), "proc/stat"));
    assert_close(s.cpu_pct, -1);
    assert_false(r.have_prev & GPUFL_HOST_PREV_HOST_CPU);
    assert_int_equal(s.mem_total_bytes, INT64_C(16384000) * 1024);
    assert_int_equal(s.mem_used_bytes, (INT64_C(16384000) - 12000000) * 1024);
    assert_int_equal(s.proc_rss_bytes, 250 * sysconf(_SC_PAGESIZE));
    assert_close(s.proc_cpu_pct, 0);
    assert_int_equal(s.cg_mem_used_bytes, 4096);

    /* Back: opened by path and kept. A rate needs two readable samples in a
     * row, not a stale one. */
    write_proc_stat(root, 500, 500, 5000, 100, 0);
    sample_ok(&r, 3 * SECOND_NS, &s);
    assert_close(s.cpu_pct, -1);
    assert_true(same_file(r.fds[GPUFL_HOST_FILE_STAT], root, "proc/stat"));
    write_proc_stat(root, 600, 500, 5300, 100, 0); /* busy +100 of +400 */
    sample_ok(&r, 4 * SECOND_NS, &s);
    assert_close(s.cpu_pct, 25);

    /* A kept descriptor that fails (a directory put in its place) is dropped
     * and the path opened again. */
    int directory = open(root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    assert_true(directory >= 0);
    assert_int_equal(dup2(directory, r.fds[GPUFL_HOST_FILE_MEMINFO]),
                     r.fds[GPUFL_HOST_FILE_MEMINFO]);
    sample_ok(&r, 5 * SECOND_NS, &s);
    assert_int_equal(s.mem_used_bytes, (INT64_C(16384000) - 12000000) * 1024);
    assert_true(same_file(r.fds[GPUFL_HOST_FILE_MEMINFO], root, "proc/meminfo"));

    /* ...and when the path fails too: EIO, nothing kept, the rest read. */
    assert_int_equal(dup2(directory, r.fds[GPUFL_HOST_FILE_MEMINFO]),
                     r.fds[GPUFL_HOST_FILE_MEMINFO]);
    remove_file(root, "proc/meminfo");
    char meminfo[1024];
    snprintf(meminfo, sizeof meminfo, "%s/proc/meminfo", root);
    assert_int_equal(mkdir(meminfo, 0755), 0);
    assert_int_equal(sample_at(&r, 6 * SECOND_NS, &s), GPUFL_EIO);
    assert_non_null(strstr(gpufl_last_error(), "proc/meminfo"));
    assert_int_equal(s.mem_total_bytes, GPUFL_HOST_UNKNOWN);
    assert_int_equal(s.mem_used_bytes, GPUFL_HOST_UNKNOWN);
    assert_int_equal(r.fds[GPUFL_HOST_FILE_MEMINFO], -1);
    assert_close(s.cpu_pct, -1); /* /proc/stat did not move */
    assert_int_equal(s.proc_rss_bytes, 250 * sysconf(_SC_PAGESIZE));
    assert_int_equal(s.cg_mem_used_bytes, 4096);
    assert_int_equal(rmdir(meminfo), 0);
    write_file(root, "proc/meminfo", "MemTotal: 1000 kB\nMemAvailable: 400 kB\n");
    sample_ok(&r, 7 * SECOND_NS, &s);
    assert_int_equal(s.mem_used_bytes, 600 * 1024);
    assert_true(same_file(r.fds[GPUFL_HOST_FILE_MEMINFO], root, "proc/meminfo"));
    close(directory);

    /* Garbage in a kept file: no rate, and none from the stale value after it. */
    write_file(root, "proc/self/stat", "garbage\n");
    sample_ok(&r, 8 * SECOND_NS, &s);
    assert_close(s.proc_cpu_pct, -1);
    write_self_stat(root, "gpufl_test", 9000, 9000);
    sample_ok(&r, 9 * SECOND_NS, &s);
    assert_close(s.proc_cpu_pct, -1);
    write_self_stat(root, "gpufl_test", 9000 + hz, 9000);
    sample_ok(&r, 10 * SECOND_NS, &s);
    assert_close(s.proc_cpu_pct, 100);
    gpufl__host_reader_fini(&r);
}

/* What the kept descriptors see (host_metrics.h): a file rewritten in place
 * (O_TRUNC, the same inode) shows its new content; a file replaced by
 * rename() or unlinked does not, the descriptor reads the old inode. */
static void test_kept_files_rewritten_and_replaced(void **state) {
    struct fake_root *fake = *state;
    const char *root = fake->path;
    gpufl__host_reader_t r;
    gpufl__host_sample_t s;
    write_base_proc(root);
    write_file(root, "proc/self/cgroup", "0::/job\n");
    write_file(root, "sys/fs/cgroup/job/memory.current", "100\n");
    write_file(root, "sys/fs/cgroup/job/cpu.stat", "usage_usec 0\n");
    init_reader(&r, root);
    for (int i = 0; i < GPUFL_HOST_FILE_COUNT; i++) assert_true(r.fds[i] >= 0);
    int kept_fd = r.fds[GPUFL_HOST_FILE_CG_MEM];
    assert_true(same_file(kept_fd, root, "sys/fs/cgroup/job/memory.current"));
    sample_ok(&r, SECOND_NS, &s);
    assert_int_equal(s.cg_mem_used_bytes, 100);

    /* Rewritten in place: seen, through the same descriptor. */
    write_file(root, "sys/fs/cgroup/job/memory.current", "200\n");
    write_file(root, "sys/fs/cgroup/job/cpu.stat", "usage_usec 500000\n");
    sample_ok(&r, 2 * SECOND_NS, &s);
    assert_int_equal(s.cg_mem_used_bytes, 200);
    assert_close(s.cg_cpu_pct, 50);
    assert_int_equal(r.fds[GPUFL_HOST_FILE_CG_MEM], kept_fd);
    assert_true(same_file(kept_fd, root, "sys/fs/cgroup/job/memory.current"));

    /* Replaced by rename: not seen, the old inode is still read. */
    replace_file(root, "sys/fs/cgroup/job/memory.current", "300\n");
    sample_ok(&r, 3 * SECOND_NS, &s);
    assert_int_equal(s.cg_mem_used_bytes, 200);
    assert_false(same_file(kept_fd, root, "sys/fs/cgroup/job/memory.current"));
    /* In-place writes to the new file do not reach the old one either. */
    write_file(root, "sys/fs/cgroup/job/memory.current", "400\n");
    sample_ok(&r, 4 * SECOND_NS, &s);
    assert_int_equal(s.cg_mem_used_bytes, 200);

    /* Unlinked: still read through the descriptor. */
    remove_file(root, "proc/self/statm");
    sample_ok(&r, 5 * SECOND_NS, &s);
    assert_int_equal(s.proc_rss_bytes, 250 * sysconf(_SC_PAGESIZE));
    gpufl__host_reader_fini(&r);
}

static void assert_all_unknown(const gpufl__host_sample_t *s) {
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
    static const char *const files[] = {"proc/stat",
                                        "proc/meminfo",
                                        "proc/self/stat",
                                        "proc/self/statm",
                                        "proc/sys/kernel/hostname",
                                        "proc/sys/kernel/osrelease",
                                        "sys/fs/cgroup/job/memory.max",
                                        "sys/fs/cgroup/job/memory.current",
                                        "sys/fs/cgroup/job/cpu.max",
                                        "sys/fs/cgroup/job/cpu.stat"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) write_file(root, files[i], content);
    write_file(root, "proc/self/cgroup", "0::/job\n");
}

static void check_all_unknown_for(const char *root, const char *content) {
    gpufl__host_reader_t r;
    gpufl__host_sample_t s;
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
    gpufl__host_reader_t r;
    gpufl__host_sample_t s;
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
    gpufl__host_reader_t r;
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
    gpufl__host_reader_t r, slash;
    gpufl__host_sample_t s;
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
    /* Burn some CPU so both the host and the process counters move, for
     * longer than the shortest interval a CPU figure is taken over. */
    assert_true(r.info.cpu_min_interval_ns <= 100 * 1000 * 1000);
    volatile uint64_t sink = 0;
    for (int64_t start = monotonic_ns(); monotonic_ns() - start < 150 * 1000 * 1000;) sink += 1;
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

/* What the child of test_fork_reads_the_child sends back. */
struct child_report {
    int rc_first, rc_second;
    double first_cpu_pct, second_cpu_pct;
    uint64_t first_ticks; /* reader's utime+stime at the first sample */
    uint64_t own_ticks;   /* the child's own, from times() */
    int64_t rss_bytes;
    int self_pid_is_child;
    int fds_kept;
};

/* Spends ns of this process's CPU time (not wall time: under a loaded
 * parallel test run, wall time would not guarantee the ticks). */
static int64_t cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void burn_cpu(int64_t ns) {
    volatile uint64_t sink = 0;
    for (int64_t start = cpu_ns(); cpu_ns() - start < ns;) sink += 1;
}

/* Runs in the child: no cmocka asserts here, the report goes up the pipe. */
static void run_forked_child(gpufl__host_reader_t *r, int report_fd) {
    struct child_report report;
    gpufl__host_sample_t s;
    struct tms own;
    size_t bytes = (size_t)64 << 20;
    memset(&report, 0, sizeof report);

    report.rc_first = gpufl__host_sample(&s, r);
    report.first_cpu_pct = s.proc_cpu_pct;
    report.first_ticks = r->prev_proc_ticks;
    times(&own);
    report.own_ticks = (uint64_t)own.tms_utime + (uint64_t)own.tms_stime;

    char *memory = malloc(bytes);
    if (memory != NULL) { /* touch every page; volatile, or -O2 drops the stores */
        volatile char *pages = memory;
        for (size_t i = 0; i < bytes; i += 4096) pages[i] = 0x5a;
        pages[bytes - 1] = 0x5a;
    }
    burn_cpu(100 * 1000 * 1000);
    report.rc_second = gpufl__host_sample(&s, r);
    report.second_cpu_pct = s.proc_cpu_pct;
    report.rss_bytes = memory != NULL && memory[bytes - 1] == 0x5a ? s.proc_rss_bytes : -2;
    report.self_pid_is_child = r->self_pid == getpid();
    report.fds_kept =
        r->fds[GPUFL_HOST_FILE_SELF_STAT] >= 0 && r->fds[GPUFL_HOST_FILE_SELF_STATM] >= 0;
    gpufl__host_reader_fini(r);
    free(memory);
    ssize_t written = write(report_fd, &report, sizeof report);
    _exit(written == (ssize_t)sizeof report ? 0 : 3);
}

/* A reader made in the parent, sampled in a fork()ed child, reports the
 * child: /proc/self/... opened in the parent would keep describing the
 * parent, so the child must reopen them. */
static void test_fork_reads_the_child(void **state) {
    (void)state;
    gpufl__host_reader_t r;
    gpufl__host_sample_t s;
    struct child_report report;
    int pipe_fds[2], status;
    init_reader(&r, NULL);
    burn_cpu(200 * 1000 * 1000);
    sample_ok(&r, monotonic_ns(), &s);
    uint64_t parent_ticks = r.prev_proc_ticks;
    int parent_stat_fd = r.fds[GPUFL_HOST_FILE_SELF_STAT];
    assert_true(parent_stat_fd >= 0);
    assert_true(parent_ticks >= 15);

    assert_int_equal(pipe(pipe_fds), 0);
    fflush(NULL);
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        close(pipe_fds[0]);
        run_forked_child(&r, pipe_fds[1]);
    }
    close(pipe_fds[1]);
    size_t got = 0;
    while (got < sizeof report) {
        ssize_t count = read(pipe_fds[0], (char *)&report + got, sizeof report - got);
        if (count < 0 && errno == EINTR) continue;
        if (count <= 0) break;
        got += (size_t)count;
    }
    close(pipe_fds[0]);
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
    assert_int_equal(got, sizeof report);

    /* The parent's reader is untouched by the child's fini. */
    sample_ok(&r, monotonic_ns(), &s);
    assert_int_equal(r.fds[GPUFL_HOST_FILE_SELF_STAT], parent_stat_fd);
    assert_true(s.proc_rss_bytes > 0);

    assert_int_equal(report.rc_first, 0);
    assert_int_equal(report.rc_second, 0);
    /* CPU: the child's own ticks, a new baseline, then a rate. */
    assert_close(report.first_cpu_pct, -1);
    assert_true(report.first_ticks <= report.own_ticks + 2 &&
                report.own_ticks <= report.first_ticks + 2);
    if (report.first_ticks + 10 > parent_ticks)
        fail_msg("child ticks %llu, parent ticks %llu: the parent was read",
                 (unsigned long long)report.first_ticks, (unsigned long long)parent_ticks);
    assert_true(report.second_cpu_pct > 0);
    /* RSS: the child's 64 MiB on top of what it shares with the parent. */
    if (report.rss_bytes < s.proc_rss_bytes + (INT64_C(32) << 20))
        fail_msg("child RSS %lld, parent RSS %lld: the parent was read",
                 (long long)report.rss_bytes, (long long)s.proc_rss_bytes);
    /* The child's process files are its own and kept for its next samples. */
    assert_true(report.self_pid_is_child);
    assert_true(report.fds_kept);
    gpufl__host_reader_fini(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_info_and_memory, setup_root, teardown_root),
        cmocka_unit_test_setup_teardown(test_host_cpu_pct, setup_root, teardown_root),
        cmocka_unit_test_setup_teardown(test_process_cpu_pct, setup_root, teardown_root),
        cmocka_unit_test_setup_teardown(test_comm_with_spaces_and_parens, setup_root,
                                        teardown_root),
        cmocka_unit_test_setup_teardown(test_rates_over_real_read_interval, setup_root,
                                        teardown_root),
        cmocka_unit_test_setup_teardown(test_rates_clamped_to_allowed_cpus, setup_root,
                                        teardown_root),
        cmocka_unit_test_setup_teardown(test_cpus_allowed_from_cpuset, setup_root, teardown_root),
        cmocka_unit_test_setup_teardown(test_short_period_accumulates, setup_root, teardown_root),
        cmocka_unit_test_setup_teardown(test_final_sample_short_interval, setup_root,
                                        teardown_root),
        cmocka_unit_test_setup_teardown(test_rebase_starts_afresh, setup_root, teardown_root),
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
        cmocka_unit_test_setup_teardown(test_cgroup_v1_split_paths, setup_root, teardown_root),
        cmocka_unit_test_setup_teardown(test_cgroup_v2_limits_change_at_runtime, setup_root,
                                        teardown_root),
        cmocka_unit_test_setup_teardown(test_cgroup_v1_limits_change_at_runtime, setup_root,
                                        teardown_root),
        cmocka_unit_test_setup_teardown(test_missing_cgroup_file_looked_for_with_limits, setup_root,
                                        teardown_root),
        cmocka_unit_test_setup_teardown(test_missing_root_is_eio, setup_root, teardown_root),
        cmocka_unit_test_setup_teardown(test_fini_after_failed_init, setup_root, teardown_root),
        cmocka_unit_test(test_root_too_long_is_einval),
        cmocka_unit_test_setup_teardown(test_unkept_and_failing_files, setup_root, teardown_root),
        cmocka_unit_test_setup_teardown(test_kept_files_rewritten_and_replaced, setup_root,
                                        teardown_root),
        cmocka_unit_test_setup_teardown(test_garbage_and_empty_files, setup_root, teardown_root),
        cmocka_unit_test_setup_teardown(test_malformed_values, setup_root, teardown_root),
        cmocka_unit_test_setup_teardown(test_bad_cgroup_lines, setup_root, teardown_root),
        cmocka_unit_test(test_real_system),
        cmocka_unit_test(test_fork_reads_the_child),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
