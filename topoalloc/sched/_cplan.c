/* Compiled search and replay of plan.StatePlan (see plan.py, StatePlan._first and _update): over the candidate
 * starts, the counts' check (_CountedWindow), the job's placement at its turn, and the trial: the rest of the
 * kept replay replayed with the job placed, until an allocation fails, the plan ends, or the trial's state
 * meets the kept replay's again; and the kept replay brought up to date after reservations change.
 *
 * The loops are plan._first_loop's, plan._trial's and plan._replay_from's (the Python reference, which tests
 * compare with this one), on the same Python objects: the candidate times, the counts' lists, the event keys and events
 * (tuples (time, kind, order, job, token): kind 0 a release, 1 an allocation; token None for a
 * reservation's release), the kept states and tokens, the placement memo {(state, frame): (token, next
 * state) or None} and the model's functions.  Only the interpreter's work is saved; every state, token
 * and placement is the model's own.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>

/* plan.ZERO_LENGTH */
#define ZERO_LENGTH 1e-6

/* how a token is given back: 0 the model's function called; 1 int.__or__; 2 int.__add__; 3 the model's memo of
 * releases read first, its function called where it holds no answer (`rel` is then the pair (memo, function): a
 * dict {(state, token): next state} that the function fills) */
enum { REL_CALL = 0, REL_OR = 1, REL_ADD = 2, REL_MEMO = 3 };

/* 1 if token differs from bits.get(who) (absent: differs), 0 if equal, -1 on error */
static int differs(PyObject *bits, PyObject *who, PyObject *token) {
    PyObject *was = PyDict_GetItemWithError(bits, who);
    if (was == NULL) return PyErr_Occurred() ? -1 : 1;
    if (was == token) return 0;
    Py_INCREF(was); /* (held across a comparison that may run Python) */
    int d = PyObject_RichCompareBool(token, was, Py_NE);
    Py_DECREF(was);
    return d;
}

/* Hashes of large states.  An int does not keep its hash: a state of n bits costs O(n) to hash at every look-up
 * of the memo (about 4 us at 65,536 bits, a 256 x 256 mesh: over a third of such a plan's time), though the same
 * state objects (the kept replay's, the memo's next states) are looked up again and again, and each new state is
 * one placement or one release away from one whose hash is known (derive_hash).  So the hashes of ints of at least
 * HC_MIN_BITS bits are kept here by object, in a direct-mapped table of HC_SIZE slots that holds a reference to
 * each (so no object in it is freed, and its address reused, while it is there); an entry is replaced where
 * another object takes its slot, and entries are dropped round the table while the ints held would take more
 * than HC_BYTES.  The memo is then asked with the key's hash known (_PyDict_GetItem_KnownHash), the pair's hash
 * made from its items' as Python makes it; both hashes made here are checked against Python's own at the
 * module's import, and where they differ the table is not used (KNOWN_HASHES 0). */
#define HC_BITS 13
#define HC_SIZE (1 << HC_BITS)
#ifdef PyHASH_MODULUS
#define HASH_MODULUS PyHASH_MODULUS
#else
#define HASH_MODULUS _PyHASH_MODULUS
#endif
#define HC_MIN_BITS 1024
#define HC_BYTES ((size_t)1 << 24)
static struct { PyObject *obj; Py_hash_t h; size_t bytes; } hc[HC_SIZE];
static size_t hc_bytes, hc_sweep; /* what the ints held take, about; where the last drop was */

/* an object's slot: its address scattered (Fibonacci hashing; large ints lie a page or more apart, so their low
 * address bits are alike) */
static inline size_t hc_slot(PyObject *x) { return (size_t)(((uint64_t)(uintptr_t)x * 0x9E3779B97F4A7C15ULL) >> (64 - HC_BITS)); }
static int hc_on = 0; /* set at import where the tuple hash below is Python's */

/* the hash of x (an int, not in the table) put in the table */
static void hc_put(PyObject *x, Py_hash_t h) {
    size_t i = hc_slot(x);
    if (hc[i].obj != NULL) {
        hc_bytes -= hc[i].bytes;
        Py_CLEAR(hc[i].obj);
    }
    size_t bytes = (size_t)_PyLong_NumBits(x) / 8 + 32;
    if (bytes > HC_BYTES / 4) return;
    while (hc_bytes + bytes > HC_BYTES) { /* over the budget: entries dropped round the table from where the last drop ended */
        hc_sweep = (hc_sweep + 1) & (HC_SIZE - 1);
        if (hc[hc_sweep].obj != NULL) {
            hc_bytes -= hc[hc_sweep].bytes;
            Py_CLEAR(hc[hc_sweep].obj);
        }
    }
    Py_INCREF(x);
    hc[i].obj = x;
    hc[i].h = h;
    hc[i].bytes = bytes;
    hc_bytes += bytes;
}

