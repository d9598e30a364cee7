// SPDX-License-Identifier: Apache-2.0
/*
 * test_proc_attrib.c - per-process attribution: the cgroup-file parser on
 * every recognised form (and forms it must not take), gpufl__proc_attrib_read
 * on fixture /proc trees (gone pids, denied environ, garbage and over-long
 * files), the cache (hits, reused pids, eviction), and the test process itself
 * read from the real /proc.
 */
#include "test_util.h"

#include "host/proc_attrib.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/types.h>
#include <sys/wait.h>

/* A container id and a pod uid, and the uid as a systemd slice spells it. */
#define ID     "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
#define ID2    "60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752"
#define UID    "5c7d2a3e-9b1f-4e8a-a6d2-0f3b7c9e1d24"
#define UID_   "5c7d2a3e_9b1f_4e8a_a6d2_0f3b7c9e1d24"
#define STATIC "a3f1c2b4d5e6f708192a3b4c5d6e7f80" /* a static pod's config hash */

/* ---------------------------------------------------------------------- */
/* The parser                                                               */
/* ---------------------------------------------------------------------- */

struct parse_case {
    const char *name, *text;
    int version;
    const char *path; /* NULL: not checked */
    gpufl__runtime_t runtime;
    const char *container, *pod;
    gpufl__pod_qos_t qos;
    const char *job;
};

#define NONE  GPUFL__RUNTIME_NONE
#define NOQOS GPUFL__POD_QOS_NONE

