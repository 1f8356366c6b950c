/*
 * Compiled engines of topoalloc.network: a line-by-line translation of the
 * pure-Python reference (_reference.py), which documents the model.  Every
 * array is owned by the Python side (numpy, see _compiled.py) and passed in
 * a tuple on each call; this file keeps no state between calls.  Results
 * must be identical to the reference: the tests compare them packet by packet.
 *
 * Returns 0 when `until` was reached, 1 when it stopped after a cycle in
 * which a job's last packet was delivered, 2 on a deadlock (the Python side
 * builds the error from the arrays).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

typedef int64_t i64;
typedef int32_t i32;

#define MAXARR 48

/* x / V and x % V without a division in the common case V == 1 */
static inline i64 div_v(i64 x, i64 V) { return V == 1 ? x : x / V; }
static inline i64 mod_v(i64 x, i64 V) { return V == 1 ? 0 : x % V; }

typedef struct {
    Py_buffer views[MAXARR];
    int n;
} Bufs;

static void release_bufs(Bufs *b) {
    for (int i = 0; i < b->n; i++) PyBuffer_Release(&b->views[i]);
    b->n = 0;
}

/* Get writable C-contiguous buffers for every element of `tuple`, checking item sizes against `sizes`. */
static int get_bufs(PyObject *tuple, const char *sizes, Bufs *b) {
    b->n = 0;
    Py_ssize_t n = PyTuple_Size(tuple);
    if (n < 0) return -1;
    if ((size_t)n != strlen(sizes) || n > MAXARR) {
        PyErr_Format(PyExc_ValueError, "expected %d arrays, got %zd", (int)strlen(sizes), n);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(tuple, i), &b->views[i], PyBUF_WRITABLE | PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) < 0) {
            release_bufs(b);
            return -1;
        }
        b->n = (int)i + 1;
        int want = sizes[i] == 'q' ? 8 : sizes[i] == 'i' ? 4 : 1;
        if (b->views[i].itemsize != want) {
            PyErr_Format(PyExc_ValueError, "array %zd: item size %zd, expected %d", i, b->views[i].itemsize, want);
            release_bufs(b);
            return -1;
        }
    }
    return 0;
}

#define P64(i) ((i64 *)bufs.views[i].buf)
#define P32(i) ((i32 *)bufs.views[i].buf)
#define P8(i) ((uint8_t *)bufs.views[i].buf)

/* ------------------------------------------------------------------ flit level */

typedef struct {
    /* parameters */
    i64 N, C, V, B, P, R, wormhole, saf, per, dateline, deadlock, nbuf, CH, NR, ncls;
    /* scalars (pointers into the scal array) */
    i64 *scal;
    /* tables */
    const i32 *next_chan, *chan_dst, *chan_dim, *rptr, *rvcs, *rnext;
    i32 *via;  /* Valiant's intermediate router per packet (-1: none, or passed) */
    const uint8_t *chan_wrap;
    /* buffers */
    i32 *fpid, *fidx, *bhead, *bcnt, *owner, *outq, *busy;
    i64 *fready;
    /* network interfaces */
    i32 *sq_head, *sq_tail, *ni_pkt, *ni_flit, *ni_vc;
    /* packets */
    i64 *create, *t_inject, *t_done, *blocking, *pkey;
    i32 *src, *dst, *job, *pnext, *hops, *arr;
    /* jobs and counters */
    i64 *job_left, *comp_job, *comp_cycle, *link_flits, *stamp_in, *stamp_out;
    i32 *grants, *ni_sends, *heads;
} Flit;

enum { S_NOW, S_LAST_MOVE, S_IN_NET, S_ARR_PTR, S_ARR_LEN, S_EJECTED, S_WIN_LO, S_WIN_HI, S_N_COMP, S_QUEUED };

/* arbitration order: (creation cycle, packet id), packed in one key (creation < 2**31, id < 2**31) */
static inline int key_less(const Flit *s, i32 a, i32 b) { return s->pkey[a] < s->pkey[b]; }

static inline i32 front_pid(const Flit *s, i32 q) { return s->fpid[q * s->B + s->bhead[q]]; }
static inline i32 front_fidx(const Flit *s, i32 q) { return s->fidx[q * s->B + s->bhead[q]]; }
static inline i64 front_ready(const Flit *s, i32 q) { return s->fready[q * s->B + s->bhead[q]]; }

static inline i64 ring(i64 k, i64 B) { return k >= B ? k - B : k; }

static inline int whole(const Flit *s, i32 q, i64 now) {
    if (s->bcnt[q] < s->P) return 0;
    i64 k = ring(s->bhead[q] + s->P - 1, s->B);
    return s->fready[q * s->B + k] <= now;
}

