//! `trc sweep`: exhaustive enumeration of CUBIC's integer arithmetic (`cubic_root`, the curve
//! part of `bictcp_update`) over large input ranges, in parallel (rayon), against exact
//! arithmetic and the real-number CUBIC curve of RFC 9438 (W(t) = C·(t−K)³ + W_max).
//!
//! Checks, per input:
//! - **overflow**: the kernel's u32/u64 (wrapping) result equals the same formula in exact
//!   128-bit arithmetic (t, 410·offs³, the u32 cast of delta, origin ± delta);
//! - **cubic_root**: |cubic_root(a) − ∛a| ≤ `ROOT_REL`·∛a + 1 (the source claims ≈0.2 % average);
//! - **curve**: the kernel's target lies within the real curve evaluated at t ± e, widened by 1
//!   packet, where e = 2/1024 s (t's truncation to 2^-10 s) + the error of K in the same unit.

use clap::Args;
use indicatif::{ProgressBar, ProgressStyle};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Instant;
use trc_model::cc::cubic::{
    cubic_root, curve, usecs_to_jiffies, BICTCP_HZ, CUBE_FACTOR, CUBE_RTT_SCALE,
};

/// Stated error bound of `cubic_root` (relative, plus one unit).
pub const ROOT_REL: f64 = 0.02;

#[derive(Args, Debug, Clone)]
pub struct SweepArgs {
    /// Largest cwnd (every cwnd from 1 is enumerated).
    #[arg(long, default_value_t = 65536)]
    pub max_cwnd: u32,
    /// Largest time since the epoch started, in ms (log-spaced grid from 0).
    #[arg(long, default_value_t = 300_000)]
    pub max_elapsed_ms: u32,
    /// Largest delay_min in µs (log-spaced grid from 0).
    #[arg(long, default_value_t = 4_000_000)]
    pub max_delay_us: u32,
    /// Also enumerate every cubic_root input below 2^N exhaustively (plus a log grid up to 2^64).
    #[arg(long, default_value_t = 26)]
    pub root_bits: u32,
    /// Worker threads (default: all cores; at most 4 per core).
    #[arg(long, value_parser = trc_check::run::threads_value)]
    pub threads: Option<usize>,
    /// Print at most this many violations of each kind.
    #[arg(long, default_value_t = 5)]
    pub show: usize,
}

/// One violation found by the sweep.
#[derive(Clone, Debug, PartialEq)]
pub struct Violation {
    pub kind: &'static str,
    pub input: String,
    pub detail: String,
}

/// Totals of a sweep.
#[derive(Debug, Default)]
pub struct Summary {
    pub inputs: u64,
    pub overflow: u64,
    pub root: u64,
    pub curve: u64,
    pub max_root_rel_err: f64,
    pub examples: Vec<Violation>,
}

/// Exact ∛a (floor) by integer search.
fn icbrt(a: u64) -> u64 {
    let mut x = (a as f64).cbrt() as u64;
    while (x as u128).pow(3) > a as u128 {
        x -= 1;
    }
    while ((x + 1) as u128).pow(3) <= a as u128 {
        x += 1;
    }
    x
}

/// cubic_root against the exact cube root: (violates bound, relative error).
pub fn check_root(a: u64) -> (bool, f64) {
    let r = cubic_root(a) as f64;
    let exact = (a as f64).cbrt();
    let err = (r - exact).abs();
    let rel = if exact > 0.0 { err / exact } else { 0.0 };
    (
        err > ROOT_REL * exact + 1.0,
        if exact >= 64.0 { rel } else { 0.0 },
    )
}

