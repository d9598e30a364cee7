// SPDX-License-Identifier: Apache-2.0
/*
 * scope.c - gpufl.Scope, the type behind `with gpufl.Scope(name, tag)` and
 * `for i in gpufl.Scope(name, repeat=N, warmup=W)`.
 *
 * Scopes are the one call a program makes often, so the type is C: the
 * name and tag are checked and encoded once, at construction, and entering
 * or leaving a scope is one call into the library that never blocks (the
 * GIL is kept) and costs nothing more when no session runs.
 *
 * Iterating gives a ScopeIterator: it yields -W..-1 before the scope opens,
 * opens it, yields 0..N-1, and closes it when exhausted or, on `break` or an
 * exception, when the loop drops it.
 */
#include "gpufl_py.h"

#include <stdint.h>

/* How many times one Scope object may be entered without leaving. */
#define SCOPE_NEST_MAX 8

typedef struct scope_object {
    PyObject ob_base;
    PyObject *name;                   /* str */
    PyObject *tag;                    /* str or None */
    const char *name_utf8, *tag_utf8; /* into name and tag; tag_utf8 NULL for None */
    Py_ssize_t name_len, tag_len;
    int32_t repeat;
    int loop; /* repeat= given: an iterable benchmark loop (repeat may be 0, as in C++) */
    int32_t warmup;
    int open; /* entries not yet left */
    gpufl_scope_t handles[SCOPE_NEST_MAX];
} scope_object_t;

typedef struct scope_iter_object {
    PyObject ob_base;
    scope_object_t *scope;
    int32_t next;         /* the next value to yield: -warmup .. repeat-1 */
    int opened;           /* the scope was opened (at next == 0) */
    gpufl_scope_t handle; /* while opened and not closed */
} scope_iter_object_t;

static gpufl_scope_t begin(const scope_object_t *s) {
    if (!gpufl_internal_live()) return 0;
    return gpufl_scope_begin_n(s->name_utf8, (size_t)s->name_len, s->tag_utf8, (size_t)s->tag_len,
                               s->repeat, s->warmup);
}

/* An int in minimum..INT32_MAX (bool refused), for repeat and warmup. */
static int to_count(PyObject *value, const char *what, long minimum, int32_t *out) {
    if (PyBool_Check(value) || !PyLong_Check(value)) {
        gpufl__py_type_error(what, "an int", value);
        return -1;
    }
    int overflow;
    long v = PyLong_AsLongAndOverflow(value, &overflow);
    if (v == -1 && PyErr_Occurred()) return -1;
    if (overflow) v = overflow < 0 ? LONG_MIN : LONG_MAX;
    if (v < minimum) {
        PyErr_Format(PyExc_ValueError, "%s must be >= %ld, not %R", what, minimum, value);
        return -1;
    }
    if (v > INT32_MAX) { /* the log's counts are 32-bit */
        PyErr_Format(PyExc_ValueError, "%s must be at most %ld, not %R", what, (long)INT32_MAX,
                     value);
        return -1;
    }
    *out = (int32_t)v;
    return 0;
}

/* Scope(name, tag=None, *, repeat=None, warmup=0) */
static PyObject *scope_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"name", "tag", "repeat", "warmup", NULL};
    PyObject *name, *tag = Py_None, *repeat = Py_None, *warmup = NULL;
    int32_t repeat_n = 0, warmup_n = 0;

    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|O$OO:Scope", keywords, &name, &tag, &repeat,
                                     &warmup))
        return NULL;
    if (!PyUnicode_Check(name)) return gpufl__py_type_error("Scope() name", "a str", name);
    if (tag != Py_None && !PyUnicode_Check(tag))
        return gpufl__py_type_error("Scope() tag", "a str or None", tag);
    if (repeat != Py_None && to_count(repeat, "Scope() repeat", 0, &repeat_n) < 0) return NULL;
    if (warmup && to_count(warmup, "Scope() warmup", 0, &warmup_n) < 0) return NULL;
    if (warmup_n && repeat == Py_None) {
        PyErr_Format(PyExc_ValueError,
                     "Scope() warmup=%d needs repeat=N: warmup runs only in a loop "
                     "(for i in Scope(name, repeat=N, warmup=W))",
                     (int)warmup_n);
        return NULL;
    }

    allocfunc tp_alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    scope_object_t *self = (scope_object_t *)tp_alloc(type, 0);
    if (!self) return NULL;
    self->name = Py_NewRef(name);
    self->tag = Py_NewRef(tag);
    self->repeat = repeat_n;
    self->loop = repeat != Py_None;
    self->warmup = warmup_n;
    /* The UTF-8 forms live as long as the str objects, which self holds. */
    self->name_utf8 = PyUnicode_AsUTF8AndSize(name, &self->name_len);
    if (self->name_utf8 && tag != Py_None)
        self->tag_utf8 = PyUnicode_AsUTF8AndSize(tag, &self->tag_len);
    if (!self->name_utf8 || (tag != Py_None && !self->tag_utf8)) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static void scope_dealloc(PyObject *op) {
    scope_object_t *self = (scope_object_t *)op;
    Py_XDECREF(self->name);
    Py_XDECREF(self->tag);
    gpufl__py_free_object(op);
}

