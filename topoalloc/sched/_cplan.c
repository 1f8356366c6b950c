/* Compiled trial of plan.StatePlan (see plan.py, StatePlan._first): the rest of the kept replay replayed
 * with one job placed at a candidate start, until an allocation fails, the plan ends, or the trial's
 * state meets the kept replay's again.
 *
 * The loop is StatePlan._trial's (the Python reference, which tests compare with this one), on the same
 * Python objects: the events (tuples (time, kind, order, job, token): kind 0 a release, 1 an
 * allocation; token None for a reservation's release), the kept states and tokens, the placement memo
 * {(state, frame): (token, next state) or None} and the model's functions.  Only the interpreter's
 * work per event is saved; every state, token and placement is the model's own.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* how a token is given back: 0 the model's function called; 1 int.__or__; 2 int.__add__ */
enum { REL_CALL = 0, REL_OR = 1, REL_ADD = 2 };

static PyObject *release(PyObject *rel, int kind, PyObject *state, PyObject *token) {
    if (kind == REL_OR) return PyNumber_Or(state, token);
    if (kind == REL_ADD) return PyNumber_Add(state, token);
    return PyObject_CallFunctionObjArgs(rel, state, token, NULL);
}

/* 1 if token differs from bits.get(who) (absent: differs), 0 if equal, -1 on error */
static int differs(PyObject *bits, PyObject *who, PyObject *token) {
    PyObject *was = PyDict_GetItemWithError(bits, who); /* borrowed */
    if (was == NULL) return PyErr_Occurred() ? -1 : 1;
    if (was == token) return 0;
    return PyObject_RichCompareBool(token, was, Py_NE);
}

/* trial(events, states, bits, memo, frames, rel, rel_kind, place, i, n, iend, old_end, fail, own, mine, free)
 * -> True if the plan stays feasible with the job placed (its turn at event i, its release before event iend,
 * its token `mine`, the state after it `free`); `own` the job whose reservation is left out (-1: none). */
static PyObject *trial(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *events, *states, *bits, *memo, *frames, *rel, *place, *mine, *free0;
    int rel_kind;
    Py_ssize_t i, n, iend, old_end, fail;
    long long own;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!OiOnnnnnLOO", &PyList_Type, &events, &PyList_Type, &states,
                          &PyDict_Type, &bits, &PyDict_Type, &memo, &PyDict_Type, &frames, &rel, &rel_kind,
                          &place, &i, &n, &iend, &old_end, &fail, &own, &mine, &free0))
        return NULL;
    if (n > PyList_GET_SIZE(events) || i < 0) {
        PyErr_SetString(PyExc_ValueError, "trial: event range outside the kept replay");
        return NULL;
    }
    PyObject *moved = PyDict_New(); /* reservations placed in the trial: their tokens */
    if (moved == NULL) return NULL;
    PyObject *free = free0;
    Py_INCREF(free);
    int live = 1, ok = 1;
    Py_ssize_t displaced = 0; /* of those placed, holding other processors than in the kept replay */
    for (Py_ssize_t k = i; k < n; k++) {
        if (live && k >= iend) {
            PyObject *x = release(rel, rel_kind, free, mine);
            if (x == NULL) goto error;
            Py_SETREF(free, x);
            live = 0;
        }
        if (!live && displaced == 0 && k > old_end && k <= fail) {
            if (k >= PyList_GET_SIZE(states)) {
                PyErr_SetString(PyExc_ValueError, "trial: no kept state before an event it compares at");
                goto error;
            }
            PyObject *kept = PyList_GET_ITEM(states, k);
            int same = kept == free ? 1 : PyObject_RichCompareBool(free, kept, Py_EQ);
            if (same < 0) goto error;
            if (same) {
                ok = fail == n; /* from here on the kept replay's own events and states */
                break;
            }
        }
        PyObject *ev = PyList_GET_ITEM(events, k);
        if (!PyTuple_Check(ev) || PyTuple_GET_SIZE(ev) != 5) {
            PyErr_SetString(PyExc_TypeError, "trial: an event is not a 5-tuple");
            goto error;
        }
        long kind = PyLong_AsLong(PyTuple_GET_ITEM(ev, 1));
        if (kind == -1 && PyErr_Occurred()) goto error;
        PyObject *who = PyTuple_GET_ITEM(ev, 3), *m = PyTuple_GET_ITEM(ev, 4);
        if (own >= 0 && m == Py_None) {
            long long w = PyLong_AsLongLong(who);
            if (w == -1 && PyErr_Occurred()) goto error;
            if (w == own) continue; /* its own reservation: taken out */
        }
        if (kind == 0) {
            PyObject *token; /* borrowed or owned below */
            int owned = 0;
            if (m == Py_None) {
                PyObject *got = PyDict_GetItemWithError(moved, who);
                if (got == NULL) {
                    if (PyErr_Occurred()) goto error;
                    token = PyDict_GetItemWithError(bits, who);
                    if (token == NULL) {
                        if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, who);
                        goto error;
                    }
                } else {
                    Py_INCREF(got);
                    owned = 1;
                    token = got;
                    if (PyDict_DelItem(moved, who) < 0) { Py_DECREF(got); goto error; }
                    int d = differs(bits, who, got);
                    if (d < 0) { Py_DECREF(got); goto error; }
                    displaced -= d;
                }
            } else token = m;
            PyObject *x = release(rel, rel_kind, free, token);
            if (owned) Py_DECREF(token);
            if (x == NULL) goto error;
            Py_SETREF(free, x);
        } else {
            PyObject *frame = PyDict_GetItemWithError(frames, who);
            if (frame == NULL) {
                if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, who);
                goto error;
            }
            PyObject *key = PyTuple_Pack(2, free, frame);
            if (key == NULL) goto error;
            PyObject *placed = PyDict_GetItemWithError(memo, key);
            Py_DECREF(key);
            if (placed != NULL) Py_INCREF(placed);
            else {
                if (PyErr_Occurred()) goto error;
                placed = PyObject_CallFunctionObjArgs(place, free, who, NULL);
                if (placed == NULL) goto error;
            }
            if (placed == Py_None) {
                Py_DECREF(placed);
                ok = 0;
                break;
            }
            if (!PyTuple_Check(placed) || PyTuple_GET_SIZE(placed) != 2) {
                Py_DECREF(placed);
                PyErr_SetString(PyExc_TypeError, "trial: a placement is not (token, state) or None");
                goto error;
            }
            PyObject *got = PyTuple_GET_ITEM(placed, 0), *next = PyTuple_GET_ITEM(placed, 1);
            if (PyDict_SetItem(moved, who, got) < 0) { Py_DECREF(placed); goto error; }
            int d = differs(bits, who, got);
            if (d < 0) { Py_DECREF(placed); goto error; }
            displaced += d;
            Py_INCREF(next);
            Py_SETREF(free, next);
            Py_DECREF(placed);
        }
    }
    Py_DECREF(free);
    Py_DECREF(moved);
    return PyBool_FromLong(ok);
error:
    Py_DECREF(free);
    Py_DECREF(moved);
    return NULL;
}

static PyMethodDef methods[] = {
    {"trial", trial, METH_VARARGS, "StatePlan's trial of one candidate start (see plan.py, StatePlan._trial)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cplan", "Compiled trial of plan.StatePlan.", -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__cplan(void) { return PyModule_Create(&module); }
