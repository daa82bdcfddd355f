//! The `newc` cpio format (`070701`), the one the kernel's initramfs unpacker reads
//! (`init/initramfs.c`; the format is in `Documentation/driver-api/early-userspace/buffer-format.rst`).
//!
//! An entry is a 110-byte ASCII header — the magic and thirteen 8-digit hex fields: ino, mode,
//! uid, gid, nlink, mtime, filesize, devmajor, devminor, rdevmajor, rdevminor, namesize (with
//! the NUL), check (0) — then the name and a NUL, padded to a multiple of 4 from the start of the
//! header, then the data, padded to a multiple of 4. The archive ends with an entry named
//! `TRAILER!!!`. The kernel accepts several archives one after the other (each may be
//! compressed on its own), which is how the VM appends the scripts to a cached base.
//!
//! [`Writer`] writes entries as given; [`read`] parses an archive back (tests, and a check of
//! what was built). Names are relative (`usr/bin/trc`); the writer refuses empty names, `..`
//! components and NULs, and does not create parent directories ([`crate::initramfs::Tree`]
//! does, in order).

use std::io::{self, Write};

pub const MAGIC: &[u8; 6] = b"070701";
pub const TRAILER: &str = "TRAILER!!!";
const HEADER_LEN: usize = 110;

pub const S_IFMT: u32 = 0o170000;
pub const S_IFDIR: u32 = 0o040000;
pub const S_IFREG: u32 = 0o100000;
pub const S_IFLNK: u32 = 0o120000;
pub const S_IFCHR: u32 = 0o020000;

/// One entry, as written or read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Entry {
    pub name: String,
    /// File type and permission bits (`S_IFREG | 0o755`, ...).
    pub mode: u32,
    pub mtime: u32,
    /// File contents, or a symlink's target.
    pub data: Vec<u8>,
    /// Device numbers of a device node.
    pub rdev: (u32, u32),
}

/// Writes a newc archive to `W`.
pub struct Writer<W: Write> {
    w: W,
    ino: u32,
    pos: u64,
}

fn check_name(name: &str) -> io::Result<()> {
    let bad = name.is_empty()
        || name.contains('\0')
        || name.starts_with('/')
        || name.split('/').any(|c| c == ".." || c.is_empty());
    if bad {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("cpio: bad entry name {name:?}"),
        ));
    }
    Ok(())
}

impl<W: Write> Writer<W> {
    pub fn new(w: W) -> Writer<W> {
        Writer { w, ino: 1, pos: 0 }
    }

    fn put(&mut self, b: &[u8]) -> io::Result<()> {
        self.w.write_all(b)?;
        self.pos += b.len() as u64;
        Ok(())
    }

    fn pad(&mut self) -> io::Result<()> {
        let n = (4 - (self.pos % 4) as usize) % 4;
        self.put(&[0u8; 3][..n])
    }