static PyObject *scope_enter(PyObject *op, PyObject *unused) {
    scope_object_t *self = (scope_object_t *)op;
    (void)unused;
    if (self->open == SCOPE_NEST_MAX) {
        PyErr_Format(PyExc_RuntimeError,
                     "Scope(%R) entered %d times without leaving; use a new Scope object",
                     self->name, SCOPE_NEST_MAX);
        return NULL;
    }
    self->handles[self->open++] = begin(self);
    return Py_NewRef(op);
}

static PyObject *scope_exit(PyObject *op, PyObject *const *args, Py_ssize_t nargs) {
    scope_object_t *self = (scope_object_t *)op;
    (void)args, (void)nargs;
    if (self->open == 0) {
        PyErr_Format(PyExc_RuntimeError, "Scope(%R) left without being entered", self->name);
        return NULL;
    }
    gpufl_scope_t h = self->handles[--self->open];
    if (h) gpufl_scope_end(h);
    Py_RETURN_FALSE; /* exceptions propagate */
}

static PyObject *scope_iter(PyObject *op) {
    scope_object_t *self = (scope_object_t *)op;
    if (!self->loop)
        return PyErr_Format(PyExc_TypeError, "Scope(%R) is iterable only with repeat=N",
                            self->name);
    gpufl__py_state_t *st = (gpufl__py_state_t *)PyType_GetModuleState(Py_TYPE(op));
    if (!st) return NULL;
    PyTypeObject *type = (PyTypeObject *)st->scope_iter_type;
    allocfunc tp_alloc = (allocfunc)PyType_GetSlot(type, Py_tp_alloc);
    scope_iter_object_t *it = (scope_iter_object_t *)tp_alloc(type, 0);
    if (!it) return NULL;
    it->scope = (scope_object_t *)Py_NewRef(op);
    it->next = -self->warmup;
    return (PyObject *)it;
}

static PyObject *scope_repr(PyObject *op) {
    scope_object_t *self = (scope_object_t *)op;
    if (!self->loop) return PyUnicode_FromFormat("gpufl.Scope(%R, %R)", self->name, self->tag);
    return PyUnicode_FromFormat("gpufl.Scope(%R, %R, repeat=%d, warmup=%d)", self->name, self->tag,
                                (int)self->repeat, (int)self->warmup);
}

static PyObject *get_name(PyObject *op, void *closure) {
    (void)closure;
    return Py_NewRef(((scope_object_t *)op)->name);
}

static PyObject *get_tag(PyObject *op, void *closure) {
    (void)closure;
    return Py_NewRef(((scope_object_t *)op)->tag);
}

static PyObject *get_repeat(PyObject *op, void *closure) {
    scope_object_t *self = (scope_object_t *)op;
    (void)closure;
    if (!self->loop) Py_RETURN_NONE;
    return PyLong_FromLong(self->repeat);
}

static PyObject *get_warmup(PyObject *op, void *closure) {
    (void)closure;
    return PyLong_FromLong(((scope_object_t *)op)->warmup);
}

