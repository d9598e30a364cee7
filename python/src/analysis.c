// SPDX-License-Identifier: Apache-2.0
/*
 * analysis.c - gpufl._gpufl.Analysis, a recorded session opened through the
 * read API of gpufl_analysis.h, and Column, one of its columns as a
 * read-only buffer (format 'q' or 'd', one dimension), so that numpy views
 * the library's arrays without a copy and without a Python object per row.
 * A Column keeps its Analysis alive, and the Analysis its C handle, for as
 * long as any view of the data exists. gpufl.analyzer builds the DataFrames.
 *
 * The library serialises calls on one handle, so the GIL is released while
 * it loads, builds a table or renders a report.
 */
#include "gpufl_py.h"

#include <gpufl/gpufl_analysis.h>

#include <string.h>

typedef struct analysis_object {
    PyObject ob_base;
    gpufl_analysis_t *a;
} analysis_object_t;

typedef struct column_object {
    PyObject ob_base;
    PyObject *owner; /* the Analysis */
    const void *data;
    Py_ssize_t rows;
    char format[2]; /* "q" or "d" */
} column_object_t;

static PyObject *raise_for(PyObject *self, int rc) {
    PyObject *module = PyType_GetModule(Py_TYPE(self));
    return module ? gpufl__py_raise(module, rc) : NULL;
}

/* ---------------------------------------------------------------------- */
/* Column                                                                   */
/* ---------------------------------------------------------------------- */

static int column_getbuffer(PyObject *self, Py_buffer *view, int flags) {
    column_object_t *c = (column_object_t *)self;
    if (PyBuffer_FillInfo(view, self, (void *)c->data, c->rows * 8, 1, flags) < 0) return -1;
    if (flags & PyBUF_FORMAT) { /* typed: rows items of 8 bytes (else plain bytes) */
        view->format = c->format;
        view->itemsize = 8;
        if (view->shape) view->shape = &c->rows;
    }
    return 0;
}

static void column_dealloc(PyObject *self) {
    Py_XDECREF(((column_object_t *)self)->owner);
    gpufl__py_free_object(self);
}

static PyType_Slot column_slots[] = {
    {Py_bf_getbuffer, (void *)column_getbuffer},
    {Py_tp_dealloc, (void *)column_dealloc},
    {Py_tp_doc, (void *)"One column of a gpufl session table: a read-only buffer of int64 ('q') or "
                        "float64 ('d') values."},
    {0, NULL},
};

static PyType_Spec column_spec = {
    .name = "gpufl._gpufl.Column",
    .basicsize = sizeof(column_object_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = column_slots,
};

/* ---------------------------------------------------------------------- */
/* Analysis                                                                 */
/* ---------------------------------------------------------------------- */

static PyObject *analysis_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *path = NULL;
    gpufl_analysis_t *a = NULL;
    int rc;
    static char *keywords[] = {"session_dir", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O&:Analysis", keywords, PyUnicode_FSConverter,
                                     &path))
        return NULL;
    const char *dir = PyBytes_AsString(path); /* FSConverter gives bytes: cannot fail */
    Py_BEGIN_ALLOW_THREADS;
    rc = gpufl_analysis_open(&a, dir);
    Py_END_ALLOW_THREADS;
    Py_DECREF(path);
    if (rc) {
        PyObject *module = PyType_GetModule(type);
        return module ? gpufl__py_raise(module, rc) : NULL;
    }
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    analysis_object_t *self = (analysis_object_t *)alloc(type, 0);
    if (!self) {
        gpufl_analysis_close(a);
        return NULL;
    }
    self->a = a;
    return (PyObject *)self;
}

static void analysis_dealloc(PyObject *self) {
    gpufl_analysis_close(((analysis_object_t *)self)->a);
    gpufl__py_free_object(self);
}

/* The table named by a str, or -1 with an exception set. */
static int table_of(PyObject *name) {
    if (!PyUnicode_Check(name)) {
        gpufl__py_type_error("table name", "a str", name);
        return -1;
    }
    for (int t = 0; t < GPUFL_TABLE_COUNT; t++)
        if (PyUnicode_CompareWithASCIIString(name, gpufl_table_name((gpufl_table_t)t)) == 0)
            return t;
    PyErr_Format(PyExc_ValueError, "no table named %R", name);
    return -1;
}

static PyObject *make_column(PyObject *self, const gpufl_column_t *c) {
    gpufl__py_state_t *st = (gpufl__py_state_t *)PyType_GetModuleState(Py_TYPE(self));
    PyTypeObject *type = (PyTypeObject *)st->column_type;
    allocfunc alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    column_object_t *col = (column_object_t *)alloc(type, 0);
    if (!col) return NULL;
    col->owner = Py_NewRef(self);
    col->data = c->data;
    col->rows = (Py_ssize_t)c->rows;
    col->format[0] = c->type == GPUFL_COLUMN_DOUBLE ? 'd' : 'q';
    col->format[1] = '\0';
    return (PyObject *)col;
}

