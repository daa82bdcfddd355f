//! What goes into the guest (the job, `/t/job.json`, and the base manifest,
//! `/etc/trc-vm/base.json`) and what comes out: [`Record`]s, framed on the virtio-serial port
//! `trc.results` (and on the console if the port is missing).
//!
//! A frame is a header line `TRC-VM1 LEN CRC32\n`, then LEN bytes of JSON, then `\n`. CRC32
//! (IEEE, as gzip's) is of the JSON bytes, in 8 hex digits. The decoder looks for the header
//! anywhere (firmware output may precede it on a line), takes the frame only when the length is
//! there and the checksum matches, and otherwise skips the header and searches again, so a
//! damaged frame costs that frame only.

use serde::{Deserialize, Serialize};

pub const MAGIC: &str = "TRC-VM1 ";
/// Larger frames are refused (a result is a few hundred KB at most).
pub const MAX_FRAME: usize = 64 << 20;
/// The name of the virtio-serial port.
pub const PORT_NAME: &str = "trc.results";

/// The options of `trc kernel run` that the guest applies (`trc_kernel::RunOptions` without
/// the host-only parts).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GuestOptions {
    pub sack: Option<bool>,
    pub timestamps: Option<bool>,
    pub cc: Option<String>,
    pub packetdrill: Vec<(String, Option<String>)>,
    pub no_shell: bool,
}

impl Default for GuestOptions {
    fn default() -> GuestOptions {
        let d = trc_kernel::RunOptions::default();
        GuestOptions {
            sack: d.sack,
            timestamps: d.timestamps,
            cc: d.cc,
            packetdrill: d.packetdrill,
            no_shell: d.no_shell,
        }
    }
}

impl GuestOptions {
    pub fn from_run_options(o: &trc_kernel::RunOptions) -> GuestOptions {
        GuestOptions {
            sack: o.sack,
            timestamps: o.timestamps,
            cc: o.cc.clone(),
            packetdrill: o.packetdrill.clone(),
            no_shell: o.no_shell,
        }
    }

    /// The runner's options for a script in `dir` (no signal handlers: the guest stops runs
    /// itself).
    pub fn run_options(&self, dir: &std::path::Path) -> trc_kernel::RunOptions {
        trc_kernel::RunOptions {
            sack: self.sack,
            timestamps: self.timestamps,
            cc: self.cc.clone(),
            packetdrill: self.packetdrill.clone(),
            script_dir: dir.to_path_buf(),
            no_shell: self.no_shell,
            handle_signals: false,
            // The guest sets the job's per-script limit (guest time).
            time_limit: None,
        }
    }
}

/// One script of the job.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JobScript {
    /// Where it is in the guest (`/t/...`).
    pub guest_path: String,
    /// The name reports use: the path given on the host's command line.
    pub name: String,
}

/// `/t/job.json`: what the guest does.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Job {
    /// Run scripts (`trc kernel run --kernel`, `trc kernel check --kernel`).
    Scripts(ScriptJob),
    /// The runs of the impact experiment ([`crate::impact`]).
    Impact(crate::impact::ImpactJob),
}

impl Job {
    /// A [`Record::Tick`] every this many guest seconds.
    pub fn tick_s(&self) -> f64 {
        match self {
            Job::Scripts(j) => j.tick_s,
            Job::Impact(_) => 1.0,
        }
    }
}

/// Scripts to run, with the runner's options.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ScriptJob {
    pub options: GuestOptions,
    pub scripts: Vec<JobScript>,
    /// Per-script limit in guest seconds.
    pub script_timeout_s: f64,
    /// A [`Record::Tick`] every this many guest seconds.
    pub tick_s: f64,
    /// Instead of trc's runner: real packetdrill on each script ([`crate::packetdrill`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub packetdrill: Option<crate::packetdrill::PacketdrillJob>,
}

/// A module in the base archive.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaseModule {
    pub name: String,
    pub path: String,
    pub compressed: bool,
}

/// `/etc/trc-vm/base.json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaseManifest {
    pub release: String,
    /// In load order.
    pub modules: Vec<BaseModule>,
    pub builtin: Vec<String>,
    pub absent: Vec<String>,
    pub python: Option<String>,
}

/// What became of a module load.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModuleLoad {
    pub name: String,
    /// `None`: loaded (or already there).
    pub error: Option<String>,
}

