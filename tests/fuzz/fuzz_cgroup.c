// SPDX-License-Identifier: Apache-2.0
/*
 * fuzz_cgroup.c - fuzz target for the /proc/<pid>/cgroup parser of process
 * attribution: every input is a cgroup file, which must parse or fail with
 * GPUFL_EFORMAT, and whose answer must keep what proc_attrib.h promises.
 */
#include "fuzz_target.h"

#include "host/proc_attrib.h"

#include <gpufl/gpufl.h>

#include <string.h>

static int is_lower_hex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

/* A NUL-terminated string within its field. */
static size_t field_length(const char *field, size_t cap) {
    const char *end = memchr(field, '\0', cap);
    FUZZ_CHECK(end != NULL);
    return (size_t)(end - field);
}

/* Every answer is cut from the input itself, never made up. */
static void check_in_input(const char *value, size_t length, const uint8_t *data, size_t size) {
    FUZZ_CHECK(length == 0 || memmem(data, size, value, length) != NULL);
}

static void check_pod_uid(const char *uid, size_t length) {
    FUZZ_CHECK(length == 0 || length == 32 || length == 36);
    for (size_t i = 0; i < length; i++) {
        int dash = length == 36 && (i == 8 || i == 13 || i == 18 || i == 23);
        FUZZ_CHECK(dash ? uid[i] == '-' : is_lower_hex(uid[i]));
    }
}

static void check_result(const gpufl__proc_cgroup_t *r, const uint8_t *data, size_t size) {
    FUZZ_CHECK(r->version == 1 || r->version == 2);

    size_t path = field_length(r->path, sizeof r->path);
    FUZZ_CHECK(path == 0 || r->path[0] == '/');
    check_in_input(r->path, path, data, size);

    size_t id = field_length(r->container_id, sizeof r->container_id);
    FUZZ_CHECK((r->runtime == GPUFL__RUNTIME_NONE) == (id == 0));
    FUZZ_CHECK((unsigned)r->runtime <= GPUFL__RUNTIME_CRI);
    FUZZ_CHECK(id == 0 || id == 64);
    for (size_t i = 0; i < id; i++) FUZZ_CHECK(is_lower_hex(r->container_id[i]));
    check_in_input(r->container_id, id, data, size);
    FUZZ_CHECK(*gpufl__proc_attrib_runtime_name(r->runtime) != '\0' || id == 0);

    size_t pod = field_length(r->pod_uid, sizeof r->pod_uid);
    check_pod_uid(r->pod_uid, pod);
    FUZZ_CHECK((unsigned)r->pod_qos <= GPUFL__POD_QOS_BESTEFFORT);
    FUZZ_CHECK(pod != 0 || r->pod_qos == GPUFL__POD_QOS_NONE);

    size_t job = field_length(r->slurm_job_id, sizeof r->slurm_job_id);
    FUZZ_CHECK(job <= 20);
    for (size_t i = 0; i < job; i++)
        FUZZ_CHECK(r->slurm_job_id[i] >= '0' && r->slurm_job_id[i] <= '9');
    check_in_input(r->slurm_job_id, job, data, size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const gpufl__proc_cgroup_t zero;
    gpufl__proc_cgroup_t first, second;
    int rc = gpufl__proc_attrib_parse_cgroup(&first, (const char *)data, size);
    FUZZ_CHECK(rc == 0 || rc == GPUFL_EFORMAT);
    if (rc == 0)
        check_result(&first, data, size);
    else
        FUZZ_CHECK(memcmp(&first, &zero, sizeof zero) == 0);
    /* The same bytes give the same answer: no state between calls. */
    FUZZ_CHECK(gpufl__proc_attrib_parse_cgroup(&second, (const char *)data, size) == rc);
    FUZZ_CHECK(memcmp(&first, &second, sizeof first) == 0);
    return 0;
}
