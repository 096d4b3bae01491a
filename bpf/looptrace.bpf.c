// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Role events from profile probe points (uprobe, uretprobe, USDT).
 *
 * Every probe point carries its role and argument layout in the attach
 * cookie (see events.h), so the hot path is: filter by tgid/thread, read
 * the arguments, reserve + submit one fixed-size record without waking
 * user space unless the ring is filling up.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include <bpf/usdt.bpf.h>
#include "looptrace/events.h"

char LICENSE[] SEC("license") = "Dual BSD/GPL";

/* Set between open() and load() by the loader. */
const volatile __u32 target_tgid = 0;
const volatile __u32 thread_filter = LT_THREADS_MAIN;
/* Force a wakeup once this many bytes wait in the ring (adaptive wakeup). */
const volatile __u64 wakeup_bytes = 1 << 20;

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 8 << 20); /* resized by the loader */
} events SEC(".maps");

/* Method beats: a ring of lt_beat records in an mmapable array (see events.h). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__uint(max_entries, 1 << 20); /* resized by the loader; a power of two */
	__type(key, __u32);
	__type(value, struct lt_beat);
} beats SEC(".maps");

__u64 beat_head; /* next beat slot (monotonic; slot = head & (capacity - 1)) */
const volatile __u64 beat_mask = (1 << 20) - 1;

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LT_STAT_MAX);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/*
 * Addresses whose text was already sent (see LT_RECORD_STRING): a direct-mapped
 * cache in .bss, read without a helper call. A collision or a race between CPUs only
 * re-sends a string; user space keeps the authoritative table.
 */
#define LT_STRING_CACHE_SLOTS 4096
__u64 sent_strings[LT_STRING_CACHE_SLOTS];

static __always_inline __u32 string_slot(__u64 address)
{
	return (__u32)((address >> 3) ^ (address >> 15)) & (LT_STRING_CACHE_SLOTS - 1);
}

static __always_inline void count(__u32 index)
{
	__u64 *value = bpf_map_lookup_elem(&stats, &index);

	if (value)
		*value += 1;
}

/*
 * Returns the tid when this hit belongs to a watched thread, else 0. Enqueues are
 * watched on every thread: other threads post to the main looper's queue.
 */
static __always_inline __u32 watched_tid(__u64 cookie)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	__u32 tid = (__u32)pid_tgid;

	/* The kernel's pid filter on the perf event is not relied upon. */
	if (tgid != target_tgid) {
		count(LT_STAT_OTHER_PROCESS);
		return 0;
	}
	if (thread_filter == LT_THREADS_MAIN && tid != tgid &&
	    LT_COOKIE_ROLE(cookie) != LT_ROLE_MESSAGE_ENQUEUE) {
		count(LT_STAT_OTHER_THREAD);
		return 0;
	}
	return tid;
}

/*
 * Registers are copied to the stack first: a switch on the source would let clang
 * turn the reads into ctx pointer arithmetic, which the verifier rejects.
 */
#define LT_UPROBE_SOURCES 7 /* 6 parameters + return value */

static __always_inline void uprobe_registers(struct pt_regs *ctx, __u64 regs[LT_UPROBE_SOURCES])
{
	regs[0] = PT_REGS_PARM1(ctx);
	regs[1] = PT_REGS_PARM2(ctx);
	regs[2] = PT_REGS_PARM3(ctx);
	regs[3] = PT_REGS_PARM4(ctx);
	regs[4] = PT_REGS_PARM5(ctx);
	regs[5] = ctx->r9; /* libbpf 1.1 has no PT_REGS_PARM6 */
	regs[6] = PT_REGS_RC(ctx);
}

static __always_inline void write_beat(__u64 cookie, __u32 tid, __u64 now, const __u64 *values)
{
	__u64 index = __sync_fetch_and_add(&beat_head, 1);
	__u32 slot = index & beat_mask;
	struct lt_beat *beat = bpf_map_lookup_elem(&beats, &slot);

	if (!beat)
		return;
	beat->ts_ns = now;
	beat->id = LT_COOKIE_NARGS(cookie) ? values[0] : LT_COOKIE_PROBE_ID(cookie);
	beat->aux = values[1];
	beat->tid = tid;
	beat->probe_id = LT_COOKIE_PROBE_ID(cookie);
	beat->kind = LT_COOKIE_ROLE(cookie) == LT_ROLE_METHOD_ENTER ? LT_BEAT_ENTER : LT_BEAT_EXIT;
}

