// SPDX-License-Identifier: Apache-2.0
/*
 * host_metrics.c - host, process and cgroup metrics read from /proc and
 * /sys/fs/cgroup below a root directory (a fake tree in tests).
 *
 * Init reads the static facts, resolves the cgroup directories and opens the
 * files read at every sample. A sample then costs one pread() at offset 0 of
 * each kept file (plus a getpid()), parsed in place in one stack buffer, with
 * no allocation, no path lookup and no open/close:
 *   proc/stat (first line)         host CPU busy and total jiffies
 *   proc/meminfo                   MemTotal, MemAvailable
 *   proc/self/stat                 utime + stime of this process
 *   proc/self/statm                resident pages of this process
 *   cgroup memory usage            v2 memory.current, v1 memory.usage_in_bytes
 *   cgroup CPU usage               v2 cpu.stat usage_usec, v1 cpuacct.usage
 * Every GPUFL_HOST_LIMITS_EVERY-th sample also opens and reads the limit files
 * (and the cgroup's cpuset, which bounds the CPU figures). The CPU counters
 * are stamped with the reader's clock as they are read, and give a figure
 * only over GPUFL_HOST_CPU_MIN_TICKS ticks or more (host_metrics.h).
 * A file with no kept descriptor is opened by path when read, and kept from
 * then on. See host_metrics.h for what kept descriptors mean for replaced
 * files and for fork().
 *
 * Cost of one gpufl__host_sample() on the real system, 2026-11-22, 2-vCPU KVM
 * VM, Debian 12 (kernel 6.1, cgroup v1: memory:/process_api/<id>, cpu:/ and
 * cpuacct:/ mounted apart), loops of 10000 samples timed with CLOCK_MONOTONIC,
 * -O2 (RelWithDebInfo), best of 20 loops in 4 runs, and their median:
 *   before, open/read/close of each file, cgroup files looked up at every
 *   sample (cpuacct.usage under the memory path, then the hierarchy roots):
 *     34.9 us per sample (median 37.1 us); strace: 23 syscalls a sample
 *     (9 open, 6 read, 6 close, 2 stat), 5 of them failing
 *   after, kept descriptors read with pread():
 *     11.8 us per sample (median 12.7 us); strace: 6 pread() and 1 getpid()
 *     a sample, no failing call; 2 open/close pairs every 50th sample
 * What remains is the kernel formatting the files, mostly /proc/meminfo
 * (5.5 us a pread) and /proc/stat (4.0 us, its long intr line included
 * though only the first line is used).
 */
#include "host/host_metrics.h"

#include "core/clock.h"
#include "util/error.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* Enough for every file read per sample: /proc/meminfo is about 1.5 KiB, and
 * of /proc/stat, which is large on big hosts, only the first line is used. */
#define READ_BUFFER_BYTES 8192
/* A resolved directory (< GPUFL_HOST_DIR_BYTES) + "/" + a file name. */
#define PATH_BYTES        1024
#define CGROUP_PATH_BYTES sizeof(((gpufl__host_info_t *)0)->cgroup_path)
/* Reading /proc/stat at init stops after the cpu lines; this bounds it anyway
 * (a fake root could point it at an endless file). 8192 CPUs take about 1 MiB. */
#define CPU_COUNT_MAX_READ_BYTES (4u << 20)
/* cgroup v1 reports "no limit" as a huge page-rounded number (2^63 - 4096 on
 * x86-64); anything from 2^62 on is no real limit. */
#define CGROUP_V1_UNLIMITED_BYTES (UINT64_C(1) << 62)

/* v1 hierarchies that hold the CPU files: co-mounted (the usual systemd
 * layout) first, then separately mounted controllers. */
static const char *const cpu_usage_hierarchies[] = {"/cpu,cpuacct", "/cpuacct"};
static const char *const cpu_quota_hierarchies[] = {"/cpu,cpuacct", "/cpu"};
#define HIERARCHY_COUNT 2

/* ---------------------------------------------------------------------- */
/* Files                                                                    */
/* ---------------------------------------------------------------------- */

static int format_path(char *out, size_t cap, const char *fmt, ...) GPUFL__PRINTF(3, 4);

/* Returns 0, or -1 (errno ENAMETOOLONG) when the path does not fit; then it
 * is not opened at all. */
static int format_path(char *out, size_t cap, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int length = vsnprintf(out, cap, fmt, ap);
    va_end(ap);
    if (length < 0 || (size_t)length >= cap) {
        errno = ENAMETOOLONG;
        return -1;
    }
    return 0;
}

static int open_read_only(const char *path) { return open(path, O_RDONLY | O_CLOEXEC); }

static int directory_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Closes *fd when open and marks it closed, keeping errno. */
static void close_fd(int *fd) {
    if (*fd < 0) return;
    int saved_errno = errno;
    close(*fd);
    *fd = -1;
    errno = saved_errno;
}

/* Reads the start of a file into buf as a string: pread() at offset 0, so a
 * kept descriptor reads the file afresh each time (procfs and cgroupfs
 * regenerate the text when offset 0 is read). One call is enough: kernel
 * text files hand over all they have, up to the buffer, at once. Returns the
 * byte count or -1 (errno set). */
static ssize_t pread_text(int fd, char *buf, size_t cap) {
    ssize_t count;
    do {
        count = pread(fd, buf, cap - 1, 0);
    } while (count < 0 && errno == EINTR);
    if (count < 0) return -1;
    buf[count] = '\0';
    return count;
}

/* Reads the start of a file by path, then closes it. */
static ssize_t read_path_text(const char *path, char *buf, size_t cap) {
    int fd = open_read_only(path);
    if (fd < 0) return -1;
    ssize_t count = pread_text(fd, buf, cap);
    close_fd(&fd);
    return count;
}

/* Reads root + relative (which starts with '/'). */
static ssize_t read_root_text(const char *root, const char *relative, char *buf, size_t cap) {
    char path[PATH_BYTES];
    if (format_path(path, sizeof path, "%s%s", root, relative) != 0) return -1;
    return read_path_text(path, buf, cap);
}

