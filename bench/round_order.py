"""The order of a benchmark's setups in each of its interleaved rounds."""


def round_order(setups, rnd):
    """A Williams design: over every n rounds (2n for an odd number n of setups) each setup runs
    in each position, and right after each of the others, equally often. A plain rotation keeps
    every setup behind the same one, and a run inherits what the run before it left: the shared
    server's state, its disk writes still being flushed, the caches."""
    n = len(setups)
    base, low, high = [0], 1, n - 1
    while len(base) < n:
        base.append(low)
        low += 1
        if len(base) < n:
            base.append(high)
            high -= 1
    r = rnd % (n if n % 2 == 0 else 2 * n)
    order = [(b + r) % n for b in base]
    return [setups[i] for i in (order if r < n else order[::-1])]
