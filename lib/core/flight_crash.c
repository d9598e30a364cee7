// SPDX-License-Identifier: Apache-2.0
/*
 * flight_crash.c - the flight recorder's last snapshot: on a fatal signal
 * (SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL) the handler writes what the
 * ring holds as a session directory, then the signal does what it would
 * have done without gpufl (the program's handler, or death with its status
 * and core dump).
 *
 * The handler runs in a process that may be broken anywhere, so it makes
 * only async-signal-safe calls (mkdir, open, write, close, clock_gettime,
 * nanosleep, sigaction, raise) and allocates nothing: the paths, the
 * identity, the encode buffers and the map of dict ids written are made when
 * the recorder starts. The encoders it uses (jsonw.c, the wire's header,
 * dict and tail lines) only copy bytes into a buffer whose cap equals its
 * allocation, so they never grow it. The ring's lock is tried, not taken:
 * the thread that crashed may hold it; past a bounded wait the snapshot
 * holds its headers and an event that says the lines are missing. As
 * gpufl-monitor's crash report (cmd/gpufl-monitor/crash.c) does, it runs on
 * an alternate stack where the thread that armed it had none, so a stack
 * overflow there still gets its snapshot.
 */
#include "core/flight_recorder.h"

#include "util/error.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define PATH_BYTES    4096
#define SCRATCH_BYTES ((size_t)1 << 20)  /* a dict line; larger ones are left out, counted */
#define OUT_BYTES     ((size_t)64 << 10) /* a header, or the closing lines */
#define DEFINED_IDS   ((size_t)1 << 21)  /* the session dict's cap (1 << 20) and to spare */
#define ALT_STACK     ((size_t)256 << 10)
#define LOCK_WAIT_NS  500000000LL /* what another thread inside the ring gets to let go */
#define PEER_WAIT_MS  10000       /* a second crashing thread waits for the first's snapshot */

static const struct {
    int sig;
    const char *reason;
} fatal[] = {{SIGSEGV, "fatal:SIGSEGV"},
             {SIGABRT, "fatal:SIGABRT"},
             {SIGBUS, "fatal:SIGBUS"},
             {SIGFPE, "fatal:SIGFPE"},
             {SIGILL, "fatal:SIGILL"}};
#define NFATAL (sizeof fatal / sizeof fatal[0])

static struct crash {
    _Atomic(gpufl__ring_sink_t *) ring; /* NULL: disarmed */
    gpufl__session_ident_t ident;       /* the snapshot's: session_id written in the handler */
    char recording_id[64];
    char log_path[PATH_BYTES];
    char dir[PATH_BYTES];
    int window_s;
    int64_t cap_bytes;
    int armed;
    struct sigaction previous[NFATAL];
    char *scratch_mem, *out_mem;
    uint8_t *defined;
    atomic_int writing, written;
} crash;

/* ---------------- inside the handler ---------------- */

static size_t put(char *p, size_t at, size_t size, const char *s) {
    while (*s && at + 1 < size) p[at++] = *s++;
    p[at] = '\0';
    return at;
}

static size_t put_digits(char *p, size_t at, size_t size, uint64_t v, int width) {
    char d[24];
    int n = 0;
    do {
        d[n++] = (char)('0' + v % 10);
        v /= 10;
    } while ((v || n < width) && n < (int)sizeof d);
    while (n > 0 && at + 1 < size) p[at++] = d[--n];
    p[at] = '\0';
    return at;
}

/* A session id as session.c makes them (<UTC time to the ms>Z-<pid>-<4
 * hex>) without gmtime or stdio: the civil date of a day count is plain
 * arithmetic (days since 1970-01-01 to year, month, day). */
static void make_id(char *out, size_t size, const struct timespec *wall, unsigned salt) {
    int64_t secs = wall->tv_sec, days = secs / 86400, rem = secs % 86400;
    int64_t z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153, day = doy - (153 * mp + 2) / 5 + 1;
    int64_t month = mp < 10 ? mp + 3 : mp - 9, year = yoe + era * 400 + (month <= 2);
    size_t at = put_digits(out, 0, size, (uint64_t)year, 4);
    at = put_digits(out, at, size, (uint64_t)month, 2);
    at = put_digits(out, at, size, (uint64_t)day, 2);
    at = put(out, at, size, "T");
    at = put_digits(out, at, size, (uint64_t)(rem / 3600), 2);
    at = put_digits(out, at, size, (uint64_t)(rem / 60 % 60), 2);
    at = put_digits(out, at, size, (uint64_t)(rem % 60), 2);
    at = put(out, at, size, ".");
    at = put_digits(out, at, size, (uint64_t)(wall->tv_nsec / 1000000), 3);
    at = put(out, at, size, "Z-");
    at = put_digits(out, at, size, (uint64_t)getpid(), 1);
    at = put(out, at, size, "-");
    for (int shift = 12; shift >= 0; shift -= 4) {
        char h[2] = {"0123456789abcdef"[(salt >> shift) & 15], '\0'};
        at = put(out, at, size, h);
    }
}