/* Reads dir/file; dir "" (no such cgroup directory) reads nothing. */
static ssize_t read_dir_text(const char *dir, const char *file, char *buf, size_t cap) {
    char path[PATH_BYTES];
    if (dir[0] == '\0') {
        errno = ENOENT;
        return -1;
    }
    if (format_path(path, sizeof path, "%s/%s", dir, file) != 0) return -1;
    return read_path_text(path, buf, cap);
}

/* Copies the first line of text, without trailing blanks, into dst. */
static void copy_first_line(char *dst, size_t cap, const char *text) {
    size_t length = strcspn(text, "\n");
    while (length > 0 &&
           (text[length - 1] == ' ' || text[length - 1] == '\t' || text[length - 1] == '\r'))
        length--;
    if (length >= cap) length = cap - 1;
    memcpy(dst, text, length);
    dst[length] = '\0';
}

/* ---------------------------------------------------------------------- */
/* Numbers                                                                  */
/* ---------------------------------------------------------------------- */

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_blank(char c) { return c == ' ' || c == '\t'; }
/* What may follow a number: anything else ("12abc") makes it garbage. */
static int ends_number(char c) { return c == '\0' || c == ' ' || c == '\t' || c == '\n'; }

/* Parses an unsigned decimal at *cursor that ends where ends_number() says
 * or at one of stops ("3-5,8" in a cpu list), and advances *cursor past it.
 * Returns 0, or -1 for no number, trailing garbage or overflow. */
static int parse_digits(const char **cursor, uint64_t *out, const char *stops) {
    const char *p = *cursor;
    if (!is_digit(*p)) return -1;
    uint64_t value = 0;
    for (; is_digit(*p); p++) {
        unsigned digit = (unsigned)(*p - '0');
        if (value > (UINT64_MAX - digit) / 10) return -1;
        value = value * 10 + digit;
    }
    if (!ends_number(*p) && strchr(stops, *p) == NULL) return -1;
    *cursor = p;
    *out = value;
    return 0;
}

/* Parses an unsigned decimal after optional blanks (not newlines, so a
 * parse never runs into the next line) and advances *cursor past it.
 * Returns 0, or -1 for no number, trailing garbage or overflow. */
static int parse_u64(const char **cursor, uint64_t *out) {
    const char *p = *cursor;
    while (is_blank(*p)) p++;
    if (parse_digits(&p, out, "") != 0) return -1;
    *cursor = p;
    return 0;
}

/* Like parse_u64 with an optional '-' (cfs_quota_us is -1 when unlimited). */
static int parse_i64(const char **cursor, int64_t *out) {
    const char *p = *cursor;
    while (is_blank(*p)) p++;
    int negative = (*p == '-');
    if (negative) p++;
    uint64_t magnitude;
    if (parse_u64(&p, &magnitude) != 0 || magnitude > (uint64_t)INT64_MAX) return -1;
    *cursor = p;
    *out = negative ? -(int64_t)magnitude : (int64_t)magnitude;
    return 0;
}

/* Parses the number that makes up a whole one-value file ("12345\n"). */
static int parse_single_u64(const char *text, uint64_t *out) {
    const char *p = text;
    return parse_u64(&p, out);
}

/* True when a one-value file says "max" (cgroup v2 for "no limit"). */
static int says_max(const char *text) {
    return strncmp(text, "max", 3) == 0 && ends_number(text[3]);
}

/* Finds the line that starts with key ("MemTotal:") and parses the number after it. */
static int find_line_value(const char *text, const char *key, uint64_t *out) {
    size_t key_length = strlen(key);
    for (const char *line = text; line != NULL && *line != '\0';) {
        if (strncmp(line, key, key_length) == 0) {
            const char *p = line + key_length;
            return parse_u64(&p, out);
        }
        line = strchr(line, '\n');
        if (line != NULL) line++;
    }
    return -1;
}

static int64_t u64_to_bytes(uint64_t value) {
    return value > (uint64_t)INT64_MAX ? GPUFL_HOST_UNKNOWN : (int64_t)value;
}

static int64_t kib_to_bytes(uint64_t kib) {
    return kib > (uint64_t)INT64_MAX / 1024 ? GPUFL_HOST_UNKNOWN : (int64_t)(kib * 1024);
}

/* Percent of one CPU used over an interval: delta units of CPU time, at
 * units_per_second, over elapsed_ns of wall time. -1 when the counter went
 * backwards or no time passed. */
static double percent_of_one_cpu(uint64_t previous, uint64_t current, double units_per_second,
                                 double elapsed_ns) {
    if (current < previous || elapsed_ns <= 0 || units_per_second <= 0) return -1;
    double cpu_seconds = (double)(current - previous) / units_per_second;
    return 100.0 * cpu_seconds / (elapsed_ns / 1e9);
}

/* Counts the CPUs of a cpu list ("0-3,8,10-11\n", as cpuset files and
 * /proc/self/status write them). Returns the count, or -1 for an empty or
 * malformed list. */
static int count_cpu_list(const char *text) {
    const char *p = text;
    uint64_t count = 0, first, last;
    for (;;) {
        if (parse_digits(&p, &first, ",-") != 0) return -1;
        last = first;
        if (*p == '-') {
            p++;
            if (parse_digits(&p, &last, ",") != 0 || last < first) return -1;
        }
        if (last - first >= (uint64_t)INT32_MAX - count) return -1;
        count += last - first + 1;
        if (*p != ',') break;
        p++;
    }
    return *p == '\0' || *p == '\n' ? (int)count : -1;
}

/* ---------------------------------------------------------------------- */
/* /proc parsers                                                            */
/* ---------------------------------------------------------------------- */

/* Parses the "cpu " total line of /proc/stat. total is user..steal: guest and
 * guest_nice are already counted inside user and nice, so they are left out. */
static int parse_host_cpu_line(const char *text, uint64_t *busy, uint64_t *total) {
    if (strncmp(text, "cpu ", 4) != 0) return -1;
    const char *p = text + 4;
    uint64_t fields[8] = {0};
    int count = 0;
    while (count < 8 && parse_u64(&p, &fields[count]) == 0) count++;
    if (count < 4) /* user nice system idle exist on every kernel */
        return -1;
    uint64_t sum = 0;
    for (int i = 0; i < count; i++) {
        if (fields[i] > UINT64_MAX - sum) return -1;
        sum += fields[i];
    }
    uint64_t idle = fields[3] + fields[4]; /* idle + iowait, both <= sum */
    *total = sum;
    *busy = sum - idle;
    return 0;
}

