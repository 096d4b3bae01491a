// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
/*
 * Baselines for overhead benchmarks: a probe program that does nothing, and one that does
 * only what every looptrace record must (the process filter and the clock), so a benchmark
 * can split a hit's cost into trap, filter + clock, and the rest (record, arguments, ring).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>

char LICENSE[] SEC("license") = "Dual BSD/GPL";

const volatile __u32 target_tgid = 0;
__u64 last_ts = 0;

SEC("uprobe")
int lt_empty_uprobe(void *ctx)
{
	return 0;
}

SEC("uprobe")
int lt_clock_uprobe(void *ctx)
{
	if ((bpf_get_current_pid_tgid() >> 32) != target_tgid)
		return 0;
	last_ts = bpf_ktime_get_ns();
	return 0;
}
