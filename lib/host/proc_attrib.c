// SPDX-License-Identifier: Apache-2.0
/*
 * proc_attrib.c - which container, pod, Slurm job and user a process belongs
 * to, from /proc/<pid>/{stat,status,cgroup,environ}, and a cache of the
 * answers keyed by pid and start time.
 *
 * Recognised in a cgroup path, one path component at a time (the deepest
 * container wins, so docker-in-docker names the inner one):
 *   containers (id: exactly 64 lowercase hex digits)
 *     docker-<id>.scope              Docker, systemd cgroup driver (also cri-dockerd)
 *     /docker/<id>                   Docker, cgroupfs driver
 *     cri-containerd-<id>.scope      containerd's CRI plugin, systemd driver
 *     <slice>:cri-containerd:<id>    containerd given a systemd-style name while
 *                                    running with cgroupfs (also :crio: and :docker:)
 *     crio-<id>.scope, crio-<id>     CRI-O, systemd and cgroupfs managers
 *     libpod-<id>.scope, libpod-<id> Podman, systemd and cgroupfs managers
 *                                    (rootful machine.slice, rootless user@.service,
 *                                    /libpod_parent)
 *     /kubepods/.../pod<uid>/<id>    a Kubernetes container under the cgroupfs
 *                                    driver, runtime not named (GPUFL__RUNTIME_CRI)
 *   Kubernetes pods (uid: a UUID, or the 32-digit hash of a static pod)
 *     kubepods-pod<uid>.slice, kubepods-burstable-pod<uid>.slice,
 *     kubepods-besteffort-pod<uid>.slice (systemd driver; the uid's dashes are
 *     underscores there; any slice prefix before "kubepods", as a kubelet
 *     --cgroup-root makes: kubelet-kubepods-...)
 *     /kubepods/pod<uid>, /kubepods/burstable/pod<uid>, /kubepods/besteffort/pod<uid>
 *     (cgroupfs driver); QoS guaranteed when the pod sits right under kubepods
 *   Slurm jobs
 *     /slurm/uid_<n>/job_<id>/step_<s>/task_<t>        cgroup v1 (also slurm_<node>)
 *     /system.slice/slurmstepd.scope/job_<id>/step_... cgroup v2 (also <node>_slurmstepd.scope)
 *   and SLURM_JOB_ID in the process environment, which wins when readable.
 * Not recognised: containerd outside Kubernetes under cgroupfs (/<namespace>/<id>,
 * which names no runtime), nerdctl's and LXC's names, conmon's own scopes
 * (crio-conmon-, libpod-conmon-: the runtime monitor, not the container), and
 * any form seen only through a cgroup namespace that hides the components above
 * (a monitor in its own cgroup namespace sees other processes' paths relative
 * to its own, "/../../..."; the systemd forms still name themselves, the
 * cgroupfs forms need "kubepods" or "docker" in sight).
 *
 * Every file is opened through one descriptor of /proc/<pid>: after the
 * process exits the descriptor's files fail instead of naming whatever new
 * process gets the pid. Reads are bounded by fixed buffers (environ by a cap,
 * streamed through a small one).
 */
#include "host/proc_attrib.h"

#include "util/error.h"

#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <unistd.h>

/* /proc/<pid>/stat is about 300 bytes: 52 numbers of at most 20 digits and
 * the command name make it at most ~1.2 KiB. */
#define STAT_BYTES 2048
/* /proc/<pid>/status is about 1.5 KiB; Uid is its ninth line. */
#define STATUS_BYTES 4096
/* environ is streamed through this much at a time. */
#define ENVIRON_CHUNK_BYTES 4096
/* A path below proc_root: root + "/" + pid. */
#define PROC_PATH_BYTES 512
/* getpwuid_r's buffer: this on the stack first, then doubled on the heap up
 * to the cap (an NSS entry with a huge member list wants more). */
#define PASSWD_STACK_BYTES 1024
#define PASSWD_MAX_BYTES   (1u << 20)

#define CONTAINER_ID_DIGITS 64
#define JOB_ID_DIGITS_MAX   20
#define SLURM_KEY           "SLURM_JOB_ID="

/* ---------------------------------------------------------------------- */
/* Strings                                                                  */
/* ---------------------------------------------------------------------- */

/* A piece of a larger text: not NUL-terminated. */
struct span {
    const char *text;
    size_t length;
};

static int is_digit(char c) { return c >= '0' && c <= '9'; }
static int is_lower_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f'); }

static int span_equals(struct span s, const char *literal) {
    size_t n = strlen(literal);
    return s.length == n && memcmp(s.text, literal, n) == 0;
}

static int span_starts_with(struct span s, const char *literal) {
    size_t n = strlen(literal);
    return s.length >= n && memcmp(s.text, literal, n) == 0;
}

static int span_ends_with(struct span s, const char *literal) {
    size_t n = strlen(literal);
    return s.length >= n && memcmp(s.text + s.length - n, literal, n) == 0;
}