/* the hash kept for x, or -1 */
static inline Py_hash_t hc_get(PyObject *x) {
    size_t i = hc_slot(x);
    return hc[i].obj == x ? hc[i].h : -1;
}

/* whether x is an int large enough for the table */
static inline int big(PyObject *x) { return PyLong_CheckExact(x) && _PyLong_NumBits(x) >= HC_MIN_BITS; }

/* x's hash: kept, else made (and kept where x is large) */
static Py_hash_t state_hash(PyObject *s) {
    if (!big(s)) return PyObject_Hash(s);
    Py_hash_t h = hc_get(s);
    if (h == -1 && (h = PyObject_Hash(s)) != -1) hc_put(s, h);
    return h;
}

/* the hash of the pair (a, b) from the items' hashes: CPython's tuple hash (xxHash-based, 3.8 on) */
static Py_hash_t pair_hash(Py_hash_t ha, Py_hash_t hb) {
    const Py_uhash_t P1 = 11400714785074694791ULL, P2 = 14029467366897019727ULL, P5 = 2870177450012600261ULL;
    Py_uhash_t acc = P5, lanes[2] = {(Py_uhash_t)ha, (Py_uhash_t)hb};
    for (int q = 0; q < 2; q++) {
        acc += lanes[q] * P2;
        acc = (acc << 31) | (acc >> 33);
        acc *= P1;
    }
    acc += (Py_uhash_t)2 ^ (P5 ^ 3527539UL);
    return acc == (Py_uhash_t)-1 ? 1546275796 : (Py_hash_t)acc;
}

/* memo[(state, frame)] (borrowed), NULL if absent (or on error, an exception set) */
static PyObject *memo_get(PyObject *memo, PyObject *key, PyObject *state, PyObject *frame) {
    if (!hc_on || !big(state)) return PyDict_GetItemWithError(memo, key);
    Py_hash_t hs = state_hash(state), hf = hs == -1 ? -1 : PyObject_Hash(frame);
    if (hf == -1) return NULL;
    return _PyDict_GetItem_KnownHash(memo, key, pair_hash(hs, hf));
}

/* whether two states are equal: 1, 0, or -1 on error; large ints whose hashes are both kept and differ are not */
static int same_state(PyObject *a, PyObject *b) {
    if (a == b) return 1;
    Py_hash_t ha = hc_get(a), hb = ha == -1 ? -1 : hc_get(b); /* (an empty table without hc_on) */
    if (hb != -1 && ha != hb) return 0;
    return PyObject_RichCompareBool(a, b, Py_EQ);
}

/* The hashes of the states a replay makes, derived rather than made.  With REL_OR a state is a free set's bits and a
 * token the bits a placement takes: the next state is the state less the token's bits, and a release gives them back
 * to a state they are not in.  So each is a difference or a sum, and an int's hash being its value modulo the
 * Mersenne prime HASH_MODULUS, the result's hash is the difference or the sum of the two hashes modulo it: kept for
 * the result where the state's hash is kept (the token's is made once: tokens are few and long-lived).  A model whose
 * tokens were not so would only have hashes kept that are not its states': a look-up with a wrong hash misses (a
 * dictionary returns an entry only for an equal key) and the placement is made again, and two states then compare
 * unequal where they are equal, so a trial or a replay runs on where it could have stopped, to the same answer.
 * The tests check every kept hash against Python's on real plans (check_hashes). */
static void derive_hash(PyObject *x, PyObject *state, PyObject *token, int sign) {
    if (!hc_on || !big(x) || !PyLong_CheckExact(token) || !PyLong_CheckExact(state) || hc_get(x) != -1) return;
    if (_PyLong_Sign(x) < 0 || _PyLong_Sign(token) < 0 || _PyLong_Sign(state) < 0) return;
    Py_hash_t hs = big(state) ? hc_get(state) : PyObject_Hash(state); /* (a small one: cheap) */
    if (hs == -1) return;
    Py_hash_t ht = state_hash(token);
    if (ht == -1) { PyErr_Clear(); return; } /* (an int's hash cannot fail) */
    const Py_uhash_t M = HASH_MODULUS;
    Py_uhash_t h = sign > 0 ? (Py_uhash_t)hs + (Py_uhash_t)ht : (Py_uhash_t)hs + (M - (Py_uhash_t)ht);
    if (h >= M) h -= M;
    hc_put(x, (Py_hash_t)h);
}

