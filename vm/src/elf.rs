//! Reading just enough of two binary formats: the x86 boot header of a bzImage (its release
//! string, `Documentation/arch/x86/boot.rst`) and an ELF file's program headers (is it
//! dynamically linked, i.e. does it have `PT_INTERP`).

use crate::Error;
use std::path::Path;

/// The release (`uname -r`) a bzImage was built as: the first word of the string the setup
/// header's `kernel_version` field points to (offset 0x20e, relative to 0x200).
pub fn bzimage_release(path: &Path) -> Result<String, Error> {
    let mut f = std::fs::File::open(path)
        .map_err(|e| Error::Missing(format!("{}: {e}", path.display())))?;
    let mut b = vec![0u8; 0x8000];
    let n = read_up_to(&mut f, &mut b)
        .map_err(|e| Error::Failed(format!("{}: {e}", path.display())))?;
    b.truncate(n);
    release_from_header(&b).ok_or_else(|| {
        Error::Usage(format!(
            "{}: not a bzImage (no x86 boot header with a kernel version)",
            path.display()
        ))
    })
}

fn read_up_to(f: &mut impl std::io::Read, b: &mut [u8]) -> std::io::Result<usize> {
    let mut n = 0;
    while n < b.len() {
        match f.read(&mut b[n..])? {
            0 => break,
            k => n += k,
        }
    }
    Ok(n)
}

/// See [`bzimage_release`]; `b` is the start of the file.
pub fn release_from_header(b: &[u8]) -> Option<String> {
    if b.get(0x202..0x206)? != b"HdrS" {
        return None;
    }
    let version = u16::from_le_bytes([*b.get(0x206)?, *b.get(0x207)?]);
    if version < 0x0200 {
        return None;
    }
    let ptr = u16::from_le_bytes([*b.get(0x20e)?, *b.get(0x20f)?]) as usize;
    if ptr == 0 {
        return None;
    }
    let s = b.get(ptr + 0x200..)?;
    let end = s.iter().position(|&c| c == 0 || c == b' ')?;
    let r = std::str::from_utf8(&s[..end]).ok()?;
    (!r.is_empty() && r.chars().all(|c| c.is_ascii_graphic())).then(|| r.to_string())
}

/// `Some(true)`: a dynamically linked ELF (it has a `PT_INTERP`); `Some(false)`: a static one;
/// `None`: not a 64-bit little-endian ELF file.
pub fn is_dynamic(b: &[u8]) -> Option<bool> {
    if b.get(..4)? != b"\x7fELF" || *b.get(4)? != 2 || *b.get(5)? != 1 {
        return None;
    }
    let u16at = |o: usize| Some(u16::from_le_bytes(b.get(o..o + 2)?.try_into().ok()?));
    let u32at = |o: usize| Some(u32::from_le_bytes(b.get(o..o + 4)?.try_into().ok()?));
    let u64at = |o: usize| Some(u64::from_le_bytes(b.get(o..o + 8)?.try_into().ok()?));
    let phoff = u64at(0x20)? as usize;
    let phentsize = u16at(0x36)? as usize;
    let phnum = u16at(0x38)? as usize;
    for i in 0..phnum {
        if u32at(phoff.checked_add(i.checked_mul(phentsize)?)?)? == 3 {
            return Some(true);
        }
    }
    Some(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bzimage_header() {
        let mut b = vec![0u8; 0x1000];
        b[0x202..0x206].copy_from_slice(b"HdrS");
        b[0x206..0x208].copy_from_slice(&0x020fu16.to_le_bytes());
        b[0x20e..0x210].copy_from_slice(&0x0500u16.to_le_bytes());
        let s = b"7.2.13+deb14-cloud-amd64 (debian-kernel@lists.debian.org) #1 SMP\0";
        b[0x700..0x700 + s.len()].copy_from_slice(s);
        assert_eq!(
            release_from_header(&b).as_deref(),
            Some("7.2.13+deb14-cloud-amd64")
        );
        b[0x202] = b'X';
        assert_eq!(release_from_header(&b), None);
        assert_eq!(release_from_header(&[0; 16]), None);
    }

    #[test]
    fn elf_kinds() {
        let me = std::fs::read(std::env::current_exe().unwrap()).unwrap();
        assert_eq!(
            is_dynamic(&me),
            Some(true),
            "the test binary links libc dynamically"
        );
        assert_eq!(is_dynamic(b"#!/bin/sh\n"), None);
        if let Ok(bb) = std::fs::read("/bin/busybox") {
            if std::process::Command::new("/bin/busybox")
                .arg("true")
                .status()
                .is_ok()
            {
                // Debian's busybox-static (the plain busybox package is dynamic).
                let _ = is_dynamic(&bb).unwrap();
            }
        }
    }
}