/* the VCs [lo, hi) of the class a packet in VC cur takes on link ch (ncls classes of `per` VCs, the last
 * taking the rest): the current class (+1 across a wrap-around / global link) when ch continues the current
 * channel's dimension, else 1 across a wrap-around link and 0 otherwise; capped at the last class */
static inline void vc_class(const uint8_t *wrap, const i32 *dim, i64 V, i64 per, i64 ncls, i32 cur, i32 ch, i32 *lo, i32 *hi) {
    i64 last = ncls - 1, cls = wrap[ch];
    if (dim[ch] == dim[div_v(cur, V)]) { i64 c = mod_v(cur, V) / per; cls += c < last ? c : last; }
    if (cls > last) cls = last;
    *lo = (i32)(ch * V + cls * per);
    *hi = cls == last ? (i32)(ch * V + V) : (i32)(*lo + per);
}

/* the VCs [lo, hi) a packet in VC cur may take on channel ch */
static inline void allowed(const Flit *s, i32 cur, i32 ch, i32 *lo, i32 *hi) {
    i64 V = s->V;
    if (!s->dateline || ch >= s->C) { *lo = (i32)(ch * V); *hi = (i32)(ch * V + V); return; }
    vc_class(s->chan_wrap, s->chan_dim, V, s->per, s->ncls, cur, ch, lo, hi);
}

/* the channel a header at router r asks for: towards its Valiant intermediate router until it is there */
static inline i32 route_at(i32 *via, const i32 *rnext, const i32 *next_chan, i64 NR, i64 N, i32 r, i32 pid, i32 dst) {
    i32 t = via[pid];
    if (t >= 0) {
        if (t != r) return rnext[(i64)r * NR + t];
        via[pid] = -1;
    }
    return next_chan[(i64)r * N + dst];
}

static inline void push_flit(Flit *s, i32 q, i32 pid, i32 f, i64 ready) {
    i64 k = ring(s->bhead[q] + s->bcnt[q], s->B);
    s->fpid[q * s->B + k] = pid;
    s->fidx[q * s->B + k] = f;
    s->fready[q * s->B + k] = ready;
    s->bcnt[q]++;
}

static inline int delivered(Flit *s, i32 pid, i64 now) {
    s->t_done[pid] = now;
    i32 j = s->job[pid];
    if (j >= 0) {
        s->job_left[j]--;
        if (s->job_left[j] == 0) {
            i64 n = s->scal[S_N_COMP]++;
            s->comp_job[n] = j;
            s->comp_cycle[n] = now;
            return 1;
        }
    }
    return 0;
}