/// Why the guest could not run a script (the runner's `RunError`, by kind).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ErrorKind {
    /// Exit 4 on the host: not root, no tun, ...
    Skipped,
    /// Exit 2: a bad script or option.
    Usage,
    /// Exit 1: I/O, setup, internal.
    Error,
    /// The guest's per-script time limit stopped the run (exit 130).
    Timeout,
}

impl ErrorKind {
    pub fn exit_code(&self) -> i32 {
        match self {
            ErrorKind::Skipped => trc_kernel::EXIT_SKIPPED,
            ErrorKind::Usage => 2,
            ErrorKind::Error => 1,
            ErrorKind::Timeout => 130,
        }
    }
}

/// What the guest says.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "kebab-case")]
pub enum Record {
    /// `/init` started: the kernel's release, its uptime, the module loads.
    Boot {
        release: String,
        uptime_s: f64,
        modules: Vec<ModuleLoad>,
        port: bool,
        notes: Vec<String>,
    },
    /// Script `index` (0-based) begins.
    Begin { index: usize, uptime_s: f64 },
    /// The guest is alive.
    Tick { uptime_s: f64 },
    /// Script `index` ended: a report, or why there is none.
    Result {
        index: usize,
        uptime_s: f64,
        guest_s: f64,
        rc: i32,
        report: Option<Box<trc_kernel::RunReport>>,
        error: Option<(ErrorKind, String)>,
        /// An impact run's result (a job with `impact`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        impact: Option<Box<crate::impact::ImpactRun>>,
        /// A packetdrill run's output (its tail; a job with `packetdrill`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        output: Option<String>,
    },
    /// The guest cannot go on (no job, a panic): why.
    Fatal { message: String },
    /// Every script ran; the guest powers off.
    Done { uptime_s: f64, ran: usize },
}

/// One frame around `json`.
pub fn encode(json: &[u8]) -> Vec<u8> {
    let mut crc = flate2::Crc::new();
    crc.update(json);
    let mut out = format!("\n{MAGIC}{} {:08x}\n", json.len(), crc.sum()).into_bytes();
    out.extend_from_slice(json);
    out.push(b'\n');
    out
}

/// One frame around a record.
pub fn encode_record(r: &Record) -> Vec<u8> {
    encode(&serde_json::to_vec(r).unwrap_or_else(|e| {
        format!("{{\"type\":\"fatal\",\"message\":\"cannot encode a record: {e}\"}}").into_bytes()
    }))
}

/// An incremental frame decoder: feed bytes as they come.
#[derive(Debug, Default)]
pub struct Decoder {
    buf: Vec<u8>,
    /// Frames skipped for a bad checksum, length or JSON.
    pub damaged: usize,
}

fn find(h: &[u8], n: &[u8]) -> Option<usize> {
    h.windows(n.len()).position(|w| w == n)
}

impl Decoder {
    pub fn new() -> Decoder {
        Decoder::default()
    }

    /// Adds bytes; returns the complete, verified payloads.
    pub fn push(&mut self, bytes: &[u8]) -> Vec<Vec<u8>> {
        self.buf.extend_from_slice(bytes);
        let mut out = Vec::new();
        loop {
            let Some(start) = find(&self.buf, MAGIC.as_bytes()) else {
                // Keep a tail that may be the start of a header.
                let keep = self.buf.len().min(MAGIC.len() - 1);
                self.buf.drain(..self.buf.len() - keep);
                return out;
            };
            let h = start + MAGIC.len();
            let Some(nl) = self.buf[h..].iter().position(|&b| b == b'\n') else {
                if self.buf.len() - h > 40 {
                    self.damaged += 1;
                    self.buf.drain(..h);
                    continue;
                }
                self.buf.drain(..start);
                return out;
            };
            let header = String::from_utf8_lossy(&self.buf[h..h + nl]).into_owned();
            let mut f = header.split(' ');
            let parsed = (|| {
                let len: usize = f.next()?.parse().ok()?;
                let crc = u32::from_str_radix(f.next()?, 16).ok()?;
                (f.next().is_none() && len <= MAX_FRAME).then_some((len, crc))
            })();
            let Some((len, crc)) = parsed else {
                self.damaged += 1;
                self.buf.drain(..h);
                continue;
            };
            let body = h + nl + 1;
            if self.buf.len() < body + len + 1 {
                self.buf.drain(..start);
                return out;
            }
            let payload = &self.buf[body..body + len];
            let mut c = flate2::Crc::new();
            c.update(payload);
            if c.sum() != crc || self.buf[body + len] != b'\n' {
                self.damaged += 1;
                self.buf.drain(..h);
                continue;
            }
            out.push(payload.to_vec());
            self.buf.drain(..body + len + 1);
        }
    }