static struct span span_slice(struct span s, size_t from, size_t to) {
    struct span out = {s.text + from, to - from};
    return out;
}

/* True when s is literal, or ends with "-" literal (a systemd slice name
 * carries its parents' names: kubelet-kubepods-burstable). */
static int names_slice(struct span s, const char *literal) {
    size_t n = strlen(literal);
    return span_equals(s, literal) ||
           (s.length > n && span_ends_with(s, literal) && s.text[s.length - n - 1] == '-');
}

static int all_of(struct span s, int (*accept)(char)) {
    for (size_t i = 0; i < s.length; i++) {
        if (!accept(s.text[i])) return 0;
    }
    return 1;
}

static int is_container_id(struct span s) {
    return s.length == CONTAINER_ID_DIGITS && all_of(s, is_lower_hex);
}

/* Slurm job ids are 32-bit numbers; 20 digits bound any sane one. */
static int is_job_id(struct span s) {
    return s.length > 0 && s.length <= JOB_ID_DIGITS_MAX && all_of(s, is_digit);
}

/* Copies s into dst (cap bytes) when it fits, else leaves "" (a cut value
 * would name something else). */
static void copy_span(char *dst, size_t cap, struct span s) {
    if (s.length >= cap) {
        dst[0] = '\0';
        return;
    }
    memcpy(dst, s.text, s.length);
    dst[s.length] = '\0';
}

/* ---------------------------------------------------------------------- */
/* Path components                                                          */
/* ---------------------------------------------------------------------- */

/* Writes a pod uid as Kubernetes spells it (dashes) into out when it is a
 * UUID or a static pod's 32-digit hash; systemd slice names carry it with
 * underscores. Returns 1 when it is one. */
static int take_pod_uid(char out[GPUFL_ATTRIB_POD_UID_BYTES], struct span s) {
    char uid[GPUFL_ATTRIB_POD_UID_BYTES];
    if (s.length != 32 && s.length != 36) return 0;
    for (size_t i = 0; i < s.length; i++) {
        char c = s.text[i] == '_' ? '-' : s.text[i];
        int dash_here = s.length == 36 && (i == 8 || i == 13 || i == 18 || i == 23);
        if (dash_here ? c != '-' : !is_lower_hex(c)) return 0;
        uid[i] = c;
    }
    uid[s.length] = '\0';
    memcpy(out, uid, s.length + 1);
    return 1;
}

/* The container forms of one component: a prefix, the id, a suffix. */
static const struct {
    const char *prefix, *suffix;
    gpufl__runtime_t runtime;
} container_forms[] = {
    {"docker-", ".scope", GPUFL__RUNTIME_DOCKER},
    {"cri-containerd-", ".scope", GPUFL__RUNTIME_CONTAINERD},
    {"crio-", ".scope", GPUFL__RUNTIME_CRIO},
    {"crio-", "", GPUFL__RUNTIME_CRIO},
    {"libpod-", ".scope", GPUFL__RUNTIME_PODMAN},
    {"libpod-", "", GPUFL__RUNTIME_PODMAN},
};