/* one cycle; returns -1 on deadlock, else 1 if a job completed */
static int flit_cycle(Flit *s, i64 now) {
    const i64 V = s->V, B = s->B, P = s->P, R = s->R, C = s->C, N = s->N, nbuf = s->nbuf;
    i64 *scal = s->scal;
    /* arrivals */
    while (scal[S_ARR_PTR] < scal[S_ARR_LEN]) {
        i32 pid = s->arr[scal[S_ARR_PTR]];
        if (s->create[pid] > now) break;
        i32 u = s->src[pid];
        s->pnext[pid] = -1;
        if (s->sq_tail[u] >= 0) s->pnext[s->sq_tail[u]] = pid; else s->sq_head[u] = pid;
        s->sq_tail[u] = pid;
        scal[S_ARR_PTR]++;
        scal[S_QUEUED]++;
    }
    /* network interfaces */
    i32 n_ni = 0;
    if (scal[S_QUEUED] > 0) {
        for (i32 u = 0; u < N; u++) {
            i32 pid = s->ni_pkt[u];
            if (pid < 0) {
                pid = s->sq_head[u];
                if (pid < 0) continue;
                s->sq_head[u] = s->pnext[pid];
                if (s->sq_head[u] < 0) s->sq_tail[u] = -1;
                s->ni_pkt[u] = pid; s->ni_flit[u] = 0; s->ni_vc[u] = -1;
            }
            i32 q = s->ni_vc[u];
            if (q < 0) {
                i32 base = (i32)((C + u) * V);
                for (i32 qq = base; qq < base + V; qq++) {
                    if (s->owner[qq] < 0 && (s->wormhole || s->bcnt[qq] <= B - P)) {
                        s->owner[qq] = pid; s->ni_vc[u] = q = qq; break;
                    }
                }
                if (q < 0) continue;
            }
            if (s->bcnt[q] < B) s->ni_sends[n_ni++] = u;
        }
    }
    /* routers */
    i32 n_gr = 0;
    for (i32 r = 0; r < s->NR; r++) {
        if (!s->busy[r]) continue;
        const i32 *vcs = s->rvcs + s->rptr[r] * V;
        i32 nv = (i32)((s->rptr[r + 1] - s->rptr[r]) * V);
        i32 nh = 0;
        for (i32 k = 0; k < nv; k++) {
            i32 q = vcs[k];
            if (!s->bcnt[q] || front_fidx(s, q) != 0 || front_ready(s, q) > now || s->outq[q] >= 0) continue;
            /* insertion by (create, pid) */
            i32 pid = front_pid(s, q), m = nh++;
            while (m > 0 && key_less(s, pid, front_pid(s, s->heads[m - 1]))) { s->heads[m] = s->heads[m - 1]; m--; }
            s->heads[m] = q;
        }
        for (i32 k = 0; k < nh; k++) {
            i32 q = s->heads[k], pid = front_pid(s, q);
            if (s->saf && !whole(s, q, now)) continue;
            i32 ch = route_at(s->via, s->rnext, s->next_chan, s->NR, N, r, pid, s->dst[pid]), lo, hi;
            allowed(s, q, ch, &lo, &hi);
            for (i32 q2 = lo; q2 < hi; q2++) {
                if (s->owner[q2] < 0 && (q2 >= nbuf || s->wormhole || s->bcnt[q2] <= B - P)) {
                    s->owner[q2] = pid; s->outq[q] = q2; break;
                }
            }
        }
        i32 nc = 0;
        for (i32 k = 0; k < nv; k++) {
            i32 q = vcs[k];
            if (!s->bcnt[q]) continue;
            i32 q2 = s->outq[q];
            if (front_ready(s, q) > now || q2 < 0 || (q2 < nbuf && s->bcnt[q2] >= B)) continue;
            if (s->saf && front_fidx(s, q) == 0 && !whole(s, q, now)) continue;
            i32 pid = front_pid(s, q), m = nc++;
            while (m > 0 && key_less(s, pid, front_pid(s, s->heads[m - 1]))) { s->heads[m] = s->heads[m - 1]; m--; }
            s->heads[m] = q;
        }
        if (nc == 1) {
            s->grants[n_gr++] = s->heads[0];
        } else {
            for (i32 k = 0; k < nc; k++) {
                i32 q = s->heads[k];
                i32 ci = (i32)div_v(q, V), co = (i32)div_v(s->outq[q], V);
                if (s->stamp_in[ci] == now + 1 || s->stamp_out[co] == now + 1) continue;
                s->stamp_in[ci] = now + 1;
                s->stamp_out[co] = now + 1;
                s->grants[n_gr++] = q;
            }
        }
    }
    /* apply */
    int in_window = scal[S_WIN_LO] <= now && now < scal[S_WIN_HI];
    int done = 0;
    for (i32 k = 0; k < n_gr; k++) {
        i32 q = s->grants[k];
        i64 ready;
        if (s->saf && front_fidx(s, q) == 0) {
            ready = s->fready[q * B + ring(s->bhead[q] + P - 1, B)];
        } else {
            ready = front_ready(s, q);
        }
        i32 pid = front_pid(s, q), f = front_fidx(s, q);
        s->bhead[q] = (i32)ring(s->bhead[q] + 1, B);
        s->bcnt[q]--;
        if (!s->bcnt[q]) s->busy[s->chan_dst[div_v(q, V)]]--;
        i32 q2 = s->outq[q], ch2 = (i32)div_v(q2, V);
        if (f == 0) {
            s->blocking[pid] += now - ready;
            if (ch2 < C) s->hops[pid]++;
        }
        if (f == P - 1) { s->outq[q] = -1; s->owner[q2] = -1; }
        if (in_window) s->link_flits[ch2]++;
        if (q2 >= nbuf) {
            scal[S_IN_NET]--;
            if (in_window) scal[S_EJECTED]++;
            if (f == P - 1 && delivered(s, pid, now)) done = 1;
        } else {
            if (!s->bcnt[q2]) s->busy[s->chan_dst[ch2]]++;
            push_flit(s, q2, pid, f, now + R + 1);
        }
    }
    for (i32 k = 0; k < n_ni; k++) {
        i32 u = s->ni_sends[k];
        i32 pid = s->ni_pkt[u], f = s->ni_flit[u], q = s->ni_vc[u];
        if (!s->bcnt[q]) s->busy[s->chan_dst[C + u]]++;
        push_flit(s, q, pid, f, now + R + 1);
        scal[S_IN_NET]++;
        if (in_window) s->link_flits[C + u]++;
        if (f == 0) s->t_inject[pid] = now;
        if (f == P - 1) { s->owner[q] = -1; s->ni_pkt[u] = -1; scal[S_QUEUED]--; }
        else s->ni_flit[u] = f + 1;
    }
    if (n_gr || n_ni) scal[S_LAST_MOVE] = now;
    else if (scal[S_IN_NET] > 0 && now - scal[S_LAST_MOVE] >= s->deadlock) return -1;
    return done;
}