static __always_inline int is_beat(__u64 cookie)
{
	__u32 role = LT_COOKIE_ROLE(cookie);

	return role == LT_ROLE_METHOD_ENTER || role == LT_ROLE_METHOD_EXIT;
}

static __always_inline struct lt_probe_record *reserve(__u64 cookie, __u32 tid, __u64 now)
{
	struct task_struct *task = bpf_get_current_task_btf();
	struct lt_probe_record *rec;

	rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
	if (!rec) {
		count(LT_STAT_RINGBUF_FULL);
		return 0;
	}
	rec->header.type = LT_RECORD_PROBE;
	rec->header.size = sizeof(*rec);
	rec->ts_ns = now;
	rec->tgid = target_tgid;
	rec->tid = tid;
	rec->probe_id = LT_COOKIE_PROBE_ID(cookie);
	rec->role = LT_COOKIE_ROLE(cookie);
	rec->nargs = LT_COOKIE_NARGS(cookie);
	rec->cpu = bpf_get_smp_processor_id();
	rec->beat_index = beat_head;
	rec->thread_cpu_ns = task->se.sum_exec_runtime;
	return rec;
}

/* Sends the text at `address` unless it was sent before; runs before the probe record
 * is reserved, so user space always sees the text first. */
static __always_inline void send_string_once(__u64 address)
{
	struct lt_string_record *rec;
	__u32 slot = string_slot(address);
	long n;

	if (!address || sent_strings[slot] == address)
		return;
	rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
	if (!rec) {
		count(LT_STAT_RINGBUF_FULL);
		return;
	}
	n = bpf_probe_read_user_str(rec->text, sizeof(rec->text), (const void *)address);
	if (n <= 0) {
		/* not resident: user space reads it from the process instead */
		bpf_ringbuf_discard(rec, BPF_RB_NO_WAKEUP);
		count(LT_STAT_STRING_READ_FAILED);
		return;
	}
	rec->header.type = LT_RECORD_STRING;
	rec->header.size = sizeof(*rec);
	rec->address = address;
	rec->tgid = target_tgid;
	rec->length = n - 1;
	bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
	sent_strings[slot] = address;
}

static __always_inline void send_strings(__u64 cookie, const __u64 *values)
{
	__u32 mask = LT_COOKIE_STRING_MASK(cookie);
	__u32 i;

	if (!mask)
		return;
#pragma unroll
	for (i = 0; i < LT_MAX_ARGS; i++)
		if (mask & (1u << i))
			send_string_once(values[i]);
}

static __always_inline void submit(struct lt_probe_record *rec)
{
	__u64 flags = BPF_RB_NO_WAKEUP;

	if (bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes)
		flags = BPF_RB_FORCE_WAKEUP;
	bpf_ringbuf_submit(rec, flags);
}

/* A method beat goes to the beat ring; every other role to the ring buffer. */
static __always_inline void emit(__u64 cookie, __u32 tid, __u64 now, const __u64 *values)
{
	struct lt_probe_record *rec;
	__u32 i;

	if (is_beat(cookie)) {
		write_beat(cookie, tid, now, values);
		return;
	}
	rec = reserve(cookie, tid, now);
	if (!rec)
		return;
#pragma unroll
	for (i = 0; i < LT_MAX_ARGS; i++)
		rec->args[i] = values[i];
	submit(rec);
}

static __always_inline int handle_uprobe(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 values[LT_MAX_ARGS] = {};
	__u64 cookie;
	__u32 tid, nargs, i;

	cookie = bpf_get_attach_cookie(ctx);
	tid = watched_tid(cookie);
	if (!tid)
		return 0;
	nargs = LT_COOKIE_NARGS(cookie);
	if (nargs) {
		__u64 regs[LT_UPROBE_SOURCES];

		uprobe_registers(ctx, regs);
#pragma unroll
		for (i = 0; i < LT_MAX_ARGS; i++) {
			__u32 source = LT_COOKIE_ARG_SOURCE(cookie, i);

			if (source == LT_ARG_SOURCE_RETVAL)
				source = LT_UPROBE_SOURCES - 1;
			if (i < nargs && source < LT_UPROBE_SOURCES)
				values[i] = regs[source];
		}
		send_strings(cookie, values);
	}
	emit(cookie, tid, now, values);
	return 0;
}

/* Attached per probe point through a perf event (fallback, and USDT-less kernels). */
SEC("uprobe")
int lt_uprobe(struct pt_regs *ctx)
{
	return handle_uprobe(ctx);
}