    fn header(
        &mut self,
        name: &str,
        mode: u32,
        nlink: u32,
        mtime: u32,
        size: usize,
        rdev: (u32, u32),
    ) -> io::Result<()> {
        let size = u32::try_from(size).map_err(|_| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("cpio: {name} is larger than 4 GiB"),
            )
        })?;
        let ino = if name == TRAILER { 0 } else { self.ino };
        self.ino += 1;
        let namesize = name.len() as u32 + 1;
        let h = format!(
            "070701{ino:08x}{mode:08x}{:08x}{:08x}{nlink:08x}{mtime:08x}{size:08x}{:08x}{:08x}{:08x}{:08x}{namesize:08x}{:08x}",
            0, 0, 0, 0, rdev.0, rdev.1, 0
        );
        debug_assert_eq!(h.len(), HEADER_LEN);
        self.put(h.as_bytes())?;
        self.put(name.as_bytes())?;
        self.put(&[0])?;
        self.pad()
    }

    /// Any entry (`Entry::mode` says which kind).
    pub fn entry(&mut self, e: &Entry) -> io::Result<()> {
        check_name(&e.name)?;
        let nlink = if e.mode & S_IFMT == S_IFDIR { 2 } else { 1 };
        self.header(&e.name, e.mode, nlink, e.mtime, e.data.len(), e.rdev)?;
        self.put(&e.data)?;
        self.pad()
    }

    pub fn dir(&mut self, name: &str, perm: u32) -> io::Result<()> {
        self.entry(&Entry {
            name: name.into(),
            mode: S_IFDIR | (perm & 0o7777),
            mtime: 0,
            data: Vec::new(),
            rdev: (0, 0),
        })
    }

    pub fn file(&mut self, name: &str, perm: u32, mtime: u32, data: &[u8]) -> io::Result<()> {
        check_name(name)?;
        self.header(
            name,
            S_IFREG | (perm & 0o7777),
            1,
            mtime,
            data.len(),
            (0, 0),
        )?;
        self.put(data)?;
        self.pad()
    }

    pub fn symlink(&mut self, name: &str, target: &str) -> io::Result<()> {
        self.entry(&Entry {
            name: name.into(),
            mode: S_IFLNK | 0o777,
            mtime: 0,
            data: target.as_bytes().to_vec(),
            rdev: (0, 0),
        })
    }

    pub fn char_device(&mut self, name: &str, perm: u32, major: u32, minor: u32) -> io::Result<()> {
        self.entry(&Entry {
            name: name.into(),
            mode: S_IFCHR | (perm & 0o7777),
            mtime: 0,
            data: Vec::new(),
            rdev: (major, minor),
        })
    }

    /// Writes the trailer and returns the inner writer.
    pub fn finish(mut self) -> io::Result<W> {
        self.header(TRAILER, 0, 1, 0, 0, (0, 0))?;
        // The kernel reads archives in 4-byte steps; GNU cpio pads to 512, which is not needed.
        self.w.flush()?;
        Ok(self.w)
    }
}