static PyObject *flit_run(PyObject *self, PyObject *args) {
    PyObject *tuple, *ptuple;
    long long until;
    int stop;
    if (!PyArg_ParseTuple(args, "OOLp", &tuple, &ptuple, &until, &stop)) return NULL;
    Bufs bufs;
    /* see _compiled.FLIT_ARRAYS for the order */
    if (get_bufs(tuple, "qiiibiiiiqiiiiiiiiiiqiiiiqqqiiqqqqqqiiiqii", &bufs) < 0) return NULL;
    i64 p[15];
    for (int i = 0; i < 15; i++) {
        p[i] = PyLong_AsLongLong(PyTuple_GetItem(ptuple, i));
    }
    if (PyErr_Occurred()) { release_bufs(&bufs); return NULL; }
    Flit s = {
        .N = p[0], .C = p[1], .V = p[2], .B = p[3], .P = p[4], .R = p[5], .wormhole = p[6], .saf = p[7],
        .per = p[8], .dateline = p[9], .deadlock = p[10], .nbuf = p[11], .CH = p[12], .NR = p[13], .ncls = p[14],
        .scal = P64(0), .next_chan = P32(1), .chan_dst = P32(2), .chan_dim = P32(3), .chan_wrap = P8(4),
        .rptr = P32(5), .rvcs = P32(6), .fpid = P32(7), .fidx = P32(8), .fready = P64(9), .bhead = P32(10),
        .bcnt = P32(11), .owner = P32(12), .outq = P32(13), .busy = P32(14), .sq_head = P32(15), .sq_tail = P32(16),
        .ni_pkt = P32(17), .ni_flit = P32(18), .ni_vc = P32(19), .create = P64(20), .src = P32(21), .dst = P32(22),
        .job = P32(23), .pnext = P32(24), .t_inject = P64(25), .t_done = P64(26), .blocking = P64(27),
        .hops = P32(28), .arr = P32(29), .job_left = P64(30), .comp_job = P64(31), .comp_cycle = P64(32),
        .link_flits = P64(33), .stamp_in = P64(34), .stamp_out = P64(35), .grants = P32(36), .ni_sends = P32(37),
        .heads = P32(38), .pkey = P64(39), .rnext = P32(40), .via = P32(41),
    };
    int status = 0;
    Py_BEGIN_ALLOW_THREADS
    i64 *scal = s.scal;
    while (scal[S_NOW] < until) {
        if (scal[S_IN_NET] == 0 && scal[S_QUEUED] == 0) {
            i64 nxt = scal[S_ARR_PTR] < scal[S_ARR_LEN] ? s.create[s.arr[scal[S_ARR_PTR]]] : until;
            if (nxt > scal[S_NOW]) {
                scal[S_NOW] = nxt < until ? nxt : until;
                scal[S_LAST_MOVE] = scal[S_NOW];
                continue;
            }
        }
        int r = flit_cycle(&s, scal[S_NOW]);
        if (r < 0) { status = 2; break; }
        scal[S_NOW]++;
        if (r && stop) { status = 1; break; }
    }
    Py_END_ALLOW_THREADS
    release_bufs(&bufs);
    return PyLong_FromLong(status);
}

/* ---------------------------------------------------------------- packet level */
/*
 * The reference schedules a release event for every VC.  Here a VC is free from free_at[q] on:
 * INT64_MAX while its release time is unknown, the release time once known (always in the future
 * when it becomes known).  A channel with waiters gets a wake event at the next release time of one
 * of its VCs, which is exactly when the reference's release event would make it dirty.
 */

typedef struct {
    i64 N, C, V, P, R, saf, per, dateline, deadlock, CH, H, L, W, win_lo, win_hi, NR, ncls;
    i64 *scal;
    const i32 *next_chan, *chan_dst, *chan_dim, *rnext;
    i32 *via;
    const uint8_t *chan_wrap;
    i32 *owner, *wq_head, *wq_next;
    i64 *create, *t_inject, *t_done, *blocking, *want, *pkey;
    i32 *src, *dst, *job, *hops, *arr, *pk_i, *pk_rec;
    /* worm records (one per packet inside the network), per hop {T, tau, VC | channel << 32} side by side */
    i32 *rec_next, *rec_ntau, *rec_rel, *rec_end;
    i64 *hop;
    i32 *wheel, *ev_next, *ev_item, *ev_aux;  /* timing wheel: bucket heads, event links, (item << 2 | kind), channel */
    i64 *free_at, *next_wake;
    i64 *job_left, *comp_job, *comp_cycle, *link_flits;
    i32 *dirty, *dlv, *req, *reqch;
    uint8_t *is_dirty;
} Pk;