/* a state with a token given back */
static PyObject *release(PyObject *rel, int kind, PyObject *state, PyObject *token) {
    if (kind == REL_ADD) return PyNumber_Add(state, token);
    if (kind == REL_MEMO) {
        PyObject *key = PyTuple_Pack(2, state, token);
        if (key == NULL) return NULL;
        PyObject *got = PyDict_GetItemWithError(PyTuple_GET_ITEM(rel, 0), key);
        Py_XINCREF(got);
        Py_DECREF(key);
        if (got != NULL || PyErr_Occurred()) return got;
        return PyObject_CallFunctionObjArgs(PyTuple_GET_ITEM(rel, 1), state, token, NULL);
    }
    if (kind != REL_OR) return PyObject_CallFunctionObjArgs(rel, state, token, NULL);
    PyObject *x = PyNumber_Or(state, token);
    if (x != NULL) derive_hash(x, state, token, 1);
    return x;
}

/* 0 if `rel` suits `kind` (REL_MEMO: a pair (dict, callable)), else -1 with a TypeError set */
static int check_rel(PyObject *rel, int kind) {
    if (kind < REL_CALL || kind > REL_MEMO) {
        PyErr_Format(PyExc_ValueError, "_cplan: rel_kind %d is not 0, 1, 2 or 3", kind);
        return -1;
    }
    if (kind == REL_MEMO && !(PyTuple_Check(rel) && PyTuple_GET_SIZE(rel) == 2 && PyDict_Check(PyTuple_GET_ITEM(rel, 0))
                              && PyCallable_Check(PyTuple_GET_ITEM(rel, 1)))) {
        PyErr_SetString(PyExc_TypeError, "_cplan: with rel_kind 3, rel is not a pair (dict, callable)");
        return -1;
    }
    return 0;
}

/* the placement of a job with frame `frame` in `state`: memo[(state, frame)], else place(state, who) (which
 * remembers it); a new reference to (token, next state) or None, NULL on error */
static PyObject *placement(PyObject *memo, PyObject *place, PyObject *state, PyObject *frame, PyObject *who, int derive) {
    PyObject *key = PyTuple_Pack(2, state, frame);
    if (key == NULL) return NULL;
    PyObject *placed = memo_get(memo, key, state, frame);
    Py_XINCREF(placed);
    Py_DECREF(key);
    if (placed == NULL) {
        if (PyErr_Occurred()) return NULL;
        placed = PyObject_CallFunctionObjArgs(place, state, who, NULL);
        if (placed == NULL) return NULL;
    }
    if (placed != Py_None && (!PyTuple_Check(placed) || PyTuple_GET_SIZE(placed) != 2)) {
        Py_DECREF(placed);
        PyErr_SetString(PyExc_TypeError, "_cplan: a placement is not (token, state) or None");
        return NULL;
    }
    if (derive && placed != Py_None) derive_hash(PyTuple_GET_ITEM(placed, 1), state, PyTuple_GET_ITEM(placed, 0), -1);
    return placed;
}

/* an event's kind, job and token (borrowed); -1 (an exception set) if it is not a 5-tuple (time, kind, order, job, token) */
static int event_parts(PyObject *ev, long *kind, PyObject **who, PyObject **m) {
    if (!PyTuple_Check(ev) || PyTuple_GET_SIZE(ev) != 5) {
        PyErr_SetString(PyExc_TypeError, "_cplan: an event is not a 5-tuple");
        return -1;
    }
    *kind = PyLong_AsLong(PyTuple_GET_ITEM(ev, 1));
    if (*kind == -1 && PyErr_Occurred()) return -1;
    *who = PyTuple_GET_ITEM(ev, 3);
    *m = PyTuple_GET_ITEM(ev, 4);
    return 0;
}

/* One event of a replay on *free (an owned reference, replaced).  A release gives back its token: the event's own,
 * else the one `placed` holds for the job (taken out of it, and *displaced lowered where it differs from bits),
 * else `earlier`'s.  An allocation places the job through the memo, records its token in `placed` (and in `also`
 * if not NULL) and raises *displaced where it differs from bits.  1 done, 0 the allocation refused, -1 error. */