static const struct parse_case parse_cases[] = {
    {"docker systemd v1",
     "12:pids:/system.slice/docker-" ID ".scope\n"
     "4:memory:/system.slice/docker-" ID ".scope\n"
     "2:cpu,cpuacct:/system.slice/docker-" ID ".scope\n"
     "1:name=systemd:/system.slice/docker-" ID ".scope\n",
     1, "/system.slice/docker-" ID ".scope", GPUFL__RUNTIME_DOCKER, ID, "", NOQOS, ""},
    {"docker cgroupfs v1", "9:memory:/docker/" ID "\n8:cpuacct:/docker/" ID "\n", 1, "/docker/" ID,
     GPUFL__RUNTIME_DOCKER, ID, "", NOQOS, ""},
    {"docker v2", "0::/system.slice/docker-" ID ".scope\n", 2, "/system.slice/docker-" ID ".scope",
     GPUFL__RUNTIME_DOCKER, ID, "", NOQOS, ""},
    {"docker in docker: the inner one", "0::/docker/" ID "/docker/" ID2 "\n", 2, NULL,
     GPUFL__RUNTIME_DOCKER, ID2, "", NOQOS, ""},
    {"containerd systemd burstable",
     "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_
     ".slice/cri-containerd-" ID ".scope\n",
     2, NULL, GPUFL__RUNTIME_CONTAINERD, ID, UID, GPUFL__POD_QOS_BURSTABLE, ""},
    {"containerd systemd guaranteed",
     "0::/kubepods.slice/kubepods-pod" UID_ ".slice/cri-containerd-" ID ".scope\n", 2, NULL,
     GPUFL__RUNTIME_CONTAINERD, ID, UID, GPUFL__POD_QOS_GUARANTEED, ""},
    {"cri-o systemd besteffort v1",
     "11:memory:/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" UID_
     ".slice/crio-" ID ".scope\n",
     1, NULL, GPUFL__RUNTIME_CRIO, ID, UID, GPUFL__POD_QOS_BESTEFFORT, ""},
    {"cri-dockerd systemd",
     "0::/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" UID_ ".slice/docker-" ID
     ".scope\n",
     2, NULL, GPUFL__RUNTIME_DOCKER, ID, UID, GPUFL__POD_QOS_BURSTABLE, ""},
    {"kubelet cgroup root, static pod",
     "0::/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
     "kubelet-kubepods-besteffort-pod" STATIC ".slice/cri-containerd-" ID ".scope\n",
     2, NULL, GPUFL__RUNTIME_CONTAINERD, ID, STATIC, GPUFL__POD_QOS_BESTEFFORT, ""},
    {"cgroupfs guaranteed", "5:memory:/kubepods/pod" UID "/" ID "\n", 1, "/kubepods/pod" UID "/" ID,
     GPUFL__RUNTIME_CRI, ID, UID, GPUFL__POD_QOS_GUARANTEED, ""},
    {"cgroupfs burstable", "0::/kubepods/burstable/pod" UID "/" ID "\n", 2, NULL,
     GPUFL__RUNTIME_CRI, ID, UID, GPUFL__POD_QOS_BURSTABLE, ""},
    {"cgroupfs besteffort", "0::/kubepods/besteffort/pod" UID "/" ID "\n", 2, NULL,
     GPUFL__RUNTIME_CRI, ID, UID, GPUFL__POD_QOS_BESTEFFORT, ""},
    {"cri-o cgroupfs", "0::/kubepods/besteffort/pod" UID "/crio-" ID "\n", 2, NULL,
     GPUFL__RUNTIME_CRIO, ID, UID, GPUFL__POD_QOS_BESTEFFORT, ""},
    {"systemd name made by cgroupfs",
     "0::/kubepods-burstable-pod" UID_ ".slice:cri-containerd:" ID "\n", 2, NULL,
     GPUFL__RUNTIME_CONTAINERD, ID, UID, GPUFL__POD_QOS_BURSTABLE, ""},
    {"podman rootful", "0::/machine.slice/libpod-" ID ".scope/container\n", 2, NULL,
     GPUFL__RUNTIME_PODMAN, ID, "", NOQOS, ""},
    {"podman rootless",
     "0::/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" ID ".scope\n", 2, NULL,
     GPUFL__RUNTIME_PODMAN, ID, "", NOQOS, ""},
    {"podman cgroupfs", "0::/libpod_parent/libpod-" ID "\n", 2, NULL, GPUFL__RUNTIME_PODMAN, ID, "",
     NOQOS, ""},
    {"foreign cgroup namespace",
     "0::/../../kubepods-besteffort-pod" UID_ ".slice/cri-containerd-" ID ".scope\n", 2, NULL,
     GPUFL__RUNTIME_CONTAINERD, ID, UID, GPUFL__POD_QOS_BESTEFFORT, ""},
    {"slurm v1",
     "10:devices:/slurm/uid_1000/job_4242/step_0/task_0\n"
     "4:memory:/slurm/uid_1000/job_4242/step_0/task_0\n"
     "3:freezer:/slurm/uid_1000/job_4242/step_0\n",
     1, "/slurm/uid_1000/job_4242/step_0/task_0", NONE, "", "", NOQOS, "4242"},
    {"slurm v1, only in other hierarchies",
     "10:devices:/slurm/uid_1000/job_4243/step_batch/task_0\n4:memory:/\n"
     "1:name=systemd:/system.slice/slurmd.service\n",
     1, "/", NONE, "", "", NOQOS, "4243"},
    {"slurm v2", "0::/system.slice/slurmstepd.scope/job_77/step_batch/user/task_0\n", 2, NULL, NONE,
     "", "", NOQOS, "77"},
    {"slurm v2, several slurmd",
     "0::/system.slice/node7_slurmstepd.scope/job_78/step_0/user/task_0\n", 2, NULL, NONE, "", "",
     NOQOS, "78"},
    {"slurm v2 extern step", "0::/system.slice/slurmstepd.scope/job_79/step_extern/user\n", 2, NULL,
     NONE, "", "", NOQOS, "79"},
    /* Forms that must not be taken. */
    {"slurmstepd itself", "0::/system.slice/slurmstepd.scope/system\n", 2, NULL, NONE, "", "",
     NOQOS, ""},
    {"job_ outside slurm", "0::/user.slice/job_12\n", 2, NULL, NONE, "", "", NOQOS, ""},
    {"login session", "0::/user.slice/user-1000.slice/session-3.scope\n", 2,
     "/user.slice/user-1000.slice/session-3.scope", NONE, "", "", NOQOS, ""},
    {"root", "0::/\n", 2, "/", NONE, "", "", NOQOS, ""},
    {"conmon", "0::/machine.slice/libpod-conmon-" ID ".scope\n", 2, NULL, NONE, "", "", NOQOS, ""},
    {"crio conmon", "0::/system.slice/crio-conmon-" ID ".scope\n", 2, NULL, NONE, "", "", NOQOS,
     ""},
    {"short id", "0::/system.slice/docker-" ID "0.scope\n0::/docker/abc123\n", 2, NULL, NONE, "",
     "", NOQOS, ""},
    {"upper-case id",
     "0::/docker/9F86D081884C7D659A2FEAA0C55AD015A3BF4F1B2B0B822CD15D6C15B0F00A08\n", 2, NULL, NONE,
     "", "", NOQOS, ""},
    {"bare id outside docker and kubepods", "0::/system.slice/" ID "\n", 2, NULL, NONE, "", "",
     NOQOS, ""},
    {"pod dir outside kubepods", "0::/other/pod" UID "/" ID "\n", 2, NULL, NONE, "", "", NOQOS, ""},
    {"bad pod uid",
     "0::/kubepods.slice/kubepods-pod5c7d2a3e_9b1f.slice/cri-containerd-" ID ".scope\n", 2, NULL,
     GPUFL__RUNTIME_CONTAINERD, ID, "", NOQOS, ""},
    {"hybrid: v1 and unified lines",
     "1:name=systemd:/system.slice/docker-" ID ".scope\n0::/system.slice/docker-" ID ".scope\n", 1,
     "/system.slice/docker-" ID ".scope", GPUFL__RUNTIME_DOCKER, ID, "", NOQOS, ""},
    {"garbage lines around a good one", "hello\n:::\nx:y:/z\n0::relative\n0::/docker/" ID "\n\n", 2,
     "/docker/" ID, GPUFL__RUNTIME_DOCKER, ID, "", NOQOS, ""},
    {"no newline at the end", "0::/docker/" ID, 2, "/docker/" ID, GPUFL__RUNTIME_DOCKER, ID, "",
     NOQOS, ""},
};

