// SPDX-License-Identifier: Apache-2.0
/*
 * module.c - the gpufl._gpufl extension module: its function table, state,
 * and the calls too small for a file of their own (shutdown, system
 * windows, upload, queries, the command-line tool).
 *
 * The public API is the Python package gpufl, which wraps these functions;
 * nothing here is meant to be called directly.
 */
#include "gpufl_py.h"

#include "cli_main.h"

#include <pthread.h>
#include <stddef.h>
#include <stdio.h>

gpufl__py_state_t *gpufl__py_state(PyObject *module) {
    return (gpufl__py_state_t *)PyModule_GetState(module);
}

void gpufl__py_free_object(PyObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    freefunc tp_free = (freefunc)PyType_GetSlot(type, Py_tp_free);
    tp_free(self);
    Py_DECREF(type);
}

static PyObject *py_shutdown(PyObject *module, PyObject *unused) {
    (void)module, (void)unused;
    /* Joins the collector thread after its last write: may take a while. */
    Py_BEGIN_ALLOW_THREADS;
    gpufl_shutdown();
    Py_END_ALLOW_THREADS;
    Py_RETURN_NONE;
}

static PyObject *py_is_active(PyObject *module, PyObject *unused) {
    (void)module, (void)unused;
    return PyBool_FromLong(gpufl_is_active());
}

/* The running or last session's directory, or None when none ran. */
static PyObject *py_session_dir(PyObject *module, PyObject *unused) {
    char dir[4096];
    (void)unused;
    int rc = gpufl_session_dir(dir, sizeof dir);
    if (rc == GPUFL_ENOTINIT) Py_RETURN_NONE;
    if (rc < 0) return gpufl__py_raise(module, rc);
    return PyUnicode_DecodeFSDefault(dir);
}

/* The flight recorder's snapshot: its directory; NotSupportedError without
 * flight_recorder_s, NotRunningError without a session. */
static PyObject *py_snapshot(PyObject *module, PyObject *unused) {
    char dir[4096];
    int rc;
    (void)unused;
    Py_BEGIN_ALLOW_THREADS; /* waits for the collector, then writes the files */
    rc = gpufl_snapshot(dir, sizeof dir);
    Py_END_ALLOW_THREADS;
    if (rc < 0) return gpufl__py_raise(module, rc);
    return PyUnicode_DecodeFSDefault(dir);
}

/* True when the window opened or closed; False when no session runs. */
static PyObject *system_window(PyObject *module, PyObject *name, int open) {
    const char *s;
    int rc;
    if (!PyUnicode_Check(name)) return gpufl__py_type_error("window name", "a str", name);
    if (gpufl__py_utf8(name, "window name", &s) < 0) return NULL;
    Py_BEGIN_ALLOW_THREADS; /* reads /proc for the window's snapshot */
    rc = open ? gpufl_system_start(s) : gpufl_system_stop(s);
    Py_END_ALLOW_THREADS;
    if (rc == GPUFL_ENOTINIT || rc == GPUFL_EDISABLED) Py_RETURN_FALSE;
    if (rc != 0) return gpufl__py_raise(module, rc);
    Py_RETURN_TRUE;
}

static PyObject *py_system_start(PyObject *module, PyObject *name) {
    return system_window(module, name, 1);
}

static PyObject *py_system_stop(PyObject *module, PyObject *name) {
    return system_window(module, name, 0);
}

/* upload_logs(log_path, backend_url, api_key, api_path, session, budget_ms) -> dict of the
 * result (gpufl_upload_result_t's fields); raises when nothing could be tried. Switched off:
 * success with nothing sent. */
static PyObject *py_upload_logs(PyObject *module, PyObject *args) {
    PyObject *log_path, *backend_url, *api_key, *api_path, *session;
    long long budget_ms;
    gpufl_upload_options_t opts;
    gpufl_upload_result_t r = {.size = sizeof r};
    int rc;

    gpufl_upload_options_init(&opts);
    if (!PyArg_ParseTuple(args, "OOOOOL:upload_logs", &log_path, &backend_url, &api_key, &api_path,
                          &session, &budget_ms))
        return NULL;
    if (gpufl__py_utf8(log_path, "log_path", &opts.log_path) < 0 ||
        gpufl__py_utf8(backend_url, "backend_url", &opts.backend_url) < 0 ||
        gpufl__py_utf8(api_key, "api_key", &opts.api_key) < 0 ||
        gpufl__py_utf8(api_path, "api_path", &opts.api_path) < 0 ||
        gpufl__py_utf8(session, "session", &opts.session) < 0)
        return NULL;
    opts.budget_ms = budget_ms;
    Py_BEGIN_ALLOW_THREADS;
    rc = gpufl_upload_logs_result(&r, &opts);
    Py_END_ALLOW_THREADS;
    if (rc < 0 && rc != GPUFL_EDISABLED) return gpufl__py_raise(module, rc);
    return Py_BuildValue(
        "{s:O, s:L, s:L, s:L, s:L, s:L, s:L, s:L, s:L, s:L, s:L, s:s, s:L}", "success",
        rc == 0 || rc == GPUFL_EDISABLED ? Py_True : Py_False, "events_uploaded",
        (long long)r.events_uploaded, "windows", (long long)r.windows, "bytes", (long long)r.bytes,
        "errors", (long long)r.errors, "windows_duplicate", (long long)r.windows_duplicate,
        "windows_before", (long long)r.windows_before, "windows_open", (long long)r.windows_open,
        "windows_quarantined", (long long)r.windows_quarantined, "retries", (long long)r.retries,
        "sessions_completed", (long long)r.sessions_completed, "error", r.error, "slices",
        (long long)r.slices);
}