/* table(name) -> (rows, [(column name, "int64" | "float64" | "string", Column), ...]) */
static PyObject *analysis_table(PyObject *self, PyObject *name) {
    static const char *const kinds[] = {"int64", "float64", "string"};
    gpufl_analysis_t *a = ((analysis_object_t *)self)->a;
    size_t rows = 0, ncols = 0;
    int rc, t = table_of(name);
    if (t < 0) return NULL;
    Py_BEGIN_ALLOW_THREADS;
    rc = gpufl_analysis_table(a, (gpufl_table_t)t, &rows, &ncols);
    Py_END_ALLOW_THREADS;
    if (rc) return raise_for(self, rc);
    PyObject *list = PyList_New((Py_ssize_t)ncols);
    for (size_t i = 0; list && i < ncols; i++) {
        gpufl_column_t c = {.size = sizeof c};
        PyObject *col, *item = NULL;
        if ((rc = gpufl_analysis_column(a, (gpufl_table_t)t, i, &c)) != 0) {
            Py_DECREF(list);
            return raise_for(self, rc);
        }
        if ((col = make_column(self, &c)) != NULL) {
            item = Py_BuildValue("(ssN)", c.name, kinds[c.type], col);
        }
        if (!item || PyList_SetItem(list, (Py_ssize_t)i, item) < 0) {
            Py_DECREF(list);
            return NULL;
        }
    }
    return list ? Py_BuildValue("(nN)", (Py_ssize_t)rows, list) : NULL;
}

/* strings(start) -> [str | None]: the strings of ids start .. count-1. */
static PyObject *analysis_strings(PyObject *self, PyObject *arg) {
    gpufl_analysis_t *a = ((analysis_object_t *)self)->a;
    Py_ssize_t start = PyLong_AsSsize_t(arg);
    if (start == -1 && PyErr_Occurred()) return NULL;
    int64_t count = gpufl_analysis_string_count(a);
    if (start < 0 || start > count) start = count;
    PyObject *list = PyList_New((Py_ssize_t)(count - start));
    for (int64_t id = start; list && id < count; id++) {
        const char *s = gpufl_analysis_string(a, id);
        PyObject *str =
            s ? PyUnicode_DecodeUTF8(s, (Py_ssize_t)strlen(s), "replace") : Py_NewRef(Py_None);
        if (!str || PyList_SetItem(list, (Py_ssize_t)(id - start), str) < 0) {
            Py_DECREF(list);
            return NULL;
        }
    }
    return list;
}

/* report(format, section, top_n) -> str */
static PyObject *analysis_report(PyObject *self, PyObject *args) {
    gpufl_analysis_t *a = ((analysis_object_t *)self)->a;
    PyObject *format, *section;
    Py_ssize_t top_n;
    gpufl_report_options_t opts;
    const char *text = NULL;
    size_t len = 0;
    int rc;
    if (!PyArg_ParseTuple(args, "OOn:report", &format, &section, &top_n)) return NULL;
    gpufl_report_options_init(&opts);
    if (gpufl__py_utf8(format, "format", &opts.format) < 0 ||
        gpufl__py_utf8(section, "section", &opts.section) < 0)
        return NULL;
    if (top_n < 0) {
        PyErr_SetString(PyExc_ValueError, "top_n must be >= 0");
        return NULL;
    }
    opts.top_n = (size_t)top_n;
    Py_BEGIN_ALLOW_THREADS;
    rc = gpufl_analysis_report(a, &opts, &text, &len);
    Py_END_ALLOW_THREADS;
    if (rc) return raise_for(self, rc);
    return PyUnicode_DecodeUTF8(text, (Py_ssize_t)len, "replace");
}

static PyMethodDef analysis_methods[] = {
    {"table", analysis_table, METH_O,
     "table(name) -> (rows, [(column, kind, buffer), ...]); kind is int64, float64 or string "
     "(int64 ids into strings())."},
    {"strings", analysis_strings, METH_O,
     "strings(start) -> list: the strings of ids start.. (id 0 is None)."},
    {"report", analysis_report, METH_VARARGS,
     "report(format, section, top_n) -> str: the report (gpufl_analysis_report)."},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot analysis_slots[] = {
    {Py_tp_new, (void *)analysis_new},
    {Py_tp_dealloc, (void *)analysis_dealloc},
    {Py_tp_methods, analysis_methods},
    {Py_tp_doc, (void *)"Analysis(session_dir): a recorded session, loaded (gpufl_analysis_open)."},
    {0, NULL},
};

static PyType_Spec analysis_spec = {
    .name = "gpufl._gpufl.Analysis",
    .basicsize = sizeof(analysis_object_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = analysis_slots,
};

PyObject *gpufl__py_find_session(PyObject *module, PyObject *args) {
    PyObject *log_dir = NULL, *app_obj, *id_obj;
    const char *app, *id;
    char dir[4096];
    int rc;
    if (!PyArg_ParseTuple(args, "O&OO:find_session", PyUnicode_FSConverter, &log_dir, &app_obj,
                          &id_obj))
        return NULL;
    if (gpufl__py_utf8(app_obj, "log_prefix", &app) < 0 ||
        gpufl__py_utf8(id_obj, "session_id", &id) < 0) {
        Py_DECREF(log_dir);
        return NULL;
    }
    const char *root = PyBytes_AsString(log_dir); /* bytes, as for Analysis */
    Py_BEGIN_ALLOW_THREADS;
    rc = gpufl_analysis_find(root, app, id, dir, sizeof dir);
    Py_END_ALLOW_THREADS;
    Py_DECREF(log_dir);
    if (rc) return gpufl__py_raise(module, rc);
    return PyUnicode_DecodeFSDefault(dir);
}

int gpufl__py_analysis_add(PyObject *module) {
    gpufl__py_state_t *st = gpufl__py_state(module);
    st->column_type = PyType_FromModuleAndSpec(module, &column_spec, NULL);
    if (!st->column_type) return -1;
    st->analysis_type = PyType_FromModuleAndSpec(module, &analysis_spec, NULL);
    if (!st->analysis_type) return -1;
    return PyModule_AddObjectRef(module, "Analysis", st->analysis_type);
}
