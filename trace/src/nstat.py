#!/usr/bin/env python3
# `nstat` for the model replay (trc replay): iproute2's nstat (misc/nstat.c) with the model's MIB
# counters for the kernel's. Same options, output format, history file and exit codes; what it
# cannot answer it says (below). trc writes this file into a directory it puts first on the PATH
# of the shell lines it runs, with:
#   TRC_MODEL_NSTAT             the counter table: one `NAME VALUE` line per counter, in the
#                               kernel's order; VALUE `-` for a counter the model does not keep
#   TRC_MODEL_NSTAT_UNMODELLED  a file this appends the name of such a counter to when the
#                               invocation would print it (trc then reports the line out of scope)
#   TRC_MODEL_BOOT              when the model's connection began (seconds since the epoch): a
#                               history file older than that is aged out, as nstat ages out one
#                               older than the kernel's boot
# Not here: the daemon (-d, --scan) and its sampled rates (every rate is 0.0, as nstat prints
# without a daemon).

import errno
import fcntl
import fnmatch
import getopt
import json
import os
import sys

USAGE = """Usage: nstat [OPTION] [ PATTERN [ PATTERN ] ]
   -h, --help          this message
   -a, --ignore        ignore history
   -d, --scan=SECS     sample every statistics every SECS
   -j, --json          format output in JSON
   -n, --nooutput      do history only
   -p, --pretty        pretty print
   -r, --reset         reset history
   -s, --noupdate      don't update history
   -t, --interval=SECS report average over the last SECS
   -V, --version       output version information
   -z, --zeros         show entries with zero activity
"""
LONG = ["help", "ignore", "scan=", "nooutput", "json", "reset", "noupdate", "pretty",
        "interval=", "version", "zeros"]
USELESS = {"IpForwarding", "IpDefaultTTL", "TcpRtoAlgorithm", "TcpRtoMin", "TcpRtoMax",
           "TcpMaxConn", "TcpCurrEstab"}


def usage():
    sys.stderr.write(USAGE)
    sys.exit(255)


def load_good_table(lines):
    """History lines: `#SOURCE` and `NAME VALUE [RATE]`; returns (source, [(name, value)])."""
    source, db = "", []
    for line in lines:
        if line.startswith("#"):
            source = line[1:].rstrip("\n")
            continue
        f = line.split()
        if len(f) < 2:
            sys.stderr.write("nstat: bad history file line\n")
            sys.exit(134)  # nstat abort()s
        if f[0] in USELESS:
            continue
        db.append((f[0], int(f[1])))
    return source, db


def kernel_table():
    db = []
    with open(os.environ["TRC_MODEL_NSTAT"]) as f:
        for line in f:
            name, value = line.split()
            db.append((name, None if value == "-" else int(value)))
    return db


class Out:
    """One dump (dump_kern_db / dump_incr_db) as text or JSON."""

    def __init__(self, source, json_output, pretty):
        self.source, self.json, self.pretty, self.fields = source, json_output, pretty, []

    def add(self, name, val, suffix=""):
        self.fields.append((name, val, suffix))

    def text(self):
        if not self.json:
            return "#%s\n" % self.source + "".join(
                "%-32s%-16d%6.1f%s\n" % (n, v, 0.0, s) for n, v, s in self.fields)
        obj = {self.source: dict((n, v) for n, v, _ in self.fields)}
        if self.pretty:
            return json.dumps(obj, indent=4, separators=(",", ": ")) + "\n"
        return json.dumps(obj, separators=(",", ":")) + "\n"


def unmodelled(name):
    with open(os.environ["TRC_MODEL_NSTAT_UNMODELLED"], "a") as f:
        f.write(name + "\n")