enum { K_NOW, K_LAST_MOVE, K_N_WAIT, K_ARR_PTR, K_ARR_LEN, K_EJECTED, K_WIN_LO, K_WIN_HI, K_N_COMP, K_PENDING, K_FREE, K_OVERFLOW, K_RFREE };
enum { EV_WAKE = 0, EV_REQUEST = 1, EV_DELIVER = 2 };

/* Every event is less than W cycles ahead of the time being processed (W > 2(P + H(R + 1)), see
 * _compiled.py), so bucket t mod W holds exactly the events of time t. */
static void ev_push2(Pk *s, i64 t, i32 k, i32 x, i32 aux) {
    i32 e = (i32)s->scal[K_FREE];
    if (e < 0 || t - s->scal[K_NOW] >= s->W) { s->scal[K_OVERFLOW] = 1; return; }
    s->scal[K_FREE] = s->ev_next[e];
    i64 b = t & (s->W - 1);
    s->ev_item[e] = (x << 2) | k;
    s->ev_aux[e] = aux;
    s->ev_next[e] = s->wheel[b];
    s->wheel[b] = e;
    s->scal[K_PENDING]++;
}

static inline void ev_push(Pk *s, i64 t, i32 k, i32 x) { ev_push2(s, t, k, x, 0); }

static i32 ev_take(Pk *s, i64 t) {
    i64 b = t & (s->W - 1);
    i32 e = s->wheel[b];
    s->wheel[b] = -1;
    return e;
}

static void ev_free(Pk *s, i32 e) {
    s->ev_next[e] = (i32)s->scal[K_FREE];
    s->scal[K_FREE] = e;
    s->scal[K_PENDING]--;
}

/* arbitration order: (creation cycle, packet id), packed in one key (creation < 2**31, id < 2**31) */
#define HOP_T(s, k) ((s)->hop[3 * (k)])
#define HOP_TAU(s, k) ((s)->hop[3 * (k) + 1])
static inline i32 hop_slot(const Pk *s, i64 k) { return (i32)(uint32_t)(s->hop[3 * k + 2] & 0xffffffffLL); }
static inline void set_hop_slot(Pk *s, i64 k, i32 q) { s->hop[3 * k + 2] = (s->hop[3 * k + 2] & ~0xffffffffLL) | (uint32_t)q; }
static inline void set_hop_route(Pk *s, i64 k, i32 ch) { s->hop[3 * k + 2] = (s->hop[3 * k + 2] & 0xffffffffLL) | ((i64)ch << 32); }

static inline int pk_less(const Pk *s, i32 a, i32 b) { return s->pkey[a] < s->pkey[b]; }

static inline void mark_dirty(Pk *s, i32 ch, i32 *nd) {
    if (!s->is_dirty[ch]) { s->is_dirty[ch] = 1; s->dirty[(*nd)++] = ch; }
}

static inline void add_waiter(Pk *s, i32 pid, i32 ch) {
    i32 *link = &s->wq_head[ch];
    while (*link >= 0 && pk_less(s, *link, pid)) link = &s->wq_next[*link];
    s->wq_next[pid] = *link;
    *link = pid;
}

static i32 free_slot(const Pk *s, i32 pid, i32 ch, i64 t) {
    i64 V = s->V;
    if (ch >= s->C && ch < s->C + s->N) return s->free_at[ch * V] <= t ? (i32)(ch * V) : -1;
    i32 lo = (i32)(ch * V), hi = (i32)(ch * V + V);
    if (s->dateline && ch < s->C) {
        i32 cur = hop_slot(s, (i64)s->pk_rec[pid] * s->H + s->pk_i[pid] - 1);
        vc_class(s->chan_wrap, s->chan_dim, V, s->per, s->ncls, cur, ch, &lo, &hi);
    }
    for (i32 q = lo; q < hi; q++) if (s->free_at[q] <= t) return q;
    return -1;
}

/* the VC q is free from `at` on (at > t); wake its channel's waiters then */
static inline void set_free(Pk *s, i32 q, i64 at, i64 t) {
    s->free_at[q] = at;
    i32 ch = (i32)div_v(q, s->V);
    if (s->wq_head[ch] >= 0 && (s->next_wake[ch] <= t || at < s->next_wake[ch])) {
        ev_push(s, at, EV_WAKE, ch);
        s->next_wake[ch] = at;
    }
}