/*
 * The same, loaded with the uprobe_multi attach type (kernel >= 6.6): one link for
 * all points of a binary, attached and detached in one step. libbpf 1.1 cannot
 * name the section, so the loader sets the attach type before load.
 */
SEC("uprobe")
int lt_uprobe_multi(struct pt_regs *ctx)
{
	return handle_uprobe(ctx);
}

/*
 * Fast path for method beats whose identity is the first argument (id and address
 * hooks): no cookie, no argument table, nothing but the beat. About a third of the
 * generic path's added cost, which matters at a million beats per second.
 */
static __always_inline int fast_beat(struct pt_regs *ctx, __u8 kind)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	struct lt_beat *beat;
	__u64 index;
	__u32 slot;

	if ((pid_tgid >> 32) != target_tgid)
		return 0;
	if (thread_filter == LT_THREADS_MAIN) {
		if (tid != target_tgid)
			return 0;
		/* one writer (the main thread): no locked instruction needed */
		index = beat_head;
		beat_head = index + 1;
	} else {
		index = __sync_fetch_and_add(&beat_head, 1);
	}
	slot = index & beat_mask;
	beat = bpf_map_lookup_elem(&beats, &slot);
	if (!beat)
		return 0;
	beat->ts_ns = bpf_ktime_get_ns();
	beat->id = PT_REGS_PARM1(ctx);
	beat->aux = 0;
	beat->tid = tid;
	beat->probe_id = LT_FAST_BEAT_PROBE;
	beat->kind = kind;
	return 0;
}

/* uprobe_multi programs (the loader sets the attach type), like lt_uprobe_multi. */
SEC("uprobe")
int lt_beat_enter(struct pt_regs *ctx)
{
	return fast_beat(ctx, LT_BEAT_ENTER);
}

SEC("uprobe")
int lt_beat_exit(struct pt_regs *ctx)
{
	return fast_beat(ctx, LT_BEAT_EXIT);
}

SEC("usdt")
int lt_usdt(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 values[LT_MAX_ARGS] = {};
	__u64 cookie;
	__u32 tid, nargs, i;
	long value;

	cookie = bpf_usdt_cookie(ctx);
	tid = watched_tid(cookie);
	if (!tid)
		return 0;
	nargs = LT_COOKIE_NARGS(cookie);
#pragma unroll
	for (i = 0; i < LT_MAX_ARGS; i++) {
		value = 0;
		if (i < nargs && bpf_usdt_arg(ctx, LT_COOKIE_ARG_SOURCE(cookie, i), &value))
			count(LT_STAT_ARG_READ_FAILED);
		values[i] = value;
	}
	send_strings(cookie, values);
	emit(cookie, tid, now, values);
	return 0;
}

/* ---- thread state: sched_switch, sched_wakeup, cpu-clock samples, SIGQUIT ---- */

#define LT_STACK_DEPTH 127

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__uint(key_size, sizeof(__u32));
	__uint(value_size, LT_STACK_DEPTH * sizeof(__u64));
} stack_traces SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 4096);
	__type(key, __u32);
	__type(value, struct lt_thread_state);
} thread_states SEC(".maps");

/* --dwarf-unwind: copy this many stack bytes (0 = off). */
const volatile __u32 dwarf_stack_bytes = 0;

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16);
	__type(key, __u32);
	__type(value, struct lt_stack_copy);
} stack_copies SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct lt_stack_copy);
} stack_scratch SEC(".maps");