/* The middle part of "<slice>:<prefix>:<id>" names. */
static const struct {
    const char *prefix;
    gpufl__runtime_t runtime;
} systemd_name_prefixes[] = {
    {"cri-containerd", GPUFL__RUNTIME_CONTAINERD},
    {"crio", GPUFL__RUNTIME_CRIO},
    {"docker", GPUFL__RUNTIME_DOCKER},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

static void set_container(gpufl__proc_cgroup_t *r, gpufl__runtime_t runtime, struct span id) {
    r->runtime = runtime;
    copy_span(r->container_id, sizeof r->container_id, id);
}

/* docker-<id>.scope and the other prefix/suffix forms. */
static int recognise_container_form(gpufl__proc_cgroup_t *r, struct span c) {
    for (size_t i = 0; i < COUNT(container_forms); i++) {
        size_t prefix = strlen(container_forms[i].prefix);
        size_t suffix = strlen(container_forms[i].suffix);
        if (c.length != prefix + CONTAINER_ID_DIGITS + suffix ||
            !span_starts_with(c, container_forms[i].prefix) ||
            !span_ends_with(c, container_forms[i].suffix))
            continue;
        struct span id = span_slice(c, prefix, prefix + CONTAINER_ID_DIGITS);
        if (!is_container_id(id)) continue;
        set_container(r, container_forms[i].runtime, id);
        return 1;
    }
    return 0;
}

/* A systemd pod slice: [...-]kubepods[-burstable|-besteffort]-pod<uid>.slice. */
static int recognise_pod_slice(gpufl__proc_cgroup_t *r, struct span c) {
    static const struct {
        const char *level;
        gpufl__pod_qos_t qos;
    } levels[] = {{"kubepods-burstable", GPUFL__POD_QOS_BURSTABLE},
                  {"kubepods-besteffort", GPUFL__POD_QOS_BESTEFFORT},
                  {"kubepods", GPUFL__POD_QOS_GUARANTEED}};
    if (!span_ends_with(c, ".slice")) return 0;
    struct span body = span_slice(c, 0, c.length - strlen(".slice"));
    /* The uid has no "-pod" in it, so the last one starts it. */
    size_t at = body.length;
    while (at >= 4 && memcmp(body.text + at - 4, "-pod", 4) != 0) at--;
    if (at < 4) return 0;
    struct span level = span_slice(body, 0, at - 4);
    for (size_t i = 0; i < COUNT(levels); i++) {
        if (!names_slice(level, levels[i].level)) continue;
        if (!take_pod_uid(r->pod_uid, span_slice(body, at, body.length))) return 0;
        r->pod_qos = levels[i].qos;
        return 1;
    }
    return 0;
}

/* "<slice>:<prefix>:<id>": the runtime was handed a systemd-style name but
 * made a cgroupfs directory of it, colons and all. */
static int recognise_systemd_name(gpufl__proc_cgroup_t *r, struct span c) {
    const char *first = memchr(c.text, ':', c.length);
    if (first == NULL) return 0;
    size_t slice_end = (size_t)(first - c.text);
    const char *second = memchr(first + 1, ':', c.length - slice_end - 1);
    if (second == NULL) return 0;
    size_t prefix_end = (size_t)(second - c.text);
    struct span prefix = span_slice(c, slice_end + 1, prefix_end);
    struct span id = span_slice(c, prefix_end + 1, c.length);
    recognise_pod_slice(r, span_slice(c, 0, slice_end));
    if (!is_container_id(id)) return 1;
    for (size_t i = 0; i < COUNT(systemd_name_prefixes); i++) {
        if (span_equals(prefix, systemd_name_prefixes[i].prefix)) {
            set_container(r, systemd_name_prefixes[i].runtime, id);
            break;
        }
    }
    return 1;
}

/* Where a walk down one path stands. */
struct path_walk {
    struct span parent; /* the component before this one */
    int under_kubepods; /* a "kubepods" component came before */
    int parent_is_pod;  /* the component before was a cgroupfs pod<uid> */
    int under_slurm;    /* a Slurm root (slurm, slurm_<node>, ...slurmstepd.scope) came before */
};

/* /kubepods/[burstable|besteffort/]pod<uid> */
static int recognise_pod_dir(gpufl__proc_cgroup_t *r, const struct path_walk *w, struct span c) {
    if (!w->under_kubepods || !span_starts_with(c, "pod") ||
        !take_pod_uid(r->pod_uid, span_slice(c, 3, c.length)))
        return 0;
    if (span_equals(w->parent, "burstable"))
        r->pod_qos = GPUFL__POD_QOS_BURSTABLE;
    else if (span_equals(w->parent, "besteffort"))
        r->pod_qos = GPUFL__POD_QOS_BESTEFFORT;
    else if (span_equals(w->parent, "kubepods"))
        r->pod_qos = GPUFL__POD_QOS_GUARANTEED;
    else
        r->pod_qos = GPUFL__POD_QOS_NONE;
    return 1;
}

static void recognise_component(gpufl__proc_cgroup_t *r, struct path_walk *w, struct span c) {
    int is_pod_dir = 0;
    if (recognise_container_form(r, c) || recognise_pod_slice(r, c) ||
        recognise_systemd_name(r, c)) {
        /* recognised by its own name */
    } else if (is_container_id(c) && span_equals(w->parent, "docker")) {
        set_container(r, GPUFL__RUNTIME_DOCKER, c);
    } else if (is_container_id(c) && w->parent_is_pod) {
        set_container(r, GPUFL__RUNTIME_CRI, c);
    } else if (recognise_pod_dir(r, w, c)) {
        is_pod_dir = 1;
    } else if (w->under_slurm && r->slurm_job_id[0] == '\0' && span_starts_with(c, "job_") &&
               is_job_id(span_slice(c, 4, c.length))) {
        copy_span(r->slurm_job_id, sizeof r->slurm_job_id, span_slice(c, 4, c.length));
    }
    if (span_equals(c, "kubepods")) w->under_kubepods = 1;
    if (span_equals(c, "slurm") || span_starts_with(c, "slurm_") ||
        span_ends_with(c, "slurmstepd.scope"))
        w->under_slurm = 1;
    w->parent_is_pod = is_pod_dir;
    w->parent = c;
}

/* Recognises what one cgroup path names into r (all unknown before). */
static void recognise_path(gpufl__proc_cgroup_t *r, struct span path) {
    struct path_walk walk = {{"", 0}, 0, 0, 0};
    size_t start = 0;
    for (size_t i = 0; i <= path.length; i++) {
        if (i < path.length && path.text[i] != '/') continue;
        if (i > start) recognise_component(r, &walk, span_slice(path, start, i));
        start = i + 1;
    }
}

/* Fills what `into` does not know yet from `from`; each group (container,
 * pod, job) is taken whole from one path. */
static void merge_recognised(gpufl__proc_cgroup_t *into, const gpufl__proc_cgroup_t *from) {
    if (into->runtime == GPUFL__RUNTIME_NONE && from->runtime != GPUFL__RUNTIME_NONE) {
        into->runtime = from->runtime;
        memcpy(into->container_id, from->container_id, sizeof into->container_id);
    }
    if (into->pod_uid[0] == '\0' && from->pod_uid[0] != '\0') {
        memcpy(into->pod_uid, from->pod_uid, sizeof into->pod_uid);
        into->pod_qos = from->pod_qos;
    }
    if (into->slurm_job_id[0] == '\0' && from->slurm_job_id[0] != '\0')
        memcpy(into->slurm_job_id, from->slurm_job_id, sizeof into->slurm_job_id);
}

/* ---------------------------------------------------------------------- */
/* /proc/<pid>/cgroup                                                       */
/* ---------------------------------------------------------------------- */

/* One "hierarchy-id:controller-list:path" line. The path may itself hold
 * colons (the systemd-style names above), so only the first two split. */
struct cgroup_line {
    struct span controllers, path;
    int unified; /* "0::" */
};

static int split_cgroup_line(struct span line, struct cgroup_line *out) {
    if (memchr(line.text, '\0', line.length) != NULL) return 0;
    const char *first = memchr(line.text, ':', line.length);
    if (first == NULL) return 0;
    struct span id = span_slice(line, 0, (size_t)(first - line.text));
    if (id.length == 0 || id.length > 10 || !all_of(id, is_digit)) return 0;
    size_t rest = id.length + 1;
    const char *second = memchr(first + 1, ':', line.length - rest);
    if (second == NULL) return 0;
    out->controllers = span_slice(line, rest, (size_t)(second - line.text));
    out->path = span_slice(line, (size_t)(second - line.text) + 1, line.length);
    if (out->path.length == 0 || out->path.text[0] != '/') return 0;
    out->unified = span_equals(id, "0") && out->controllers.length == 0;
    return 1;
}

/* True when the comma-separated list holds controller. */
static int lists_controller(struct span list, const char *controller) {
    size_t start = 0;
    for (size_t i = 0; i <= list.length; i++) {
        if (i < list.length && list.text[i] != ',') continue;
        if (span_equals(span_slice(list, start, i), controller)) return 1;
        start = i + 1;
    }
    return 0;
}

/* Calls visit on each well-formed line, in order; stops when it returns 0. */
static void for_each_cgroup_line(struct span text, int (*visit)(const struct cgroup_line *, void *),
                                 void *context) {
    size_t start = 0;
    for (size_t i = 0; i <= text.length; i++) {
        if (i < text.length && text.text[i] != '\n') continue;
        struct cgroup_line line;
        if (i > start && split_cgroup_line(span_slice(text, start, i), &line) &&
            !visit(&line, context))
            return;
        start = i + 1;
    }
}

/* The first pass: the version, and which line's path is reported. */
struct line_choice {
    int any, v1, unified;
    struct span first, memory, unified_path;
};

static int choose_line(const struct cgroup_line *line, void *context) {
    struct line_choice *choice = context;
    if (!choice->any) choice->first = line->path;
    choice->any = 1;
    if (line->unified) {
        if (!choice->unified) choice->unified_path = line->path;
        choice->unified = 1;
        return 1;
    }
    choice->v1 = 1;
    if (choice->memory.text == NULL && lists_controller(line->controllers, "memory"))
        choice->memory = line->path;
    return 1;
}

static int merge_line(const struct cgroup_line *line, void *context) {
    gpufl__proc_cgroup_t *out = context;
    gpufl__proc_cgroup_t found;
    memset(&found, 0, sizeof found);
    recognise_path(&found, line->path);
    merge_recognised(out, &found);
    return 1;
}

int gpufl__proc_attrib_parse_cgroup(gpufl__proc_cgroup_t *out, const char *text, size_t length) {
    if (out == NULL || (text == NULL && length > 0))
        return gpufl__set_error(GPUFL_EINVAL, "proc_attrib: NULL cgroup text or result");
    memset(out, 0, sizeof *out);
    struct span all = {text != NULL ? text : "", length};
    struct line_choice choice;
    memset(&choice, 0, sizeof choice);
    for_each_cgroup_line(all, choose_line, &choice);
    if (!choice.any)
        return gpufl__set_error(GPUFL_EFORMAT, "proc_attrib: no \"id:controllers:/path\" line");
    out->version = choice.v1 ? 1 : 2;
    struct span reported = choice.memory.text != NULL ? choice.memory
                           : choice.unified           ? choice.unified_path
                                                      : choice.first;
    copy_span(out->path, sizeof out->path, reported);
    /* The reported path speaks first; the other lines (v1 hierarchies Slurm
     * or a runtime placed differently) fill in what it does not say. */
    recognise_path(out, reported);
    for_each_cgroup_line(all, merge_line, out);
    return 0;
}

/* ---------------------------------------------------------------------- */
/* Files                                                                    */
/* ---------------------------------------------------------------------- */

/* Opens name below dirfd; returns the descriptor or -errno. */
static int open_at(int dirfd, const char *name) {
    int fd;
    do {
        fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    } while (fd < 0 && errno == EINTR);
    return fd >= 0 ? fd : -errno;
}

/* Reads into buf until it is full or the file ends; returns the count or
 * -errno. procfs may hand a file over in several reads. */
static ssize_t read_fully(int fd, char *buf, size_t cap) {
    size_t count = 0;
    while (count < cap) {
        ssize_t n = read(fd, buf + count, cap - count);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return -errno;
        if (n == 0) break;
        count += (size_t)n;
    }
    return (ssize_t)count;
}

/* Reads the start of dirfd/name as a string (at most cap - 1 bytes). Sets
 * *more when the file goes on past that. Returns the count or -errno. */
static ssize_t read_text_at(int dirfd, const char *name, char *buf, size_t cap, int *more) {
    int fd = open_at(dirfd, name);
    if (fd < 0) return fd;
    ssize_t count = read_fully(fd, buf, cap - 1);
    *more = 0;
    if (count == (ssize_t)(cap - 1)) {
        char extra;
        *more = read_fully(fd, &extra, 1) > 0;
    }
    close(fd);
    if (count < 0) return count;
    buf[count] = '\0';
    return count;
}

/* True for the errors of a process that has gone: its /proc directory's
 * files vanish (ENOENT) or refuse (ESRCH) once it is reaped. */
static int means_gone(ssize_t error) { return error == -ENOENT || error == -ESRCH; }

/* ---------------------------------------------------------------------- */
/* stat, status, environ, the user                                         */
/* ---------------------------------------------------------------------- */

/* Parses the decimal at *cursor, at most max, which must end at a blank, a
 * newline or the text's end; advances *cursor past it. Returns 0 or -1. */
static int parse_decimal(const char **cursor, uint64_t max, uint64_t *out) {
    const char *p = *cursor;
    if (!is_digit(*p)) return -1; /* strtoull would take blanks and signs */
    errno = 0;
    char *end;
    unsigned long long value = strtoull(p, &end, 10);
    if (errno == ERANGE || value > max) return -1;
    if (*end != ' ' && *end != '\t' && *end != '\n' && *end != '\0') return -1;
    *cursor = end;
    *out = value;
    return 0;
}

/* Parses the command name (field 2, inside the first '(' and the last ')':
 * it may itself hold both) and the start time (field 22). Returns 0 or -1. */
static int parse_stat(const char *text, char *comm, size_t comm_cap, uint64_t *start_ticks) {
    const char *open = strchr(text, '(');
    const char *close = strrchr(text, ')');
    if (open == NULL || close == NULL || close < open) return -1;
    const char *p = close + 1;
    for (int field = 3; field < 22; field++) {
        while (*p == ' ') p++;
        if (*p == '\0' || *p == '\n') return -1;
        while (*p != '\0' && *p != ' ' && *p != '\n') p++;
    }
    while (*p == ' ') p++;
    uint64_t value;
    if (parse_decimal(&p, UINT64_MAX, &value) != 0) return -1;
    struct span name = {open + 1, (size_t)(close - open - 1)};
    copy_span(comm, comm_cap, name);
    *start_ticks = value;
    return 0;
}

/* Reads and parses dirfd/stat. Returns 0, -1 when it is there but not
 * understood, or -errno. */
static int read_stat(int dirfd, const char *name, char *comm, size_t comm_cap,
                     uint64_t *start_ticks) {
    char buf[STAT_BYTES];
    int more;
    ssize_t count = read_text_at(dirfd, name, buf, sizeof buf, &more);
    if (count < 0) return (int)count;
    return parse_stat(buf, comm, comm_cap, start_ticks) == 0 ? 0 : -1;
}

/* The real uid: the first number of the "Uid:" line of status. */
static int64_t parse_status_uid(const char *text) {
    for (const char *line = text; line != NULL && *line != '\0';) {
        if (strncmp(line, "Uid:", 4) == 0) {
            const char *p = line + 4;
            while (*p == ' ' || *p == '\t') p++;
            uint64_t uid; /* uid_t is 32 bits */
            return parse_decimal(&p, UINT32_MAX, &uid) == 0 ? (int64_t)uid : -1;
        }
        line = strchr(line, '\n');
        if (line != NULL) line++;
    }
    return -1;
}

/* A scan for SLURM_JOB_ID=<digits> in NUL-separated entries that arrive in
 * chunks (an entry may straddle two). */
struct environ_scan {
    size_t column; /* bytes of the current entry seen */
    int candidate; /* the entry still looks like SLURM_JOB_ID=<digits> */
    size_t value_length;
    char value[GPUFL_ATTRIB_SLURM_JOB_BYTES];
    int found;
};

/* Ends the current entry: it is the answer when it matched all along. */
static void end_environ_entry(struct environ_scan *scan) {
    if (scan->candidate && scan->column > strlen(SLURM_KEY) && scan->value_length > 0) {
        scan->value[scan->value_length] = '\0';
        scan->found = 1;
    }
    scan->column = 0;
    scan->candidate = 1;
    scan->value_length = 0;
}

static void scan_environ(struct environ_scan *scan, const char *chunk, size_t length) {
    static const char key[] = SLURM_KEY;
    const size_t key_length = sizeof key - 1;
    for (size_t i = 0; i < length && !scan->found; i++) {
        char c = chunk[i];
        if (c == '\0') {
            end_environ_entry(scan);
            continue;
        }
        if (scan->column < key_length) {
            if (c != key[scan->column]) scan->candidate = 0;
        } else if (scan->candidate) {
            if (is_digit(c) && scan->value_length < JOB_ID_DIGITS_MAX)
                scan->value[scan->value_length++] = c;
            else
                scan->candidate = 0;
        }
        if (scan->column <= key_length) scan->column++;
    }
}

/* Looks for SLURM_JOB_ID in dirfd/environ, reading at most its cap.
 * Returns 0 (found or not), or -errno (EACCES for another user's process). */
static int read_environ_job(int dirfd, char *job, size_t job_cap, unsigned *flags) {
    int fd = open_at(dirfd, "environ");
    if (fd < 0) return fd;
    struct environ_scan scan;
    memset(&scan, 0, sizeof scan);
    scan.candidate = 1;
    char chunk[ENVIRON_CHUNK_BYTES];
    size_t total = 0;
    int result = 0, at_end = 0;
    while (!scan.found && total < GPUFL_ATTRIB_ENVIRON_MAX_BYTES) {
        size_t want = GPUFL_ATTRIB_ENVIRON_MAX_BYTES - total;
        if (want > sizeof chunk) want = sizeof chunk;
        ssize_t n = read(fd, chunk, want);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) {
            result = -errno;
            break;
        }
        if (n == 0) {
            at_end = 1;
            break;
        }
        total += (size_t)n;
        scan_environ(&scan, chunk, (size_t)n);
    }
    close(fd);
    if (result != 0) return result;
    /* The last entry is whole only when the file ended there. */
    if (!scan.found && at_end) end_environ_entry(&scan);
    if (!scan.found && !at_end) *flags |= GPUFL_ATTRIB_ENVIRON_TRUNCATED;
    if (scan.found) snprintf(job, job_cap, "%s", scan.value);
    return 0;
}

