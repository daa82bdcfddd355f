//! Stored states as differences from a reference state: the form of a level's states in their
//! store blocks ([`crate::store`]).
//!
//! States of one BFS level written by one expansion chunk are alike: on `trc bench` case 3 (sack
//! seg6 loss1, 768-byte states) a state differs from the first state of its block in about 28
//! of its 96 eight-byte words (notebook, 2026-12-05, session 11). So each block holds its first
//! state whole (the *reference*) and every later state as a *record*: a bit mask of the words
//! that differ from the reference, then those words in order, about 240 bytes instead of 768.
//! The engine's peak memory falls by about 40 % (a level's states take about a third of the
//! bytes), and the pages it touches for the first time (a fault and a cleared page each, a third
//! of a small check's CPU time in these VMs) fall with it.
//!
//! The form is bytes, not values: a record holds the differing words of the state's own bytes,
//! padding included, so decoding gives back the same bytes, hence the same state, for any type
//! (a state owning heap memory keeps its pointer in its words: the decoded copy *is* the stored
//! state, and dropping that copy drops the state). A state's bytes are read only by inline
//! assembly, as the store's other copies do ([`crate::store::stream_copy`]): padding bytes are
//! whatever memory holds, which Rust code must not read as integers.
//!
//! x86-64 only, chosen at run time ([`coded`]): with AVX-512F eight words per step (compare
//! into a lane mask, `vpcompressq` into a register, one whole store; decoding loads eight
//! record words and `vpexpandq`s them into the reference's), else with AVX2 (four words per
//! step, compressed by a table-driven `vpermd`; decoding copies the reference and puts the
//! record's words in place a set mask bit at a time). valgrind has no AVX-512,
//! so `trc bench --instructions` counts the AVX2 versions. Elsewhere states are stored whole.

use std::mem::MaybeUninit;

/// Whether states of type `S` are stored as records on this machine: a size of 128 to 4096
/// bytes in whole 32-byte steps, aligned to at least 8, on an x86-64 CPU with AVX2 (and
/// `popcnt`, `bmi1`); std caches the CPU test.
#[inline(always)]
pub(crate) fn coded<S>() -> bool {
    let n = size_of::<S>();
    let fits = n.is_multiple_of(32) && (128..=4096).contains(&n) && align_of::<S>() >= 8;
    #[cfg(target_arch = "x86_64")]
    return fits && x86::avx2();
    #[cfg(not(target_arch = "x86_64"))]
    return false;
}

/// Words of a state.
const fn words<S>() -> usize {
    size_of::<S>() / 8
}

/// Mask words of a record.
const fn mask_words<S>() -> usize {
    words::<S>().div_ceil(64)
}

/// The largest record of an `S` (every word differs), in bytes.
pub(crate) const fn max_record_bytes<S>() -> usize {
    (mask_words::<S>() + words::<S>()) * 8
}

/// Bytes a record may be written or read beyond its end (a whole vector): a block keeps that
/// much room after its last record.
pub(crate) const OVERRUN: usize = 64;