/* Copies the user registers and the top of the user stack of `task` (which is current). */
static __always_inline void copy_user_stack(struct task_struct *task, __u32 tid, __u64 now)
{
	struct lt_stack_copy *copy;
	struct pt_regs *regs;
	__u32 zero = 0;
	__u64 sp;

	if (!dwarf_stack_bytes)
		return;
	copy = bpf_map_lookup_elem(&stack_scratch, &zero);
	if (!copy)
		return;
	regs = (struct pt_regs *)bpf_task_pt_regs(task);
	if (!regs)
		return;
	copy->ts_ns = now;
	copy->regs[0] = BPF_CORE_READ(regs, ax);
	copy->regs[1] = BPF_CORE_READ(regs, dx);
	copy->regs[2] = BPF_CORE_READ(regs, cx);
	copy->regs[3] = BPF_CORE_READ(regs, bx);
	copy->regs[4] = BPF_CORE_READ(regs, si);
	copy->regs[5] = BPF_CORE_READ(regs, di);
	copy->regs[6] = BPF_CORE_READ(regs, bp);
	copy->regs[7] = BPF_CORE_READ(regs, sp);
	copy->regs[8] = BPF_CORE_READ(regs, r8);
	copy->regs[9] = BPF_CORE_READ(regs, r9);
	copy->regs[10] = BPF_CORE_READ(regs, r10);
	copy->regs[11] = BPF_CORE_READ(regs, r11);
	copy->regs[12] = BPF_CORE_READ(regs, r12);
	copy->regs[13] = BPF_CORE_READ(regs, r13);
	copy->regs[14] = BPF_CORE_READ(regs, r14);
	copy->regs[15] = BPF_CORE_READ(regs, r15);
	copy->regs[16] = BPF_CORE_READ(regs, ip);
	copy->valid_mask = (1u << LT_UNWIND_REGS) - 1;
	sp = copy->regs[7];
	copy->size = 0;
	/*
	 * Copy as much as the stack mapping holds above sp, up to 16 KiB: a read that
	 * crosses the top of the stack fails, so try shrinking sizes.
	 */
	if (bpf_probe_read_user(copy->bytes, LT_MAX_STACK_COPY, (const void *)sp) == 0)
		copy->size = LT_MAX_STACK_COPY;
	else if (bpf_probe_read_user(copy->bytes, 12288, (const void *)sp) == 0)
		copy->size = 12288;
	else if (bpf_probe_read_user(copy->bytes, 8192, (const void *)sp) == 0)
		copy->size = 8192;
	else if (bpf_probe_read_user(copy->bytes, 6144, (const void *)sp) == 0)
		copy->size = 6144;
	else if (bpf_probe_read_user(copy->bytes, 4096, (const void *)sp) == 0)
		copy->size = 4096;
	else if (bpf_probe_read_user(copy->bytes, 3072, (const void *)sp) == 0)
		copy->size = 3072;
	else if (bpf_probe_read_user(copy->bytes, 2048, (const void *)sp) == 0)
		copy->size = 2048;
	else if (bpf_probe_read_user(copy->bytes, 1024, (const void *)sp) == 0)
		copy->size = 1024;
	bpf_map_update_elem(&stack_copies, &tid, copy, BPF_ANY);
}

static __always_inline int in_target(struct task_struct *task)
{
	return BPF_CORE_READ(task, tgid) == target_tgid;
}

static __always_inline struct lt_thread_state *state_of(__u32 tid)
{
	struct lt_thread_state *st = bpf_map_lookup_elem(&thread_states, &tid);

	if (!st) {
		struct lt_thread_state fresh = {
			.state = LT_STATE_RUNNING,
			.kstack_id = -1,
			.ustack_id = -1,
			.sample_kstack_id = -1,
			.sample_ustack_id = -1,
		};

		bpf_map_update_elem(&thread_states, &tid, &fresh, BPF_NOEXIST);
		st = bpf_map_lookup_elem(&thread_states, &tid);
	}
	return st;
}

static __always_inline void emit_switch(__u64 now, __u32 tid, __u32 kind, __u32 state,
					__s32 kstack, __s32 ustack)
{
	struct lt_switch_record *rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);

	if (!rec) {
		count(LT_STAT_RINGBUF_FULL);
		return;
	}
	rec->header.type = LT_RECORD_SWITCH;
	rec->header.size = sizeof(*rec);
	rec->ts_ns = now;
	rec->tid = tid;
	rec->kind = kind;
	rec->state = state;
	rec->kstack_id = kstack;
	rec->ustack_id = ustack;
	rec->pad = 0;
	bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
}

SEC("tp_btf/sched_switch")
int BPF_PROG(lt_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next,
	     unsigned int prev_state)
{
	/* Filter by tgid first: most switches on the machine are not the target's. */
	int prev_in = prev->tgid == target_tgid;
	int next_in = next->tgid == target_tgid;
	__u64 now;

	if (!prev_in && !next_in)
		return 0;
	now = bpf_ktime_get_ns();
	if (prev_in) {
		__u32 tid = prev->pid;
		struct lt_thread_state *st = state_of(tid);
		/* prev is current here: its stacks are the ones it blocked with */
		__s32 kstack = bpf_get_stackid(ctx, &stack_traces, 0);
		__s32 ustack = bpf_get_stackid(ctx, &stack_traces, BPF_F_USER_STACK);

		if (kstack < 0 && ustack < 0)
			count(LT_STAT_STACK_FAILED);
		if (st) {
			st->since_ns = now;
			st->state = prev_state;
			st->kstack_id = kstack;
			st->ustack_id = ustack;
			st->switches++;
		}
		if (tid == target_tgid) {
			emit_switch(now, tid, LT_SWITCH_OUT, prev_state, kstack, ustack);
			copy_user_stack(prev, tid, now);
		}
	}
	if (next_in) {
		__u32 tid = next->pid;
		struct lt_thread_state *st = state_of(tid);

		if (st) {
			st->since_ns = now;
			st->state = LT_STATE_RUNNING;
		}
		if (tid == target_tgid)
			emit_switch(now, tid, LT_SWITCH_IN, 0, -1, -1);
	}
	return 0;
}