/* Parses utime + stime (fields 14 and 15) of /proc/<pid>/stat. The command
 * name in field 2 may hold spaces and ')', so fields are counted from the last ')'. */
static int parse_process_ticks(const char *text, uint64_t *ticks) {
    const char *p = strrchr(text, ')');
    if (p == NULL) return -1;
    p++;
    for (int field = 3; field < 14; field++) {
        while (is_blank(*p)) p++;
        if (*p == '\0' || *p == '\n') return -1;
        while (*p != '\0' && !is_blank(*p) && *p != '\n') p++;
    }
    uint64_t user_ticks, system_ticks;
    if (parse_u64(&p, &user_ticks) != 0 || parse_u64(&p, &system_ticks) != 0 ||
        user_ticks > UINT64_MAX - system_ticks)
        return -1;
    *ticks = user_ticks + system_ticks;
    return 0;
}

/* Counts the "cpuN" lines of /proc/stat as it streams by in buf. They come
 * first, so reading stops at the first other line: on a big host the file is
 * large, and the "intr" line after the cpu lines alone can be tens of KiB. */
struct cpu_line_counter {
    size_t column;
    int starts_with_cpu; /* the line so far matches "cpu" */
    int count;
    int done;
};

static void count_cpu_lines(struct cpu_line_counter *counter, const char *text, size_t length) {
    static const char prefix[] = "cpu";
    for (size_t i = 0; i < length && !counter->done; i++) {
        char c = text[i];
        if (c == '\n') {
            counter->column = 0;
            counter->starts_with_cpu = 1;
            continue;
        }
        if (counter->column < 3) {
            if (c != prefix[counter->column]) {
                counter->starts_with_cpu = 0;
                counter->done = 1; /* past the cpu lines */
            }
        } else if (counter->column == 3 && counter->starts_with_cpu && is_digit(c)) {
            counter->count++;
        }
        counter->column++;
    }
}

/* ---------------------------------------------------------------------- */
/* cgroups                                                                  */
/* ---------------------------------------------------------------------- */

/* The process's place in each hierarchy, from /proc/self/cgroup. */
struct cgroup_membership {
    int has_unified, has_memory, has_cpu, has_cpuacct, has_cpuset;
    char unified_path[CGROUP_PATH_BYTES];
    char memory_path[CGROUP_PATH_BYTES];
    char cpu_path[CGROUP_PATH_BYTES];
    char cpuacct_path[CGROUP_PATH_BYTES];
    char cpuset_path[CGROUP_PATH_BYTES];
};

/* A path is used only when it is absolute, fits, and has no ".." that would
 * lead out of the cgroup tree. */
static int usable_cgroup_path(const char *path, size_t length) {
    if (length == 0 || path[0] != '/' || length >= CGROUP_PATH_BYTES) return 0;
    for (size_t i = 0; i + 1 < length; i++) {
        int starts_component = (path[i] == '/');
        if (starts_component && path[i + 1] == '.' && i + 2 < length && path[i + 2] == '.' &&
            (i + 3 == length || path[i + 3] == '/'))
            return 0;
    }
    return 1;
}

static void set_cgroup_path(char *dst, int *has, const char *path, size_t length) {
    memcpy(dst, path, length);
    dst[length] = '\0';
    *has = 1;
}

/* True when the comma-separated list holds controller (in any order). */
static int controller_list_has(const char *list, size_t length, const char *controller) {
    size_t want = strlen(controller);
    const char *end = list + length;
    for (const char *token = list; token < end;) {
        const char *comma = memchr(token, ',', (size_t)(end - token));
        const char *token_end = comma != NULL ? comma : end;
        if ((size_t)(token_end - token) == want && memcmp(token, controller, want) == 0) return 1;
        if (comma == NULL) break;
        token = comma + 1;
    }
    return 0;
}

/* Parses one "hierarchy-id:controller-list:path" line. */
static void parse_cgroup_line(const char *line, size_t length, struct cgroup_membership *m) {
    const char *first_colon = memchr(line, ':', length);
    if (first_colon == NULL) return;
    const char *controllers = first_colon + 1;
    const char *second_colon = memchr(controllers, ':', (size_t)(line + length - controllers));
    if (second_colon == NULL) return;
    size_t controllers_length = (size_t)(second_colon - controllers);
    const char *path = second_colon + 1;
    size_t path_length = (size_t)(line + length - path);
    if (!usable_cgroup_path(path, path_length)) return;
    if (controllers_length == 0 && first_colon - line == 1 && line[0] == '0') {
        set_cgroup_path(m->unified_path, &m->has_unified, path, path_length);
        return;
    }
    if (controller_list_has(controllers, controllers_length, "memory"))
        set_cgroup_path(m->memory_path, &m->has_memory, path, path_length);
    if (controller_list_has(controllers, controllers_length, "cpu"))
        set_cgroup_path(m->cpu_path, &m->has_cpu, path, path_length);
    if (controller_list_has(controllers, controllers_length, "cpuacct"))
        set_cgroup_path(m->cpuacct_path, &m->has_cpuacct, path, path_length);
    if (controller_list_has(controllers, controllers_length, "cpuset"))
        set_cgroup_path(m->cpuset_path, &m->has_cpuset, path, path_length);
}

static void parse_cgroup_membership(const char *text, struct cgroup_membership *m) {
    memset(m, 0, sizeof *m);
    for (const char *line = text; *line != '\0';) {
        size_t length = strcspn(line, "\n");
        parse_cgroup_line(line, length, m);
        line += length;
        if (*line == '\n') line++;
    }
}

/* hierarchy is "" for v2 and "/memory", "/cpu,cpuacct", ... for v1. */
static int hierarchy_exists(const char *root, const char *hierarchy) {
    char path[PATH_BYTES];
    return format_path(path, sizeof path, "%s/sys/fs/cgroup%s", root, hierarchy) == 0 &&
           directory_exists(path);
}