/* uid's name in this process's user database (NSS), "" when it has none. */
static void lookup_user(char *out, size_t cap, int64_t uid) {
    char stack_buf[PASSWD_STACK_BYTES];
    char *buf = stack_buf, *heap = NULL;
    size_t size = sizeof stack_buf;
    struct passwd entry, *found = NULL;
    out[0] = '\0';
    if (uid < 0) return;
    for (;;) {
        int rc = getpwuid_r((uid_t)uid, &entry, buf, size, &found);
        if (rc != ERANGE || size >= PASSWD_MAX_BYTES) break;
        size *= 2;
        char *bigger = realloc(heap, size);
        if (bigger == NULL) break;
        heap = buf = bigger;
    }
    if (found != NULL && found->pw_name != NULL) {
        struct span name = {found->pw_name, strlen(found->pw_name)};
        copy_span(out, cap, name);
    }
    free(heap);
}

/* ---------------------------------------------------------------------- */
/* One process                                                              */
/* ---------------------------------------------------------------------- */

static int format_pid_path(char *out, size_t cap, const char *root, int pid, const char *file) {
    int n = file != NULL ? snprintf(out, cap, "%s/%d/%s", root, pid, file)
                         : snprintf(out, cap, "%s/%d", root, pid);
    if (n < 0 || (size_t)n >= cap)
        return gpufl__set_error(GPUFL_EINVAL, "proc_attrib: proc root too long: %s", root);
    return 0;
}

