// SPDX-License-Identifier: Apache-2.0
/*
 * init.c - _gpufl.init(**options): keyword arguments to a gpufl_options_t,
 * then gpufl_init().
 *
 * One table maps each keyword to its field and type, so the accepted names
 * are exactly the fields of InitOptions. Types are checked strictly (a str
 * where a bool belongs is a TypeError, not a truthy value); ranges are left
 * to the library, whose messages name the field and the range. The Python
 * layer (gpufl/_session.py) handles deprecated names and enum values first.
 */
#include "gpufl_py.h"

#include <limits.h>
#include <stddef.h>
#include <string.h>

typedef enum field_type { F_STRING, F_BOOL, F_INT, F_BACKEND, F_ENGINE } field_type_t;

typedef struct field {
    const char *name;
    field_type_t type;
    size_t offset; /* in gpufl_options_t */
} field_t;

#define FIELD(name, type)                                                                          \
    { #name, type, offsetof(gpufl_options_t, name) }

static const field_t fields[] = {
    FIELD(app_name, F_STRING),
    FIELD(log_path, F_STRING),
    FIELD(backend_url, F_STRING),
    FIELD(api_key, F_STRING),
    FIELD(api_path, F_STRING),
    FIELD(remote_upload, F_BOOL),
    FIELD(enable_stack_trace, F_BOOL),
    FIELD(enable_source_collection, F_BOOL),
    FIELD(enable_external_correlation, F_BOOL),
    FIELD(enable_synchronization, F_BOOL),
    FIELD(enable_memory_tracking, F_BOOL),
    FIELD(enable_cuda_graphs_tracking, F_BOOL),
    FIELD(system_sample_rate_ms, F_INT),
    FIELD(kernel_sample_rate_ms, F_INT),
    FIELD(continuous_system_sampling, F_BOOL),
    FIELD(backend, F_BACKEND),
    FIELD(profiling_engine, F_ENGINE),
    FIELD(config_file, F_STRING),
    FIELD(flush_logs_always, F_BOOL),
    FIELD(enable_debug_output, F_BOOL),
    FIELD(enabled, F_BOOL),
};

static const field_t *find_field(const char *name) {
    for (size_t i = 0; i < sizeof fields / sizeof fields[0]; i++)
        if (strcmp(fields[i].name, name) == 0) return &fields[i];
    return NULL;
}

/* An int that fits a C int; bool is refused where a number is meant. */
static int to_int(PyObject *value, const char *name, long lo, long hi, int *out) {
    if (PyBool_Check(value) || !PyLong_Check(value)) {
        gpufl__py_type_error(name, "an int", value);
        return -1;
    }
    long v = PyLong_AsLong(value);
    if (v == -1 && PyErr_Occurred()) {
        if (!PyErr_ExceptionMatches(PyExc_OverflowError)) return -1;
        v = LONG_MAX; /* reported as out of range below */
        PyErr_Clear();
    }
    if (v < lo || v > hi) {
        PyErr_Format(PyExc_ValueError, "%s=%R is out of range (%ld..%ld)", name, value, lo, hi);
        return -1;
    }
    *out = (int)v;
    return 0;
}

/* True, False, or the ints 1 and 0 that C programmers write for them. */
static int to_bool(PyObject *value, const char *name, int *out) {
    if (PyBool_Check(value)) {
        *out = value == Py_True;
        return 0;
    }
    if (PyLong_Check(value)) {
        long v = PyLong_AsLong(value);
        if (v == 0 || v == 1) {
            *out = (int)v;
            return 0;
        }
        if (v == -1 && PyErr_Occurred()) PyErr_Clear();
    }
    gpufl__py_type_error(name, "a bool", value);
    return -1;
}

static int set_field(gpufl_options_t *opts, const field_t *f, PyObject *value) {
    char *p = (char *)opts + f->offset;
    int v;
    switch (f->type) {
    case F_STRING: return gpufl__py_utf8(value, f->name, (const char **)(void *)p);
    case F_BOOL:
        if (to_bool(value, f->name, &v) < 0) return -1;
        *(int *)(void *)p = v;
        return 0;
    case F_INT:
        if (to_int(value, f->name, INT_MIN, INT_MAX, &v) < 0) return -1;
        *(int *)(void *)p = v;
        return 0;
    case F_BACKEND:
        if (to_int(value, f->name, GPUFL_BACKEND_AUTO, GPUFL_BACKEND_NONE, &v) < 0) return -1;
        *(gpufl_backend_t *)(void *)p = (gpufl_backend_t)v;
        return 0;
    case F_ENGINE:
        if (to_int(value, f->name, GPUFL_ENGINE_MONITOR, GPUFL_ENGINE_DEEP, &v) < 0) return -1;
        *(gpufl_engine_t *)(void *)p = (gpufl_engine_t)v;
        return 0;
    }
    return -1;
}

PyObject *gpufl__py_init(PyObject *module, PyObject *args, PyObject *kwargs) {
    gpufl_options_t opts;
    PyObject *key, *value;
    Py_ssize_t pos = 0;
    int rc;

    if (PyTuple_Size(args) != 0) {
        PyErr_SetString(PyExc_TypeError, "init() takes keyword arguments only");
        return NULL;
    }
    gpufl_options_init(&opts);
    /* The strings point into the str objects of kwargs, which outlive the call. */
    while (kwargs && PyDict_Next(kwargs, &pos, &key, &value)) {
        const char *name = PyUnicode_AsUTF8AndSize(key, NULL);
        if (!name) return NULL;
        const field_t *f = find_field(name);
        if (!f) {
            PyErr_Format(PyExc_TypeError, "init() got an unexpected keyword argument '%s'", name);
            return NULL;
        }
        if (set_field(&opts, f, value) < 0) return NULL;
    }
    /* Starting a session creates files and threads: let other threads run. */
    Py_BEGIN_ALLOW_THREADS;
    rc = gpufl_init(&opts);
    Py_END_ALLOW_THREADS;
    if (rc == GPUFL_EDISABLED) Py_RETURN_FALSE; /* switched off: not an error */
    if (rc != 0) return gpufl__py_raise(module, rc);
    Py_RETURN_TRUE;
}