def main(argv):
    try:
        opts, patterns = getopt.gnu_getopt(argv, "h?vVzrnasd:t:jp", LONG)
    except getopt.GetoptError as e:
        sys.stderr.write("nstat: %s\n" % e)
        usage()
    o = set()
    for k, v in opts:
        k = {"--help": "-h", "--ignore": "-a", "--scan": "-d", "--nooutput": "-n",
             "--json": "-j", "--reset": "-r", "--noupdate": "-s", "--pretty": "-p",
             "--interval": "-t", "--version": "-V", "--zeros": "-z"}.get(k, k)
        if k in ("-v", "-V"):
            print("nstat utility, iproute2-6.1.0 (trc model replay)")
            sys.exit(0)
        if k in ("-h", "-?"):
            usage()
        if k == "-t":
            try:
                ok = int(v) > 0
            except ValueError:
                ok = False
            if not ok:
                sys.stderr.write("nstat: invalid time constant divisor\n")
                sys.exit(255)
        if k == "-d":
            unmodelled("nstat -d (a sampling daemon)")
            sys.exit(0)
        o.add(k)
    zeros, ignore, no_update, no_output = "-z" in o, "-a" in o, "-s" in o, "-n" in o
    json_output, pretty = "-j" in o, "-p" in o

    def match(name):
        return not patterns or any(fnmatch.fnmatchcase(name, p) for p in patterns)

    hist_name = os.environ.get("NSTAT_HISTORY") or "/tmp/.nstat.u%d" % os.getuid()
    if "-r" in o:
        try:
            os.unlink(hist_name)
        except OSError:
            pass
    hist_fp, hist_db, source = None, [], ""
    if not ignore or not no_update:
        try:
            fd = os.open(hist_name, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
        except OSError as e:
            sys.stderr.write("nstat: open history file: %s\n" % os.strerror(e.errno))
            sys.exit(255)
        hist_fp = os.fdopen(fd, "r+")
        fcntl.flock(hist_fp, fcntl.LOCK_EX)
        st = os.fstat(fd)
        if st.st_nlink != 1 or st.st_uid != os.getuid():
            sys.stderr.write("nstat: something is so wrong with history file, that I prefer not to proceed.\n")
            sys.exit(255)
        if not ignore and st.st_mtime <= float(os.environ.get("TRC_MODEL_BOOT", "0")):
            sys.stderr.write("nstat: history is aged out, resetting\n")
            hist_fp.truncate(0)
        hist_fp.seek(0)
        source, hist_db = load_good_table(hist_fp.readlines())
    if hist_db and source and source != "kernel":
        sys.stderr.write("nstat: history is stale, ignoring it.\n")
        hist_db, source = [], ""
    source = source or "kernel"
    kern = kernel_table()

    if not no_output:
        out = Out(source, json_output, pretty)
        if ignore or not hist_db:
            dump_kern(kern, hist_db, out, match, patterns, zeros, False)
        else:
            dump_incr(kern, hist_db, out, match, patterns, zeros)
        sys.stdout.write(out.text())
    if not no_update:
        out = Out(source, False, False)
        dump_kern(kern, hist_db, out, match, patterns, zeros, True)
        hist_fp.seek(0)
        hist_fp.truncate(0)
        hist_fp.write(out.text())
        hist_fp.close()
    return 0


def find_hist(hist_db, h, name):
    """nstat's history lookup: from position `h` on (both tables are in the kernel's order)."""
    for i in range(h, len(hist_db)):
        if hist_db[i][0] == name:
            return i
    return None


def asked_unmodelled(name, patterns, match):
    """A counter the model does not keep, named by the invocation's patterns: nstat would print
    it, the model cannot. (A whole-table dump lists the counters the model keeps; trc looks for
    the names of others in the line itself.)"""
    if patterns and match(name):
        unmodelled(name)


def dump_kern(kern, hist_db, out, match, patterns, zeros, to_hist):
    """dump_kern_db(): absolute values; into the history file (`to_hist`), a counter the
    patterns do not select keeps its old history value."""
    h = 0
    for name, val in kern:
        if val is None:
            if not to_hist:
                asked_unmodelled(name, patterns, match)
            continue
        if not zeros and val == 0:
            continue
        if not match(name):
            if not to_hist:
                continue
            i = find_hist(hist_db, h, name)
            if i is not None:
                val, h = hist_db[i][1], i + 1
        out.add(name, val)


def dump_incr(kern, hist_db, out, match, patterns, zeros):
    """dump_incr_db(): the increase since the history file's values."""
    h = 0
    for name, val in kern:
        if val is None:
            asked_unmodelled(name, patterns, match)
            continue
        ovfl = ""
        i = find_hist(hist_db, h, name)
        if i is not None:
            old = hist_db[i][1]
            if val < old:
                ovfl, val = " (overflow)", old
            val -= old
            h = i + 1
        if not zeros and val == 0:
            continue
        if not match(name):
            continue
        out.add(name, val, ovfl)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except BrokenPipeError:
        sys.exit(141)
    except OSError as e:
        if e.errno == errno.EPIPE:
            sys.exit(141)
        raise