static void finalize(Pk *s, i32 pid, i64 j, i64 t, int last) {
    i64 base = (i64)s->pk_rec[pid] * s->H;
    i64 x = HOP_T(s, base + j) + s->P - 1;
    if (j) { i64 y = HOP_TAU(s, base + j - 1) + s->R + 1; if (y > x) x = y; }
    if (t > x) x = t;
    HOP_TAU(s, base + j) = x;
    s->rec_ntau[s->pk_rec[pid]] = (i32)(j + 1);
    if (last) ev_push(s, x, EV_DELIVER, pid);
}

/* release every VC whose tail time is known and whose header has moved on */
static void release(Pk *s, i32 pid, i64 t) {
    i32 r = s->pk_rec[pid];
    i64 base = (i64)r * s->H, n = s->pk_i[pid];
    i64 j = s->rec_rel[r];
    while (j < s->rec_ntau[r] && (j + 1 < n || s->rec_end[r])) {
        i64 x = HOP_TAU(s, base + j);
        if (j + 1 < n && HOP_T(s, base + j + 1) > x) x = HOP_T(s, base + j + 1);
        set_free(s, hop_slot(s, base + j), x + 1, t);
        j++;
    }
    s->rec_rel[r] = (i32)j;
}

static void grant(Pk *s, i32 pid, i32 q, i64 t) {
    i64 V = s->V, C = s->C, N = s->N, P = s->P, R = s->R, L = s->L;
    i64 i = s->pk_i[pid]++;
    if (i == 0) {  /* the worm enters the network: take a record */
        i32 r = (i32)s->scal[K_RFREE];
        s->scal[K_RFREE] = s->rec_next[r];
        s->pk_rec[pid] = r;
        s->hop[3 * (i64)r * s->H + 2] = (i64)(C + s->src[pid]) << 32;
        s->rec_ntau[r] = 0; s->rec_rel[r] = 0; s->rec_end[r] = 0;
    }
    i32 r = s->pk_rec[pid];
    i64 base = (i64)r * s->H;
    HOP_T(s, base + i) = t;
    set_hop_slot(s, base + i, q);
    s->owner[q] = pid;
    s->free_at[q] = INT64_MAX;
    s->scal[K_N_WAIT]--;
    i32 ch = (i32)div_v(q, V);
    if (i == 0) s->t_inject[pid] = t;
    else s->blocking[pid] += t - s->want[pid];
    if (ch < C) s->hops[pid]++;
    if (s->win_lo <= t && t < s->win_hi) s->link_flits[ch] += P;
    int last = ch >= C + N;
    if (!last) {
        i32 nch = route_at(s->via, s->rnext, s->next_chan, s->NR, N, s->chan_dst[ch], pid, s->dst[pid]);
        s->hop[3 * (base + i + 1) + 2] = (i64)nch << 32;
        i64 ra = s->saf ? t + P + R : t + R + 1;
        s->want[pid] = ra;
        ev_push2(s, ra, EV_REQUEST, pid, nch);
    } else {
        s->rec_end[r] = 1;
    }
    if (L == 0) {
        /* the tail passes this channel at max(T_i + P - 1, tau_{i-1} + R + 1); the previous VC is released
         * now that the header has left it, at max(tau_{i-1}, T_i) + 1 (finalize and release, unrolled) */
        i64 x = t + P - 1;
        if (i) {
            i64 prev = HOP_TAU(s, base + i - 1), y = prev + R + 1;
            if (y > x) x = y;
            set_free(s, hop_slot(s, base + i - 1), (prev > t ? prev : t) + 1, t);
        }
        HOP_TAU(s, base + i) = x;
        s->rec_ntau[r] = (i32)(i + 1);
        s->rec_rel[r] = (i32)i;
        if (last) {
            ev_push(s, x, EV_DELIVER, pid);
            set_free(s, q, x + 1, t);
            s->rec_rel[r] = (i32)(i + 1);
        }
    } else if (!last) {
        if (i - L >= 0) finalize(s, pid, i - L, t, 0);
        release(s, pid, t);
    } else {
        for (i64 j = (i - L > 0 ? i - L : 0); j <= i; j++) finalize(s, pid, j, t, j == i);
        release(s, pid, t);
    }
    if (last) {
        s->rec_next[r] = (i32)s->scal[K_RFREE];  /* every VC's release is known: the record is free again */
        s->scal[K_RFREE] = r;
        s->pk_rec[pid] = -1;
    }
}