static void check_case(const struct parse_case *c, const gpufl__proc_cgroup_t *got) {
    if (got->version != c->version || got->runtime != c->runtime ||
        strcmp(got->container_id, c->container) != 0 || strcmp(got->pod_uid, c->pod) != 0 ||
        got->pod_qos != c->qos || strcmp(got->slurm_job_id, c->job) != 0 ||
        (c->path != NULL && strcmp(got->path, c->path) != 0))
        fail_msg("%s: got version %d path '%s' runtime '%s' id '%s' pod '%s' qos '%s' job '%s'",
                 c->name, got->version, got->path, gpufl__proc_attrib_runtime_name(got->runtime),
                 got->container_id, got->pod_uid, gpufl__proc_attrib_qos_name(got->pod_qos),
                 got->slurm_job_id);
}

static void test_parse_forms(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof parse_cases / sizeof parse_cases[0]; i++) {
        gpufl__proc_cgroup_t got;
        const struct parse_case *c = &parse_cases[i];
        assert_int_equal(gpufl__proc_attrib_parse_cgroup(&got, c->text, strlen(c->text)), 0);
        check_case(c, &got);
    }
}

static void test_parse_rejects(void **state) {
    (void)state;
    gpufl__proc_cgroup_t got;
    assert_int_equal(gpufl__proc_attrib_parse_cgroup(&got, "", 0), GPUFL_EFORMAT);
    assert_int_equal(gpufl__proc_attrib_parse_cgroup(&got, NULL, 0), GPUFL_EFORMAT);
    assert_int_equal(gpufl__proc_attrib_parse_cgroup(&got, "no cgroup here\n", 15), GPUFL_EFORMAT);
    assert_int_equal(got.version, 0);
    assert_string_equal(got.path, "");
    assert_int_equal(gpufl__proc_attrib_parse_cgroup(&got, NULL, 3), GPUFL_EINVAL);
    assert_int_equal(gpufl__proc_attrib_parse_cgroup(NULL, "0::/\n", 5), GPUFL_EINVAL);

    /* A line with a NUL in it is no kernel line; the length, not the NUL,
     * ends the text. */
    static const char with_nul[] = "0::/docker/" ID "\0x\n0::/system.slice/docker-" ID2 ".scope\n";
    assert_int_equal(gpufl__proc_attrib_parse_cgroup(&got, with_nul, sizeof with_nul - 1), 0);
    assert_string_equal(got.container_id, ID2);

    /* Only the given length is read. */
    static const char cut[] = "0::/docker/" ID "\n";
    assert_int_equal(gpufl__proc_attrib_parse_cgroup(&got, cut, 20), 0);
    assert_int_equal(got.runtime, GPUFL__RUNTIME_NONE);
}

/* A path too long to keep is left out, but what it names still counts. */
static void test_parse_long_path(void **state) {
    (void)state;
    char text[2048];
    char deep[1200];
    memset(deep, 'd', sizeof deep - 1);
    deep[sizeof deep - 1] = '\0';
    snprintf(text, sizeof text, "0::/%s/docker-" ID ".scope\n", deep);
    gpufl__proc_cgroup_t got;
    assert_int_equal(gpufl__proc_attrib_parse_cgroup(&got, text, strlen(text)), 0);
    assert_string_equal(got.path, "");
    assert_int_equal(got.runtime, GPUFL__RUNTIME_DOCKER);
    assert_string_equal(got.container_id, ID);
}

static void test_names(void **state) {
    (void)state;
    assert_string_equal(gpufl__proc_attrib_runtime_name(GPUFL__RUNTIME_CRIO), "cri-o");
    assert_string_equal(gpufl__proc_attrib_runtime_name(GPUFL__RUNTIME_NONE), "");
    assert_string_equal(gpufl__proc_attrib_qos_name(GPUFL__POD_QOS_BESTEFFORT), "besteffort");
    assert_string_equal(gpufl__proc_attrib_slurm_from_name(GPUFL__SLURM_FROM_CGROUP), "cgroup");
}

/* ---------------------------------------------------------------------- */
/* Fixture /proc trees                                                      */
/* ---------------------------------------------------------------------- */

/* A fake proc root: <scratch>/proc, one directory per pid. */
static char proc_root[1024];

static void fixture_root(const char *name) {
    snprintf(proc_root, sizeof proc_root, "%s/proc", tu_scratch_dir("proc_attrib", name));
    assert_int_equal(mkdir(proc_root, 0755), 0);
}