static PyMethodDef scope_methods[] = {
    {"__enter__", scope_enter, METH_NOARGS, "Opens the scope; returns the Scope."},
    {"__exit__", (PyCFunction)(void (*)(void))scope_exit, METH_FASTCALL,
     "Closes the scope; exceptions propagate."},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef scope_getset[] = {
    {"name", get_name, NULL, "The scope's name.", NULL},
    {"tag", get_tag, NULL, "The scope's tag, or None.", NULL},
    {"repeat", get_repeat, NULL, "Measured iterations, or None for a plain scope.", NULL},
    {"warmup", get_warmup, NULL, "Warmup iterations run before the scope opens.", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyDoc_STRVAR(scope_doc,
             "Scope(name, tag=None, *, repeat=None, warmup=0)\n\n"
             "A named region of the program, recorded in the session's scope.log.\n\n"
             "``with Scope(\"forward_pass\"):`` records the block; the optional tag is shown\n"
             "next to the name. Kernels launched inside are attributed to the scope.\n\n"
             "``for i in Scope(\"matmul\", repeat=10, warmup=3):`` runs the body three times\n"
             "before the scope opens (i = -3, -2, -1), then ten times inside it (i = 0..9);\n"
             "the begin record carries both counts. The scope closes when the loop ends,\n"
             "also through break or an exception. repeat and warmup must be >= 0\n"
             "(ValueError otherwise); repeat=0 runs the warmup and no measured iteration,\n"
             "as GFL_BENCH does in C++.\n\n"
             "Without a running session (before init, after shutdown, gpufl switched off)\n"
             "nothing is recorded and the body runs as usual. A Scope object may be entered\n"
             "again after it exited, on one thread at a time.");

static PyType_Slot scope_slots[] = {
    {Py_tp_new, (void *)scope_new},   {Py_tp_dealloc, (void *)scope_dealloc},
    {Py_tp_iter, (void *)scope_iter}, {Py_tp_repr, (void *)scope_repr},
    {Py_tp_methods, scope_methods},   {Py_tp_getset, scope_getset},
    {Py_tp_doc, (void *)scope_doc},   {0, NULL},
};

static PyType_Spec scope_spec = {
    .name = "gpufl.Scope",
    .basicsize = sizeof(scope_object_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE,
    .slots = scope_slots,
};

/* ---------------- the benchmark loop ---------------- */

static PyObject *iter_next(PyObject *op) {
    scope_iter_object_t *it = (scope_iter_object_t *)op;
    scope_object_t *s = it->scope;
    if (it->next == 0 && !it->opened) {
        it->handle = begin(s); /* the warmup is over: the measured part starts */
        it->opened = 1;
    }
    if (it->next < s->repeat) return PyLong_FromLong(it->next++);
    if (it->handle) gpufl_scope_end(it->handle);
    it->handle = 0;
    return NULL; /* StopIteration */
}

static void iter_dealloc(PyObject *op) {
    scope_iter_object_t *it = (scope_iter_object_t *)op;
    if (it->handle) gpufl_scope_end(it->handle); /* left by break or an exception */
    Py_XDECREF((PyObject *)it->scope);
    gpufl__py_free_object(op);
}

static PyObject *iter_self(PyObject *op) { return Py_NewRef(op); }

static PyType_Slot iter_slots[] = {
    {Py_tp_dealloc, (void *)iter_dealloc},
    {Py_tp_iter, (void *)iter_self},
    {Py_tp_iternext, (void *)iter_next},
    {Py_tp_doc, (void *)"The iterations of a Scope(name, repeat=N, warmup=W)."},
    {0, NULL},
};

static PyType_Spec iter_spec = {
    .name = "gpufl.ScopeIterator",
    .basicsize = sizeof(scope_iter_object_t),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_IMMUTABLETYPE | Py_TPFLAGS_DISALLOW_INSTANTIATION,
    .slots = iter_slots,
};

int gpufl__py_scope_add(PyObject *module) {
    gpufl__py_state_t *st = gpufl__py_state(module);
    st->scope_iter_type = PyType_FromModuleAndSpec(module, &iter_spec, NULL);
    if (!st->scope_iter_type) return -1;
    st->scope_type = PyType_FromModuleAndSpec(module, &scope_spec, NULL);
    if (!st->scope_type) return -1;
    return PyModule_AddObjectRef(module, "Scope", st->scope_type);
}
