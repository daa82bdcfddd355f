//! Sequence-number arithmetic exactly as the kernel does it (`include/net/tcp.h`: `before()`,
//! `after()`): u32 values compared through their signed 32-bit difference, so comparisons keep
//! working across wrap-around.

/// `before(a, b)`: `a` is strictly earlier than `b` in sequence space.
#[inline]
pub fn before(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// `after(a, b)`: `a` is strictly later than `b` in sequence space.
#[inline]
pub fn after(a: u32, b: u32) -> bool {
    before(b, a)
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn wraps() {
        assert!(before(u32::MAX, 0));
        assert!(after(0, u32::MAX));
        assert!(before(1, 2) && !before(2, 2) && !after(2, 2));
        assert!(after(5, u32::MAX - 5));
    }
}