static void fixture_bytes(int pid, const char *file, const void *data, size_t length) {
    char path[1200];
    snprintf(path, sizeof path, "%s/%d", proc_root, pid);
    if (mkdir(path, 0755) != 0 && errno != EEXIST) fail_msg("mkdir %s: %s", path, strerror(errno));
    snprintf(path, sizeof path, "%s/%d/%s", proc_root, pid, file);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0) fail_msg("open %s: %s", path, strerror(errno));
    assert_int_equal(write(fd, data, length), (ssize_t)length);
    close(fd);
}

static void fixture_text(int pid, const char *file, const char *text) {
    fixture_bytes(pid, file, text, strlen(text));
}

static void fixture_stat(int pid, const char *comm, unsigned long long start_ticks) {
    char text[512];
    snprintf(text, sizeof text,
             "%d (%s) S 1 %d %d 0 -1 4194560 1000 0 0 0 50 20 0 0 20 0 4 0 %llu 123456789 2500 "
             "18446744073709551615 1 1 0 0 0 0 0 4096 1260 0 0 0 17 3 0 0 0 0 0\n",
             pid, comm, pid, pid, start_ticks);
    fixture_text(pid, "stat", text);
}

static void fixture_status(int pid, long uid) {
    char text[512];
    snprintf(text, sizeof text,
             "Name:\tworker\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t%d\nNgid:\t0\nPid:\t%d\n"
             "PPid:\t1\nTracerPid:\t0\nUid:\t%ld\t%ld\t%ld\t%ld\nGid:\t0\t0\t0\t0\n"
             "VmRSS:\t  1024 kB\n",
             pid, pid, uid, uid, uid, uid);
    fixture_text(pid, "status", text);
}

/* A whole process: stat, status, cgroup and an environ without Slurm. */
static void fixture_process(int pid, const char *comm, unsigned long long start, long uid,
                            const char *cgroup) {
    static const char environ_text[] = "PATH=/usr/bin\0HOME=/root\0LANG=C.UTF-8\0";
    fixture_stat(pid, comm, start);
    fixture_status(pid, uid);
    fixture_text(pid, "cgroup", cgroup);
    fixture_bytes(pid, "environ", environ_text, sizeof environ_text - 1);
}

static gpufl__proc_attrib_t read_ok(int pid) {
    gpufl__proc_attrib_t a;
    int rc = gpufl__proc_attrib_read(&a, proc_root, pid);
    if (rc != 0) fail_msg("read pid %d: %d %s", pid, rc, gpufl_last_error());
    return a;
}

/* Every runtime form through the files, as the sampler reads them. */
static void test_read_forms(void **state) {
    (void)state;
    fixture_root("forms");
    for (size_t i = 0; i < sizeof parse_cases / sizeof parse_cases[0]; i++) {
        int pid = 100 + (int)i;
        fixture_process(pid, "worker", 5000 + i, 0, parse_cases[i].text);
        gpufl__proc_attrib_t a = read_ok(pid);
        check_case(&parse_cases[i], &a.cgroup);
        assert_int_equal(a.pid, pid);
        assert_int_equal(a.start_ticks, 5000 + i);
        assert_string_equal(a.comm, "worker");
        assert_int_equal(a.uid, 0);
        assert_string_equal(a.user, "root");
        assert_string_equal(a.slurm_job_id, parse_cases[i].job);
        assert_int_equal(a.slurm_from,
                         parse_cases[i].job[0] ? GPUFL__SLURM_FROM_CGROUP : GPUFL__SLURM_FROM_NONE);
        assert_int_equal(a.flags, 0);
    }
}

static void test_read_slurm_environ(void **state) {
    (void)state;
    fixture_root("slurm_environ");
    fixture_process(7, "python3", 900, 0, "0::/system.slice/slurmstepd.scope/job_77/step_0/user\n");
    /* A longer name that starts the same, an empty and a non-number value
     * come first: none of them is SLURM_JOB_ID. */
    static const char environ_text[] =
        "SLURM_JOB_ID_X=1\0SLURM_JOB_ID=\0SLURM_JOB_IDS=5\0SLURM_JOB_NAME=train\0"
        "SLURM_JOB_ID=123456\0SLURM_JOB_ID=999\0";
    fixture_bytes(7, "environ", environ_text, sizeof environ_text - 1);
    gpufl__proc_attrib_t a = read_ok(7);
    assert_string_equal(a.slurm_job_id, "123456");
    assert_int_equal(a.slurm_from, GPUFL__SLURM_FROM_ENVIRON);
    assert_string_equal(a.cgroup.slurm_job_id, "77");

    /* Not a number: the cgroup's job is taken. */
    static const char bad[] = "SLURM_JOB_ID=12x\0";
    fixture_bytes(7, "environ", bad, sizeof bad - 1);
    a = read_ok(7);
    assert_string_equal(a.slurm_job_id, "77");
    assert_int_equal(a.slurm_from, GPUFL__SLURM_FROM_CGROUP);

    /* The last entry need not end in a NUL. */
    static const char last[] = "A=b\0SLURM_JOB_ID=31";
    fixture_bytes(7, "environ", last, sizeof last - 1);
    assert_string_equal(read_ok(7).slurm_job_id, "31");
}