/* The hierarchy of the list that is mounted first, or NULL. */
static const char *first_mounted_hierarchy(const char *root, const char *const *hierarchies) {
    for (int i = 0; i < HIERARCHY_COUNT; i++) {
        if (hierarchy_exists(root, hierarchies[i])) return hierarchies[i];
    }
    return NULL;
}

/* Resolves the directory of the cgroup at cgroup_path in hierarchy ("" for
 * v2) into out: its own directory when it exists, else the hierarchy's root
 * (a container whose cgroup namespace shows a host path: its own cgroup is
 * mounted as the root), else "". Files missing from the chosen directory
 * stay missing: the root would describe a different cgroup. */
static void resolve_cgroup_dir(const char *root, const char *hierarchy, const char *cgroup_path,
                               char *out, size_t cap) {
    const char *own = strcmp(cgroup_path, "/") == 0 ? "" : cgroup_path;
    if (format_path(out, cap, "%s/sys/fs/cgroup%s%s", root, hierarchy, own) == 0 &&
        directory_exists(out))
        return;
    if (own[0] != '\0' && format_path(out, cap, "%s/sys/fs/cgroup%s", root, hierarchy) == 0 &&
        directory_exists(out))
        return;
    out[0] = '\0';
}

/* Finds the process's cgroup and resolves its directories. Controllers in v1
 * hierarchies win over a v2 line: on a hybrid host the v2 tree holds no
 * controllers. In v1 each controller has its own path; info.cgroup_path is
 * the memory one, the one that decides OOM kills. */
static void detect_cgroup(gpufl__host_reader_t *r, char *buf, size_t cap) {
    gpufl__host_info_t *info = &r->info;
    struct cgroup_membership m;
    info->cgroup_version = 0;
    info->cgroup_path[0] = '\0';
    if (read_root_text(r->root, "/proc/self/cgroup", buf, cap) < 0) return;
    parse_cgroup_membership(buf, &m);

    int v1_memory = m.has_memory && hierarchy_exists(r->root, "/memory");
    const char *usage_hierarchy =
        m.has_cpuacct ? first_mounted_hierarchy(r->root, cpu_usage_hierarchies) : NULL;
    const char *limit_hierarchy =
        m.has_cpu ? first_mounted_hierarchy(r->root, cpu_quota_hierarchies) : NULL;
    if (v1_memory || usage_hierarchy != NULL || limit_hierarchy != NULL) {
        const char *path = v1_memory                 ? m.memory_path
                           : usage_hierarchy != NULL ? m.cpuacct_path
                                                     : m.cpu_path;
        info->cgroup_version = 1;
        snprintf(info->cgroup_path, sizeof info->cgroup_path, "%s", path);
        if (v1_memory)
            resolve_cgroup_dir(r->root, "/memory", m.memory_path, r->cg_mem_dir,
                               sizeof r->cg_mem_dir);
        if (usage_hierarchy != NULL)
            resolve_cgroup_dir(r->root, usage_hierarchy, m.cpuacct_path, r->cg_cpu_usage_dir,
                               sizeof r->cg_cpu_usage_dir);
        if (limit_hierarchy != NULL)
            resolve_cgroup_dir(r->root, limit_hierarchy, m.cpu_path, r->cg_cpu_limit_dir,
                               sizeof r->cg_cpu_limit_dir);
        if (m.has_cpuset && hierarchy_exists(r->root, "/cpuset"))
            resolve_cgroup_dir(r->root, "/cpuset", m.cpuset_path, r->cg_cpuset_dir,
                               sizeof r->cg_cpuset_dir);
    } else if (m.has_unified && hierarchy_exists(r->root, "")) {
        info->cgroup_version = 2;
        snprintf(info->cgroup_path, sizeof info->cgroup_path, "%s", m.unified_path);
        resolve_cgroup_dir(r->root, "", m.unified_path, r->cg_mem_dir, sizeof r->cg_mem_dir);
        memcpy(r->cg_cpu_usage_dir, r->cg_mem_dir, sizeof r->cg_cpu_usage_dir);
        memcpy(r->cg_cpu_limit_dir, r->cg_mem_dir, sizeof r->cg_cpu_limit_dir);
        memcpy(r->cg_cpuset_dir, r->cg_mem_dir, sizeof r->cg_cpuset_dir);
    }
}

/* The CPUs the process may run on: the online CPUs (the cpuN lines of
 * /proc/stat), or fewer when the cgroup's cpuset says so. Thread affinity
 * (sched_getaffinity) is left out: it is per thread, and the process's
 * threads may each have a different one. */
static void read_cpus_allowed(gpufl__host_reader_t *r, char *buf, size_t cap) {
    int v2 = r->info.cgroup_version == 2;
    int cpuset = -1;
    if (r->info.cgroup_version != 0 &&
        read_dir_text(r->cg_cpuset_dir, v2 ? "cpuset.cpus.effective" : "cpuset.effective_cpus", buf,
                      cap) >= 0)
        cpuset = count_cpu_list(buf);
    int online = r->info.cpu_count;
    if (cpuset > 0 && (online <= 0 || cpuset < online))
        r->cpus_allowed = cpuset;
    else
        r->cpus_allowed = online > 0 ? online : GPUFL_HOST_UNKNOWN;
}

/* Reads the current limits into the reader: at init and every
 * GPUFL_HOST_LIMITS_EVERY-th sample. A limit that cannot be read is unknown. */
