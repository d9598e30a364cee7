// SPDX-License-Identifier: Apache-2.0
/*
 * gpufl_py.h - what the files of the gpufl._gpufl extension share.
 *
 * The extension is C over gpufl.h and uses only the limited C API of Python
 * 3.11, so one build (an abi3 module) loads in every CPython from 3.11 on.
 * Errors of the library become exceptions through gpufl__py_raise().
 */
#ifndef GPUFL_PY_H
#define GPUFL_PY_H

#ifndef Py_LIMITED_API
#define Py_LIMITED_API 0x030B0000
#endif
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <gpufl/gpufl.h>

/* One exception class per GPUFL_E* code, indexed by -code. */
#define GPUFL_PY_ERROR_SLOTS 12

typedef struct gpufl__py_state {
    PyObject *error;                         /* gpufl.Error, the base of all of them */
    PyObject *by_code[GPUFL_PY_ERROR_SLOTS]; /* gpufl.ConfigError, ...; NULL for 0 */
    PyObject *scope_type;                    /* gpufl.Scope */
    PyObject *scope_iter_type;               /* what iter(Scope(..., repeat=N)) gives */
    PyObject *analysis_type;                 /* gpufl._gpufl.Analysis: a loaded session */
    PyObject *column_type;                   /* one column of it, a buffer */
} gpufl__py_state_t;

/* The extension's state, from any of its functions' module argument. */
gpufl__py_state_t *gpufl__py_state(PyObject *module);

/*
 * Raises the exception class of `code` with gpufl_last_error()'s message
 * (the code's name when there is none) and returns NULL.
 */
PyObject *gpufl__py_raise(PyObject *module, int code);

/* Creates the exception classes and adds them to the module. 0 or -1. */
int gpufl__py_errors_add(PyObject *module);
void gpufl__py_errors_clear(gpufl__py_state_t *state);

/* Py_TYPE(self)->tp_free under the limited API, then the heap type's
 * reference: the end of every dealloc of the extension's types. */
void gpufl__py_free_object(PyObject *self);

/* Raises TypeError "<what> must be <expected>, not <type of obj>"; returns NULL. */
PyObject *gpufl__py_type_error(const char *what, const char *expected, PyObject *obj);

/*
 * Converts a str (or None, meaning "not set") to UTF-8 without a copy: the
 * pointer lives as long as the object. Rejects other types and embedded NUL
 * bytes, naming `what` in the message. 0 or -1 with an exception set.
 */
int gpufl__py_utf8(PyObject *obj, const char *what, const char **out);

/* Python frames in captured stacks: see frames.c. */
PyObject *gpufl__py_frames_start(PyObject *module, PyObject *library_dirs);
PyObject *gpufl__py_frames_stop(PyObject *module, PyObject *unused);
PyObject *gpufl__py_frames_stats(PyObject *module, PyObject *unused);
PyObject *gpufl__py_frames_capturing(PyObject *module, PyObject *unused);
PyObject *gpufl__py_frames_capture_point(PyObject *module, PyObject *unused);
PyObject *gpufl__py_frames_release_point(PyObject *module, PyObject *unused);
/* Capture points, from C with the GIL held: every capture is released once.
 * capture(walk_now): walk_now 0 records no frames (they are not expected to
 * be needed); it returns 1 when it walked. release() returns 1 when the
 * outermost point closed and a CUDA call inside it asked for its frames. */
int gpufl__py_frames_capture(int walk_now);
int gpufl__py_frames_release(void);

/* Framework operation tagging: see ops.c. */
PyObject *gpufl__py_op_register(PyObject *module, PyObject *name);
PyObject *gpufl__py_op_push(PyObject *module, PyObject *index);
PyObject *gpufl__py_op_pop(PyObject *module, PyObject *unused);

/* _gpufl.init(**options): see init.c. */
PyObject *gpufl__py_init(PyObject *module, PyObject *args, PyObject *kwargs);

/* Creates the types Scope and ScopeIterator and adds Scope to the module. 0 or -1. */
int gpufl__py_scope_add(PyObject *module);

/* Creates the types Analysis and Column (analysis.c) and adds Analysis to
 * the module. 0 or -1. */
int gpufl__py_analysis_add(PyObject *module);

/* _gpufl.find_session(log_dir, app_name, session_id) -> str: see analysis.c. */
PyObject *gpufl__py_find_session(PyObject *module, PyObject *args);

#endif /* GPUFL_PY_H */