/* mkdir -p of crash.log_path, then a new directory in it (crash.dir). */
static int make_dir(const struct timespec *wall) {
    char *p = crash.log_path;
    for (char *s = p + 1; *s; s++) {
        if (*s != '/') continue;
        *s = '\0';
        mkdir(p, 0755);
        *s = '/';
    }
    mkdir(p, 0755);
    unsigned salt = (unsigned)(wall->tv_nsec / 1000) ^ (unsigned)getpid();
    for (int attempt = 0; attempt < 8; attempt++, salt += 0x9e37) {
        make_id(crash.ident.session_id, sizeof crash.ident.session_id, wall, salt & 0xffff);
        size_t at = put(crash.dir, 0, sizeof crash.dir, p);
        at = put(crash.dir, at, sizeof crash.dir, "/");
        put(crash.dir, at, sizeof crash.dir, crash.ident.session_id);
        if (mkdir(crash.dir, 0755) == 0) return 0;
        if (errno != EEXIST) return -1;
    }
    return -1;
}

/* Writes b; the bytes written. */
static uint64_t write_buf(int fd, const gpufl__buf_t *b) {
    size_t done = 0;
    while (done < b->len) {
        ssize_t k = write(fd, b->data + done, b->len - done);
        if (k < 0 && errno == EINTR) continue;
        if (k <= 0) break;
        done += (size_t)k;
    }
    return done;
}

static gpufl__buf_t fixed_buf(char *mem, size_t size) {
    return (gpufl__buf_t){.data = mem, .len = 0, .cap = size, .max = size, .overflow = 0};
}

static void write_snapshot(gpufl__ring_sink_t *ring, const char *why) {
    struct timespec wall, mono;
    clock_gettime(CLOCK_REALTIME, &wall);
    clock_gettime(CLOCK_MONOTONIC, &mono);
    if (make_dir(&wall) != 0) return;
    int locked = gpufl__ring_sink_lock_bounded(ring, LOCK_WAIT_NS);
    gpufl__buf_t scratch = fixed_buf(crash.scratch_mem, SCRATCH_BYTES);
    gpufl__buf_t out = fixed_buf(crash.out_mem, OUT_BYTES);
    gpufl__ring_sink_stats_t stats;
    memset(&stats, 0, sizeof stats);
    uint64_t left_out = 0;
    /* The device file last: its event says what the others left out. */
    static const enum gpufl__file_id order[] = {GPUFL_FILE_SCOPE, GPUFL_FILE_SYSTEM,
                                                GPUFL_FILE_DEVICE};
    for (size_t k = 0; k < sizeof order / sizeof order[0]; k++) {
        enum gpufl__file_id ch = order[k];
        char path[PATH_BYTES + 16];
        size_t at = put(path, 0, sizeof path, crash.dir);
        at = put(path, at, sizeof path, "/");
        at = put(path, at, sizeof path, gpufl__channel_name(ch));
        put(path, at, sizeof path, ".log");
        int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
        if (fd < 0) continue;
        out.len = 0;
        gpufl__wire_header(&out, &crash.ident, gpufl__channel_name(ch), 0);
        uint64_t written = write_buf(fd, &out);
        gpufl__ring_sink_raw_t raw = {fd, &scratch, crash.defined, DEFINED_IDS, 0, 0, 0, 0, 0};
        if (locked) gpufl__ring_sink_write_locked(ring, ch, &raw, &stats);
        left_out += raw.left_out;
        written += raw.bytes;
        gpufl__flight_snapshot_t info = {
            .number = 0,
            .session_id = crash.recording_id,
            .why = why,
            .window_s = crash.window_s,
            .cap_bytes = crash.cap_bytes,
            .ts_ns = (int64_t)mono.tv_sec * 1000000000 + mono.tv_nsec - crash.ident.epoch_ns,
            .records_written = stats.kept_rows,
            .records_dropped = 0,
            .fatal = 1,
            .incomplete = !locked ? "another thread held the ring's lock past 0.5 s (perhaps the "
                                    "one that crashed): none of its lines are here"
                          : left_out ? "lines whose strings passed the handler's 1 MiB buffer "
                                       "are left out"
                                     : NULL};
        out.len = 0;
        gpufl__flight_snapshot_tail(&out, ch, &info, &stats, written);
        write_buf(fd, &out);
        close(fd);
    }
    if (locked) gpufl__ring_sink_unlock(ring);
}