/// Why bytes are not a newc archive (offsets are the header's).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CpioError {
    #[error("cpio: {what} is not ASCII")]
    NotAscii { what: &'static str },
    #[error("cpio: {what} {text:?} is not hex")]
    NotHex { what: &'static str, text: String },
    #[error("cpio: truncated header at {0}")]
    TruncatedHeader(usize),
    #[error("cpio: no newc magic at offset {0}")]
    NoMagic(usize),
    #[error("cpio: empty name at offset {0}")]
    EmptyName(usize),
    #[error("cpio: truncated name")]
    TruncatedName,
    #[error("cpio: name at offset {0} is not NUL-terminated")]
    NameNotTerminated(usize),
    #[error("cpio: name is not UTF-8")]
    NameNotUtf8,
    #[error("cpio: {0}: truncated data")]
    TruncatedData(String),
}

fn hex(b: &[u8], what: &'static str) -> Result<u32, CpioError> {
    let s = std::str::from_utf8(b).map_err(|_| CpioError::NotAscii { what })?;
    u32::from_str_radix(s, 16).map_err(|_| CpioError::NotHex {
        what,
        text: s.to_string(),
    })
}

/// Parses newc archives (several in a row, with NUL padding between them, as the kernel
/// accepts), up to the end of `b`. Uncompressed input only.
pub fn read(b: &[u8]) -> Result<Vec<Entry>, CpioError> {
    let mut out = Vec::new();
    let mut p = 0usize;
    let align = |x: usize| (x + 3) & !3;
    loop {
        while p < b.len() && b[p] == 0 {
            p += 1;
        }
        if p >= b.len() {
            return Ok(out);
        }
        let h = b
            .get(p..p + HEADER_LEN)
            .ok_or(CpioError::TruncatedHeader(p))?;
        if &h[..6] != MAGIC {
            return Err(CpioError::NoMagic(p));
        }
        let f = |i: usize, what: &'static str| hex(&h[6 + 8 * i..14 + 8 * i], what);
        let mode = f(1, "mode")?;
        let mtime = f(5, "mtime")?;
        let size = f(6, "filesize")? as usize;
        let rdev = (f(9, "rdevmajor")?, f(10, "rdevminor")?);
        let namesize = f(11, "namesize")? as usize;
        if namesize == 0 {
            return Err(CpioError::EmptyName(p));
        }
        let name_start = p + HEADER_LEN;
        let name = b
            .get(name_start..name_start + namesize - 1)
            .ok_or(CpioError::TruncatedName)?;
        if b.get(name_start + namesize - 1) != Some(&0) {
            return Err(CpioError::NameNotTerminated(p));
        }
        let name = String::from_utf8(name.to_vec()).map_err(|_| CpioError::NameNotUtf8)?;
        let data_start = align(name_start + namesize - p) + p;
        let data = b
            .get(data_start..data_start + size)
            .ok_or_else(|| CpioError::TruncatedData(name.clone()))?
            .to_vec();
        p = align(data_start + size - p) + p;
        if name == TRAILER {
            continue;
        }
        out.push(Entry {
            name,
            mode,
            mtime,
            data,
            rdev,
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Vec<u8> {
        let mut w = Writer::new(Vec::new());
        w.dir("usr", 0o755).unwrap();
        w.dir("usr/bin", 0o755).unwrap();
        w.file("usr/bin/a", 0o755, 1_700_000_000, b"hello").unwrap();
        w.file("usr/bin/empty", 0o644, 0, b"").unwrap();
        w.file("usr/bin/four", 0o644, 0, b"1234").unwrap();
        w.symlink("bin", "usr/bin").unwrap();
        w.char_device("console", 0o600, 5, 1).unwrap();
        w.finish().unwrap()
    }

    #[test]
    fn round_trip() {
        let b = sample();
        assert_eq!(b.len() % 4, 0);
        let e = read(&b).unwrap();
        let names: Vec<&str> = e.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "usr",
                "usr/bin",
                "usr/bin/a",
                "usr/bin/empty",
                "usr/bin/four",
                "bin",
                "console"
            ]
        );
        assert_eq!(e[2].data, b"hello");
        assert_eq!(e[2].mode, S_IFREG | 0o755);
        assert_eq!(e[2].mtime, 1_700_000_000);
        assert_eq!(e[3].data, b"");
        assert_eq!(e[5].mode & S_IFMT, S_IFLNK);
        assert_eq!(e[5].data, b"usr/bin");
        assert_eq!(e[6].rdev, (5, 1));
        assert_eq!(e[6].mode, S_IFCHR | 0o600);
    }

    #[test]
    fn header_layout() {
        let mut w = Writer::new(Vec::new());
        w.file("ab", 0o644, 0x10, b"xyz").unwrap();
        let b = w.finish().unwrap();
        // 110 + "ab\0" = 113 -> padded to 116; 3 data bytes -> padded to 120.
        assert_eq!(&b[..6], b"070701");
        assert_eq!(&b[6..14], b"00000001", "ino");
        assert_eq!(&b[14..22], b"000081a4", "mode");
        assert_eq!(&b[46..54], b"00000010", "mtime");
        assert_eq!(&b[54..62], b"00000003", "filesize");
        assert_eq!(&b[94..102], b"00000003", "namesize counts the NUL");
        assert_eq!(&b[110..116], b"ab\0\0\0\0");
        assert_eq!(&b[116..120], b"xyz\0");
        assert_eq!(&b[120..126], b"070701", "the trailer follows");
        assert!(
            std::str::from_utf8(&b[120..230])
                .unwrap()
                .ends_with("0000000b00000000"),
            "TRAILER!!! + NUL = 11"
        );
    }

    #[test]
    fn concatenated_archives() {
        let mut b = sample();
        b.extend_from_slice(&[0; 8]);
        let mut w = Writer::new(Vec::new());
        w.file("t/x.pkt", 0o644, 0, b"0 socket").unwrap();
        b.extend(w.finish().unwrap());
        let e = read(&b).unwrap();
        assert_eq!(e.last().unwrap().name, "t/x.pkt");
        assert_eq!(e.len(), 8);
    }

    #[test]
    fn bad_names_refused() {
        let mut w = Writer::new(Vec::new());
        for n in ["", "/abs", "a/../b", "a//b", "a\0b", "a/"] {
            assert!(w.file(n, 0o644, 0, b"").is_err(), "{n:?}");
        }
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        assert!(read(b"070701zz").is_err());
        assert!(read(b"not a cpio archive at all, no").is_err());
        let mut b = sample();
        b.truncate(200);
        assert!(read(&b).is_err());
        assert_eq!(read(&[0; 16]).unwrap(), Vec::new());
    }
}
