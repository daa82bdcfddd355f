//! A rank's states of one level (its frontier block, its candidates), in order, each as its
//! [`Form`], kept LZ4-compressed in blocks, since a rank holds a whole level in memory; read
//! once, in order.
//!
//! A state that owns no heap memory (`Hooks::drop_is_noop`) is kept as its bytes: copying them
//! is far cheaper than encoding, and they are mostly zero bytes and small numbers (the TCP
//! model's 768 compress about 7x). Any other state as its compact binary serde form
//! ([`serialize`], postcard): a TCP model state from 9 segments on (its vectors outgrow their
//! inline room) takes 768 bytes and a heap block or two in memory, about 230 bytes as its form
//! (2,400 as JSON) and about 31 once compressed with its block.
//!
//! The same form crosses ranks ([`Packed::drain_forms`] hands it on without decoding it), so a
//! state is encoded once, when it is generated, and decoded once, when it is expanded.

use std::marker::PhantomData;
use std::mem::MaybeUninit;

use serde::{de::DeserializeOwned, Serialize};

use crate::store::copy_frozen;

/// A state's form: its bytes (`plain`: it owns no heap memory; its padding included, see
/// [`copy_frozen`]) or its serde form.
#[derive(Clone, Copy)]
pub(crate) struct Form<'a> {
    pub(crate) bytes: &'a [u8],
    pub(crate) plain: bool,
}

impl Form<'_> {
    /// The state this is the form of. Its bytes must come from a state of type `S` of this
    /// binary (every rank runs the same binary, checked by the state's size).
    pub(crate) fn state<S: DeserializeOwned>(self) -> S {
        if !self.plain {
            return deserialize(self.bytes);
        }
        assert_eq!(self.bytes.len(), size_of::<S>(), "a plain state's size");
        let mut s = MaybeUninit::<S>::uninit();
        // SAFETY: the bytes of a plain state of type `S` (its size checked), copied untyped:
        // a valid value that owns no heap memory.
        unsafe {
            std::ptr::copy_nonoverlapping(
                self.bytes.as_ptr(),
                s.as_mut_ptr() as *mut u8,
                self.bytes.len(),
            );
            s.assume_init()
        }
    }
}

/// The flag of a plain state's form in its length word.
const PLAIN: u32 = 1 << 31;

/// The length word of a form of `len` bytes.
fn head(len: usize, plain: bool) -> u32 {
    let len = u32::try_from(len)
        .ok()
        .filter(|&n| n < PLAIN)
        .expect("a state's form under 2 GiB");
    if plain {
        len | PLAIN
    } else {
        len
    }
}

/// States per block.
const BLOCK: usize = 1024;

/// Appends `s`'s compact binary serde form (postcard) to `out`. Every type the engine checks
/// has a serde form that round-trips (a state as JSON in a report, read back by `trc replay`).
pub(crate) fn serialize<S: Serialize>(s: &S, out: Vec<u8>) -> Vec<u8> {
    postcard::to_extend(s, out).expect("a state serialises")
}

/// The state whose serde form ([`serialize`]) is `data` (written by a rank of the same binary).
pub(crate) fn deserialize<S: DeserializeOwned>(data: &[u8]) -> S {
    postcard::from_bytes(data).expect("a state written by this binary deserialises")
}

/// `n` forms, each after its length (a little-endian `u32`, with [`PLAIN`] for a state's bytes):
/// `len` bytes, compressed.
struct Block {
    data: Vec<u8>,
    n: usize,
    len: usize,
}

/// States in order (see the module docs).
pub(crate) struct Packed<S> {
    blocks: Vec<Block>,
    /// The forms of the block being filled (not compressed yet), and how many.
    open: Vec<u8>,
    open_n: usize,
    len: usize,
    /// Bytes of the sealed blocks as stored.
    bytes: u64,
    _states: PhantomData<fn(S) -> S>,
}

impl<S> Default for Packed<S> {
    fn default() -> Self {
        Packed {
            blocks: Vec::new(),
            open: Vec::new(),
            open_n: 0,
            len: 0,
            bytes: 0,
            _states: PhantomData,
        }
    }
}