static int gone(int pid) {
    return gpufl__set_error(GPUFL_ENOTFOUND, "proc_attrib: process %d does not exist", pid);
}

/* Reads and parses the cgroup file; a missing one (no cgroups) leaves it unknown. */
static int read_cgroup(int dirfd, gpufl__proc_attrib_t *out) {
    char buf[GPUFL_ATTRIB_CGROUP_MAX_BYTES + 1];
    int more;
    ssize_t count = read_text_at(dirfd, "cgroup", buf, sizeof buf, &more);
    if (count == -ESRCH) return GPUFL_ENOTFOUND;
    if (count < 0) return 0;
    if (more) {
        /* Drop the line the cap cut: half an id could pass for another. */
        out->flags |= GPUFL_ATTRIB_CGROUP_TRUNCATED;
        char *last_newline = memrchr(buf, '\n', (size_t)count);
        count = last_newline != NULL ? last_newline - buf + 1 : 0;
    }
    gpufl__proc_attrib_parse_cgroup(&out->cgroup, buf, (size_t)count);
    return 0;
}

/* The fields after stat, read through dirfd. */
static int read_rest(int dirfd, gpufl__proc_attrib_t *out) {
    char buf[STATUS_BYTES];
    int more;
    ssize_t count = read_text_at(dirfd, "status", buf, sizeof buf, &more);
    if (count == -ESRCH) return GPUFL_ENOTFOUND;
    if (count >= 0) out->uid = parse_status_uid(buf);
    lookup_user(out->user, sizeof out->user, out->uid);

    if (read_cgroup(dirfd, out) != 0) return GPUFL_ENOTFOUND;

    int rc = read_environ_job(dirfd, out->slurm_job_id, sizeof out->slurm_job_id, &out->flags);
    if (rc == -ESRCH) return GPUFL_ENOTFOUND;
    if (rc == -EACCES || rc == -EPERM) out->flags |= GPUFL_ATTRIB_ENVIRON_UNREADABLE;
    if (out->slurm_job_id[0] != '\0') {
        out->slurm_from = GPUFL__SLURM_FROM_ENVIRON;
    } else if (out->cgroup.slurm_job_id[0] != '\0') {
        memcpy(out->slurm_job_id, out->cgroup.slurm_job_id, sizeof out->slurm_job_id);
        out->slurm_from = GPUFL__SLURM_FROM_CGROUP;
    }
    return 0;
}