static PyObject *py_version(PyObject *module, PyObject *unused) {
    (void)module, (void)unused;
    return PyUnicode_FromString(gpufl_version());
}

/* Names of the engines and backends, in the order of their C values. */
static PyObject *names(const char *(*name_of)(int), int count) {
    PyObject *t = PyTuple_New(count);
    for (int i = 0; t && i < count; i++) {
        PyObject *s = PyUnicode_FromString(name_of(i));
        if (!s || PyTuple_SetItem(t, i, s) < 0) {
            Py_DECREF(t);
            return NULL;
        }
    }
    return t;
}

static const char *engine_name(int i) { return gpufl_engine_name((gpufl_engine_t)i); }
static const char *backend_name(int i) { return gpufl_backend_name((gpufl_backend_t)i); }

static PyObject *py_engine_names(PyObject *module, PyObject *unused) {
    (void)module, (void)unused;
    return names(engine_name, GPUFL_ENGINE_DEEP + 1);
}

static PyObject *py_backend_names(PyObject *module, PyObject *unused) {
    (void)module, (void)unused;
    return names(backend_name, GPUFL_BACKEND_NONE + 1);
}

#define CLI_ARGS_MAX 65536 /* more arguments than any command takes */

/* _cli_main(argv) -> int: the gpufl command-line tool itself (cmd/gpufl,
 * compiled into this module), run in this process on argv (the program
 * first); it writes to file descriptors 1 and 2 through C stdio. */
static PyObject *py_cli_main(PyObject *module, PyObject *argv_obj) {
    static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER; /* one run at a time */
    static const char *const streams[] = {"stdout", "stderr"};
    (void)module;
    Py_ssize_t n = PySequence_Size(argv_obj);
    if (n < 0) return NULL;
    if (n < 1 || n > CLI_ARGS_MAX)
        return PyErr_Format(PyExc_ValueError, "_cli_main takes 1 to %d arguments, not %zd",
                            CLI_ARGS_MAX, n);
    PyObject **bytes = PyMem_Calloc((size_t)n, sizeof *bytes);
    char **argv = PyMem_Calloc((size_t)n + 1, sizeof *argv);
    PyObject *result = NULL;
    int rc;
    if (!bytes || !argv) {
        PyErr_NoMemory();
        goto free_arrays;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PySequence_GetItem(argv_obj, i);
        int ok = item && PyUnicode_FSConverter(item, &bytes[i]);
        Py_XDECREF(item);
        if (!ok) goto free_bytes;
        argv[i] = PyBytes_AsString(bytes[i]);
    }
    /* What Python printed so far comes before what the tool prints. */
    for (size_t i = 0; i < 2; i++) {
        PyObject *f = PySys_GetObject(streams[i]); /* borrowed; None when closed */
        if (!f || f == Py_None) continue;
        PyObject *r = PyObject_CallMethod(f, "flush", NULL);
        if (!r) goto free_bytes;
        Py_DECREF(r);
    }
    Py_BEGIN_ALLOW_THREADS; /* a large session takes seconds to read */
    pthread_mutex_lock(&lock);
    rc = gpufl__cli_main((int)n, argv);
    fflush(stdout);
    fflush(stderr);
    pthread_mutex_unlock(&lock);
    Py_END_ALLOW_THREADS;
    result = PyLong_FromLong(rc);
free_bytes:
    for (Py_ssize_t i = 0; i < n; i++) Py_XDECREF(bytes[i]);
free_arrays:
    PyMem_Free(argv);
    PyMem_Free(bytes);
    return result;
}