static int pk_delivered(Pk *s, i32 pid, i64 t) {
    s->t_done[pid] = t;
    i32 j = s->job[pid];
    if (j >= 0) {
        s->job_left[j]--;
        if (s->job_left[j] == 0) {
            i64 n = s->scal[K_N_COMP]++;
            s->comp_job[n] = j;
            s->comp_cycle[n] = t;
            return 1;
        }
    }
    return 0;
}

/* sort packet ids by (creation, id) */
static void sort_keys(const Pk *s, i32 *v, i32 *w, i32 n) {
    for (i32 a = 1; a < n; a++) {
        i32 x = v[a], y = w[a], b = a;
        i64 kx = s->pkey[x];
        while (b > 0 && kx < s->pkey[v[b - 1]]) { v[b] = v[b - 1]; w[b] = w[b - 1]; b--; }
        v[b] = x; w[b] = y;
    }
}

static void grant(Pk *s, i32 pid, i32 q, i64 t);

/* process time t; returns 1 if a job completed */
static int pk_time(Pk *s, i64 t) {
    i64 *scal = s->scal;
    i32 nd = 0, ndl = 0, nr = 0;
    for (i32 e = ev_take(s, t); e >= 0;) {
        i32 nx = s->ev_next[e], ek = s->ev_item[e] & 3, ex = s->ev_item[e] >> 2;
        if (ek == EV_WAKE) mark_dirty(s, ex, &nd);
        else if (ek == EV_REQUEST) { s->reqch[nr] = s->ev_aux[e]; s->req[nr++] = ex; }
        else s->dlv[ndl++] = ex;
        ev_free(s, e);
        e = nx;
    }
    /* the bucket is a LIFO list of events pushed in grant order (oldest first): reversed, nearly sorted */
    for (i32 a = 0, b = nr - 1; a < b; a++, b--) {
        i32 x = s->req[a]; s->req[a] = s->req[b]; s->req[b] = x;
        x = s->reqch[a]; s->reqch[a] = s->reqch[b]; s->reqch[b] = x;
    }
    while (scal[K_ARR_PTR] < scal[K_ARR_LEN]) {
        i32 pid = s->arr[scal[K_ARR_PTR]];
        if (s->create[pid] > t) break;
        scal[K_ARR_PTR]++;
        s->want[pid] = s->create[pid];
        s->reqch[nr] = (i32)(s->C + s->src[pid]);
        s->req[nr++] = pid;
    }
    /* Requests oldest first: one for a channel nobody waits for takes a free VC at once (the oldest
     * same-time request comes first); otherwise it joins the channel's waiters, served below. */
    sort_keys(s, s->req, s->reqch, nr);
    int granted = 0;
    scal[K_N_WAIT] += nr;
    for (i32 k = 0; k < nr; k++) {
        i32 pid = s->req[k], ch = s->reqch[k];
        if (s->wq_head[ch] < 0) {
            i32 q = free_slot(s, pid, ch, t);
            if (q >= 0) { grant(s, pid, q, t); granted = 1; continue; }
        }
        add_waiter(s, pid, ch);
        mark_dirty(s, ch, &nd);
    }
    for (i32 k = 0; k < nd; k++) {
        i32 ch = s->dirty[k];
        s->is_dirty[ch] = 0;
        i32 *link = &s->wq_head[ch];
        while (*link >= 0) {
            i32 pid = *link;
            i32 q = free_slot(s, pid, ch, t);
            if (q < 0) { link = &s->wq_next[pid]; continue; }
            *link = s->wq_next[pid];
            grant(s, pid, q, t);
            granted = 1;
        }
        if (s->wq_head[ch] >= 0) {  /* waiters remain: look again when the next VC of the channel frees */
            i64 V = s->V, w = INT64_MAX;
            for (i64 q = ch * V; q < ch * V + V; q++) if (s->free_at[q] > t && s->free_at[q] < w) w = s->free_at[q];
            if (w != INT64_MAX && (s->next_wake[ch] <= t || w < s->next_wake[ch])) {
                ev_push(s, w, EV_WAKE, ch);
                s->next_wake[ch] = w;
            }
        }
    }
    for (i32 e = ev_take(s, t); e >= 0;) {  /* deliveries found by this time's grants */
        i32 nx = s->ev_next[e];
        s->dlv[ndl++] = s->ev_item[e] >> 2;
        ev_free(s, e);
        e = nx;
    }
    for (i32 a = 1; a < ndl; a++) {  /* deliveries in packet order, as the reference */
        i32 v = s->dlv[a], b = a;
        while (b > 0 && s->dlv[b - 1] > v) { s->dlv[b] = s->dlv[b - 1]; b--; }
        s->dlv[b] = v;
    }
    int done = 0;
    for (i32 k = 0; k < ndl; k++) {
        if (scal[K_WIN_LO] <= t && t < scal[K_WIN_HI]) scal[K_EJECTED] += s->P;
        if (pk_delivered(s, s->dlv[k], t)) done = 1;
    }
    if (granted) scal[K_LAST_MOVE] = t;
    return done;
}

