// SPDX-License-Identifier: LGPL-2.1-or-later
/*
 * Record dispatch: what the rings deliver (samples, exits, forks, names, losses) becomes
 * queue entries; entries leave the queue in time order into the target's pairing.
 */
#ifdef HAVE_CONFIG_H
#include "config.h"
#endif

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state.h"
#include "intake.h"
#include "targets.h"

static int push(struct gil_recorder *rec, const struct gil_qent *e)
{
	if (gil_ordered_push(&rec->queue, e) < 0) {
		rec_set_err(rec, "out of memory");
		return -1;
	}
	return 0;
}

/*
 * Which GIL an event is of (3.12+): the interpreter's own when its ceval.gil points at its
 * _gil, else the main interpreter's (a subinterpreter that shares it). An event that did not
 * read it (before 3.12, a site without the thread state, another thread's state) is of the
 * thread's last GIL.
 */
static void which_gil(const struct gil_recorder *rec, const struct gil_event *ev,
		      struct gil_qent *e)
{
	const struct object *o = e->obj >= 0 ? &rec->objects[e->obj] : NULL;

	e->gil = e->interp = GIL_ID_UNKNOWN;
	if (!ev->has_interp || ev->frame.other_thread || !ev->gil || !o || !o->attrib ||
	    ev->interp_id >= GIL_ID_UNKNOWN)
		return;
	e->interp = (uint32_t)ev->interp_id;
	e->gil = ev->gil == ev->interp + (uint64_t)o->attrib->layout.interp_own_gil ? e->interp : 0;
}

/*
 * The native caller of an entry (elf/callers.h): its return address, 1 for the interpreter's
 * own transition, 0 when not read. A pure walk of what the probe read, against the proven
 * object's frame rules: nothing is read from the process or a file here.
 */
static void native_caller(const struct gil_recorder *rec, const struct gil_event *ev,
			  struct gil_qent *e)
{
	const struct object *o = e->obj >= 0 ? &rec->objects[e->obj] : NULL;
	uint64_t addr = 0;

	e->native = 0;
	if (!ev->has_pc || !o || !o->callers || !rec->vaddr_of_probe[ev->probe] ||
	    (e->ev != GIL_EV_TAKE_ENTRY && e->ev != GIL_EV_DROP_ENTRY))
		return;
	switch (gil_callers_walk(o->callers, rec->vaddr_of_probe[ev->probe], ev->pc, ev->lr,
				 ev->stk, ev->nstk, &addr)) {
	case GIL_CALLER_NATIVE:
		e->native = addr > 1 ? addr : 0;
		break;
	case GIL_CALLER_OWN:
		e->native = 1;
		break;
	default:
		break;
	}
}

static const struct gil_sample_id *sample_id_at_end(const struct perf_event_header *h)
{
	if (h->size < sizeof(*h) + sizeof(struct gil_sample_id))
		return NULL;
	return (const void *)((const char *)h + h->size - sizeof(struct gil_sample_id));
}