static int step_held(long kind, PyObject *who, PyObject *m, PyObject **free, PyObject *placed, PyObject *earlier, PyObject *also,
                     PyObject *bits, PyObject *memo, PyObject *frames, PyObject *rel, int rel_kind, PyObject *place,
                     Py_ssize_t *displaced) {
    if (kind == 0) {
        PyObject *token = m; /* borrowed, or owned below */
        int owned = 0;
        if (m == Py_None) {
            PyObject *got = PyDict_GetItemWithError(placed, who);
            if (got != NULL) {
                Py_INCREF(got);
                owned = 1;
                token = got;
                int d = PyDict_DelItem(placed, who) < 0 ? -1 : differs(bits, who, got);
                if (d < 0) { Py_DECREF(got); return -1; }
                *displaced -= d;
            } else {
                if (PyErr_Occurred()) return -1;
                token = PyDict_GetItemWithError(earlier, who);
                if (token == NULL) {
                    if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, who);
                    return -1;
                }
            }
        }
        PyObject *x = release(rel, rel_kind, *free, token);
        if (owned) Py_DECREF(token);
        if (x == NULL) return -1;
        Py_SETREF(*free, x);
        return 1;
    }
    PyObject *frame = PyDict_GetItemWithError(frames, who);
    if (frame == NULL) {
        if (!PyErr_Occurred()) PyErr_SetObject(PyExc_KeyError, who);
        return -1;
    }
    PyObject *got = placement(memo, place, *free, frame, who, rel_kind == REL_OR);
    if (got == NULL) return -1;
    if (got == Py_None) {
        Py_DECREF(got);
        return 0;
    }
    PyObject *tok = PyTuple_GET_ITEM(got, 0), *next = PyTuple_GET_ITEM(got, 1);
    int d = (PyDict_SetItem(placed, who, tok) < 0 || (also != NULL && PyDict_SetItem(also, who, tok) < 0)) ? -1 : differs(bits, who, tok);
    if (d < 0) { Py_DECREF(got); return -1; }
    *displaced += d;
    Py_INCREF(next);
    Py_SETREF(*free, next);
    Py_DECREF(got);
    return 1;
}

/* step_held on event `ev` (kind, job `who` and token `m` its parts, see event_parts), held across the model's
 * functions, which may run Python that drops the list's reference to it */
static int step(PyObject *ev, long kind, PyObject *who, PyObject *m, PyObject **free, PyObject *placed, PyObject *earlier,
                PyObject *also, PyObject *bits, PyObject *memo, PyObject *frames, PyObject *rel, int rel_kind, PyObject *place,
                Py_ssize_t *displaced) {
    Py_INCREF(ev);
    int done = step_held(kind, who, m, free, placed, earlier, also, bits, memo, frames, rel, rel_kind, place, displaced);
    Py_DECREF(ev);
    return done;
}

/* _trial: the kept replay's events i .. n-1 replayed with the job placed (its token `mine`, the state after it
 * `free0`), released before event iend; the reservation of job `own` (-1: none) left out.  1 if every allocation
 * still succeeds, 0 if one fails, -1 on error (an exception set). */
static int run_trial(PyObject *events, PyObject *states, PyObject *bits, PyObject *memo, PyObject *frames, PyObject *rel,
                     int rel_kind, PyObject *place, Py_ssize_t i, Py_ssize_t n, Py_ssize_t iend, Py_ssize_t old_end,
                     Py_ssize_t fail, long long own, PyObject *mine, PyObject *free0) {
    PyObject *moved = PyDict_New(); /* reservations placed in the trial: their tokens */
    if (moved == NULL) return -1;
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
                PyErr_SetString(PyExc_ValueError, "first: no kept state before an event it compares at");
                goto error;
            }
            PyObject *kept = PyList_GET_ITEM(states, k);
            int same = same_state(free, kept);
            if (same < 0) goto error;
            if (same) {
                ok = fail == n; /* from here on the kept replay's own events and states */
                break;
            }
        }
        if (k >= PyList_GET_SIZE(events)) {
            PyErr_SetString(PyExc_RuntimeError, "_cplan: the plan's events changed during a trial");
            goto error;
        }
        long kind;
        PyObject *who, *m, *ev = PyList_GET_ITEM(events, k);
        if (event_parts(ev, &kind, &who, &m) < 0) goto error;
        if (own >= 0 && m == Py_None) {
            long long w = PyLong_AsLongLong(who);
            if (w == -1 && PyErr_Occurred()) goto error;
            if (w == own) continue; /* its own reservation: taken out */
        }
        int done = step(ev, kind, who, m, &free, moved, bits, NULL, bits, memo, frames, rel, rel_kind, place, &displaced);
        if (done < 0) goto error;
        if (!done) {
            ok = 0;
            break;
        }
    }
    Py_DECREF(free);
    Py_DECREF(moved);
    return ok;
