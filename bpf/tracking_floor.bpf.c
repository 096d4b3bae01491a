// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * The floor of thread tracking (bench/busy_server_overhead.py): the scheduler and cpu-clock
 * programs any tool must run to see a thread's switches, wake-ups and CPU, each doing only
 * the process filter and, for the target's own events, the clock. looptrace's default mode
 * runs the same three attach points with real work in them.
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u32 target_tgid = 0;
__u64 last_ts = 0;

SEC("tp_btf/sched_switch")
int BPF_PROG(floor_sched_switch, bool preempt, struct task_struct *prev, struct task_struct *next)
{
	if (prev->tgid != target_tgid && next->tgid != target_tgid)
		return 0;
	last_ts = bpf_ktime_get_ns();
	return 0;
}

SEC("tp_btf/sched_waking")
int BPF_PROG(floor_sched_waking, struct task_struct *p)
{
	if (p->tgid != target_tgid)
		return 0;
	last_ts = bpf_ktime_get_ns();
	return 0;
}

SEC("perf_event")
int floor_cpu_sample(struct bpf_perf_event_data *ctx)
{
	if ((bpf_get_current_pid_tgid() >> 32) != target_tgid)
		return 0;
	last_ts = bpf_ktime_get_ns();
	return 0;
}
