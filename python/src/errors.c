// SPDX-License-Identifier: Apache-2.0
/*
 * errors.c - the exception classes of gpufl and the mapping from the C
 * library's GPUFL_E* codes to them.
 *
 * Every class derives from gpufl.Error and from the built-in exception a
 * Python programmer would catch for that kind of failure (ValueError for a
 * bad option, OSError for a log directory that cannot be written, ...), so
 * both `except gpufl.Error` and `except ValueError` work. The message is the
 * library's own detailed one, from gpufl_last_error().
 */
#include "gpufl_py.h"

#include <string.h>

typedef struct error_class {
    int code;
    const char *name; /* qualified, as Python shows it */
    const char *doc;
} error_class_t;

static const error_class_t classes[] = {
    {GPUFL_EINVAL, "gpufl.InvalidArgumentError", "An argument or option value is invalid."},
    {GPUFL_ENOMEM, "gpufl.OutOfMemoryError", "Out of memory, or one of gpufl's memory caps."},
    {GPUFL_EIO, "gpufl.FileAccessError", "A log or report file could not be created or written."},
    {GPUFL_ECONFIG, "gpufl.ConfigError", "The config file is unreadable or malformed."},
    {GPUFL_EALREADY, "gpufl.AlreadyRunningError", "init() while a session is running."},
    {GPUFL_ENOTINIT, "gpufl.NotRunningError", "The call needs a session and none ran."},
    {GPUFL_EDISABLED, "gpufl.DisabledError", "gpufl is switched off."},
    {GPUFL_ENOTSUP, "gpufl.NotSupportedError", "The feature is not built yet or not here."},
    {GPUFL_ENOTFOUND, "gpufl.NotFoundError", "A session, file or name does not exist."},
    {GPUFL_EFORMAT, "gpufl.LogFormatError", "A log file is not in gpufl's format."},
    {GPUFL_ETHREAD, "gpufl.ThreadStartError", "A background thread could not be started."},
};

/* The built-in exception each kind of failure also is. */
static PyObject *builtin_base(int code) {
    switch (code) {
    case GPUFL_EINVAL:
    case GPUFL_ECONFIG:
    case GPUFL_EFORMAT: return PyExc_ValueError;
    case GPUFL_ENOMEM: return PyExc_MemoryError;
    case GPUFL_EIO: return PyExc_OSError;
    case GPUFL_ENOTSUP: return PyExc_NotImplementedError;
    case GPUFL_ENOTFOUND: return PyExc_LookupError;
    default: return PyExc_RuntimeError;
    }
}

/* "gpufl.ConfigError" -> "ConfigError": the module attribute's name. */
static const char *short_name(const char *qualified) { return strchr(qualified, '.') + 1; }

int gpufl__py_errors_add(PyObject *module) {
    gpufl__py_state_t *st = gpufl__py_state(module);
    st->error = PyErr_NewExceptionWithDoc("gpufl.Error",
                                          "Base class of the errors gpufl raises; `code` holds "
                                          "the C library's GPUFL_E* value.",
                                          NULL, NULL);
    if (!st->error || PyModule_AddObjectRef(module, "Error", st->error) < 0) return -1;
    for (size_t i = 0; i < sizeof classes / sizeof classes[0]; i++) {
        const error_class_t *c = &classes[i];
        PyObject *bases = PyTuple_Pack(2, st->error, builtin_base(c->code));
        if (!bases) return -1;
        PyObject *cls = PyErr_NewExceptionWithDoc(c->name, c->doc, bases, NULL);
        Py_DECREF(bases);
        if (!cls) return -1;
        st->by_code[-c->code] = cls; /* the state owns this reference */
        if (PyModule_AddObjectRef(module, short_name(c->name), cls) < 0) return -1;
    }
    return 0;
}

void gpufl__py_errors_clear(gpufl__py_state_t *st) {
    Py_CLEAR(st->error);
    for (int i = 0; i < GPUFL_PY_ERROR_SLOTS; i++) Py_CLEAR(st->by_code[i]);
}

PyObject *gpufl__py_raise(PyObject *module, int code) {
    gpufl__py_state_t *st = gpufl__py_state(module);
    const char *detail = gpufl_last_error();
    const char *message = detail && *detail ? detail : gpufl_strerror(code);
    PyObject *cls = code < 0 && -code < GPUFL_PY_ERROR_SLOTS && st->by_code[-code]
                        ? st->by_code[-code]
                        : st->error;
    /* Built by hand rather than with PyErr_SetString so that `code` is set. */
    PyObject *exc = PyObject_CallFunction(cls, "s", message);
    if (!exc) return NULL;
    PyObject *value = PyLong_FromLong(code);
    if (value && PyObject_SetAttrString(exc, "code", value) == 0) PyErr_SetObject(cls, exc);
    Py_XDECREF(value);
    Py_DECREF(exc);
    return NULL;
}

PyObject *gpufl__py_type_error(const char *what, const char *expected, PyObject *obj) {
    PyObject *type_name = PyType_GetName(Py_TYPE(obj));
    if (type_name) {
        PyErr_Format(PyExc_TypeError, "%s must be %s, not %U", what, expected, type_name);
        Py_DECREF(type_name);
    }
    return NULL;
}

int gpufl__py_utf8(PyObject *obj, const char *what, const char **out) {
    Py_ssize_t len;
    *out = NULL;
    if (obj == Py_None) return 0;
    if (!PyUnicode_Check(obj)) {
        gpufl__py_type_error(what, "a str or None", obj);
        return -1;
    }
    const char *s = PyUnicode_AsUTF8AndSize(obj, &len);
    if (!s) return -1;
    if ((size_t)len != strlen(s)) {
        PyErr_Format(PyExc_ValueError, "%s must not contain a NUL character", what);
        return -1;
    }
    *out = s;
    return 0;
}