static void on_fatal(int sig, siginfo_t *si, void *context) {
    (void)context;
    int saved = errno;
    const char *why = "fatal";
    size_t k = 0;
    for (size_t i = 0; i < NFATAL; i++)
        if (fatal[i].sig == sig) why = fatal[i].reason, k = i;
    gpufl__ring_sink_t *ring = atomic_load(&crash.ring);
    if (ring && atomic_exchange(&crash.writing, 1) == 0) {
        write_snapshot(ring, why);
        atomic_store(&crash.written, 1);
    } else if (ring) { /* another thread crashed first: its snapshot, then the signals */
        const struct timespec ms = {0, 1000000};
        for (int i = 0; i < PEER_WAIT_MS && !atomic_load(&crash.written); i++) nanosleep(&ms, NULL);
    }
    /* What the signal would have done without gpufl: the program's handler
     * or the default action. A fault returns and runs the faulting
     * instruction again, which raises it anew with its own siginfo; a
     * signal sent (kill, raise, abort) is sent again, pending until this
     * handler returns. */
    sigaction(sig, &crash.previous[k], NULL);
    errno = saved;
    if (!si || si->si_code <= 0) raise(sig);
}

/* ---------------- arming ---------------- */

/* An alternate stack for the thread that arms, unless it has one: never
 * freed, since a handler may run on it until the process ends (and an
 * unloaded library's static memory would be gone). */
static void alt_stack(void) {
    stack_t old;
    if (sigaltstack(NULL, &old) != 0 || !(old.ss_flags & SS_DISABLE)) return;
    void *mem = mmap(NULL, ALT_STACK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED) return;
    stack_t ss = {.ss_sp = mem, .ss_size = ALT_STACK, .ss_flags = 0};
    if (sigaltstack(&ss, NULL) != 0) munmap(mem, ALT_STACK);
}

int gpufl__flight_crash_arm(gpufl__ring_sink_t *ring, const gpufl__session_ident_t *ident,
                            const char *log_path, int window_s, int64_t cap_bytes) {
    if (crash.armed) return 0;
    if (strlen(log_path) + sizeof ident->session_id + 2 >= PATH_BYTES)
        return gpufl__set_error(GPUFL_EINVAL, "flight recorder: log_path '%s' is too long",
                                log_path);
    if (!crash.scratch_mem) { /* kept for the next session: the sizes never change */
        crash.scratch_mem = malloc(SCRATCH_BYTES);
        crash.out_mem = malloc(OUT_BYTES);
        crash.defined = malloc(DEFINED_IDS);
        if (!crash.scratch_mem || !crash.out_mem || !crash.defined) {
            free(crash.scratch_mem), free(crash.out_mem), free(crash.defined);
            crash.scratch_mem = crash.out_mem = NULL;
            crash.defined = NULL;
            return gpufl__set_error(GPUFL_ENOMEM, "flight recorder: out of memory for the "
                                                  "fatal-signal snapshot's buffers");
        }
        /* Touched now, so that the handler meets no page it must fault in. */
        memset(crash.scratch_mem, 0, SCRATCH_BYTES);
        memset(crash.out_mem, 0, OUT_BYTES);
        memset(crash.defined, 0, DEFINED_IDS);
    }
    crash.ident = *ident;
    memcpy(crash.recording_id, ident->session_id, sizeof crash.recording_id);
    memcpy(crash.log_path, log_path, strlen(log_path) + 1);
    crash.window_s = window_s;
    crash.cap_bytes = cap_bytes;
    atomic_store(&crash.writing, 0);
    atomic_store(&crash.written, 0);
    atomic_store(&crash.ring, ring);
    alt_stack();
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_fatal;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < NFATAL; i++) sigaction(fatal[i].sig, &sa, &crash.previous[i]);
    crash.armed = 1;
    return 0;
}

void gpufl__flight_crash_disarm(void) {
    if (!crash.armed) return;
    for (size_t i = 0; i < NFATAL; i++) {
        struct sigaction now;
        /* Only where ours is still there: a handler the program set since stays. */
        if (sigaction(fatal[i].sig, NULL, &now) == 0 && (now.sa_flags & SA_SIGINFO) &&
            now.sa_sigaction == on_fatal)
            sigaction(fatal[i].sig, &crash.previous[i], NULL);
    }
    atomic_store(&crash.ring, NULL);
    crash.armed = 0;
}