static PyObject *packet_run(PyObject *self, PyObject *args) {
    PyObject *tuple, *ptuple;
    long long until;
    int stop;
    if (!PyArg_ParseTuple(args, "OOLp", &tuple, &ptuple, &until, &stop)) return NULL;
    Bufs bufs;
    /* see _compiled.CPacketEngine.ARRAYS for the order */
    if (get_bufs(tuple, "qiiibiiiqqqqqiiiiiiiiiiiqiiiqqqqqqiibiqiiii", &bufs) < 0) return NULL;
    i64 p[15];
    for (int i = 0; i < 15; i++) p[i] = PyLong_AsLongLong(PyTuple_GetItem(ptuple, i));
    if (PyErr_Occurred()) { release_bufs(&bufs); return NULL; }
    Pk s = {
        .N = p[0], .C = p[1], .V = p[2], .P = p[3], .R = p[4], .saf = p[5], .per = p[6], .dateline = p[7],
        .deadlock = p[8], .CH = p[9], .H = p[10], .L = p[11], .W = p[12], .NR = p[13], .ncls = p[14],
        .scal = P64(0), .next_chan = P32(1), .chan_dst = P32(2), .chan_dim = P32(3), .chan_wrap = P8(4),
        .owner = P32(5), .wq_head = P32(6), .wq_next = P32(7),
        .create = P64(8), .t_inject = P64(9), .t_done = P64(10), .blocking = P64(11), .want = P64(12),
        .src = P32(13), .dst = P32(14), .job = P32(15), .hops = P32(16), .arr = P32(17), .pk_i = P32(18), .pk_rec = P32(19),
        .rec_next = P32(20), .rec_ntau = P32(21), .rec_rel = P32(22), .rec_end = P32(23), .hop = P64(24),
        .wheel = P32(25), .ev_next = P32(26), .ev_item = P32(27),
        .free_at = P64(28), .next_wake = P64(29),
        .job_left = P64(30), .comp_job = P64(31), .comp_cycle = P64(32), .link_flits = P64(33),
        .dirty = P32(34), .dlv = P32(35), .is_dirty = P8(36), .req = P32(37), .pkey = P64(38), .reqch = P32(39), .ev_aux = P32(40),
        .rnext = P32(41), .via = P32(42),
    };
    int status = 0;
    s.win_lo = s.scal[K_WIN_LO];
    s.win_hi = s.scal[K_WIN_HI];
    Py_BEGIN_ALLOW_THREADS
    i64 *scal = s.scal;
    for (;;) {
        i64 nxt = INT64_MAX;
        if (scal[K_PENDING] > 0) {
            for (i64 t = scal[K_NOW];; t++) if (s.wheel[t & (s.W - 1)] >= 0) { nxt = t; break; }
        }
        if (scal[K_ARR_PTR] < scal[K_ARR_LEN]) {
            i64 a = s.create[s.arr[scal[K_ARR_PTR]]];
            if (a < nxt) nxt = a;
        }
        i64 check = nxt < until ? nxt : until;  /* worms wait and nothing was granted for `deadlock` cycles */
        if (scal[K_N_WAIT] > 0 && check > scal[K_LAST_MOVE] + s.deadlock) {
            scal[K_NOW] = scal[K_LAST_MOVE] + s.deadlock;
            status = 2;
            break;
        }
        if (nxt >= until) {
            if (scal[K_NOW] < until) scal[K_NOW] = until;
            break;
        }
        scal[K_NOW] = nxt;
        int r = pk_time(&s, nxt);
        if (scal[K_OVERFLOW]) { status = 3; break; }
        scal[K_NOW] = nxt + 1;
        if (r && stop) { status = 1; break; }
    }
    Py_END_ALLOW_THREADS
    release_bufs(&bufs);
    return PyLong_FromLong(status);
}

static PyMethodDef methods[] = {
    {"flit_run", flit_run, METH_VARARGS, "Run the flit-level engine on the given state arrays."},
    {"packet_run", packet_run, METH_VARARGS, "Run the packet-level engine on the given state arrays."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_cengine", "Compiled engines of topoalloc.network.", -1, methods};

PyMODINIT_FUNC PyInit__cengine(void) { return PyModule_Create(&module); }