/*
 * sched_waking runs in the waker's context; sched_wakeup may run on the wakee's CPU from an
 * IPI (remote wakeups), where "current" is whatever ran there, often the idle task.
 */
SEC("tp_btf/sched_waking")
int BPF_PROG(lt_sched_waking, struct task_struct *p)
{
	struct task_struct *waker;
	struct lt_wakeup_record *rec;

	if (p->pid != target_tgid)
		return 0;
	waker = bpf_get_current_task_btf();
	rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
	if (!rec) {
		count(LT_STAT_RINGBUF_FULL);
		return 0;
	}
	rec->header.type = LT_RECORD_WAKEUP;
	rec->header.size = sizeof(*rec);
	rec->ts_ns = bpf_ktime_get_ns();
	rec->wakee_tid = p->pid;
	rec->waker_tid = waker->pid;
	rec->waker_tgid = waker->tgid;
	rec->pad = 0;
	bpf_get_current_comm(rec->waker_comm, sizeof(rec->waker_comm));
	bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
	return 0;
}

#define LT_SIGQUIT 3

SEC("tp_btf/signal_generate")
int BPF_PROG(lt_signal_generate, int sig, struct kernel_siginfo *info, struct task_struct *task,
	     int group, int result)
{
	struct task_struct *sender;
	struct lt_signal_record *rec;

	if (sig != LT_SIGQUIT || task->tgid != target_tgid)
		return 0;
	sender = bpf_get_current_task_btf();
	rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
	if (!rec) {
		count(LT_STAT_RINGBUF_FULL);
		return 0;
	}
	rec->header.type = LT_RECORD_SIGNAL;
	rec->header.size = sizeof(*rec);
	rec->ts_ns = bpf_ktime_get_ns();
	rec->sig = sig;
	rec->result = result;
	rec->target_tid = task->pid;
	rec->sender_tgid = sender->tgid;
	rec->sender_tid = sender->pid;
	rec->pad = 0;
	bpf_get_current_comm(rec->sender_comm, sizeof(rec->sender_comm));
	/* an ANR confirmation is urgent: wake the reader */
	bpf_ringbuf_submit(rec, BPF_RB_FORCE_WAKEUP);
	return 0;
}

/* cpu-clock samples of the main thread: its stack while it runs (busy ANRs). */
SEC("perf_event")
int lt_cpu_sample(struct bpf_perf_event_data *ctx)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tid = (__u32)pid_tgid;
	struct lt_thread_state *st;

	if ((pid_tgid >> 32) != target_tgid)
		return 0;
	st = state_of(tid);
	if (!st)
		return 0;
	st->sample_kstack_id = bpf_get_stackid(ctx, &stack_traces, 0);
	st->sample_ustack_id = bpf_get_stackid(ctx, &stack_traces, BPF_F_USER_STACK);
	st->sample_ns = bpf_ktime_get_ns();
	if (tid == target_tgid)
		copy_user_stack(bpf_get_current_task_btf(), tid, st->sample_ns);
	return 0;
}

/* The target's exec (looptrace run): the start of a cold startup. */
SEC("tp_btf/sched_process_exec")
int BPF_PROG(lt_process_exec, struct task_struct *p, pid_t old_pid, struct linux_binprm *bprm)
{
	struct lt_exec_record *rec;

	if (p->tgid != target_tgid)
		return 0;
	rec = bpf_ringbuf_reserve(&events, sizeof(*rec), 0);
	if (!rec) {
		count(LT_STAT_RINGBUF_FULL);
		return 0;
	}
	rec->header.type = LT_RECORD_EXEC;
	rec->header.size = sizeof(*rec);
	rec->ts_ns = bpf_ktime_get_ns();
	rec->pid = p->tgid;
	rec->pad = 0;
	bpf_get_current_comm(rec->comm, sizeof(rec->comm));
	bpf_ringbuf_submit(rec, BPF_RB_NO_WAKEUP);
	return 0;
}
