//! [`SegMask`]: a set of segment indices of any size — the model's per-segment ghost masks
//! (which originals the network dropped, which segments the receiver holds, which were
//! retransmitted in the episode).
//!
//! The words live in an [`InlineVec`]: the first 64 segments inline (a bounded exhaustive check
//! stays a plain, bitwise-copied state), more segments on the heap (replay of a 1000-segment
//! script). The representation is canonical — no trailing zero word — so equal sets compare,
//! hash and fingerprint equal.

use crate::inline_vec::InlineVec;
use serde::{Deserialize, Serialize};

#[derive(Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SegMask(InlineVec<[u64; 1]>);

impl std::fmt::Debug for SegMask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl SegMask {
    pub fn new() -> SegMask {
        SegMask(InlineVec::new())
    }

    /// Adds segment `k`.
    #[inline]
    pub fn insert(&mut self, k: u32) {
        let (w, b) = ((k / 64) as usize, k % 64);
        if w >= self.0.len() {
            self.0.resize(w + 1, 0);
        }
        self.0[w] |= 1 << b;
    }

    /// Whether segment `k` is in the set.
    #[inline]
    pub fn contains(&self, k: u32) -> bool {
        self.0.get((k / 64) as usize).is_some_and(|w| w >> (k % 64) & 1 != 0)
    }

    pub fn clear(&mut self) {
        self.0.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether any segment `>= k` is in the set.
    pub fn any_at_or_above(&self, k: u32) -> bool {
        let w = (k / 64) as usize;
        match self.0.get(w) {
            None => false,
            Some(word) => word >> (k % 64) != 0 || self.0.len() > w + 1,
        }
    }

    /// The number of segments `0, 1, 2, ...` in the set before the first one missing.
    pub fn trailing_ones(&self) -> u32 {
        let mut n = 0;
        for w in self.0.iter() {
            n += w.trailing_ones();
            if *w != u64::MAX {
                break;
            }
        }
        n
    }

    /// Whether the two sets share a segment.
    pub fn intersects(&self, other: &SegMask) -> bool {
        self.0.iter().zip(other.0.iter()).any(|(a, b)| a & b != 0)
    }

    /// The segments in the set, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.0.iter().enumerate().flat_map(|(w, word)| (0..64).filter(move |b| word >> b & 1 != 0).map(move |b| w as u32 * 64 + b))
    }

    /// The words (segment `64·i + b` is bit `b` of word `i`), for fingerprints.
    pub fn words(&self) -> &[u64] {
        &self.0
    }

    /// Heap-allocated (more than 64 segments' worth of words).
    pub fn spilled(&self) -> bool {
        self.0.spilled()
    }
}

impl FromIterator<u32> for SegMask {
    fn from_iter<I: IntoIterator<Item = u32>>(it: I) -> SegMask {
        let mut m = SegMask::new();
        for k in it {
            m.insert(k);
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_and_large_sets() {
        let mut m = SegMask::new();
        assert!(m.is_empty() && !m.any_at_or_above(0) && m.trailing_ones() == 0);
        m.insert(0);
        m.insert(1);
        m.insert(3);
        assert_eq!(m.trailing_ones(), 2);
        assert!(m.contains(3) && !m.contains(2) && !m.contains(1000));
        assert!(m.any_at_or_above(3) && !m.any_at_or_above(4));
        assert!(!m.spilled());
        m.insert(1000);
        assert!(m.spilled() && m.contains(1000) && m.any_at_or_above(4) && !m.any_at_or_above(1001));
        assert_eq!(m.iter().collect::<Vec<_>>(), vec![0, 1, 3, 1000]);
        let full: SegMask = (0..130).collect();
        assert_eq!(full.trailing_ones(), 130);
        assert!(full.intersects(&m));
        let c = m.clone();
        assert_eq!(c, m);
        let mut e = SegMask::new();
        e.insert(3);
        assert_eq!(e, [3].into_iter().collect::<SegMask>(), "canonical: built either way, equal");
    }
}
