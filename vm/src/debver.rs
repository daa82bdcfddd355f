//! Debian version comparison, as `dpkg --compare-versions` (deb-version(7)): `[epoch:]upstream[-revision]`,
//! compared part by part; within a part, alternating non-digit runs (where `~` sorts before
//! everything, even the end, and letters before other characters) and numeric runs.

use std::cmp::Ordering;

fn split(v: &str) -> (u64, &str, &str) {
    let (epoch, rest) = match v.split_once(':') {
        Some((e, r)) if e.chars().all(|c| c.is_ascii_digit()) && !e.is_empty() => {
            (e.parse().unwrap_or(0), r)
        }
        _ => (0, v),
    };
    match rest.rsplit_once('-') {
        Some((u, r)) => (epoch, u, r),
        None => (epoch, rest, ""),
    }
}

fn order(c: Option<u8>) -> i32 {
    match c {
        None => 0,
        Some(b'~') => -1,
        Some(c) if c.is_ascii_digit() => 0,
        Some(c) if c.is_ascii_alphabetic() => c as i32,
        Some(c) => c as i32 + 256,
    }
}

fn part(a: &str, b: &str) -> Ordering {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    let (mut i, mut j) = (0, 0);
    while i < a.len() || j < b.len() {
        // non-digit run
        while (i < a.len() && !a[i].is_ascii_digit()) || (j < b.len() && !b[j].is_ascii_digit()) {
            let ca = a.get(i).copied().filter(|c| !c.is_ascii_digit());
            let cb = b.get(j).copied().filter(|c| !c.is_ascii_digit());
            let (oa, ob) = (order(ca), order(cb));
            if oa != ob {
                return oa.cmp(&ob);
            }
            if ca.is_some() {
                i += 1;
            }
            if cb.is_some() {
                j += 1;
            }
        }
        // numeric run
        let si = i;
        while i < a.len() && a[i].is_ascii_digit() {
            i += 1;
        }
        let sj = j;
        while j < b.len() && b[j].is_ascii_digit() {
            j += 1;
        }
        let na = std::str::from_utf8(&a[si..i])
            .unwrap_or("")
            .trim_start_matches('0');
        let nb = std::str::from_utf8(&b[sj..j])
            .unwrap_or("")
            .trim_start_matches('0');
        let c = na.len().cmp(&nb.len()).then_with(|| na.cmp(nb));
        if c != Ordering::Equal {
            return c;
        }
    }
    Ordering::Equal
}

/// Compares two Debian versions.
pub fn compare(a: &str, b: &str) -> Ordering {
    let (ea, ua, ra) = split(a);
    let (eb, ub, rb) = split(b);
    ea.cmp(&eb)
        .then_with(|| part(ua, ub))
        .then_with(|| part(ra, rb))
}

#[cfg(test)]
mod tests {
    use super::*;
    use Ordering::*;

    #[test]
    fn dpkg_examples() {
        for (a, b, o) in [
            ("6.12.117-1", "6.12.107-1", Greater),
            ("6.12.9-1", "6.12.10-1", Less),
            ("7.2.13-1", "7.2.13-1", Equal),
            ("1:1.0", "2.0", Greater),
            ("1.0~rc1", "1.0", Less),
            ("1.0~rc1", "1.0~rc2", Less),
            ("1.0", "1.0+b1", Less),
            ("1.0a", "1.0", Greater),
            ("1.0-1", "1.0-1.1", Less),
            ("6.1.176-1", "6.1.0-50", Greater),
            ("2.0-1", "10.0-1", Less),
            ("1.0-1~bpo12+1", "1.0-1", Less),
            ("01", "1", Equal),
        ] {
            assert_eq!(compare(a, b), o, "{a} vs {b}");
            assert_eq!(compare(b, a), o.reverse(), "{b} vs {a}");
        }
    }
}