error:
    Py_DECREF(free);
    Py_DECREF(moved);
    return -1;
}

/* a time that is not a float object: an int (or a float subclass) at its value; anything else NAN with a TypeError set */
static double fl_slow(PyObject *x) {
    if (!PyFloat_Check(x) && !PyLong_Check(x)) {
        PyErr_Format(PyExc_TypeError, "_cplan: a time is %R, not a number", x);
        return NAN;
    }
    double v = PyFloat_AsDouble(x);
    return v == -1.0 && PyErr_Occurred() ? NAN : v;
}

/* the time at index k of a list of times (callers check PyErr_Occurred() once after a run of reads) */
static inline double fl_at(PyObject *list, Py_ssize_t k) {
    PyObject *x = PyList_GET_ITEM(list, k);
    return PyFloat_CheckExact(x) ? PyFloat_AS_DOUBLE(x) : fl_slow(x);
}

/* plan._end: t + span, never closer than two float steps past t */
static inline double end_of(double t, double span) {
    double end = t + span;
    if (fabs(t) < 4294967296.0 && span >= ZERO_LENGTH) return end;
    double floor = nextafter(nextafter(t, INFINITY), INFINITY);
    return end > floor ? end : floor;
}

/* Python's comparison of an event key (t, kind, order, job) with (t2, kind2, order2, job2): <0, 0, >0; or -2 on error */
static int key_cmp(PyObject *key, double t2, long long kind2, long long order2, long long job2) {
    if (!PyTuple_Check(key) || PyTuple_GET_SIZE(key) != 4) {
        PyErr_SetString(PyExc_TypeError, "first: an event key is not a 4-tuple");
        return -2;
    }
    PyObject *x = PyTuple_GET_ITEM(key, 0);
    double t = PyFloat_CheckExact(x) ? PyFloat_AS_DOUBLE(x) : PyFloat_AsDouble(x);
    if (t == -1.0 && PyErr_Occurred()) return -2;
    if (t != t2) return t < t2 ? -1 : 1;
    long long v[3], w[3] = {kind2, order2, job2};
    for (int q = 0; q < 3; q++) {
        v[q] = PyLong_AsLongLong(PyTuple_GET_ITEM(key, q + 1));
        if (v[q] == -1 && PyErr_Occurred()) return -2;
        if (v[q] != w[q]) return v[q] < w[q] ? -1 : 1;
    }
    return 0;
}

/* the first key index in lo .. hi-1 not below (bisect_left, right = 0) or above (bisect_right, right = 1) the key
 * (t, kind, order, job); -1 on error */
static Py_ssize_t key_bisect(PyObject *keys, Py_ssize_t lo, Py_ssize_t hi, double t, long long kind, long long order,
                             long long job, int right) {
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        int c = key_cmp(PyList_GET_ITEM(keys, mid), t, kind, order, job);
        if (c == -2) return -1;
        if (c < 0 || (right && c == 0)) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* the first index in lo .. hi-1 whose time is >= t (bisect_left on a list of times) */
static Py_ssize_t time_bisect(PyObject *times, Py_ssize_t lo, Py_ssize_t hi, double t) {
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (fl_at(times, mid) < t) lo = mid + 1; else hi = mid;
    }
    return lo;
}

/* plan._CountedWindow on the counts' lists */
typedef struct {
    PyObject *times, *free;
    long long size;
    double span, t0, end0;
    Py_ssize_t i, good_lo, good_hi;
} Window;

/* whether segment k is short of the job (its own reservation counted free); -1 on error */
static inline int seg_short(const Window *w, Py_ssize_t k) {
    long long v = PyLong_AsLongLong(PyList_GET_ITEM(w->free, k));
    if (v == -1 && PyErr_Occurred()) return -1;
    if (v >= w->size) return 0;
    if (v < 0) return 1;
    double tk = fl_at(w->times, k);
    return !(w->t0 <= tk && tk < w->end0);
}

/* _CountedWindow.next_fit: the first start from t on from which the counts hold the job for its span (inf: none);
 * after an error (NAN returned, or an exception set while reading a time) the answer means nothing */