    /// Like [`Decoder::push`], parsed as records (unparsable payloads count as damaged).
    pub fn push_records(&mut self, bytes: &[u8]) -> Vec<Record> {
        let mut out = Vec::new();
        for p in self.push(bytes) {
            match serde_json::from_slice(&p) {
                Ok(r) => out.push(r),
                Err(_) => self.damaged += 1,
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_in_pieces() {
        let a = encode(b"{\"a\":1}");
        let b = encode(b"[]");
        let mut all = b"Booting from ROM..\x1bc".to_vec();
        all.extend(&a);
        all.extend(b"noise\n");
        all.extend(&b);
        // Byte by byte, and in one go.
        let mut d = Decoder::new();
        let mut got = Vec::new();
        for x in &all {
            got.extend(d.push(std::slice::from_ref(x)));
        }
        assert_eq!(got, vec![b"{\"a\":1}".to_vec(), b"[]".to_vec()]);
        let mut d = Decoder::new();
        assert_eq!(d.push(&all).len(), 2);
        assert_eq!(d.damaged, 0);
    }

    #[test]
    fn damage_costs_one_frame() {
        let mut a = encode(b"{\"first\":true}");
        let n = a.len();
        a[n - 4] ^= 0x20; // flip a payload byte
        let mut all = a;
        all.extend(encode(b"{\"second\":true}"));
        let mut d = Decoder::new();
        assert_eq!(d.push(&all), vec![b"{\"second\":true}".to_vec()]);
        assert_eq!(d.damaged, 1);
        // A truncated frame followed by a good one (the length now runs into the next frame).
        let mut all = encode(b"{\"x\":12345678901234567890}");
        all.truncate(all.len() - 8);
        all.extend(encode(b"{\"y\":2}"));
        let mut d = Decoder::new();
        assert_eq!(d.push(&all), vec![b"{\"y\":2}".to_vec()]);
        // Headers that are garbage.
        let mut d = Decoder::new();
        let mut all = b"TRC-VM1 nope\nTRC-VM1 99999999999 0\n".to_vec();
        all.extend(encode(b"1"));
        assert_eq!(d.push(&all), vec![b"1".to_vec()]);
        assert_eq!(d.damaged, 2);
    }

    #[test]
    fn records_and_a_report_round_trip() {
        let mut rep = trc_kernel::RunReport::new("counterexamples/kernel/tlp.pkt".into());
        let mut l = trc_kernel::LineResult::new(
            7,
            1,
            trc_kernel::LineKind::PacketOut,
            trc_kernel::Status::Fail,
            "+0 > . 1:1001(1000) ack 1".into(),
        );
        l.expected = Some("1:1001".into());
        l.offset_ms = Some(3.25);
        l.values.insert("tcpi_snd_cwnd".into(), "7".into());
        rep.script.lines.push(l);
        rep.script.finish();
        rep.counters.insert("TcpExtTCPFullUndo".into(), 1);
        rep.congestion_control = Some("cubic".into());
        rep.duration_ms = 812.5;
        let r = Record::Result {
            index: 2,
            uptime_s: 10.5,
            guest_s: 0.9,
            rc: 1,
            report: Some(Box::new(rep.clone())),
            error: None,
            impact: None,
            output: None,
        };
        let frame = encode_record(&r);
        let got = Decoder::new().push_records(&frame);
        let [Record::Result {
            index: 2,
            report: Some(back),
            rc: 1,
            ..
        }] = &got[..]
        else {
            panic!("{got:?}")
        };
        assert_eq!(back.render(), rep.render());
        assert_eq!(
            serde_json::to_string(&**back).unwrap(),
            serde_json::to_string(&rep).unwrap()
        );
        assert_eq!(
            back.script.verdict,
            trc_kernel::Verdict::Failed { line: 7, failed: 1 }
        );
    }
}