static void read_limits(gpufl__host_reader_t *r, char *buf, size_t cap) {
    uint64_t value, quota_usec, period_usec;
    int64_t v1_quota_usec;
    const char *p;
    r->cg_mem_limit_bytes = GPUFL_HOST_UNKNOWN;
    r->cg_cpu_limit_cores = -1;
    if (r->info.cgroup_version == 2) {
        if (read_dir_text(r->cg_mem_dir, "memory.max", buf, cap) >= 0 && !says_max(buf) &&
            parse_single_u64(buf, &value) == 0)
            r->cg_mem_limit_bytes = u64_to_bytes(value);
        /* cpu.max is "quota period" or "max period". */
        if (read_dir_text(r->cg_cpu_limit_dir, "cpu.max", buf, cap) >= 0 && !says_max(buf) &&
            (p = buf, parse_u64(&p, &quota_usec) == 0) && parse_u64(&p, &period_usec) == 0 &&
            period_usec > 0)
            r->cg_cpu_limit_cores = (double)quota_usec / (double)period_usec;
    } else if (r->info.cgroup_version == 1) {
        if (read_dir_text(r->cg_mem_dir, "memory.limit_in_bytes", buf, cap) >= 0 &&
            parse_single_u64(buf, &value) == 0 && value < CGROUP_V1_UNLIMITED_BYTES)
            r->cg_mem_limit_bytes = (int64_t)value;
        if (read_dir_text(r->cg_cpu_limit_dir, "cpu.cfs_quota_us", buf, cap) >= 0 &&
            (p = buf, parse_i64(&p, &v1_quota_usec) == 0) &&
            v1_quota_usec >= 0 && /* -1: no quota */
            read_dir_text(r->cg_cpu_limit_dir, "cpu.cfs_period_us", buf, cap) >= 0 &&
            parse_single_u64(buf, &period_usec) == 0 && period_usec > 0)
            r->cg_cpu_limit_cores = (double)v1_quota_usec / (double)period_usec;
    }
    read_cpus_allowed(r, buf, cap);
}

/* ---------------------------------------------------------------------- */
/* Kept files                                                               */
/* ---------------------------------------------------------------------- */

static unsigned file_bit(gpufl__host_file_t file) { return 1u << file; }

static int is_cgroup_file(gpufl__host_file_t file) {
    return file == GPUFL_HOST_FILE_CG_MEM || file == GPUFL_HOST_FILE_CG_CPU;
}

/* The path of a kept file; -1 (errno ENOENT) for a cgroup file without a
 * cgroup directory. */
static int kept_file_path(const gpufl__host_reader_t *r, gpufl__host_file_t file, char *path,
                          size_t cap) {
    int v2 = r->info.cgroup_version == 2;
    switch (file) {
    case GPUFL_HOST_FILE_STAT: return format_path(path, cap, "%s/proc/stat", r->root);
    case GPUFL_HOST_FILE_MEMINFO: return format_path(path, cap, "%s/proc/meminfo", r->root);
    case GPUFL_HOST_FILE_SELF_STAT: return format_path(path, cap, "%s/proc/self/stat", r->root);
    case GPUFL_HOST_FILE_SELF_STATM: return format_path(path, cap, "%s/proc/self/statm", r->root);
    case GPUFL_HOST_FILE_CG_MEM:
        if (r->info.cgroup_version == 0 || r->cg_mem_dir[0] == '\0') break;
        return format_path(path, cap, "%s/%s", r->cg_mem_dir,
                           v2 ? "memory.current" : "memory.usage_in_bytes");
    case GPUFL_HOST_FILE_CG_CPU:
        if (r->info.cgroup_version == 0 || r->cg_cpu_usage_dir[0] == '\0') break;
        return format_path(path, cap, "%s/%s", r->cg_cpu_usage_dir,
                           v2 ? "cpu.stat" : "cpuacct.usage");
    case GPUFL_HOST_FILE_COUNT: break;
    }
    errno = ENOENT;
    return -1;
}

/* Opens a kept file by path. A cgroup file found missing is marked absent,
 * so samples do not look it up again before the next limits refresh. */
static int open_kept_file(gpufl__host_reader_t *r, gpufl__host_file_t file) {
    char path[PATH_BYTES];
    int fd = kept_file_path(r, file, path, sizeof path) == 0 ? open_read_only(path) : -1;
    if (fd >= 0)
        r->absent &= ~file_bit(file);
    else if (is_cgroup_file(file) && (errno == ENOENT || errno == ENOTDIR))
        r->absent |= file_bit(file);
    return fd;
}

/* Reads a kept file from its start. With a kept descriptor that is one
 * pread(); when that fails (a removed cgroup says ENODEV, an exited process
 * ESRCH) the descriptor is dropped and the path opened again. Without one
 * the path is opened, read, and the descriptor kept when the read worked.
 * A cgroup file marked absent is only looked for when look_again is set.
 * Returns the byte count or -1 (errno set). */
static ssize_t read_kept_file(gpufl__host_reader_t *r, gpufl__host_file_t file, int look_again,
                              char *buf, size_t cap) {
    int *kept = &r->fds[file];
    if (*kept >= 0) {
        ssize_t count = pread_text(*kept, buf, cap);
        if (count >= 0) return count;
        close_fd(kept);
    } else if ((r->absent & file_bit(file)) && !look_again) {
        errno = ENOENT;
        return -1;
    }
    int fd = open_kept_file(r, file);
    if (fd < 0) return -1;
    ssize_t count = pread_text(fd, buf, cap);
    if (count < 0) {
        close_fd(&fd); /* a directory, say: it stays looked up by path */
        return -1;
    }
    *kept = fd;
    return count;
}

static void close_kept_files(gpufl__host_reader_t *r) {
    for (int i = 0; i < GPUFL_HOST_FILE_COUNT; i++) close_fd(&r->fds[i]);
}

/* The process files describe the process that opened them: a fork()ed child
 * drops the inherited ones (its copies; the parent's stay open) and opens
 * its own, and its first CPU rate starts from a new baseline. */
static void follow_fork(gpufl__host_reader_t *r) {
    pid_t pid = getpid();
    if (pid == r->self_pid) return;
    close_fd(&r->fds[GPUFL_HOST_FILE_SELF_STAT]);
    close_fd(&r->fds[GPUFL_HOST_FILE_SELF_STATM]);
    r->self_pid = pid;
    r->have_prev &= ~GPUFL_HOST_PREV_PROC_CPU;
}

/* ---------------------------------------------------------------------- */
/* Static info                                                              */
/* ---------------------------------------------------------------------- */

/* Copies root without trailing slashes, so "/" becomes "" and paths join
 * with a plain root + "/proc/...". */