/* The entry straddles two of the chunks environ is read in. */
static void test_read_environ_chunks(void **state) {
    (void)state;
    fixture_root("environ_chunks");
    fixture_process(8, "a", 1, 0, "0::/\n");
    static char environ_text[8192];
    memset(environ_text, 0, sizeof environ_text);
    memset(environ_text, 'x', 4090);
    environ_text[0] = 'X', environ_text[1] = '=';
    static const char entry[] = "SLURM_JOB_ID=424242";
    memcpy(environ_text + 4091, entry, sizeof entry - 1);
    fixture_bytes(8, "environ", environ_text, 4091 + sizeof entry);
    gpufl__proc_attrib_t a = read_ok(8);
    assert_string_equal(a.slurm_job_id, "424242");
    assert_int_equal(a.flags, 0);
}

/* A pid that does not exist, or whose files vanish, is GPUFL_ENOTFOUND. */
static void test_read_gone(void **state) {
    (void)state;
    fixture_root("gone");
    gpufl__proc_attrib_t a;
    assert_int_equal(gpufl__proc_attrib_read(&a, proc_root, 4000), GPUFL_ENOTFOUND);
    fixture_text(4001, "cgroup", "0::/\n"); /* its directory, but no stat: reaped */
    assert_int_equal(gpufl__proc_attrib_read(&a, proc_root, 4001), GPUFL_ENOTFOUND);
    assert_int_equal(gpufl__proc_attrib_read(&a, "/nonexistent-proc-root", 1), GPUFL_ENOTFOUND);
    assert_int_equal(gpufl__proc_attrib_read(&a, proc_root, 0), GPUFL_EINVAL);
    assert_int_equal(gpufl__proc_attrib_read(&a, proc_root, -5), GPUFL_EINVAL);
    assert_int_equal(gpufl__proc_attrib_read(NULL, proc_root, 1), GPUFL_EINVAL);
    assert_int_equal(gpufl__proc_attrib_read(&a, NULL, 1), GPUFL_EINVAL);
    /* A pid "directory" that is a file is no process either, but says why. */
    char path[1200];
    snprintf(path, sizeof path, "%s/4002", proc_root);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(gpufl__proc_attrib_read(&a, proc_root, 4002), GPUFL_EIO);
    assert_non_null(strstr(gpufl_last_error(), "4002"));
}

/* Only stat is needed: everything else may be missing. */
static void test_read_missing_files(void **state) {
    (void)state;
    fixture_root("missing");
    fixture_stat(9, "lonely", 77);
    gpufl__proc_attrib_t a = read_ok(9);
    assert_string_equal(a.comm, "lonely");
    assert_int_equal(a.start_ticks, 77);
    assert_int_equal(a.uid, -1);
    assert_string_equal(a.user, "");
    assert_int_equal(a.cgroup.version, 0);
    assert_int_equal(a.slurm_from, GPUFL__SLURM_FROM_NONE);
    assert_int_equal(a.flags, 0);
}

static void test_read_garbage(void **state) {
    (void)state;
    fixture_root("garbage");
    fixture_process(10, "x", 1, 0, "0::/docker/" ID "\n");
    fixture_text(10, "stat", "this is not a stat line\n");
    fixture_text(10, "status", "Uid:\tnobody\n");
    gpufl__proc_attrib_t a = read_ok(10);
    assert_true(a.flags & GPUFL_ATTRIB_STAT_UNPARSABLE);
    assert_string_equal(a.comm, "");
    assert_int_equal(a.start_ticks, 0);
    assert_int_equal(a.uid, -1);
    assert_string_equal(a.cgroup.container_id, ID);

    /* A stat cut before field 22, a uid past 32 bits, binary cgroup bytes. */
    fixture_text(10, "stat", "10 (x) S 1 10 10 0 -1 4194560 1000 0\n");
    fixture_text(10, "status", "Uid:\t99999999999\t0\t0\t0\n");
    static const char binary[] = "\x01\x02\xff:\x00:/\n\n\n:";
    fixture_bytes(10, "cgroup", binary, sizeof binary - 1);
    a = read_ok(10);
    assert_true(a.flags & GPUFL_ATTRIB_STAT_UNPARSABLE);
    assert_int_equal(a.uid, -1);
    assert_int_equal(a.cgroup.version, 0);
    assert_int_equal(a.cgroup.runtime, GPUFL__RUNTIME_NONE);

    /* A command name with spaces and parentheses, as the kernel allows. */
    fixture_stat(10, "my (odd) name", 42);
    a = read_ok(10);
    assert_string_equal(a.comm, "my (odd) name");
    assert_int_equal(a.start_ticks, 42);
    assert_int_equal(a.flags & GPUFL_ATTRIB_STAT_UNPARSABLE, 0);
}