int gpufl__proc_attrib_read(gpufl__proc_attrib_t *out, const char *proc_root, int pid) {
    if (out == NULL || proc_root == NULL || pid <= 0)
        return gpufl__set_error(GPUFL_EINVAL, "proc_attrib: NULL result or root, or pid %d", pid);
    memset(out, 0, sizeof *out);
    out->pid = pid;
    out->uid = -1;

    char path[PROC_PATH_BYTES];
    int rc = format_pid_path(path, sizeof path, proc_root, pid, NULL);
    if (rc != 0) return rc;
    int dirfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dirfd < 0 && (errno == ENOENT || errno == ESRCH)) return gone(pid);
    if (dirfd < 0)
        return gpufl__set_error(GPUFL_EIO, "proc_attrib: cannot open %s: %s", path,
                                strerror(errno));

    rc = read_stat(dirfd, "stat", out->comm, sizeof out->comm, &out->start_ticks);
    if (means_gone(rc)) goto process_gone;
    if (rc != 0) {
        out->flags |= GPUFL_ATTRIB_STAT_UNPARSABLE;
        out->comm[0] = '\0';
        out->start_ticks = 0;
    }
    if (read_rest(dirfd, out) != 0) goto process_gone;

    /* Exited while being read: what was read may be half of it. */
    char comm[GPUFL_ATTRIB_COMM_BYTES];
    uint64_t start_again = 0;
    rc = read_stat(dirfd, "stat", comm, sizeof comm, &start_again);
    if (means_gone(rc) || (rc == 0 && start_again != out->start_ticks)) goto process_gone;
    close(dirfd);
    return 0;

