//! [`SegMask`]: a set of segment indices of any size — the model's per-segment ghost masks
//! (which originals the network dropped, which segments the receiver holds, which were
//! retransmitted in the episode).
//!
//! One machine word: the first 63 segments inline, as bits, so a bounded exhaustive check keeps a
//! plain, bitwise-copied state of the smallest size (the checker copies and stores every state;
//! four 24-byte `SmallVec` masks cost it 8 % of its time, see docs/explanation/performance.md); a set holding
//! a segment `>= 63` moves to the heap (replay of a 1000-segment script). The word is a tagged
//! pointer: low bit 1 means inline (segment `k` is bit `k + 1`), low bit 0 a `Box<Vec<u64>>`
//! of 64-bit words (segment `64·i + b` is bit `b` of word `i`, no trailing zero word). Sets only
//! grow until [`SegMask::clear`], so a set is on the heap exactly when it holds a segment
//! `>= 63`: the representation is canonical, and equal sets compare, hash and fingerprint equal.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Segments `0..INLINE` are held inline.
const INLINE: u32 = 63;

pub struct SegMask {
    /// Tagged: see the module docs. Inline values carry no provenance.
    p: *mut Vec<u64>,
}

// SAFETY: a `SegMask` owns its heap words exclusively (`Box` semantics: cloned deeply, freed on
// drop, never shared), so it is as `Send` and `Sync` as a `Box<Vec<u64>>`.
unsafe impl Send for SegMask {}
// SAFETY: as above; `&SegMask` only reads.
unsafe impl Sync for SegMask {}

#[inline(always)]
fn inline_repr(bits: u64) -> *mut Vec<u64> {
    debug_assert!(bits >> INLINE == 0);
    std::ptr::without_provenance_mut(((bits << 1) | 1) as usize)
}

/// The words of a set: word 0 and, on the heap, the rest.
enum View<'a> {
    Inline(u64),
    Heap(&'a [u64]),
}

impl SegMask {
    pub fn new() -> SegMask {
        SegMask { p: inline_repr(0) }
    }

    #[inline(always)]
    fn view(&self) -> View<'_> {
        let a = self.p.addr();
        if a & 1 == 1 {
            View::Inline((a >> 1) as u64)
        } else {
            // SAFETY: an even word is a pointer from `Box::into_raw`, owned by `self`.
            View::Heap(unsafe { &*self.p })
        }
    }

    fn from_words(mut words: Vec<u64>) -> SegMask {
        while words.last() == Some(&0) {
            words.pop();
        }
        match words.as_slice() {
            [] => SegMask::new(),
            [w] if *w >> INLINE == 0 => SegMask { p: inline_repr(*w) },
            _ => SegMask {
                p: Box::into_raw(Box::new(words)),
            },
        }
    }

    /// Adds segment `k`.
    #[inline]
    pub fn insert(&mut self, k: u32) {
        let a = self.p.addr();
        if a & 1 == 1 && k < INLINE {
            self.p = inline_repr((a >> 1) as u64 | 1 << k);
            return;
        }
        self.insert_slow(k);
    }

    #[cold]
    fn insert_slow(&mut self, k: u32) {
        let (w, b) = ((k / 64) as usize, k % 64);
        match self.view() {
            View::Inline(bits) => {
                let mut words = vec![0; w + 1];
                words[0] = bits;
                words[w] |= 1 << b;
                self.p = Box::into_raw(Box::new(words));
            }
            View::Heap(_) => {
                // SAFETY: heap representation, owned by `self`, no other reference alive.
                let words = unsafe { &mut *self.p };
                if w >= words.len() {
                    words.resize(w + 1, 0);
                }
                words[w] |= 1 << b;
            }
        }
    }

    /// Whether segment `k` is in the set.
    #[inline]
    pub fn contains(&self, k: u32) -> bool {
        match self.view() {
            View::Inline(bits) => k < INLINE && bits >> k & 1 != 0,
            View::Heap(words) => words
                .get((k / 64) as usize)
                .is_some_and(|w| w >> (k % 64) & 1 != 0),
        }
    }

    pub fn clear(&mut self) {
        *self = SegMask::new();
    }

    pub fn is_empty(&self) -> bool {
        // Canonical: a heap set holds a segment >= 63.
        matches!(self.view(), View::Inline(0))
    }

    /// Whether any segment `>= k` is in the set.
    pub fn any_at_or_above(&self, k: u32) -> bool {
        match self.view() {
            View::Inline(bits) => k < INLINE && bits >> k != 0,
            View::Heap(words) => {
                let w = (k / 64) as usize;
                match words.get(w) {
                    None => false,
                    Some(word) => word >> (k % 64) != 0 || words.len() > w + 1,
                }
            }
        }
    }

    /// The number of segments `0, 1, 2, ...` in the set before the first one missing.
    pub fn trailing_ones(&self) -> u32 {
        match self.view() {
            View::Inline(bits) => bits.trailing_ones(),
            View::Heap(words) => {
                let mut n = 0;
                for w in words {
                    n += w.trailing_ones();
                    if *w != u64::MAX {
                        break;
                    }
                }
                n
            }
        }
    }

    /// Whether the two sets share a segment.
    pub fn intersects(&self, other: &SegMask) -> bool {
        match (self.view(), other.view()) {
            (View::Inline(a), View::Inline(b)) => a & b != 0,
            _ => self.words().zip(other.words()).any(|(a, b)| a & b != 0),
        }
    }

    /// The segments in the set, ascending.
    pub fn iter(&self) -> impl Iterator<Item = u32> + '_ {
        self.words().enumerate().flat_map(|(w, word)| {
            (0..64)
                .filter(move |b| word >> b & 1 != 0)
                .map(move |b| w as u32 * 64 + b)
        })
    }

    /// The number of 64-bit words of [`SegMask::words`].
    #[inline]
    pub fn word_count(&self) -> usize {
        match self.view() {
            View::Inline(0) => 0,
            View::Inline(_) => 1,
            View::Heap(words) => words.len(),
        }
    }

    /// The set as 64-bit words (segment `64·i + b` is bit `b` of word `i`, no trailing zero
    /// word), for fingerprints and serialisation.
    #[inline]
    pub fn words(&self) -> impl Iterator<Item = u64> + '_ {
        let (first, rest): (Option<u64>, &[u64]) = match self.view() {
            View::Inline(0) => (None, &[]),
            View::Inline(bits) => (Some(bits), &[]),
            View::Heap(words) => (None, words),
        };
        first.into_iter().chain(rest.iter().copied())
    }

    /// The set's first word (0 when empty) and the words after it: with the length of the
    /// second part, an injective encoding of the set (fingerprints).
    #[inline(always)]
    pub fn split_words(&self) -> (u64, &[u64]) {
        match self.view() {
            View::Inline(bits) => (bits, &[]),
            View::Heap(words) => (words[0], &words[1..]),
        }
    }

    /// Heap-allocated (holds a segment `>= 63`).
    #[inline]
    pub fn spilled(&self) -> bool {
        self.p.addr() & 1 == 0
    }
}