int rec_on_record(void *ctx, int cpu, const struct perf_event_header *h)
{
	struct gil_recorder *rec = ctx;
	const struct gil_sample_id *sid;
	struct gil_event ev;
	struct gil_qent e;
	struct target *t;
	const uint32_t *u;
	const char *comm;

	memset(&e, 0, sizeof(e));
	switch (h->type) {
	case PERF_RECORD_SAMPLE:
		if (gil_decode_sample(rec->dec, h, &ev) < 0) {
			rec->unknown++;
			return 0;
		}
		/* _Py_HandlePending without a drop request: it does not release the GIL */
		if (rec->probes->v[ev.probe].on_request && ev.req != 1)
			return 0;
		e.type = Q_GIL;
		e.ts = ev.ts;
		e.pid = ev.pid;
		e.tid = ev.tid;
		e.ev = rec->ev_of_probe[ev.probe];
		e.obj = rec->obj_of_probe[ev.probe];
		if (e.ev == GIL_EV_MARK) {
			/* a step mark: its number rides in code */
			e.code = (uint64_t)(ev.has_step && ev.step >= 0 ? ev.step : -1);
			rec->events++;
			return push(rec, &e);
		}
		/* the strings point into the ring: name the function now */
		if (ev.has_frame && rec->fntab) {
			e.fn = gil_fntab_intern(rec->fntab, &ev.frame);
		} else if (e.ev == GIL_EV_TAKE_ENTRY && rec->coderead) {
			/*
			 * a wait is named by the thread's last release; the code object read here
			 * is looked up only for a release that could not read it (rec_process_one)
			 */
			e.fn = GIL_FN_PREVIOUS;
			if (ev.has_code && ev.frame.frame && !ev.frame.other_thread) {
				e.code = ev.code;
				e.frame = ev.frame.frame;
			}
		} else if (ev.has_code && rec->coderead && rec->obj_of_probe[ev.probe] >= 0 &&
			   rec->objects[rec->obj_of_probe[ev.probe]].attrib) {
			e.fn = gil_coderead_fn(rec->coderead, rec->fntab,
					       &rec->objects[rec->obj_of_probe[ev.probe]].attrib->layout,
					       (pid_t)ev.pid, &ev.frame, ev.code, ev.ts);
		}
		if (e.ev == GIL_EV_DROP_ENTRY && ev.req >= 0)
			e.reason = ev.req ? GIL_REASON_FORCED : GIL_REASON_VOLUNTARY;
		/* another thread's state was read: the thread's next take names this release */
		if (e.ev == GIL_EV_DROP_ENTRY && e.fn && e.fn != GIL_FN_PREVIOUS &&
		    ev.frame.other_thread)
			e.fn |= GIL_FN_DEFER;
		which_gil(rec, &ev, &e);
		native_caller(rec, &ev, &e);
		rec->events++;
		return push(rec, &e);
	case PERF_RECORD_LOST:
		/* struct { header; u64 id; u64 lost; sample_id } */
		sid = sample_id_at_end(h);
		e.type = Q_LOST;
		e.cpu = cpu;
		e.count = ((const uint64_t *)(h + 1))[1];
		e.ts = sid ? sid->time : rec->horizon;
		/* already reported from the events' own counts (rec_report_pending_lost) */
		if (rec->synth[cpu]) {
			uint64_t a = e.count < rec->synth[cpu] ? e.count : rec->synth[cpu];

			rec->synth[cpu] -= a;
			e.count -= a;
			if (!e.count)
				return 0;
		}
		rec->lost += e.count;
		rec->lost_per_cpu[cpu] += e.count;
		return push(rec, &e);
	case PERF_RECORD_EXIT:
		/* struct { header; u32 pid, ppid, tid, ptid; u64 time; sample_id } */
		u = (const uint32_t *)(h + 1);
		e.type = Q_EXIT;
		e.pid = u[0];
		e.tid = u[2];
		e.ts = *(const uint64_t *)(u + 4);
		return push(rec, &e);
	case PERF_RECORD_COMM:
		/* struct { header; u32 pid, tid; char comm[]; sample_id }: a thread renamed itself */
		u = (const uint32_t *)(h + 1);
		comm = (const char *)(u + 2);
		t = rec_target_of(rec, (pid_t)u[0]);
		sid = sample_id_at_end(h);
		if (t && t->state != T_DONE && t->pairing)
			gil_sinks_thread(t->sinks, (int32_t)u[1], comm, sid ? sid->time : 0);
		return 0;
	case PERF_RECORD_FORK:
		/* struct { header; u32 pid, ppid, tid, ptid; u64 time }: read the new thread's name
		 * now, while it surely exists. */
		u = (const uint32_t *)(h + 1);
		/* A new process, not a thread: remember whose child it is. Its parent may not be a
		 * target yet: a forkserver, exec'd by a target, forks workers before its own first
		 * events (queued, in time order) have made it one; its workers are adopted when
		 * their first events come, after their parent's. File-wide events see every fork
		 * on the host: there only a known target's children are noted. */
		if (u[0] != u[1] && (!rec_file_wide(rec) || rec_target_of(rec, (pid_t)u[1]))) {
			rec->forks[rec->next_fork].pid = (pid_t)u[0];
			rec->forks[rec->next_fork].parent = (pid_t)u[1];
			rec->forks[rec->next_fork].ts = *(const uint64_t *)(u + 4);
			rec->next_fork = (rec->next_fork + 1) % GIL_ARRAY_SIZE(rec->forks);
			return 0;
		}
		t = rec_target_of(rec, (pid_t)u[0]);
		
		if (t && t->state == T_LIVE && !*rec_name_of(t, (int32_t)u[2])) {
			char nm[17];

			/* a thread starts with its creator's name; a later change comes as COMM */
			if (gil_proc_comm(t->pid, (pid_t)u[2], nm, sizeof(nm)) < 0)
				snprintf(nm, sizeof(nm), "%s", rec_name_of(t, (int32_t)u[3])[0]
								   ? rec_name_of(t, (int32_t)u[3])
								   : t->comm);
			rec_remember_name(t, (int32_t)u[2], nm);
		}
		return 0;
	case PERF_RECORD_THROTTLE:
		rec->throttled++;
		return 0;
	default:
		return 0;
	}
}