/// Writes the record of `state` against `reference` to `out` and returns its length in bytes.
///
/// # Safety
/// `coded::<S>()`; `reference` and `state` are readable `S`-sized values, 8-byte aligned;
/// `out` is 8-byte aligned with room for [`max_record_bytes`] plus [`OVERRUN`].
#[inline(always)]
pub(crate) unsafe fn encode<S>(reference: *const S, state: *const S, out: *mut u64) -> usize {
    debug_assert!(coded::<S>());
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the caller's contract; `coded` checked the CPU.
    unsafe {
        if x86::avx512::<S>() {
            x86::encode_avx512(reference, state, out)
        } else {
            x86::encode_avx2(reference, state, out)
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("no records on this architecture: {reference:p} {state:p} {out:p}")
}

/// Writes the state a record stands for: `reference` with the record's words in place.
///
/// # Safety
/// `coded::<S>()`; `reference` is a readable `S` (8-byte aligned), `record` a record written by
/// [`encode`] against it, followed by [`OVERRUN`] readable bytes; `out` is writable and apart
/// from both. `out` then holds a bitwise copy of the stored state (drop it at most once in all,
/// and only as the store's owner).
#[inline(always)]
pub(crate) unsafe fn decode<S>(reference: *const S, record: *const u64, out: &mut MaybeUninit<S>) {
    debug_assert!(coded::<S>());
    #[cfg(target_arch = "x86_64")]
    // SAFETY: the caller's contract; `coded` checked the CPU.
    unsafe {
        if x86::avx512::<S>() {
            x86::decode_avx512(reference, record, out)
        } else {
            x86::decode_avx2(reference, record, out)
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    unreachable!("no records on this architecture: {reference:p} {record:p} {out:p}")
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::{mask_words, words};
    use std::arch::asm;
    use std::mem::MaybeUninit;

    /// Whether the CPU runs the AVX2 versions.
    #[inline(always)]
    pub(super) fn avx2() -> bool {
        std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("popcnt")
            && std::arch::is_x86_feature_detected!("bmi1")
    }

    /// Whether the CPU runs the AVX-512 versions for `S` (whole 8-word steps).
    #[inline(always)]
    pub(super) fn avx512<S>() -> bool {
        words::<S>().is_multiple_of(8) && std::arch::is_x86_feature_detected!("avx512f")
    }

    /// Per 4-bit lane mask `k`: the `vpermd` indices that move the selected 64-bit lanes to
    /// the front, in order (AVX2 has no compress instruction).
    static COMPRESS: [[u32; 8]; 16] = {
        let mut t = [[0u32; 8]; 16];
        let mut k = 0;
        while k < 16 {
            let (mut j, mut lane) = (0, 0);
            while lane < 4 {
                if k >> lane & 1 == 1 {
                    t[k][2 * j] = 2 * lane as u32;
                    t[k][2 * j + 1] = 2 * lane as u32 + 1;
                    j += 1;
                }
                lane += 1;
            }
            k += 1;
        }
        t
    };

    /// The loop both encoders share: per mask word, steps of `STEP` words; `step(c, n)` writes
    /// the words among `c..c + STEP` that differ at word `n` of `out` and returns their lane
    /// mask. Returns the record's length in bytes.
    ///
    /// # Safety
    /// [`super::encode`]'s contract, for `out`.
    #[inline(always)]
    unsafe fn encode_steps<S, const STEP: usize>(
        out: *mut u64,
        mut step: impl FnMut(usize, usize) -> u64,
    ) -> usize {
        let w = words::<S>();
        let mut n = mask_words::<S>();
        for m in 0..mask_words::<S>() {
            let mut mask = 0u64;
            for j in 0..(w - m * 64).min(64) / STEP {
                let k = step(m * 64 + STEP * j, n);
                mask |= k << (STEP * j);
                n += k.count_ones() as usize;
            }
            // SAFETY: within the mask words of `out` (the words come after them).
            unsafe { out.add(m).write(mask) };
        }
        n * 8
    }

    /// [`super::encode`] with AVX2: per four words, the lanes that differ moved to the front of
    /// a register by a table-driven `vpermd` and stored whole (up to [`super::OVERRUN`] bytes
    /// beyond the record).
    ///
    /// # Safety
    /// The CPU has AVX2, `popcnt` and `bmi1`; [`super::encode`]'s contract.
    #[target_feature(enable = "avx2,popcnt,bmi1")]
    pub(super) unsafe fn encode_avx2<S>(
        reference: *const S,
        state: *const S,
        out: *mut u64,
    ) -> usize {
        let (r, s) = (reference as *const u64, state as *const u64);
        // SAFETY: the caller's contract.
        unsafe {
            encode_steps::<S, 4>(out, |c, n| {
                let k: u64;
                // SAFETY: `c + 4 <= words`: within both values; `out` has room for the
                // record and [`super::OVERRUN`] bytes after it; a table row is 32 bytes.
                asm!(
                    "vmovdqu {a}, ymmword ptr [{s}]",
                    "vpcmpeqq {b}, {a}, ymmword ptr [{r}]",
                    "vmovmskpd {k:e}, {b}",
                    "xor {k:e}, 15",
                    "mov {t:e}, {k:e}",
                    "shl {t:e}, 5",
                    "vmovdqu {b}, ymmword ptr [{lut} + {t}]",
                    "vpermd {a}, {b}, {a}",
                    "vmovdqu ymmword ptr [{o}], {a}",
                    s = in(reg) s.add(c),
                    r = in(reg) r.add(c),
                    o = in(reg) out.add(n),
                    lut = in(reg) COMPRESS.as_ptr(),
                    a = out(ymm_reg) _,
                    b = out(ymm_reg) _,
                    k = out(reg) k,
                    t = out(reg) _,
                    options(nostack),
                );
                k
            })
        }
    }

    /// [`super::decode`] with AVX2: the reference copied 32 bytes at a time, then the record's
    /// words put in place a set mask bit at a time. (Not the store's `copy_frozen`: valgrind
    /// counts its `rep movsb` by the byte, 5,093 instructions per state on `trc bench` case 3
    /// against 4,420, which would blur the figure `trc bench --instructions` steers by; and not
    /// `stream_copy`, whose non-temporal stores would send the state out of the cache just
    /// before it is expanded.)
    ///
    /// # Safety
    /// The CPU has AVX2, `popcnt` and `bmi1`; [`super::decode`]'s contract.
    #[target_feature(enable = "avx2,popcnt,bmi1")]
    pub(super) unsafe fn decode_avx2<S>(
        reference: *const S,
        record: *const u64,
        out: &mut MaybeUninit<S>,
    ) {
        let (r, o) = (reference as *const u64, out.as_mut_ptr() as *mut u64);
        for c in (0..words::<S>()).step_by(4) {
            // SAFETY: `c + 4 <= words`: within the reference and `out`.
            unsafe {
                asm!(
                    "vmovdqu {a}, ymmword ptr [{s}]",
                    "vmovdqu ymmword ptr [{d}], {a}",
                    s = in(reg) r.add(c),
                    d = in(reg) o.add(c),
                    a = out(ymm_reg) _,
                    options(nostack, preserves_flags),
                )
            };
        }
        let mut n = mask_words::<S>();
        for m in 0..mask_words::<S>() {
            // SAFETY: a record starts with its mask words (written by `encode`).
            let mut mask = unsafe { *record.add(m) };
            while mask != 0 {
                let i = m * 64 + mask.trailing_zeros() as usize;
                // SAFETY: a set bit `i < words` is followed by its word, in order; the
                // record's words were written by `encode`.
                unsafe { o.add(i).write(*record.add(n)) };
                n += 1;
                mask &= mask - 1;
            }
        }
    }

    /// [`super::encode`] with AVX-512F: per eight words, the lanes that differ compressed to
    /// the front of a register and stored whole (up to [`super::OVERRUN`] bytes beyond).
    ///
    /// # Safety
    /// The CPU has AVX-512F and `popcnt`; `words::<S>() % 8 == 0`; [`super::encode`]'s
    /// contract.
    #[target_feature(enable = "avx512f,popcnt")]
    pub(super) unsafe fn encode_avx512<S>(
        reference: *const S,
        state: *const S,
        out: *mut u64,
    ) -> usize {
        let (r, s) = (reference as *const u64, state as *const u64);
        // SAFETY: the caller's contract.
        unsafe {
            encode_steps::<S, 8>(out, |c, n| {
                let k: u64;
                // SAFETY: `c + 8 <= words`: within both values; `out` has room for the
                // record and [`super::OVERRUN`] bytes after it.
                asm!(
                    "vmovdqu64 {a}, zmmword ptr [{s}]",
                    "vpcmpneqq k1, {a}, zmmword ptr [{r}]",
                    "vpcompressq {a} {{k1}} {{z}}, {a}",
                    "vmovdqu64 zmmword ptr [{o}], {a}",
                    "kmovw {k:e}, k1",
                    s = in(reg) s.add(c),
                    r = in(reg) r.add(c),
                    o = in(reg) out.add(n),
                    a = out(zmm_reg) _,
                    k = out(reg) k,
                    out("k1") _,
                    options(nostack, preserves_flags),
                );
                k
            })
        }
    }

    /// [`super::decode`] with AVX-512F: per eight words, eight record words loaded whole (up
    /// to [`super::OVERRUN`] bytes beyond the record) and expanded into the reference's lanes
    /// the mask selects (the register form: `vpexpandq` from memory stalled on Zen 4).
    ///
    /// # Safety
    /// The CPU has AVX-512F and `popcnt`; `words::<S>() % 8 == 0`; [`super::decode`]'s
    /// contract.
    #[target_feature(enable = "avx512f,popcnt")]
    pub(super) unsafe fn decode_avx512<S>(
        reference: *const S,
        record: *const u64,
        out: &mut MaybeUninit<S>,
    ) {
        let (r, o) = (reference as *const u64, out.as_mut_ptr() as *mut u64);
        let w = words::<S>();
        let mut n = mask_words::<S>();
        for m in 0..mask_words::<S>() {
            // SAFETY: a record starts with its mask words (written by `encode`).
            let mask = unsafe { *record.add(m) };
            for j in 0..(w - m * 64).min(64) / 8 {
                let c = m * 64 + 8 * j;
                let k = (mask >> (8 * j)) as u32 & 0xff;
                // SAFETY: `c + 8 <= w`: within the reference and `out`; the record is
                // followed by [`super::OVERRUN`] readable bytes.
                unsafe {
                    asm!(
                        "kmovw k1, {k:e}",
                        "vmovdqu64 {v}, zmmword ptr [{r}]",
                        "vmovdqu64 {d}, zmmword ptr [{rec}]",
                        "vpexpandq {v} {{k1}}, {d}",
                        "vmovdqu64 zmmword ptr [{o}], {v}",
                        k = in(reg) k,
                        r = in(reg) r.add(c),
                        rec = in(reg) record.add(n),
                        o = in(reg) o.add(c),
                        v = out(zmm_reg) _,
                        d = out(zmm_reg) _,
                        out("k1") _,
                        options(nostack, preserves_flags),
                    )
                };
                n += k.count_ones() as usize;
            }
        }
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    #[repr(C, align(16))]
    #[derive(Clone, Copy, PartialEq, Debug)]
    struct Big([u64; 96]);

    /// Three mask words, the last one partial; 4-word steps only (AVX2).
    #[repr(C, align(8))]
    #[derive(Clone, Copy, PartialEq, Debug)]
    struct Long([u64; 132]);

    type Enc<S> = unsafe fn(*const S, *const S, *mut u64) -> usize;
    type Dec<S> = unsafe fn(*const S, *const u64, &mut MaybeUninit<S>);

    /// The encoders and decoders this CPU can run for `S` (each must agree with the others).
    fn codecs<S>() -> Vec<(Enc<S>, Dec<S>)> {
        let mut v: Vec<(Enc<S>, Dec<S>)> = Vec::new();
        if x86::avx2() {
            v.push((x86::encode_avx2::<S>, x86::decode_avx2::<S>));
        }
        if x86::avx512::<S>() {
            v.push((x86::encode_avx512::<S>, x86::decode_avx512::<S>));
        }
        v
    }

    fn roundtrip<S: Copy + PartialEq + std::fmt::Debug>(r: &S, s: &S, differing: usize) {
        let mut records = Vec::new();
        for (enc, dec) in codecs::<S>() {
            let mut out = vec![0u64; (max_record_bytes::<S>() + OVERRUN) / 8];
            // SAFETY: both are plain values of a coded type; `out` has room.
            let len = unsafe { enc(r, s, out.as_mut_ptr()) };
            assert_eq!(len, (mask_words::<S>() + differing) * 8);
            let mut back = MaybeUninit::<S>::uninit();
            // SAFETY: a record of `s` against `r`, with room after it.
            unsafe { dec(r, out.as_ptr(), &mut back) };
            assert_eq!(unsafe { back.assume_init() }, *s);
            out.truncate(len / 8);
            records.push(out);
        }
        // Every implementation writes the same record.
        assert!(records.windows(2).all(|p| p[0] == p[1]));
    }

    #[test]
    fn records_give_back_the_state() {
        if !x86::avx2() {
            eprintln!("skipped: this CPU has no AVX2 (states are stored whole)");
            return;
        }
        assert!(coded::<Big>() && coded::<Long>());
        assert!(!coded::<[u64; 8]>() && !coded::<[u8; 256]>() && !coded::<[u64; 33]>());
        let r = Big(std::array::from_fn(|i| i as u64 * 3));
        roundtrip(&r, &r, 0);
        let all = Big(std::array::from_fn(|i| !(i as u64)));
        roundtrip(&r, &all, 96);
        let mut some = r;
        for i in [0, 1, 31, 63, 64, 95] {
            some.0[i] ^= 1 << (i % 64);
        }
        roundtrip(&r, &some, 6);
        // Every 4-lane pattern, across three mask words.
        let r = Long(std::array::from_fn(|i| i as u64));
        let mut s = r;
        let mut differing = 0;
        for i in 0..132 {
            if (i / 4) >> (i % 4) & 1 == 1 {
                s.0[i] = u64::MAX - i as u64;
                differing += 1;
            }
        }
        roundtrip(&r, &s, differing);
        roundtrip(&r, &Long([u64::MAX; 132]), 132);
    }
}