static double next_fit(Window *w, double t) {
    Py_ssize_t n = PyList_GET_SIZE(w->times);
    Py_ssize_t i = time_bisect(w->times, w->i, n, t);
    if (i == n || fl_at(w->times, i) != t) i -= 1;
    if (i < 0) i = 0; /* (before the first breakpoint, now: never asked) */
    double start = t;
    while (i < n) {
        Py_ssize_t j;
        if (w->good_lo <= i && i < w->good_hi) j = w->good_hi;
        else {
            int sh = seg_short(w, i);
            if (sh < 0) return NAN;
            if (sh) {
                i += 1;
                start = i < n ? fl_at(w->times, i) : INFINITY;
                continue;
            }
            j = i + 1;
        }
        double stop = end_of(start, w->span);
        int broke = 0;
        while (j < n && fl_at(w->times, j) < stop) {
            int sh = seg_short(w, j);
            if (sh < 0) return NAN;
            if (sh) { broke = 1; break; }
            j += 1;
        }
        if (!broke) {
            w->i = i;
            w->good_lo = i;
            w->good_hi = j;
            return start;
        }
        w->good_lo = i;
        w->good_hi = j;
        i = j + 1;
        start = i < n ? fl_at(w->times, i) : INFINITY;
    }
    w->i = n;
    return INFINITY;
}

/* first(times, c, not_after, counts_times, counts_free, size, span, t0, end0, keys, events, states, bits, memo, frames,
 *       frame, rel, rel_kind, place, fail, prio, job, own, old_end) -> the start (the candidate list's own item) or
 *       None: plan._first_loop */
static PyObject *first(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *times, *not_after, *ctimes, *cfree, *keys, *events, *states, *bits, *memo, *frames, *frame, *rel, *place, *job;
    Py_ssize_t c, fail, old_end;
    long long size, prio, own;
    double span, t0, end0;
    int rel_kind;
    if (!PyArg_ParseTuple(args, "O!nOO!O!LdddO!O!O!O!O!O!OOiOnLOLn", &PyList_Type, &times, &c, &not_after, &PyList_Type, &ctimes,
                          &PyList_Type, &cfree, &size, &span, &t0, &end0, &PyList_Type, &keys, &PyList_Type, &events,
                          &PyList_Type, &states, &PyDict_Type, &bits, &PyDict_Type, &memo, &PyDict_Type, &frames, &frame,
                          &rel, &rel_kind, &place, &fail, &prio, &job, &own, &old_end))
        return NULL;
    if (check_rel(rel, rel_kind) < 0) return NULL;
    long long jobv = PyLong_AsLongLong(job);
    if (jobv == -1 && PyErr_Occurred()) return NULL;
    if (PyList_GET_SIZE(ctimes) != PyList_GET_SIZE(cfree) || PyList_GET_SIZE(keys) != PyList_GET_SIZE(events) || c < 0) {
        PyErr_SetString(PyExc_ValueError, "first: the counts' lists, or the keys and the events, differ in length");
        return NULL;
    }
    int has_na = not_after != Py_None;
    double na = 0;
    if (has_na) {
        na = PyFloat_AsDouble(not_after);
        if (na == -1.0 && PyErr_Occurred()) return NULL;
    }
    Py_ssize_t nt = PyList_GET_SIZE(times), n = PyList_GET_SIZE(events);
    if (nt == 0) Py_RETURN_NONE; /* (no candidate: not_after before now) */
    Py_ssize_t last = has_na ? nt - 1 : nt; /* (not_after, if given, is the last) */
    if (c > last) c = last;
    Window w = {ctimes, cfree, size, span, t0, end0, 0, 0, 0};
    Py_ssize_t i = 0;
    while (c < nt) {
        if (PyList_GET_SIZE(times) != nt || PyList_GET_SIZE(events) != n || PyList_GET_SIZE(ctimes) != PyList_GET_SIZE(cfree)) {
            PyErr_SetString(PyExc_RuntimeError, "first: the plan's lists changed during the search");
            return NULL;
        }
        double t = fl_at(times, c);
        if (has_na && t == na) { /* the plan with the job back where it was */
            PyObject *x = PyList_GET_ITEM(times, c);
            Py_INCREF(x);
            return x;
        }
        double fit = next_fit(&w, t);
        if (PyErr_Occurred()) return NULL;
        if (fit > t) {
            Py_ssize_t skip = time_bisect(times, c + 1, nt, fit);
            if (skip > last) skip = last;
            if (fail < n) {
                int cmp = key_cmp(PyList_GET_ITEM(keys, fail), fl_at(times, skip - 1), 1, prio, jobv);
                if (cmp == -2 || PyErr_Occurred()) return NULL;
                if (cmp < 0) Py_RETURN_NONE; /* a skipped candidate's turn is past the plan's failure */
            }
            c = skip;
            continue;
        }
        c += 1;
        i = key_bisect(keys, i, n, t, 1, prio, jobv, 0);
        if (i < 0) return NULL;
        if (i > fail) Py_RETURN_NONE; /* the plan fails before the job's turn at t: so it does at every later t */
        if (i >= PyList_GET_SIZE(states)) {
            PyErr_SetString(PyExc_ValueError, "first: no kept state before the job's turn");
            return NULL;
        }
        PyObject *placed = placement(memo, place, PyList_GET_ITEM(states, i), frame, job, rel_kind == REL_OR);
        if (placed == NULL) return NULL;
        if (placed == Py_None) {
            Py_DECREF(placed);
            continue;
        }
        Py_ssize_t iend = key_bisect(keys, i, n, end_of(t, span), 0, -1, jobv, 1); /* its release: before event iend */
        int ok = iend < 0 ? -1 : run_trial(events, states, bits, memo, frames, rel, rel_kind, place, i, n, iend, old_end, fail, own,
                                           PyTuple_GET_ITEM(placed, 0), PyTuple_GET_ITEM(placed, 1));
        Py_DECREF(placed);
        if (ok < 0) return NULL;
        if (ok) {
            PyObject *x = PyList_GET_ITEM(times, c - 1); /* (the candidate itself, as the Python search returns it) */
            Py_INCREF(x);
            return x;
        }
    }
    Py_RETURN_NONE;
}