static int set_root(gpufl__host_reader_t *r, const char *root) {
    size_t length = root != NULL ? strlen(root) : 0;
    while (length > 0 && root[length - 1] == '/') length--;
    if (length >= sizeof r->root)
        return gpufl__set_error(GPUFL_EINVAL, "host metrics root '%s' is longer than %zu bytes",
                                root, sizeof r->root - 1);
    if (length > 0) memcpy(r->root, root, length);
    r->root[length] = '\0';
    return 0;
}

/* Reads MemTotal and keeps /proc/meminfo open. */
static int read_mem_total(gpufl__host_reader_t *r, char *buf, size_t cap) {
    if (read_kept_file(r, GPUFL_HOST_FILE_MEMINFO, 1, buf, cap) < 0)
        return gpufl__set_error(GPUFL_EIO, "cannot read %s/proc/meminfo: %s", r->root,
                                strerror(errno));
    uint64_t kib;
    r->info.mem_total_bytes =
        find_line_value(buf, "MemTotal:", &kib) == 0 ? kib_to_bytes(kib) : GPUFL_HOST_UNKNOWN;
    return 0;
}

/* Counts the CPUs, streaming /proc/stat past the buffer, and keeps it open:
 * samples pread() it at offset 0, whatever this left its offset at. */
static int read_cpu_count(gpufl__host_reader_t *r, char *buf, size_t cap) {
    int fd = open_kept_file(r, GPUFL_HOST_FILE_STAT);
    if (fd < 0)
        return gpufl__set_error(GPUFL_EIO, "cannot read %s/proc/stat: %s", r->root,
                                strerror(errno));
    struct cpu_line_counter counter = {0, 1, 0, 0};
    size_t total_read = 0;
    while (!counter.done && total_read < CPU_COUNT_MAX_READ_BYTES) {
        ssize_t count = read(fd, buf, cap);
        if (count < 0 && errno == EINTR) continue;
        if (count < 0 && total_read == 0) {
            close_fd(&fd);
            return gpufl__set_error(GPUFL_EIO, "cannot read %s/proc/stat: %s", r->root,
                                    strerror(errno));
        }
        if (count <= 0) break;
        count_cpu_lines(&counter, buf, (size_t)count);
        total_read += (size_t)count;
    }
    r->fds[GPUFL_HOST_FILE_STAT] = fd;
    r->info.cpu_count = counter.count > 0 ? counter.count : GPUFL_HOST_UNKNOWN;
    return 0;
}

/* Hostname and kernel release. gethostname() answers only for the real
 * system: under a fake root it would describe the wrong machine. */
static void read_names(gpufl__host_reader_t *r, char *buf, size_t cap) {
    gpufl__host_info_t *info = &r->info;
    if (read_root_text(r->root, "/proc/sys/kernel/hostname", buf, cap) >= 0)
        copy_first_line(info->hostname, sizeof info->hostname, buf);
    if (info->hostname[0] == '\0' && r->root[0] == '\0' &&
        gethostname(info->hostname, sizeof info->hostname - 1) != 0)
        info->hostname[0] = '\0';
    info->hostname[sizeof info->hostname - 1] = '\0';

    if (read_root_text(r->root, "/proc/sys/kernel/osrelease", buf, cap) >= 0)
        copy_first_line(info->kernel_release, sizeof info->kernel_release, buf);
}

/* The state of a reader that owns nothing: fini's result, init's start. */
static void clear_reader(gpufl__host_reader_t *r) {
    memset(r, 0, sizeof *r);
    for (int i = 0; i < GPUFL_HOST_FILE_COUNT; i++) r->fds[i] = -1;
    r->info.cpu_count = GPUFL_HOST_UNKNOWN;
    r->info.mem_total_bytes = GPUFL_HOST_UNKNOWN;
    r->info.cg_mem_limit_bytes = GPUFL_HOST_UNKNOWN;
    r->info.cg_cpu_limit_cores = -1;
    r->info.cpus_allowed = GPUFL_HOST_UNKNOWN;
    r->cg_mem_limit_bytes = GPUFL_HOST_UNKNOWN;
    r->cg_cpu_limit_cores = -1;
    r->cpus_allowed = GPUFL_HOST_UNKNOWN;
}

int gpufl__host_reader_init(gpufl__host_reader_t *r, const char *root) {
    char buf[READ_BUFFER_BYTES];
    if (r == NULL) return gpufl__set_error(GPUFL_EINVAL, "host metrics reader is NULL");
    clear_reader(r);
    int rc = set_root(r, root);
    if (rc == 0) rc = read_mem_total(r, buf, sizeof buf);
    if (rc == 0) rc = read_cpu_count(r, buf, sizeof buf);
    if (rc != 0) {
        close_kept_files(r); /* a failed init owns nothing: fini has nothing to close */
        return rc;
    }
    read_names(r, buf, sizeof buf);
    detect_cgroup(r, buf, sizeof buf);
    read_limits(r, buf, sizeof buf);
    r->info.cg_mem_limit_bytes = r->cg_mem_limit_bytes;
    r->info.cg_cpu_limit_cores = r->cg_cpu_limit_cores;
    r->info.cpus_allowed = r->cpus_allowed;
    r->clk_tck = sysconf(_SC_CLK_TCK);
    r->info.clock_ticks_per_s = r->clk_tck;
    /* USER_HZ is 100 on every Linux architecture; the fallback only keeps
     * the interval sane should sysconf fail (then no process figure is made). */
    r->info.cpu_min_interval_ns =
        GPUFL_HOST_CPU_MIN_TICKS * (INT64_C(1000000000) / (r->clk_tck > 0 ? r->clk_tck : 100));
    r->clock = gpufl__mono_ns;
    r->page_size = sysconf(_SC_PAGESIZE);
    r->self_pid = getpid();
    /* Failures here are not errors: a file without a descriptor is opened by
     * path when a sample needs it (cgroup files once per limits refresh). */
    if (r->info.cgroup_version != 0) {
        r->fds[GPUFL_HOST_FILE_CG_MEM] = open_kept_file(r, GPUFL_HOST_FILE_CG_MEM);
        r->fds[GPUFL_HOST_FILE_CG_CPU] = open_kept_file(r, GPUFL_HOST_FILE_CG_CPU);
    }
    r->fds[GPUFL_HOST_FILE_SELF_STAT] = open_kept_file(r, GPUFL_HOST_FILE_SELF_STAT);
    r->fds[GPUFL_HOST_FILE_SELF_STATM] = open_kept_file(r, GPUFL_HOST_FILE_SELF_STATM);
    r->ready = 1;
    return 0;
}