process_gone:
    close(dirfd);
    return gone(pid);
}

/* Indexed by the enums' values, which start at 0 and have no gaps. */
static const char *const runtime_names[] = {"", "docker", "containerd", "cri-o", "podman", "cri"};
static const char *const qos_names[] = {"", "guaranteed", "burstable", "besteffort"};
static const char *const slurm_from_names[] = {"", "environ", "cgroup"};

static const char *name_of(const char *const *names, size_t count, unsigned value) {
    return value < count ? names[value] : "";
}

const char *gpufl__proc_attrib_runtime_name(gpufl__runtime_t runtime) {
    return name_of(runtime_names, COUNT(runtime_names), (unsigned)runtime);
}

const char *gpufl__proc_attrib_qos_name(gpufl__pod_qos_t qos) {
    return name_of(qos_names, COUNT(qos_names), (unsigned)qos);
}

const char *gpufl__proc_attrib_slurm_from_name(gpufl__slurm_from_t from) {
    return name_of(slurm_from_names, COUNT(slurm_from_names), (unsigned)from);
}

/* ---------------------------------------------------------------------- */
/* Cache                                                                    */
/* ---------------------------------------------------------------------- */

/* A handful of entries for the GPU processes of one host: a linear scan of
 * them costs less than the stat read every lookup makes anyway. */