impl<S: Serialize + DeserializeOwned> Packed<S> {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Bytes of memory the states take.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes + self.open.capacity() as u64
    }

    /// Appends `s` (its form); `plain`: it owns no heap memory (`Hooks::drop_is_noop`), and is
    /// then forgotten, not dropped (its bytes are kept).
    pub(crate) fn push(&mut self, s: S, plain: bool) {
        let at = self.open.len();
        self.open.extend_from_slice(&[0; 4]);
        let head = if plain {
            let n = size_of::<S>();
            self.open.reserve(n);
            // SAFETY: `s` is `n` initialised bytes (padding copied untyped) and the buffer has
            // room for them after its length.
            unsafe {
                copy_frozen(
                    &s as *const S as *const u8,
                    self.open.as_mut_ptr().add(at + 4),
                    n,
                );
                self.open.set_len(at + 4 + n);
            }
            std::mem::forget(s);
            head(n, true)
        } else {
            self.open = serialize(&s, std::mem::take(&mut self.open));
            head(self.open.len() - at - 4, false)
        };
        self.open[at..at + 4].copy_from_slice(&head.to_le_bytes());
        self.pushed();
    }

    /// Appends the state whose form is `form` (from [`Packed::drain_forms`] or another rank).
    pub(crate) fn push_form(&mut self, form: Form) {
        let head = head(form.bytes.len(), form.plain);
        self.open.extend_from_slice(&head.to_le_bytes());
        self.open.extend_from_slice(form.bytes);
        self.pushed();
    }

    fn pushed(&mut self) {
        self.open_n += 1;
        self.len += 1;
        if self.open_n == BLOCK {
            self.seal();
        }
    }

    /// Closes the open block: its forms compressed.
    fn seal(&mut self) {
        if self.open_n == 0 {
            return;
        }
        let data = lz4_flex::block::compress(&self.open);
        self.bytes += data.capacity() as u64;
        self.blocks.push(Block {
            data,
            n: self.open_n,
            len: self.open.len(),
        });
        self.open.clear();
        self.open_n = 0;
    }

    /// Appends the states of `other` after these (its blocks move as they are).
    pub(crate) fn append(&mut self, mut other: Packed<S>) {
        self.seal();
        other.seal();
        self.len += other.len;
        self.bytes += other.bytes;
        self.blocks.append(&mut other.blocks);
    }

    /// Every state's form in order; the blocks are freed as they are passed.
    pub(crate) fn drain_forms(mut self, mut f: impl FnMut(Form)) {
        self.seal();
        for Block { data, n, len } in std::mem::take(&mut self.blocks) {
            let raw = lz4_flex::block::decompress(&data, len).expect("a packed block decompresses");
            drop(data);
            let mut at = 0;
            for _ in 0..n {
                let head = u32::from_le_bytes(raw[at..at + 4].try_into().unwrap());
                let end = at + 4 + (head & !PLAIN) as usize;
                f(Form {
                    bytes: &raw[at + 4..end],
                    plain: head & PLAIN != 0,
                });
                at = end;
            }
            assert_eq!(at, raw.len(), "a packed block's size");
        }
    }

    /// Every state in order, by value; the blocks are freed as they are passed.
    pub(crate) fn drain(self, mut f: impl FnMut(S)) {
        self.drain_forms(|form| f(form.state()));
    }
}

#[cfg(test)]
mod tests {
    use super::Packed;

    #[test]
    fn states_come_back_in_order_and_take_little_room() {
        let mut p = Packed::default();
        for i in 0..2500u64 {
            p.push((i, [i as u8; 32], i % 7 == 0), i % 2 == 0);
        }
        assert_eq!(p.len(), 2500);
        // 48 bytes each in memory (every other one kept as them, the others as their serde
        // form, about 35), compressed far below (appending to an empty one seals the open block).
        let mut sealed = Packed::default();
        sealed.append(p);
        let p = sealed;
        assert!(p.bytes() < 2500 * 16, "{}", p.bytes());
        let mut got = Vec::new();
        p.drain(|s| got.push(s));
        assert!(got
            .iter()
            .enumerate()
            .all(|(i, s)| *s == (i as u64, [i as u8; 32], i % 7 == 0)));
        // States that own heap memory; forms handed on unchanged; blocks appended.
        let mut q = Packed::default();
        for i in 0..1500u32 {
            q.push(vec![i; 3], false);
        }
        let mut q2 = Packed::default();
        q.drain_forms(|form| q2.push_form(form));
        let mut r = Packed::default();
        r.push(vec![7u32], false);
        r.append(q2);
        assert_eq!(r.len(), 1501);
        let mut n = 0;
        let mut first = true;
        r.drain(|v: Vec<u32>| {
            if std::mem::take(&mut first) {
                assert_eq!(v, vec![7]);
                return;
            }
            assert_eq!(v, vec![n; 3]);
            n += 1;
        });
        assert_eq!(n, 1500);
    }
}
