//! The process's resident memory, measured: `Options::max_rss_bytes`, the backstop of
//! `max_memory_bytes`.
//!
//! The budget is kept by the engine's estimate (visited set, links, frontier, candidates,
//! claim table), which is computed from counts and so stops a check at the same place whatever
//! the thread count. The estimate does not see what the allocator and the process add (the
//! blocks' last partly filled slots, the candidates' vectors growing by doubling, states that
//! own heap memory, thread stacks, the binary): measured against `--max-memory`, a check went
//! 2–45 % over it. So, with `max_rss_bytes`, the engine also reads the resident set size
//! (`/proc/self/statm`) where it checks the estimate (every 1024 candidates a worker makes,
//! and before the claim table and the visited set grow), and stops when the measurement passes
//! the limit first; such a stop point depends on the allocator, not only on the model.

/// Whether the resident set size plus `alloc` bytes about to be allocated exceeds `budget`
/// (false where it cannot be measured).
pub(crate) fn over(budget: u64, alloc: u64) -> bool {
    resident_bytes().is_some_and(|r| r.saturating_add(alloc) > budget)
}

/// Resident set size in bytes.
#[cfg(target_os = "linux")]
pub(crate) fn resident_bytes() -> Option<u64> {
    use std::io::Read;
    let mut buf = [0u8; 128];
    let mut f = std::fs::File::open("/proc/self/statm").ok()?;
    let n = f.read(&mut buf).ok()?;
    let text = std::str::from_utf8(&buf[..n]).ok()?;
    let pages: u64 = text.split_whitespace().nth(1)?.parse().ok()?;
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    Some(pages * u64::try_from(page).ok()?)
}

#[cfg(not(target_os = "linux"))]
pub(crate) fn resident_bytes() -> Option<u64> {
    None
}

/// The process's peak resident set size in bytes (`VmHWM`), 0 where it cannot be read.
pub(crate) fn peak_resident_bytes() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let l = s.lines().find(|l| l.starts_with("VmHWM:"))?;
            l.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(0, |kb| kb * 1024)
}

#[cfg(test)]
mod tests {
    #[test]
    fn measures_something_plausible() {
        if let Some(r) = super::resident_bytes() {
            assert!(r > 1 << 20 && r < 1 << 40, "{r}");
            assert!(super::over(1, 0));
            assert!(!super::over(u64::MAX, 0));
        }
    }
}
