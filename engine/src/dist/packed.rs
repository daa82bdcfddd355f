//! A rank's states of one level (its frontier block, its candidates), in order, kept
//! LZ4-compressed in blocks: a state that owns no heap memory is mostly zero bytes and small
//! numbers (the TCP model's compress about 7x), and a rank holds a whole level in memory. Read
//! once, in order. A block holding a state that owns heap memory stays as it is.

use std::mem::MaybeUninit;

use crate::store::copy_frozen;

/// States per block.
const BLOCK: usize = 1024;

enum Block<S> {
    /// `n` plain states' bytes, compressed.
    Lz4 {
        data: Vec<u8>,
        n: usize,
    },
    Raw(Vec<S>),
}

/// States in order (see the module docs).
pub(crate) struct Packed<S> {
    blocks: Vec<Block<S>>,
    /// The block being filled, and whether all its states are plain.
    open: Vec<S>,
    open_plain: bool,
    len: usize,
    /// Bytes held (compressed blocks as stored, others at their size).
    bytes: u64,
}

impl<S> Default for Packed<S> {
    fn default() -> Self {
        Packed {
            blocks: Vec::new(),
            open: Vec::new(),
            open_plain: true,
            len: 0,
            bytes: 0,
        }
    }
}

impl<S> Packed<S> {
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Bytes of memory the states take.
    pub(crate) fn bytes(&self) -> u64 {
        self.bytes + (self.open.capacity() * size_of::<S>()) as u64
    }

    /// Appends `s`; `plain`: it owns no heap memory (`Hooks::drop_is_noop`).
    pub(crate) fn push(&mut self, s: S, plain: bool) {
        if self.open.capacity() == 0 {
            self.open.reserve_exact(BLOCK);
        }
        self.open_plain &= plain;
        self.open.push(s);
        self.len += 1;
        if self.open.len() == BLOCK {
            self.seal();
        }
    }

    /// Closes the open block: compressed if its states are plain.
    fn seal(&mut self) {
        if self.open.is_empty() {
            return;
        }
        let n = self.open.len();
        let block = if self.open_plain && size_of::<S>() > 0 {
            let len = n * size_of::<S>();
            let mut raw = vec![0u8; len];
            // SAFETY: `n` initialised states, `raw` has room for their bytes (an untyped copy,
            // padding included).
            unsafe { copy_frozen(self.open.as_ptr() as *const u8, raw.as_mut_ptr(), len) };
            // SAFETY: plain states own nothing: forgetting them (their bytes are kept) leaks
            // nothing.
            unsafe { self.open.set_len(0) };
            let data = lz4_flex::block::compress(&raw);
            self.bytes += data.capacity() as u64;
            Block::Lz4 { data, n }
        } else {
            let v = std::mem::take(&mut self.open);
            self.bytes += (v.capacity() * size_of::<S>()) as u64;
            Block::Raw(v)
        };
        self.blocks.push(block);
        self.open_plain = true;
    }

    /// Appends the states of `other` after these (its blocks move as they are).
    pub(crate) fn append(&mut self, mut other: Packed<S>) {
        self.seal();
        other.seal();
        self.len += other.len;
        self.bytes += other.bytes;
        self.blocks.append(&mut other.blocks);
        other.len = 0;
        other.bytes = 0;
    }

    /// Every state in order, by value; the blocks are freed as they are passed.
    pub(crate) fn drain(mut self, mut f: impl FnMut(S)) {
        self.seal();
        for block in std::mem::take(&mut self.blocks) {
            match block {
                Block::Raw(v) => v.into_iter().for_each(&mut f),
                Block::Lz4 { data, n } => {
                    let len = n * size_of::<S>();
                    let raw = lz4_flex::block::decompress(&data, len)
                        .expect("a packed block decompresses");
                    assert_eq!(raw.len(), len, "a packed block's size");
                    drop(data);
                    let mut v: Vec<MaybeUninit<S>> = Vec::with_capacity(n);
                    // SAFETY: room for `n` states, filled with the bytes of `n` plain states.
                    unsafe {
                        std::ptr::copy_nonoverlapping(raw.as_ptr(), v.as_mut_ptr() as *mut u8, len);
                        v.set_len(n);
                    }
                    drop(raw);
                    for s in v {
                        // SAFETY: the bytes of a plain state, restored: a valid value.
                        f(unsafe { s.assume_init() });
                    }
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Packed;

    #[test]
    fn states_come_back_in_order_plain_or_not() {
        let mut p = Packed::default();
        for i in 0..2500u64 {
            p.push((i, [i as u8; 40], i % 7 == 0), true);
        }
        assert_eq!(p.len(), 2500);
        assert!(p.bytes() < 2500 * 56, "{}", p.bytes());
        let mut got = Vec::new();
        p.drain(|s| got.push(s));
        assert!(got
            .iter()
            .enumerate()
            .all(|(i, s)| *s == (i as u64, [i as u8; 40], i % 7 == 0)));
        let mut q = Packed::default();
        for i in 0..1500u32 {
            q.push(vec![i; 3], false);
        }
        let mut r = Packed::default();
        r.push(vec![7u32], false);
        r.append(q);
        let mut n = 0;
        let mut first = true;
        r.drain(|v| {
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