int rec_process_one(void *ctx, const struct gil_qent *e)
{
	struct gil_recorder *rec = ctx;
	struct target *t;
	char comm[17] = "";
	size_t i;
	uint32_t fn, native;
	int r;

	if (e->type == Q_LOST) {
		for (i = 0; i < rec->nr_targets; i++) {
			t = rec->targets[i];
			if (t->state == T_DONE || !t->pairing)
				continue;
			gil_pairing_lost(t->pairing);
			if (gil_sinks_lost(t->sinks, e->cpu, e->count, e->ts) < 0)
				goto werr;
		}
		return 0;
	}
	t = rec_target_of(rec, (pid_t)e->pid);
	if (!t && e->type == Q_GIL && (rec->state == R_STARTED || rec->state == R_STOPPED)) {
		t = rec_adopt_child(rec, (pid_t)e->pid, e->ts);
		/* a step mark alone does not make a process a target: its GIL events do */
		if (!t && !rec->err[0] && rec_file_wide(rec) && e->obj >= 0 &&
		    e->ev != GIL_EV_MARK)
			t = rec_adopt_process(rec, (pid_t)e->pid, e->obj, e->ts);
		if (!t && rec->err[0])
			return -1;
	}
	if (!t || t->state == T_DONE || !t->pairing) {
		if (e->type == Q_GIL)
			rec->unknown++;
		return 0;
	}
	if (e->type == Q_EXIT) {
		rec_unguard_thread(t, (pid_t)e->tid);
		/* before Linux 6.12 the guards do not reach a forked child's threads: one exiting
		 * may have taken the child's probes away with it (gil_rings_guard), silently */
		if (e->tid != e->pid && t->inherited && rec->guard_kind != GIL_GUARD_NO_SWAP &&
		    !rec_file_wide(rec))
			t->unguarded_exits++;
		if (gil_pairing_exit(t->pairing, (int32_t)e->tid, e->ts) < 0 ||
		    gil_sinks_exit(t->sinks, (int32_t)e->tid, e->ts) < 0)
			goto werr;
		return 0;
	}
	if (e->ev == GIL_EV_MARK) {
		t->marks++;
		if (gil_sinks_step(t->sinks, (int32_t)e->tid, e->ts, (int64_t)e->code) < 0)
			goto werr;
		return 0;
	}
	t->events++;
	fn = e->fn;
	/* the thread's last release could not read its function: this take's is the same */
	if (e->ev == GIL_EV_TAKE_ENTRY && e->code && e->obj >= 0 && rec->objects[e->obj].attrib &&
	    gil_pairing_name_wanted(t->pairing, (int32_t)e->tid)) {
		struct gil_frame_raw raw = { .tstate = 1, .frame = e->frame };

		fn = gil_coderead_fn(rec->coderead, rec->fntab,
				     &rec->objects[e->obj].attrib->layout, (pid_t)e->pid, &raw,
				     e->code, e->ts);
		if (!fn) {
			rec_set_err(rec, "out of memory");
			return -1;
		}
	}
	native = 0;
	if (e->native) {
		t->nat.read++;
		native = e->native == 1 ? GIL_NATIVE_OWN :
					  rec_native_id(rec->namer, &t->nat, t->pid, e->native);
	}
	r = gil_pairing_event_gil(t->pairing, (int32_t)e->tid, (enum gil_ev)e->ev, e->ts, fn,
				  e->reason, e->gil, e->interp, native);
	if (r < 0)
		goto werr;
	if (r == 1) {
		/* Names were read when the thread was found or created; /proc is the fallback. */
		snprintf(comm, sizeof(comm), "%s", rec_name_of(t, (int32_t)e->tid));
		if (!comm[0]) {
			if (gil_proc_comm(t->pid, (pid_t)e->tid, comm, sizeof(comm)) < 0)
				snprintf(comm, sizeof(comm), "%s", t->comm);
			rec_remember_name(t, (int32_t)e->tid, comm);
		}
		/* a name the program gave before the thread's first event stays the last word */
		if (!rec_was_given(t, (int32_t)e->tid) &&
		    gil_sinks_thread(t->sinks, (int32_t)e->tid, comm, e->ts) < 0)
			goto werr;
	}
	return 0;
werr:
	t = t ? t : rec->targets[i];
	rec_set_err(rec, "%s (recording stopped; the file is readable up to the last complete record)",
		gil_sinks_error(t->sinks));
	return -1;
}

/*
 * Losses the kernel counted but could not report yet: a ring that was full keeps its count until
 * its next record, which never comes once the events stop. The events' own counts
 * (PERF_FORMAT_LOST) hold them; report the difference as lost records at @ts. Threads that
 * inherited events keep their counts in the kernel's child events: those stay unseen here.
 */
int rec_report_pending_lost(struct gil_recorder *rec, uint64_t ts)
{
	int ncpu = gil_rings_nr_cpus(rec->rings), c;
	uint64_t *k;
	struct gil_qent e;
	size_t i;
	int ret = 0;

	k = calloc((size_t)ncpu, sizeof(*k));
	if (!k)
		return 0;
	memcpy(k, rec->klost_closed, (size_t)ncpu * sizeof(*k));
	for (i = 0; i < rec->nr_objects; i++)
		rec_fdset_lost(rec, &rec->objects[i].fds, k);
	for (i = 0; i < rec->nr_targets; i++) {
		rec_fdset_lost(rec, &rec->targets[i]->fds, k);
		rec_fdset_lost(rec, &rec->targets[i]->exec_fds, k);
	}
	for (c = 0; c < ncpu && ret == 0; c++) {
		if (k[c] <= rec->lost_per_cpu[c])
			continue;
		memset(&e, 0, sizeof(e));
		e.type = Q_LOST;
		e.cpu = c;
		e.count = k[c] - rec->lost_per_cpu[c];
		e.ts = ts;
		rec->lost += e.count;
		rec->lost_per_cpu[c] += e.count;
		rec->synth[c] += e.count;
		ret = push(rec, &e);
	}
	free(k);
	return ret;
}