/// The curve for one input, checked; returns violations (kind, detail).
pub fn check_curve(
    cwnd: u32,
    last_max: u32,
    elapsed_ms: u32,
    delay_us: u32,
    hz: u32,
) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    let elapsed_j = (elapsed_ms as u64 * hz as u64 / 1000) as u32;
    let dj = usecs_to_jiffies(delay_us, hz);
    // Epoch start as bictcp_update sets it.
    let (k, origin) = if last_max <= cwnd {
        (0u32, cwnd)
    } else {
        (
            cubic_root(CUBE_FACTOR.wrapping_mul((last_max - cwnd) as u64)),
            last_max,
        )
    };
    let c = curve(cwnd, elapsed_j as i32, dj, hz, k, origin, last_max);
    // Exact arithmetic.
    let t = ((elapsed_j as i128 + dj as i128) << BICTCP_HZ) / hz as i128;
    let offs = (t - k as i128).abs();
    let delta = (CUBE_RTT_SCALE as i128 * offs * offs * offs) >> (10 + 3 * BICTCP_HZ);
    let target = if t < k as i128 {
        origin as i128 - delta
    } else {
        origin as i128 + delta
    };
    if t as u64 as i128 != t
        || c.t as i128 != t
        || c.delta as i128 != delta
        || c.target as i128 != target
    {
        out.push((
            "overflow",
            format!(
                "kernel t {} delta {} target {}; exact t {t} delta {delta} target {target}",
                c.t, c.delta, c.target
            ),
        ));
        return out;
    }
    // Real-number curve (RFC 9438): C = 410/1024, K = ∛((W_max − cwnd)/C) in seconds.
    let cc = CUBE_RTT_SCALE as f64 / 1024.0;
    let k_exact_units = if last_max <= cwnd {
        0.0
    } else {
        ((last_max - cwnd) as f64 / cc).cbrt() * 1024.0
    };
    let e_units = 2.0 + (k as f64 - k_exact_units).abs();
    let w = |t_units: f64| origin as f64 + cc * ((t_units - k_exact_units) / 1024.0).powi(3);
    let t_real = (elapsed_j as f64 + dj as f64) * 1024.0 / hz as f64;
    let (lo, hi) = (w(t_real - e_units) - 1.0, w(t_real + e_units) + 1.0);
    let tgt = c.target as f64;
    if tgt < lo || tgt > hi {
        out.push((
            "curve",
            format!(
                "target {} outside real curve [{lo:.1}, {hi:.1}] (K {} vs {:.1})",
                c.target, k, k_exact_units
            ),
        ));
    }
    out
}

fn grid(max: u32, n: usize) -> Vec<u32> {
    let mut v = vec![0u32, 1];
    let mut x = 1f64;
    let f = (max as f64).powf(1.0 / n as f64);
    while x < max as f64 {
        x *= f;
        v.push((x as u32).min(max));
    }
    v.sort_unstable();
    v.dedup();
    v
}

fn last_max_choices(cwnd: u32) -> Vec<u32> {
    let mut v = vec![0, cwnd];
    for k in 9..=24u64 {
        v.push((cwnd as u64 * k / 8).min(u32::MAX as u64) as u32);
    }
    for d in [1u32, 10, 100, 1000, 10_000, 65_536] {
        v.push(cwnd.saturating_add(d));
    }
    v.sort_unstable();
    v.dedup();
    v
}

