//! [`FpHasher`]: the engine's fingerprint hasher.
//!
//! A `std::hash::Hasher` that appends every `write_*` to a 128-byte buffer and compresses full
//! buffers with wyhash-style folded multiplies (one 128-bit multiply per 16 bytes). A derived
//! `Hash` of a large struct makes one call per field; here each call is a store and a length
//! update, so fingerprinting the TCP model's ~470-byte state costs a fraction of what a
//! per-call mixing hasher (ahash, SipHash) does.

use std::hash::Hasher;

const P0: u64 = 0xa076_1d64_78bd_642f;
const P1: u64 = 0xe703_7ed1_a0b4_28db;
const P2: u64 = 0x8ebc_6af0_9c88_c6e3;
const P3: u64 = 0x5899_65cc_7537_4cc3;
const CAP: usize = 128;

#[inline(always)]
fn mum(a: u64, b: u64) -> u64 {
    let r = a as u128 * b as u128;
    (r as u64) ^ ((r >> 64) as u64)
}

/// See the module docs. `finish()` never returns 0.
pub struct FpHasher {
    buf: [u8; CAP + 16],
    len: usize,
    h: u64,
    total: u64,
}

impl Default for FpHasher {
    #[inline(always)]
    fn default() -> Self {
        FpHasher {
            buf: [0; CAP + 16],
            len: 0,
            h: P0,
            total: 0,
        }
    }
}

impl FpHasher {
    #[inline(always)]
    fn word(&self, i: usize) -> u64 {
        u64::from_le_bytes(self.buf[i..i + 8].try_into().unwrap())
    }

    #[inline(never)]
    fn compress(&mut self) {
        let mut h = self.h;
        let full = self.len & !15;
        let mut i = 0;
        while i < full {
            h = mum(self.word(i) ^ P1, self.word(i + 8) ^ h);
            i += 16;
        }
        self.h = h;
        self.total += full as u64;
        self.buf.copy_within(full..self.len, 0);
        self.len -= full;
    }

    #[inline(always)]
    fn put<const N: usize>(&mut self, b: [u8; N]) {
        if self.len + N > CAP {
            self.compress();
        }
        self.buf[self.len..self.len + N].copy_from_slice(&b);
        self.len += N;
    }
}

impl Hasher for FpHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        for c in bytes.chunks(16) {
            if self.len + c.len() > CAP {
                self.compress();
            }
            self.buf[self.len..self.len + c.len()].copy_from_slice(c);
            self.len += c.len();
        }
    }
    #[inline(always)]
    fn write_u8(&mut self, i: u8) {
        self.put(i.to_le_bytes())
    }
    #[inline(always)]
    fn write_u16(&mut self, i: u16) {
        self.put(i.to_le_bytes())
    }
    #[inline(always)]
    fn write_u32(&mut self, i: u32) {
        self.put(i.to_le_bytes())
    }
    #[inline(always)]
    fn write_u64(&mut self, i: u64) {
        self.put(i.to_le_bytes())
    }
    #[inline(always)]
    fn write_usize(&mut self, i: usize) {
        self.put((i as u64).to_le_bytes())
    }
    #[inline(always)]
    fn write_i8(&mut self, i: i8) {
        self.put(i.to_le_bytes())
    }
    #[inline(always)]
    fn write_i16(&mut self, i: i16) {
        self.put(i.to_le_bytes())
    }
    #[inline(always)]
    fn write_i32(&mut self, i: i32) {
        self.put(i.to_le_bytes())
    }
    #[inline(always)]
    fn write_i64(&mut self, i: i64) {
        self.put(i.to_le_bytes())
    }
    #[inline(always)]
    fn write_isize(&mut self, i: isize) {
        self.put((i as i64).to_le_bytes())
    }

    #[inline]
    fn finish(&self) -> u64 {
        let mut h = self.h;
        let mut i = 0;
        while i + 16 <= self.len {
            h = mum(self.word(i) ^ P1, self.word(i + 8) ^ h);
            i += 16;
        }
        if i < self.len {
            let mut tail = [0u8; 16];
            tail[..self.len - i].copy_from_slice(&self.buf[i..self.len]);
            let a = u64::from_le_bytes(tail[..8].try_into().unwrap());
            let b = u64::from_le_bytes(tail[8..].try_into().unwrap());
            h = mum(a ^ P2, b ^ h);
        }
        let total = self.total + self.len as u64;
        match mum(h ^ P3, total ^ P0) {
            0 => 1,
            x => x,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::Hash;

    fn fp<T: Hash>(v: &T) -> u64 {
        let mut h = FpHasher::default();
        v.hash(&mut h);
        h.finish()
    }

    #[test]
    fn distinct_values_distinct_fingerprints() {
        let mut seen = std::collections::HashSet::new();
        for a in 0..60u32 {
            for b in 0..60u8 {
                let v: Vec<u32> = (0..a).map(|x| x * b as u32).collect();
                assert!(seen.insert(fp(&(v, b, Some(a)))));
            }
        }
        // Streams longer than the buffer.
        let long: Vec<u64> = (0..1000).collect();
        let mut long2 = long.clone();
        long2[999] = 0;
        assert_ne!(fp(&long), fp(&long2));
        long2[999] = 999;
        long2[3] = 4;
        assert_ne!(fp(&long), fp(&long2));
        assert_eq!(fp(&long), fp(&long.clone()));
    }
}