static PyMethodDef methods[] = {
    {"init", (PyCFunction)(void (*)(void))gpufl__py_init, METH_VARARGS | METH_KEYWORDS,
     "init(**options) -> bool: start a session (False when gpufl is switched off)."},
    {"shutdown", py_shutdown, METH_NOARGS, "shutdown(): end the session; safe to repeat."},
    {"is_active", py_is_active, METH_NOARGS, "is_active() -> bool: a session is running."},
    {"session_dir", py_session_dir, METH_NOARGS,
     "session_dir() -> str | None: directory of the running or last session."},
    {"snapshot", py_snapshot, METH_NOARGS,
     "snapshot() -> str: the flight recorder's memory written as a session directory (its "
     "path)."},
    {"system_start", py_system_start, METH_O,
     "system_start(name) -> bool: open a sampling window; False when no session runs."},
    {"system_stop", py_system_stop, METH_O,
     "system_stop(name) -> bool: close a sampling window; False when no session runs."},
    {"upload_logs", py_upload_logs, METH_VARARGS,
     "upload_logs(log_path, backend_url, api_key, api_path) -> bool: True when switched off."},
    {"find_session", gpufl__py_find_session, METH_VARARGS,
     "find_session(log_dir, app_name, session_id) -> str: a session directory "
     "(gpufl_analysis_find)."},
    {"version", py_version, METH_NOARGS, "version() -> str: libgpufl's version."},
    {"_cli_main", py_cli_main, METH_O,
     "_cli_main(argv) -> int: run the gpufl command-line tool on argv (program first); "
     "see gpufl.cli."},
    {"_frames_start", gpufl__py_frames_start, METH_O,
     "_frames_start(library_dirs): put Python frames in captured stacks."},
    {"_frames_stop", gpufl__py_frames_stop, METH_NOARGS,
     "_frames_stop(): no more Python frames in captured stacks (interpreter exit)."},
    {"_frames_capture", gpufl__py_frames_capture_point, METH_NOARGS,
     "_frames_capture(): record this thread's Python frames for its CUDA calls until "
     "_frames_release()."},
    {"_frames_release", gpufl__py_frames_release_point, METH_NOARGS,
     "_frames_release(): close the innermost capture point."},
    {"_frames_capturing", gpufl__py_frames_capturing, METH_NOARGS,
     "_frames_capturing() -> bool: the session captures CPU stacks (enable_stack_trace)."},
    {"_frames_stats", gpufl__py_frames_stats, METH_NOARGS,
     "_frames_stats() -> (code objects described, frames left unnamed, capture-point walks)."},
    {"_op_register", gpufl__py_op_register, METH_O,
     "_op_register(name) -> index of a framework operation name."},
    {"_op_push", gpufl__py_op_push, METH_O,
     "_op_push(index) -> call id: kernels launched until _op_pop carry it (0: none)."},
    {"_op_pop", gpufl__py_op_pop, METH_NOARGS,
     "_op_pop(): end this thread's innermost _op_push call (also after one that raised)."},
    {"engine_names", py_engine_names, METH_NOARGS, "The engine names, by C value."},
    {"backend_names", py_backend_names, METH_NOARGS, "The backend names, by C value."},
    {NULL, NULL, 0, NULL},
};

static int module_exec(PyObject *module) {
    if (gpufl__py_errors_add(module) < 0 || gpufl__py_scope_add(module) < 0 ||
        gpufl__py_analysis_add(module) < 0)
        return -1;
    return PyModule_AddIntConstant(module, "VERSION_NUMBER", gpufl_version_number());
}

static int module_traverse(PyObject *module, visitproc visit, void *arg) {
    gpufl__py_state_t *st = gpufl__py_state(module);
    Py_VISIT(st->error);
    for (int i = 0; i < GPUFL_PY_ERROR_SLOTS; i++) Py_VISIT(st->by_code[i]);
    Py_VISIT(st->scope_type);
    Py_VISIT(st->scope_iter_type);
    Py_VISIT(st->analysis_type);
    Py_VISIT(st->column_type);
    return 0;
}

static int module_clear(PyObject *module) {
    gpufl__py_state_t *st = gpufl__py_state(module);
    gpufl__py_errors_clear(st);
    Py_CLEAR(st->scope_type);
    Py_CLEAR(st->scope_iter_type);
    Py_CLEAR(st->analysis_type);
    Py_CLEAR(st->column_type);
    return 0;
}

static void module_free(void *module) { module_clear((PyObject *)module); }

static PyModuleDef_Slot slots[] = {
    {Py_mod_exec, (void *)module_exec},
    {0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "gpufl._gpufl",
    .m_doc = "The C extension of the gpufl package, over libgpufl's C API (gpufl.h).",
    .m_size = sizeof(gpufl__py_state_t),
    .m_methods = methods,
    .m_slots = slots,
    .m_traverse = module_traverse,
    .m_clear = module_clear,
    .m_free = module_free,
};

PyMODINIT_FUNC PyInit__gpufl(void); /* the only exported symbol */
PyMODINIT_FUNC PyInit__gpufl(void) { return PyModuleDef_Init(&module_def); }
