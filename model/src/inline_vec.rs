//! [`InlineVec`]: a `SmallVec` of `Copy` items whose `Clone` is a plain copy.
//!
//! `SmallVec`'s own `Clone` goes through `Extend` item by item; the checker clones a state for
//! every transition, and the five small vectors in a state made that clone cost more than the
//! step itself. `InlineVec` derefs to the `SmallVec` (every method works unchanged), hashes,
//! compares and (de)serialises exactly like it, and clones with a bitwise copy of itself while
//! the items are inline.

use serde::{Deserialize, Serialize};
use smallvec::{Array, SmallVec};
use std::ops::{Deref, DerefMut};

#[derive(Serialize, Deserialize)]
#[serde(transparent)]
#[serde(bound(
    serialize = "A::Item: Serialize",
    deserialize = "A::Item: Deserialize<'de>"
))]
pub struct InlineVec<A: Array>(pub SmallVec<A>);

impl<A: Array> InlineVec<A> {
    pub fn new() -> Self {
        InlineVec(SmallVec::new())
    }
    pub fn from_elem(x: A::Item, n: usize) -> Self
    where
        A::Item: Clone,
    {
        InlineVec(SmallVec::from_elem(x, n))
    }
}

impl<A: Array> Default for InlineVec<A> {
    fn default() -> Self {
        InlineVec(SmallVec::new())
    }
}

impl<A: Array> std::fmt::Debug for InlineVec<A>
where
    A::Item: std::fmt::Debug,
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl<A: Array> PartialEq for InlineVec<A>
where
    A::Item: PartialEq,
{
    #[inline]
    fn eq(&self, other: &Self) -> bool {
        self.0[..] == other.0[..]
    }
}

impl<A: Array> Eq for InlineVec<A> where A::Item: Eq {}

impl<A: Array> std::hash::Hash for InlineVec<A>
where
    A::Item: std::hash::Hash,
{
    #[inline]
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.0.hash(state)
    }
}

impl<A: Array> Clone for InlineVec<A>
where
    A::Item: Copy,
{
    #[inline(always)]
    fn clone(&self) -> Self {
        if !self.0.spilled() {
            // SAFETY: the items are inline and `Copy` (no heap, no drop glue), so a bitwise
            // copy of the whole `SmallVec` is an independent, valid `SmallVec` with the same
            // items (a fixed-size copy the compiler inlines, instead of a `memcpy` call).
            unsafe { std::ptr::read(self) }
        } else {
            InlineVec(SmallVec::from_slice(&self.0))
        }
    }
}

impl<A: Array> Deref for InlineVec<A> {
    type Target = SmallVec<A>;
    #[inline]
    fn deref(&self) -> &SmallVec<A> {
        &self.0
    }
}

impl<A: Array> DerefMut for InlineVec<A> {
    #[inline]
    fn deref_mut(&mut self) -> &mut SmallVec<A> {
        &mut self.0
    }
}

impl<'a, A: Array> IntoIterator for &'a InlineVec<A> {
    type Item = &'a A::Item;
    type IntoIter = std::slice::Iter<'a, A::Item>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter()
    }
}

impl<'a, A: Array> IntoIterator for &'a mut InlineVec<A> {
    type Item = &'a mut A::Item;
    type IntoIter = std::slice::IterMut<'a, A::Item>;
    fn into_iter(self) -> Self::IntoIter {
        self.0.iter_mut()
    }
}

impl<A: Array> From<SmallVec<A>> for InlineVec<A> {
    fn from(v: SmallVec<A>) -> Self {
        InlineVec(v)
    }
}

impl<A: Array> FromIterator<A::Item> for InlineVec<A> {
    fn from_iter<I: IntoIterator<Item = A::Item>>(it: I) -> Self {
        InlineVec(it.into_iter().collect())
    }
}

impl<A: Array> Extend<A::Item> for InlineVec<A> {
    fn extend<I: IntoIterator<Item = A::Item>>(&mut self, it: I) {
        self.0.extend(it)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};

    #[test]
    fn behaves_like_smallvec() {
        let mut v: InlineVec<[(u32, u8); 2]> = InlineVec::new();
        v.push((1, 2));
        v.push((3, 4));
        v.push((5, 6)); // spills
        let w = v.clone();
        assert_eq!(v, w);
        // Inline clone (a bitwise copy): independent of the original.
        let mut u: InlineVec<[(u32, u8); 2]> = InlineVec::new();
        u.push((7, 8));
        let c = u.clone();
        u.push((9, 9));
        u[0] = (1, 1);
        assert_eq!(&c[..], &[(7, 8)]);
        let mut c2 = c.clone();
        c2.extend([(1, 2), (3, 4)]); // the copy can spill on its own
        assert_eq!((c.len(), c2.len()), (1, 3));
        assert_eq!(&w[..], &[(1, 2), (3, 4), (5, 6)]);
        let s: SmallVec<[(u32, u8); 2]> = SmallVec::from_slice(&w);
        let h = BuildHasherDefault::<DefaultHasher>::default();
        assert_eq!(h.hash_one(&w), h.hash_one(&s));
        assert_eq!(
            serde_json::to_string(&w).unwrap(),
            serde_json::to_string(&s).unwrap()
        );
        let back: InlineVec<[(u32, u8); 2]> = serde_json::from_str("[[1,2]]").unwrap();
        assert_eq!(back.len(), 1);
        assert_eq!((&back).into_iter().count(), 1);
    }
}