/* A uid the user database does not know has no name. */
static void test_read_unknown_user(void **state) {
    (void)state;
    fixture_root("unknown_user");
    fixture_process(11, "x", 1, 3999999, "0::/\n");
    gpufl__proc_attrib_t a = read_ok(11);
    assert_int_equal(a.uid, 3999999);
    assert_string_equal(a.user, "");
}

static void test_read_over_long(void **state) {
    (void)state;
    fixture_root("over_long");
    /* cgroup: a good line, then more than the cap of other lines. */
    size_t cgroup_length = GPUFL_ATTRIB_CGROUP_MAX_BYTES * 2;
    char *cgroup = malloc(cgroup_length + 1);
    assert_non_null(cgroup);
    int head = snprintf(cgroup, cgroup_length, "4:memory:/slurm/uid_0/job_5/step_0\n");
    for (size_t i = (size_t)head; i < cgroup_length; i++) cgroup[i] = (i % 80 == 79) ? '\n' : 'z';
    /* The line the cap cuts would pass for a container if it were kept. */
    memcpy(cgroup + GPUFL_ATTRIB_CGROUP_MAX_BYTES - 80, "\n7:pids:/docker/" ID2, 16 + 64);
    cgroup[cgroup_length] = '\0';
    fixture_process(12, "x", 1, 0, cgroup);
    free(cgroup);

    /* environ: the job id lies past the cap, so the cgroup's is taken. */
    size_t environ_length = GPUFL_ATTRIB_ENVIRON_MAX_BYTES + 4096;
    char *environ_text = malloc(environ_length);
    assert_non_null(environ_text);
    for (size_t i = 0; i < environ_length; i++) environ_text[i] = (i % 100 == 99) ? '\0' : 'e';
    memcpy(environ_text + GPUFL_ATTRIB_ENVIRON_MAX_BYTES + 100, "SLURM_JOB_ID=5\0", 15);
    fixture_bytes(12, "environ", environ_text, environ_length);
    free(environ_text);

    /* status: a line longer than what is read before Uid. */
    char status[8192];
    memset(status, 'n', 6000);
    memcpy(status, "Name:\t", 6);
    snprintf(status + 6000, sizeof status - 6000, "\nUid:\t0\t0\t0\t0\n");
    fixture_text(12, "status", status);

    gpufl__proc_attrib_t a = read_ok(12);
    assert_true(a.flags & GPUFL_ATTRIB_CGROUP_TRUNCATED);
    assert_true(a.flags & GPUFL_ATTRIB_ENVIRON_TRUNCATED);
    assert_int_equal(a.cgroup.runtime, GPUFL__RUNTIME_NONE); /* the cut line is dropped */
    assert_string_equal(a.cgroup.path, "/slurm/uid_0/job_5/step_0");
    assert_string_equal(a.slurm_job_id, "5");
    assert_int_equal(a.slurm_from, GPUFL__SLURM_FROM_CGROUP);
    assert_int_equal(a.uid, -1);
}

/* environ of another user's process is denied; the job then comes from
 * the cgroup. Root reads anything, so a root run checks in a child that
 * dropped to nobody (a file mode and the real /proc/1). */
static int denied_environ_in_child(int fixture_pid) {
    gpufl__proc_attrib_t a;
    if (gpufl__proc_attrib_read(&a, proc_root, fixture_pid) != 0) return 10;
    if (!(a.flags & GPUFL_ATTRIB_ENVIRON_UNREADABLE)) return 11;
    if (strcmp(a.slurm_job_id, "88") != 0 || a.slurm_from != GPUFL__SLURM_FROM_CGROUP) return 12;
    if (getuid() != 0 && gpufl__proc_attrib_read(&a, "/proc", 1) == 0) {
        /* pid 1 is another user's: its environ is refused, the rest is read. */
        if (a.uid == (int64_t)getuid()) return 0;
        if (!(a.flags & GPUFL_ATTRIB_ENVIRON_UNREADABLE)) return 13;
        if (a.start_ticks == 0 || a.comm[0] == '\0') return 14;
    }
    return 0;
}

static void test_read_environ_denied(void **state) {
    (void)state;
    fixture_root("environ_denied");
    fixture_process(13, "x", 1, 0, "10:devices:/slurm/uid_0/job_88/step_0\n");
    static const char environ_text[] = "SLURM_JOB_ID=99\0";
    fixture_bytes(13, "environ", environ_text, sizeof environ_text - 1);
    char path[1200];
    snprintf(path, sizeof path, "%s/13/environ", proc_root);
    assert_int_equal(chmod(path, 0), 0);
    if (geteuid() != 0) {
        assert_int_equal(denied_environ_in_child(13), 0);
        return;
    }
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        if (setgid(65534) != 0 || setuid(65534) != 0) _exit(2);
        _exit(denied_environ_in_child(13));
    }
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