struct cache_entry {
    uint64_t last_asked; /* 0: free */
    gpufl__proc_attrib_t attrib;
};

struct gpufl__proc_attrib_cache {
    char *proc_root;
    size_t capacity;
    uint64_t clock; /* counts lookups: the age of an entry */
    gpufl__proc_attrib_cache_stats_t stats;
    struct cache_entry *entries;
};

int gpufl__proc_attrib_cache_create(gpufl__proc_attrib_cache_t **out, const char *proc_root,
                                    size_t capacity) {
    if (out == NULL) return gpufl__set_error(GPUFL_EINVAL, "proc_attrib: NULL cache result");
    *out = NULL;
    if (proc_root == NULL || capacity == 0 || capacity > GPUFL_ATTRIB_CACHE_MAX_ENTRIES)
        return gpufl__set_error(GPUFL_EINVAL,
                                "proc_attrib: cache needs a proc root and 1..%u entries, not %zu",
                                GPUFL_ATTRIB_CACHE_MAX_ENTRIES, capacity);
    gpufl__proc_attrib_cache_t *cache = calloc(1, sizeof *cache);
    if (cache == NULL) goto out_of_memory;
    cache->proc_root = strdup(proc_root);
    cache->entries = calloc(capacity, sizeof *cache->entries);
    if (cache->proc_root == NULL || cache->entries == NULL) goto free_cache;
    cache->capacity = capacity;
    *out = cache;
    return 0;

free_cache:
    gpufl__proc_attrib_cache_destroy(cache);
out_of_memory:
    return gpufl__set_error(GPUFL_ENOMEM, "proc_attrib: no memory for a cache of %zu", capacity);
}

void gpufl__proc_attrib_cache_destroy(gpufl__proc_attrib_cache_t *cache) {
    if (cache == NULL) return;
    free(cache->entries);
    free(cache->proc_root);
    free(cache);
}

static struct cache_entry *find_pid(gpufl__proc_attrib_cache_t *cache, int pid) {
    for (size_t i = 0; i < cache->capacity; i++) {
        struct cache_entry *e = &cache->entries[i];
        if (e->last_asked != 0 && e->attrib.pid == pid) return e;
    }
    return NULL;
}

/* The entry to fill for pid: its own (a reused pid), a free one, or the one
 * asked for least recently. */
static struct cache_entry *slot_for(gpufl__proc_attrib_cache_t *cache, int pid) {
    struct cache_entry *own = find_pid(cache, pid);
    if (own != NULL) return own;
    struct cache_entry *oldest = &cache->entries[0];
    for (size_t i = 0; i < cache->capacity; i++) {
        struct cache_entry *e = &cache->entries[i];
        if (e->last_asked == 0) return e;
        if (e->last_asked < oldest->last_asked) oldest = e;
    }
    cache->stats.evictions++;
    return oldest;
}

int gpufl__proc_attrib_cache_get(gpufl__proc_attrib_t *out, gpufl__proc_attrib_cache_t *cache,
                                 int pid) {
    if (out == NULL || cache == NULL || pid <= 0)
        return gpufl__set_error(GPUFL_EINVAL, "proc_attrib: NULL result or cache, or pid %d", pid);
    char path[PROC_PATH_BYTES];
    int rc = format_pid_path(path, sizeof path, cache->proc_root, pid, "stat");
    if (rc != 0) return rc;
    char comm[GPUFL_ATTRIB_COMM_BYTES];
    uint64_t start_ticks = 0;
    struct cache_entry *entry = find_pid(cache, pid);
    rc = read_stat(AT_FDCWD, path, comm, sizeof comm, &start_ticks);
    cache->clock++;
    if (rc == 0 && entry != NULL && entry->attrib.start_ticks == start_ticks) {
        /* The same process. Its name may have changed (exec, prctl). */
        memcpy(entry->attrib.comm, comm, sizeof comm);
        entry->last_asked = cache->clock;
        cache->stats.hits++;
        *out = entry->attrib;
        return 0;
    }

    rc = means_gone(rc) ? GPUFL_ENOTFOUND : gpufl__proc_attrib_read(out, cache->proc_root, pid);
    if (rc == GPUFL_ENOTFOUND) {
        if (entry != NULL) entry->last_asked = 0;
        cache->stats.gone++;
        return gone(pid);
    }
    if (rc != 0) return rc;
    cache->stats.misses++;
    if (out->start_ticks == 0) {
        /* Nothing to tell this process from the next of its pid. */
        if (entry != NULL) entry->last_asked = 0;
        return 0;
    }
    entry = slot_for(cache, pid);
    entry->attrib = *out;
    entry->last_asked = cache->clock;
    return 0;
}

void gpufl__proc_attrib_cache_stats(gpufl__proc_attrib_cache_stats_t *out,
                                    const gpufl__proc_attrib_cache_t *cache) {
    memset(out, 0, sizeof *out);
    if (cache != NULL) *out = cache->stats;
}