/* replay(events, states, bits, new_bits, new_states, memo, frames, rel, rel_kind, place, free, i0, khi, shift, fail)
 * -> (how, k): plan._replay_from */
static PyObject *replay(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *events, *states, *bits, *new_bits, *new_states, *memo, *frames, *rel, *place, *free0;
    int rel_kind;
    Py_ssize_t i0, khi, shift, fail;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!O!OiOOnnnn", &PyList_Type, &events, &PyList_Type, &states, &PyDict_Type, &bits,
                          &PyDict_Type, &new_bits, &PyList_Type, &new_states, &PyDict_Type, &memo, &PyDict_Type, &frames,
                          &rel, &rel_kind, &place, &free0, &i0, &khi, &shift, &fail))
        return NULL;
    if (check_rel(rel, rel_kind) < 0) return NULL;
    Py_ssize_t n = PyList_GET_SIZE(events);
    if (i0 < 0) {
        PyErr_SetString(PyExc_ValueError, "replay: a negative first event");
        return NULL;
    }
    PyObject *held = PyDict_New(); /* reservations placed here and not yet released: their tokens */
    if (held == NULL) return NULL;
    PyObject *free = free0;
    Py_INCREF(free);
    Py_ssize_t displaced = 0; /* of those, holding other processors than in the old replay */
    int how = 1;
    Py_ssize_t k;
    for (k = i0; k < n; k++) {
        if (displaced == 0 && k >= khi) {
            Py_ssize_t j = k - shift;
            if (j <= fail) {
                if (j < 0 || j >= PyList_GET_SIZE(states)) {
                    PyErr_SetString(PyExc_ValueError, "replay: no old state to compare with");
                    goto error;
                }
                PyObject *kept = PyList_GET_ITEM(states, j);
                int same = same_state(free, kept);
                if (same < 0) goto error;
                if (same) { how = 0; break; }
            }
        }
        if (k >= PyList_GET_SIZE(events)) {
            PyErr_SetString(PyExc_RuntimeError, "_cplan: the plan's events changed during a replay");
            goto error;
        }
        long kind;
        PyObject *who, *m, *ev = PyList_GET_ITEM(events, k);
        if (event_parts(ev, &kind, &who, &m) < 0) goto error;
        int done = step(ev, kind, who, m, &free, held, new_bits, new_bits, bits, memo, frames, rel, rel_kind, place, &displaced);
        if (done < 0) goto error;
        if (!done) {
            how = 2;
            break;
        }
        if (PyList_Append(new_states, free) < 0) goto error;
    }
    Py_DECREF(free);
    Py_DECREF(held);
    return Py_BuildValue("(in)", how, k);
error:
    Py_DECREF(free);
    Py_DECREF(held);
    return NULL;
}

/* moves_earlier(times, free, t0, end0, size, span) -> bool: plan.CountingProfile.moves_earlier's scan (the
 * reference) on the profile's lists, the job's reservation [t0, end0) of `size` for `span` counted free: whether
 * the counts hold it from a start before t0, which is next_fit's question from the profile's first breakpoint */