/* ---------------------------------------------------------------------- */
/* The cache                                                                */
/* ---------------------------------------------------------------------- */

static gpufl__proc_attrib_t cache_ok(gpufl__proc_attrib_cache_t *cache, int pid) {
    gpufl__proc_attrib_t a;
    int rc = gpufl__proc_attrib_cache_get(&a, cache, pid);
    if (rc != 0) fail_msg("cache get pid %d: %d %s", pid, rc, gpufl_last_error());
    return a;
}

static void assert_stats(const gpufl__proc_attrib_cache_t *cache, uint64_t hits, uint64_t misses,
                         uint64_t evictions, uint64_t gone) {
    gpufl__proc_attrib_cache_stats_t s;
    gpufl__proc_attrib_cache_stats(&s, cache);
    if (s.hits != hits || s.misses != misses || s.evictions != evictions || s.gone != gone)
        fail_msg("stats: hits %llu misses %llu evictions %llu gone %llu",
                 (unsigned long long)s.hits, (unsigned long long)s.misses,
                 (unsigned long long)s.evictions, (unsigned long long)s.gone);
}

/* A known process is answered without rereading its files; a pid with a
 * new start time is a new process. */
static void test_cache_hits_and_reuse(void **state) {
    (void)state;
    fixture_root("cache_reuse");
    fixture_process(20, "train", 1000, 0, "0::/docker/" ID "\n");
    gpufl__proc_attrib_cache_t *cache;
    assert_int_equal(gpufl__proc_attrib_cache_create(&cache, proc_root, 8), 0);
    assert_string_equal(cache_ok(cache, 20).cgroup.container_id, ID);
    assert_stats(cache, 0, 1, 0, 0);

    /* Changed behind the cache's back: a hit does not see it... */
    fixture_text(20, "cgroup", "0::/docker/" ID2 "\n");
    gpufl__proc_attrib_t a = cache_ok(cache, 20);
    assert_string_equal(a.cgroup.container_id, ID);
    assert_stats(cache, 1, 1, 0, 0);
    /* ...except the name, which stat gives on every lookup (exec renames). */
    fixture_stat(20, "renamed", 1000);
    assert_string_equal(cache_ok(cache, 20).comm, "renamed");
    assert_stats(cache, 2, 1, 0, 0);

    /* The pid comes back for another process: read afresh. */
    fixture_stat(20, "other", 2000);
    a = cache_ok(cache, 20);
    assert_string_equal(a.cgroup.container_id, ID2);
    assert_int_equal(a.start_ticks, 2000);
    assert_string_equal(a.comm, "other");
    assert_stats(cache, 2, 2, 0, 0);
    assert_string_equal(cache_ok(cache, 20).cgroup.container_id, ID2);
    assert_stats(cache, 3, 2, 0, 0);
    gpufl__proc_attrib_cache_destroy(cache);
}

static void test_cache_eviction(void **state) {
    (void)state;
    fixture_root("cache_eviction");
    for (int pid = 30; pid < 33; pid++) fixture_process(pid, "p", (unsigned)pid, 0, "0::/\n");
    gpufl__proc_attrib_cache_t *cache;
    assert_int_equal(gpufl__proc_attrib_cache_create(&cache, proc_root, 2), 0);
    cache_ok(cache, 30);
    cache_ok(cache, 31);
    cache_ok(cache, 30); /* 31 is now the one asked least recently */
    assert_stats(cache, 1, 2, 0, 0);
    cache_ok(cache, 32); /* evicts 31 */
    assert_stats(cache, 1, 3, 1, 0);
    cache_ok(cache, 30);
    cache_ok(cache, 32);
    assert_stats(cache, 3, 3, 1, 0);
    cache_ok(cache, 31); /* read again, evicts 30 */
    assert_stats(cache, 3, 4, 2, 0);
    gpufl__proc_attrib_cache_destroy(cache);
}

static void test_cache_gone_and_unkeyed(void **state) {
    (void)state;
    fixture_root("cache_gone");
    fixture_process(40, "p", 400, 0, "0::/docker/" ID "\n");
    gpufl__proc_attrib_cache_t *cache;
    assert_int_equal(gpufl__proc_attrib_cache_create(&cache, proc_root, 4), 0);
    cache_ok(cache, 40);
    char path[1200];
    snprintf(path, sizeof path, "%s/40/stat", proc_root);
    assert_int_equal(unlink(path), 0);
    gpufl__proc_attrib_t a;
    assert_int_equal(gpufl__proc_attrib_cache_get(&a, cache, 40), GPUFL_ENOTFOUND);
    assert_int_equal(gpufl__proc_attrib_cache_get(&a, cache, 41), GPUFL_ENOTFOUND);
    assert_stats(cache, 0, 1, 0, 2);
    /* Back with the same start time: the entry was dropped, so it is read. */
    fixture_text(40, "cgroup", "0::/docker/" ID2 "\n");
    fixture_stat(40, "p", 400);
    assert_string_equal(cache_ok(cache, 40).cgroup.container_id, ID2);
    assert_stats(cache, 0, 2, 0, 2);

    /* No start time: nothing to tell it from a later process, never kept. */
    fixture_text(40, "stat", "garbage\n");
    cache_ok(cache, 40);
    cache_ok(cache, 40);
    assert_stats(cache, 0, 4, 0, 2);
    gpufl__proc_attrib_cache_destroy(cache);
}

