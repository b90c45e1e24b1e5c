//! How much memory this process may still take: every stage checks a large allocation against
//! it first and refuses with the size, instead of aborting in the allocator.

/// Bytes of memory this process can still use: the smaller of the system's `MemAvailable`
/// (/proc/meminfo) and half the headroom under an address-space limit (`ulimit -v`: the soft
/// `Max address space` of /proc/self/limits less the process's `VmSize`). Half, because a
/// process reserves about twice the memory it touches (the allocator's per-thread arenas, a
/// buffer growing by doubling): measured, a bake whose resident peak is 212 MB fails under a
/// limit of 400 MB and runs under 500 MB. Without /proc (not Linux), 16 GiB.
pub fn available() -> usize {
    let meminfo = kib_field("/proc/meminfo", "MemAvailable:").unwrap_or(16 << 30);
    meminfo.min(address_space_headroom().map_or(usize::MAX, |h| h / 2))
}

/// The headroom under the soft address-space limit, if there is one.
fn address_space_headroom() -> Option<usize> {
    let limits = std::fs::read_to_string("/proc/self/limits").ok()?;
    let line = limits
        .lines()
        .find(|l| l.starts_with("Max address space"))?;
    let soft: usize = line
        .trim_start_matches("Max address space")
        .split_whitespace()
        .next()?
        .parse()
        .ok()?; // "unlimited" does not parse: no limit
    let used = kib_field("/proc/self/status", "VmSize:").unwrap_or(0);
    Some(soft.saturating_sub(used))
}

/// A `Field: <n> kB` line of a /proc file, in bytes.
fn kib_field(path: &str, field: &str) -> Option<usize> {
    let text = std::fs::read_to_string(path).ok()?;
    let line = text.lines().find(|l| l.starts_with(field))?;
    let kib: usize = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

#[cfg(test)]
mod tests {
    /// The reading is positive and, on Linux, at most the machine's memory.
    #[test]
    fn available_memory_is_positive_and_bounded_by_the_machine() {
        let a = super::available();
        assert!(a > 0);
        if let Some(total) = super::kib_field("/proc/meminfo", "MemTotal:") {
            assert!(a <= total, "{a} > {total}");
        }
    }
}