impl Drop for SegMask {
    fn drop(&mut self) {
        if self.spilled() {
            // SAFETY: a heap pointer from `Box::into_raw`, owned by `self`, dropped once.
            drop(unsafe { Box::from_raw(self.p) });
        }
    }
}

impl Clone for SegMask {
    #[inline]
    fn clone(&self) -> SegMask {
        match self.view() {
            View::Inline(_) => SegMask { p: self.p },
            View::Heap(words) => SegMask {
                p: Box::into_raw(Box::new(words.to_vec())),
            },
        }
    }
}

impl Default for SegMask {
    fn default() -> SegMask {
        SegMask::new()
    }
}

impl PartialEq for SegMask {
    fn eq(&self, other: &SegMask) -> bool {
        match (self.view(), other.view()) {
            (View::Inline(a), View::Inline(b)) => a == b,
            (View::Heap(a), View::Heap(b)) => a == b,
            // Canonical: a heap set holds a segment an inline one cannot.
            _ => false,
        }
    }
}

impl Eq for SegMask {}

impl std::hash::Hash for SegMask {
    fn hash<H: std::hash::Hasher>(&self, h: &mut H) {
        h.write_usize(self.word_count());
        for w in self.words() {
            h.write_u64(w);
        }
    }
}

impl std::fmt::Debug for SegMask {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_set().entries(self.iter()).finish()
    }
}

impl Serialize for SegMask {
    /// The words, as a sequence (the format of the earlier `SmallVec` masks).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_seq(self.words())
    }
}

impl<'de> Deserialize<'de> for SegMask {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<SegMask, D::Error> {
        Ok(SegMask::from_words(Vec::<u64>::deserialize(d)?))
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
        assert!(
            m.spilled() && m.contains(1000) && m.any_at_or_above(4) && !m.any_at_or_above(1001)
        );
        assert_eq!(m.iter().collect::<Vec<_>>(), vec![0, 1, 3, 1000]);
        let full: SegMask = (0..130).collect();
        assert_eq!(full.trailing_ones(), 130);
        assert!(full.intersects(&m));
        let c = m.clone();
        assert_eq!(c, m);
        let mut e = SegMask::new();
        e.insert(3);
        assert_eq!(
            e,
            [3].into_iter().collect::<SegMask>(),
            "canonical: built either way, equal"
        );
    }

    #[test]
    fn the_inline_edge_and_the_heap() {
        // 62 is the last inline segment, 63 the first that spills.
        let mut m: SegMask = [0, 62].into_iter().collect();
        assert!(
            !m.spilled()
                && m.contains(62)
                && !m.contains(63)
                && m.any_at_or_above(62)
                && !m.any_at_or_above(63)
        );
        assert_eq!(m.words().collect::<Vec<_>>(), vec![1 | 1 << 62]);
        m.insert(63);
        assert!(m.spilled() && m.contains(63) && m.contains(62) && m.contains(0));
        assert_eq!(m.words().collect::<Vec<_>>(), vec![1 | 1 << 62 | 1 << 63]);
        assert_eq!(m.word_count(), 1);
        let c = m.clone();
        m.insert(64);
        assert_ne!(c, m, "a clone owns its words");
        assert_eq!(c.iter().collect::<Vec<_>>(), vec![0, 62, 63]);
        m.clear();
        assert!(m.is_empty() && !m.spilled() && m == SegMask::new());
        let all: SegMask = (0..63).collect();
        assert_eq!(all.trailing_ones(), 63);
        assert!(!all.spilled());
        let inline: SegMask = [5].into_iter().collect();
        let heap: SegMask = [5, 200].into_iter().collect();
        assert!(inline.intersects(&heap) && heap.intersects(&inline));
        assert_eq!(SegMask::new().word_count(), 0);
        assert_eq!(size_of::<SegMask>(), 8);
    }

    #[test]
    fn serialises_as_words_and_back_canonically() {
        let m: SegMask = [1, 70, 300].into_iter().collect();
        let j = serde_json::to_string(&m).unwrap();
        let back: SegMask = serde_json::from_str(&j).unwrap();
        assert_eq!(back, m);
        let small: SegMask = serde_json::from_str("[5, 0, 0]").unwrap();
        assert!(!small.spilled());
        assert_eq!(small, [0, 2].into_iter().collect::<SegMask>());
        assert_eq!(serde_json::to_string(&SegMask::new()).unwrap(), "[]");
    }
}