static void test_cache_arguments(void **state) {
    (void)state;
    gpufl__proc_attrib_cache_t *cache = (gpufl__proc_attrib_cache_t *)&cache;
    assert_int_equal(gpufl__proc_attrib_cache_create(&cache, "/proc", 0), GPUFL_EINVAL);
    assert_null(cache);
    assert_int_equal(
        gpufl__proc_attrib_cache_create(&cache, "/proc", GPUFL_ATTRIB_CACHE_MAX_ENTRIES + 1),
        GPUFL_EINVAL);
    assert_int_equal(gpufl__proc_attrib_cache_create(&cache, NULL, 4), GPUFL_EINVAL);
    assert_int_equal(gpufl__proc_attrib_cache_create(NULL, "/proc", 4), GPUFL_EINVAL);
    assert_int_equal(gpufl__proc_attrib_cache_create(&cache, "/proc", 4), 0);
    gpufl__proc_attrib_t a;
    assert_int_equal(gpufl__proc_attrib_cache_get(&a, cache, 0), GPUFL_EINVAL);
    assert_int_equal(gpufl__proc_attrib_cache_get(NULL, cache, 1), GPUFL_EINVAL);
    assert_int_equal(gpufl__proc_attrib_cache_get(&a, NULL, 1), GPUFL_EINVAL);
    gpufl__proc_attrib_cache_destroy(cache);
    gpufl__proc_attrib_cache_destroy(NULL);
}

/* ---------------------------------------------------------------------- */
/* The real /proc                                                           */
/* ---------------------------------------------------------------------- */

static void test_real_self(void **state) {
    (void)state;
    gpufl__proc_attrib_t a;
    assert_int_equal(gpufl__proc_attrib_read(&a, "/proc", (int)getpid()), 0);
    assert_int_equal(a.uid, (int64_t)getuid());
    char expected[16]; /* the kernel keeps 15 bytes of the name */
    snprintf(expected, sizeof expected, "%s", program_invocation_short_name);
    assert_string_equal(a.comm, expected);
    assert_true(a.start_ticks > 0);
    assert_int_equal(a.flags & (GPUFL_ATTRIB_STAT_UNPARSABLE | GPUFL_ATTRIB_ENVIRON_UNREADABLE), 0);
    if (access("/proc/self/cgroup", R_OK) == 0)
        assert_true(a.cgroup.version == 1 || a.cgroup.version == 2);

    /* The cache: the second lookup is a hit on the same answer. */
    gpufl__proc_attrib_cache_t *cache;
    assert_int_equal(gpufl__proc_attrib_cache_create(&cache, "/proc", 16), 0);
    gpufl__proc_attrib_t first = cache_ok(cache, (int)getpid());
    gpufl__proc_attrib_t second = cache_ok(cache, (int)getpid());
    assert_int_equal(first.start_ticks, a.start_ticks);
    assert_string_equal(second.cgroup.path, a.cgroup.path);
    assert_stats(cache, 1, 1, 0, 0);

    /* A child that has exited and been reaped is gone. */
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) _exit(0);
    assert_int_equal(waitpid(child, NULL, 0), child);
    assert_int_equal(gpufl__proc_attrib_read(&a, "/proc", (int)child), GPUFL_ENOTFOUND);
    assert_int_equal(gpufl__proc_attrib_cache_get(&a, cache, (int)child), GPUFL_ENOTFOUND);
    gpufl__proc_attrib_cache_destroy(cache);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_forms),         cmocka_unit_test(test_parse_rejects),
        cmocka_unit_test(test_parse_long_path),     cmocka_unit_test(test_names),
        cmocka_unit_test(test_read_forms),          cmocka_unit_test(test_read_slurm_environ),
        cmocka_unit_test(test_read_environ_chunks), cmocka_unit_test(test_read_gone),
        cmocka_unit_test(test_read_missing_files),  cmocka_unit_test(test_read_garbage),
        cmocka_unit_test(test_read_unknown_user),   cmocka_unit_test(test_read_over_long),
        cmocka_unit_test(test_read_environ_denied), cmocka_unit_test(test_cache_hits_and_reuse),
        cmocka_unit_test(test_cache_eviction),      cmocka_unit_test(test_cache_gone_and_unkeyed),
        cmocka_unit_test(test_cache_arguments),     cmocka_unit_test(test_real_self),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
