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

/* Returns the tid when this hit belongs to a watched thread, else 0. */
static __always_inline __u32 watched_tid(void)
{
	__u64 pid_tgid = bpf_get_current_pid_tgid();
	__u32 tgid = pid_tgid >> 32;
	__u32 tid = (__u32)pid_tgid;

	/* The kernel's pid filter on the perf event is not relied upon. */
	if (tgid != target_tgid) {
		count(LT_STAT_OTHER_PROCESS);
		return 0;
	}
	if (thread_filter == LT_THREADS_MAIN && tid != tgid) {
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

static __always_inline int handle_uprobe(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 values[LT_MAX_ARGS] = {};
	__u64 cookie;
	struct lt_probe_record *rec;
	__u32 tid, nargs, i;

	tid = watched_tid();
	if (!tid)
		return 0;
	cookie = bpf_get_attach_cookie(ctx);
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
	if (is_beat(cookie)) {
		write_beat(cookie, tid, now, values);
		return 0;
	}
	rec = reserve(cookie, tid, now);
	if (!rec)
		return 0;
#pragma unroll
	for (i = 0; i < LT_MAX_ARGS; i++)
		rec->args[i] = values[i];
	submit(rec);
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

SEC("usdt")
int lt_usdt(struct pt_regs *ctx)
{
	__u64 now = bpf_ktime_get_ns();
	__u64 values[LT_MAX_ARGS] = {};
	__u64 cookie;
	struct lt_probe_record *rec;
	__u32 tid, nargs, i;
	long value;

	tid = watched_tid();
	if (!tid)
		return 0;
	cookie = bpf_usdt_cookie(ctx);
	nargs = LT_COOKIE_NARGS(cookie);
#pragma unroll
	for (i = 0; i < LT_MAX_ARGS; i++) {
		value = 0;
		if (i < nargs && bpf_usdt_arg(ctx, LT_COOKIE_ARG_SOURCE(cookie, i), &value))
			count(LT_STAT_ARG_READ_FAILED);
		values[i] = value;
	}
	send_strings(cookie, values);
	if (is_beat(cookie)) {
		write_beat(cookie, tid, now, values);
		return 0;
	}
	rec = reserve(cookie, tid, now);
	if (!rec)
		return 0;
#pragma unroll
	for (i = 0; i < LT_MAX_ARGS; i++)
		rec->args[i] = values[i];
	submit(rec);
	return 0;
}