void gpufl__host_reader_set_clock(gpufl__host_reader_t *r, gpufl_host_clock_fn clock) {
    if (r != NULL) r->clock = clock != NULL ? clock : gpufl__mono_ns;
}

void gpufl__host_reader_rebase(gpufl__host_reader_t *r) {
    if (r != NULL)
        r->have_prev &=
            ~(GPUFL_HOST_PREV_HOST_CPU | GPUFL_HOST_PREV_PROC_CPU | GPUFL_HOST_PREV_CG_CPU);
}

void gpufl__host_reader_fini(gpufl__host_reader_t *r) {
    if (r == NULL) return;
    /* Only an initialized reader owns descriptors: a failed init closed its
     * own, a second fini finds ready cleared, and a zero-filled reader's fds
     * (0) are not ours. */
    if (r->ready) close_kept_files(r);
    clear_reader(r);
}

/* ---------------------------------------------------------------------- */
/* Sampling                                                                 */
/* ---------------------------------------------------------------------- */

static void set_sample_unknown(gpufl__host_sample_t *out) {
    out->cpu_pct = -1;
    out->proc_cpu_pct = -1;
    out->mem_used_bytes = GPUFL_HOST_UNKNOWN;
    out->mem_total_bytes = GPUFL_HOST_UNKNOWN;
    out->proc_rss_bytes = GPUFL_HOST_UNKNOWN;
    out->cg_mem_used_bytes = GPUFL_HOST_UNKNOWN;
    out->cg_mem_limit_bytes = GPUFL_HOST_UNKNOWN;
    out->cg_cpu_pct = -1;
    out->cg_cpu_limit_cores = -1;
}

/* Keeps a counter for the next rate, or forgets it when it could not be read. */
static void remember(gpufl__host_reader_t *r, unsigned bit, int have_value) {
    if (have_value)
        r->have_prev |= bit;
    else
        r->have_prev &= ~bit;
}

/* What a counter read at now_ns may give against its baseline read at
 * prev_ns: FIGURE_TAKE (elapsed_ns set; the read then becomes the new
 * baseline), FIGURE_NONE (no baseline yet: the read becomes one) or
 * FIGURE_WAIT (too soon for a figure that a tick more or less would not
 * swing: no figure, and the baseline stays, so the next figure covers the
 * whole time since it). */
enum figure_step { FIGURE_NONE, FIGURE_TAKE, FIGURE_WAIT };

static enum figure_step figure_step(const gpufl__host_reader_t *r, unsigned bit, int64_t prev_ns,
                                    int64_t now_ns, double *elapsed_ns) {
    if (!(r->have_prev & bit)) return FIGURE_NONE;
    /* Doubles: no overflow whatever a clock says. A clock that went back
     * (only a test clock does) restarts from the new read. */
    *elapsed_ns = (double)now_ns - (double)prev_ns;
    if (*elapsed_ns < 0) return FIGURE_NONE;
    return *elapsed_ns < (double)r->figure_min_ns ? FIGURE_WAIT : FIGURE_TAKE;
}

/* A process or cgroup figure, clamped to 100 % per CPU the process may use:
 * a counter that lags (cgroup usage, up to a scheduler tick per CPU) or a
 * tick boundary can push a figure past what the CPUs could have done. */
static double clamp_to_cpus(const gpufl__host_reader_t *r, double pct) {
    double most = 100.0 * r->cpus_allowed;
    return r->cpus_allowed > 0 && pct > most ? most : pct;
}

/* Returns -1 when /proc/stat cannot be read at all. */
static int sample_host_cpu(gpufl__host_reader_t *r, char *buf, size_t cap,
                           gpufl__host_sample_t *out) {
    uint64_t busy, total;
    double elapsed_ns;
    if (read_kept_file(r, GPUFL_HOST_FILE_STAT, 1, buf, cap) < 0) {
        remember(r, GPUFL_HOST_PREV_HOST_CPU, 0);
        return -1;
    }
    int64_t now_ns = r->clock();
    int parsed = parse_host_cpu_line(buf, &busy, &total) == 0;
    enum figure_step step =
        parsed ? figure_step(r, GPUFL_HOST_PREV_HOST_CPU, r->prev_host_ns, now_ns, &elapsed_ns)
               : FIGURE_NONE;
    /* A total that shrinks (a CPU went offline) gives no rate for this
     * interval, and the next is measured from it. */
    if (step != FIGURE_NONE && total < r->prev_host_total) step = FIGURE_NONE;
    if (step == FIGURE_WAIT) return 0;
    if (step == FIGURE_TAKE && total > r->prev_host_total) {
        double busy_delta = (double)busy - (double)r->prev_host_busy;
        double pct = 100.0 * busy_delta / (double)(total - r->prev_host_total);
        /* iowait may go backwards on some kernels, pushing busy past the bounds. */
        out->cpu_pct = pct < 0 ? 0 : pct > 100 ? 100 : pct;
    }
    if (parsed) {
        r->prev_host_busy = busy;
        r->prev_host_total = total;
        r->prev_host_ns = now_ns;
    }
    remember(r, GPUFL_HOST_PREV_HOST_CPU, parsed);
    return 0;
}

/* Returns -1 when /proc/meminfo cannot be read at all. */
static int sample_memory(gpufl__host_reader_t *r, char *buf, size_t cap,
                         gpufl__host_sample_t *out) {
    uint64_t total_kib, available_kib;
    if (read_kept_file(r, GPUFL_HOST_FILE_MEMINFO, 1, buf, cap) < 0) return -1;
    if (find_line_value(buf, "MemTotal:", &total_kib) != 0) return 0;
    out->mem_total_bytes = kib_to_bytes(total_kib);
    /* MemAvailable, unlike MemFree, counts reclaimable page cache as free. */
    if (find_line_value(buf, "MemAvailable:", &available_kib) == 0 && available_kib <= total_kib)
        out->mem_used_bytes = kib_to_bytes(total_kib - available_kib);
    return 0;
}