/// Runs the sweep; `progress` shows a bar.
pub fn sweep(a: &SweepArgs, progress: bool) -> Summary {
    let elapsed = grid(a.max_elapsed_ms, 40);
    let delays = grid(a.max_delay_us, 8);
    let hzs = [100u32, 250, 1000];
    let root_n: u64 = 1u64 << a.root_bits;
    let root_chunks = 256u64;
    let total_units = a.max_cwnd as u64 + root_chunks;
    let bar = if progress {
        ProgressBar::new(total_units)
    } else {
        ProgressBar::hidden()
    };
    bar.set_style(
        ProgressStyle::with_template("{bar:40} {pos}/{len} units {per_sec} eta {eta}").unwrap(),
    );
    let inputs = AtomicU64::new(0);
    let counts = [AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0)];
    let max_rel = Mutex::new(0f64);
    let examples = Mutex::new(Vec::<Violation>::new());
    let record = |kind: &'static str, input: String, detail: String| {
        let i = match kind {
            "overflow" => 0,
            "root" => 1,
            _ => 2,
        };
        let n = counts[i].fetch_add(1, Ordering::Relaxed);
        if (n as usize) < a.show {
            examples.lock().unwrap().push(Violation {
                kind,
                input,
                detail,
            });
        }
    };
    // cubic_root: exhaustive below 2^root_bits, plus every 2^k ± small and a multiplicative grid.
    (0..root_chunks).into_par_iter().for_each(|ch| {
        let lo = root_n * ch / root_chunks;
        let hi = root_n * (ch + 1) / root_chunks;
        let mut local_max = 0f64;
        let mut n = 0u64;
        let mut extra: Vec<u64> = Vec::new();
        if ch == 0 {
            for k in 0..64u32 {
                for d in [-2i64, -1, 0, 1, 2] {
                    extra
                        .push(((1u128 << k) as i128 + d as i128).clamp(0, u64::MAX as i128) as u64);
                }
            }
            let mut x = 1.0f64;
            while x < u64::MAX as f64 / 1.001 {
                extra.push(x as u64);
                x *= 1.001;
            }
            extra.push(u64::MAX);
        }
        for a_ in (lo..hi).chain(extra) {
            let (bad, rel) = check_root(a_);
            n += 1;
            local_max = local_max.max(rel);
            if bad {
                record(
                    "root",
                    format!("a={a_}"),
                    format!(
                        "cubic_root {} vs ∛a {:.2} (exact floor {})",
                        cubic_root(a_),
                        (a_ as f64).cbrt(),
                        icbrt(a_)
                    ),
                );
            }
        }
        let mut m = max_rel.lock().unwrap();
        *m = m.max(local_max);
        inputs.fetch_add(n, Ordering::Relaxed);
        bar.inc(1);
    });
    // The curve: every cwnd, a grid of last_max_cwnd, elapsed time, delay_min and HZ.
    (1..=a.max_cwnd).into_par_iter().for_each(|cwnd| {
        let mut n = 0u64;
        for last_max in last_max_choices(cwnd) {
            for &e in &elapsed {
                for &d in &delays {
                    for &hz in &hzs {
                        n += 1;
                        for (kind, detail) in check_curve(cwnd, last_max, e, d, hz) {
                            record(kind, format!("cwnd={cwnd} last_max_cwnd={last_max} elapsed={e}ms delay_min={d}us HZ={hz}"), detail);
                        }
                    }
                }
            }
        }
        inputs.fetch_add(n, Ordering::Relaxed);
        bar.inc(1);
    });
    bar.finish_and_clear();
    let max_root_rel_err = *max_rel.lock().unwrap();
    Summary {
        inputs: inputs.load(Ordering::Relaxed),
        overflow: counts[0].load(Ordering::Relaxed),
        root: counts[1].load(Ordering::Relaxed),
        curve: counts[2].load(Ordering::Relaxed),
        max_root_rel_err,
        examples: examples.into_inner().unwrap(),
    }
}

/// `trc sweep`. Exit 0 when no violation of the stated bounds was found, 1 otherwise.
pub fn run_sweep(a: SweepArgs) -> i32 {
    if let Some(n) = a.threads {
        let _ = rayon::ThreadPoolBuilder::new()
            .num_threads(n)
            .build_global();
    }
    let start = Instant::now();
    let s = sweep(&a, true);
    let secs = start.elapsed().as_secs_f64();
    println!(
        "trc sweep: {} inputs in {:.1} s ({:.0} inputs/s): cwnd 1..={}, elapsed 0..={} ms, delay_min 0..={} µs, HZ 100/250/1000, cubic_root exhaustive below 2^{}",
        s.inputs,
        secs,
        s.inputs as f64 / secs.max(1e-9),
        a.max_cwnd,
        a.max_elapsed_ms,
        a.max_delay_us,
        a.root_bits
    );
    println!("  overflow changing the result: {}", s.overflow);
    println!(
        "  cubic_root outside {:.0}% + 1: {} (max relative error for ∛a ≥ 64: {:.3}%)",
        ROOT_REL * 100.0,
        s.root,
        s.max_root_rel_err * 100.0
    );
    println!("  target outside the RFC 9438 curve bound: {}", s.curve);
    for v in &s.examples {
        println!("  {}: {}: {}", v.kind, v.input, v.detail);
    }
    if s.overflow + s.root + s.curve == 0 {
        0
    } else {
        1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_sweep_is_clean() {
        let a = SweepArgs {
            max_cwnd: 300,
            max_elapsed_ms: 60_000,
            max_delay_us: 1_000_000,
            root_bits: 16,
            threads: None,
            show: 5,
        };
        let s = sweep(&a, false);
        assert!(s.inputs > 1_000_000, "{}", s.inputs);
        assert_eq!((s.overflow, s.root, s.curve), (0, 0, 0), "{:?}", s.examples);
    }

    #[test]
    fn overflow_is_detected_far_out() {
        // ~6 minutes past K, 410·offs³ no longer fits in u64.
        let v = check_curve(100, 0, 400_000, 0, 1000);
        assert_eq!(v.first().map(|x| x.0), Some("overflow"), "{v:?}");
    }
}