static PyObject *moves_earlier(PyObject *Py_UNUSED(self), PyObject *args) {
    PyObject *times, *free;
    double t0, end0, span;
    long long size;
    if (!PyArg_ParseTuple(args, "O!O!ddLd", &PyList_Type, &times, &PyList_Type, &free, &t0, &end0, &size, &span)) return NULL;
    if (PyList_GET_SIZE(free) != PyList_GET_SIZE(times)) {
        PyErr_SetString(PyExc_ValueError, "moves_earlier: the profile's lists differ in length");
        return NULL;
    }
    if (PyList_GET_SIZE(times) == 0) Py_RETURN_FALSE; /* (no start at all, as the Python scan answers) */
    Window w = {times, free, size, span, t0, end0, 0, 0, 0};
    double t = fl_at(times, 0);
    double fit = PyErr_Occurred() ? NAN : next_fit(&w, t);
    if (PyErr_Occurred()) return NULL; /* (a time that is not a number, a free count that is not an int) */
    return PyBool_FromLong(fit < t0);
}

/* check_hashes(clear=False) -> (kept, wrong): how many hashes the table keeps and how many of them are not Python's
 * hash of their object (the tests: none may be); with clear, the table emptied afterwards */
static PyObject *check_hashes(PyObject *Py_UNUSED(self), PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"clear", NULL};
    int clear = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|p", kwlist, &clear)) return NULL;
    Py_ssize_t kept = 0, wrong = 0;
    for (size_t i = 0; i < HC_SIZE; i++) {
        if (hc[i].obj == NULL) continue;
        kept++;
        Py_hash_t h = PyObject_Hash(hc[i].obj);
        if (h == -1) return NULL;
        wrong += h != hc[i].h;
        if (clear) {
            Py_CLEAR(hc[i].obj);
            hc_bytes -= hc[i].bytes;
        }
    }
    return Py_BuildValue("(nn)", kept, wrong);
}

static PyMethodDef methods[] = {
    {"check_hashes", (PyCFunction)(void (*)(void))check_hashes, METH_VARARGS | METH_KEYWORDS, "The table of kept hashes checked against Python's: (kept, wrong); check_hashes(True) empties it too."},
    {"first", first, METH_VARARGS, "StatePlan's search for a start (see plan.py, _first_loop, the reference)."},
    {"moves_earlier", moves_earlier, METH_VARARGS, "CountingProfile.moves_earlier's scan (see plan.py, the reference)."},
    {"replay", replay, METH_VARARGS, "StatePlan's replay of its plan (see plan.py, _replay_from, the reference)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cplan", "Compiled search and replay of plan.StatePlan.", -1, methods, NULL, NULL, NULL, NULL};

/* whether the hashes made here are Python's, on a few large ints: pair_hash (a pair of a large int and a small
 * item) and the sum modulo HASH_MODULUS (the union of two disjoint large ones).  1, 0, or -1 on error */
static int hashes_are_pythons(void) {
    int ok = 1;
    for (long q = 0; q < 3 && ok == 1; q++) {
        PyObject *one = PyLong_FromLong(1), *bits = PyLong_FromLong(HC_MIN_BITS + 37 * q), *low = PyLong_FromLong(123456789 + q);
        PyObject *big = NULL, *item = NULL, *pair = NULL, *both = NULL;
        if (one && bits && low) big = PyNumber_Lshift(one, bits);
        if (big) item = q == 2 ? Py_BuildValue("(ii)", 4, 8) : PyLong_FromLong(q - 7);
        if (item) pair = PyTuple_Pack(2, big, item);
        if (pair) both = PyNumber_Or(big, low);
        if (both == NULL) ok = -1;
        else {
            Py_hash_t hb = PyObject_Hash(big), hi = PyObject_Hash(item), hp = PyObject_Hash(pair), hl = PyObject_Hash(low), hu = PyObject_Hash(both);
            if (hb == -1 || hi == -1 || hp == -1 || hl == -1 || hu == -1) ok = -1;
            else ok = pair_hash(hb, hi) == hp && ((Py_uhash_t)hb + (Py_uhash_t)hl) % (Py_uhash_t)HASH_MODULUS == (Py_uhash_t)hu;
        }
        Py_XDECREF(one); Py_XDECREF(bits); Py_XDECREF(low); Py_XDECREF(big); Py_XDECREF(item); Py_XDECREF(pair); Py_XDECREF(both);
    }
    return ok;
}

PyMODINIT_FUNC PyInit__cplan(void) {
    int ok = hashes_are_pythons();
    if (ok < 0) return NULL;
    hc_on = ok;
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddIntConstant(m, "KNOWN_HASHES", hc_on) < 0) Py_CLEAR(m);
    return m;
}