/* A figure in percent of one CPU from a counter in units_per_second, read
 * at now_ns, against its baseline (*prev, *prev_ns; have_prev bit); then
 * the baseline moves on as figure_step says. Returns the figure or -1. */
static double counter_figure(gpufl__host_reader_t *r, unsigned bit, int have_value, uint64_t value,
                             int64_t now_ns, double units_per_second, uint64_t *prev,
                             int64_t *prev_ns) {
    double elapsed_ns, pct = -1;
    enum figure_step step =
        have_value ? figure_step(r, bit, *prev_ns, now_ns, &elapsed_ns) : FIGURE_NONE;
    /* A counter that went back (a new process under the same pid after a
     * restore, say) restarts from the new read. */
    if (step != FIGURE_NONE && value < *prev) step = FIGURE_NONE;
    if (step == FIGURE_WAIT) return -1;
    if (step == FIGURE_TAKE)
        pct = clamp_to_cpus(r, percent_of_one_cpu(*prev, value, units_per_second, elapsed_ns));
    if (have_value) {
        *prev = value;
        *prev_ns = now_ns;
    }
    remember(r, bit, have_value);
    return pct;
}

static void sample_process(gpufl__host_reader_t *r, char *buf, size_t cap,
                           gpufl__host_sample_t *out) {
    uint64_t ticks = 0, size_pages, resident_pages;
    follow_fork(r);
    int have_ticks = read_kept_file(r, GPUFL_HOST_FILE_SELF_STAT, 1, buf, cap) >= 0 &&
                     parse_process_ticks(buf, &ticks) == 0;
    out->proc_cpu_pct = counter_figure(r, GPUFL_HOST_PREV_PROC_CPU, have_ticks, ticks, r->clock(),
                                       (double)r->clk_tck, &r->prev_proc_ticks, &r->prev_proc_ns);

    const char *p = buf;
    if (read_kept_file(r, GPUFL_HOST_FILE_SELF_STATM, 1, buf, cap) >= 0 &&
        parse_u64(&p, &size_pages) == 0 && parse_u64(&p, &resident_pages) == 0 &&
        r->page_size > 0 && resident_pages <= (uint64_t)INT64_MAX / (uint64_t)r->page_size)
        out->proc_rss_bytes = (int64_t)(resident_pages * (uint64_t)r->page_size);
}

/* Reads the cgroup's memory usage and CPU time (microseconds) into the sample
 * and *usage_usec; returns whether the CPU time was read. */
static int read_cgroup_usage(gpufl__host_reader_t *r, int look_again, char *buf, size_t cap,
                             gpufl__host_sample_t *out, uint64_t *usage_usec) {
    int v2 = r->info.cgroup_version == 2;
    uint64_t value;
    if (read_kept_file(r, GPUFL_HOST_FILE_CG_MEM, look_again, buf, cap) >= 0 &&
        parse_single_u64(buf, &value) == 0)
        out->cg_mem_used_bytes = u64_to_bytes(value);
    if (read_kept_file(r, GPUFL_HOST_FILE_CG_CPU, look_again, buf, cap) < 0) return 0;
    if (v2) return find_line_value(buf, "usage_usec ", usage_usec) == 0;
    if (parse_single_u64(buf, &value) != 0) return 0;
    *usage_usec = value / 1000; /* cpuacct.usage is in nanoseconds */
    return 1;
}

static void sample_cgroup(gpufl__host_reader_t *r, int refresh, char *buf, size_t cap,
                          gpufl__host_sample_t *out) {
    uint64_t usage_usec = 0;
    if (r->info.cgroup_version == 0) return;
    if (refresh) read_limits(r, buf, cap);
    out->cg_mem_limit_bytes = r->cg_mem_limit_bytes;
    out->cg_cpu_limit_cores = r->cg_cpu_limit_cores;
    int have_usage = read_cgroup_usage(r, refresh, buf, cap, out, &usage_usec);
    out->cg_cpu_pct = counter_figure(r, GPUFL_HOST_PREV_CG_CPU, have_usage, usage_usec, r->clock(),
                                     1e6, &r->prev_cg_usage_usec, &r->prev_cg_ns);
}

/* A sample whose CPU figures need min_ticks clock ticks since their baselines. */
static int sample_over(gpufl__host_reader_t *r, gpufl__host_sample_t *out, int min_ticks) {
    char buf[READ_BUFFER_BYTES];
    if (r == NULL || out == NULL)
        return gpufl__set_error(GPUFL_EINVAL, "host sample: NULL reader or output");
    if (!r->ready)
        return gpufl__set_error(GPUFL_EINVAL, "host sample: the reader is not initialized");
    r->figure_min_ns = r->info.cpu_min_interval_ns / GPUFL_HOST_CPU_MIN_TICKS * min_ticks;
    set_sample_unknown(out);
    r->samples++;
    int refresh = r->samples % GPUFL_HOST_LIMITS_EVERY == 0;

    const char *unreadable = NULL;
    int saved_errno = 0;
    if (sample_host_cpu(r, buf, sizeof buf, out) != 0) {
        unreadable = "/proc/stat";
        saved_errno = errno;
    }
    if (sample_memory(r, buf, sizeof buf, out) != 0 && unreadable == NULL) {
        unreadable = "/proc/meminfo";
        saved_errno = errno;
    }
    sample_process(r, buf, sizeof buf, out);
    sample_cgroup(r, refresh, buf, sizeof buf, out);
    if (unreadable != NULL)
        return gpufl__set_error(GPUFL_EIO, "cannot read %s%s: %s", r->root, unreadable,
                                strerror(saved_errno));
    return 0;
}

int gpufl__host_sample(gpufl__host_sample_t *out, gpufl__host_reader_t *r) {
    return sample_over(r, out, GPUFL_HOST_CPU_MIN_TICKS);
}

int gpufl__host_sample_final(gpufl__host_sample_t *out, gpufl__host_reader_t *r) {
    return sample_over(r, out, GPUFL_HOST_CPU_FINAL_MIN_TICKS);
}
