#!/usr/bin/env python3
"""Runs shim_test (and the Fortran tests) under mpirun with libgapctl-mpi.so preloaded and
checks the shim's GAPPACE_SHIM_LOG lines against what the programs announce:

  - every announced collective is logged once, with the right kind, flags, bytes_per_peer
    and comm_size; nothing else is (no double counting, no hints for intercommunicators,
    comm_size 1, p2p or persistent init calls);
  - begins and ends balance; a blocking phase ends before the program goes on; nonblocking
    and persistent phases end inside the completion call (between the program's marks);
  - the endpoint exchange follows the rescan rule identically on every rank, and with TCP
    transports each rank's sockets are mapped to the right ranks (rank r's L>R for q is
    rank q's R>L for r);
  - with the real libgapctl, each hint arrives as one netlink message on the Unix seqpacket
    socket named by GAPPACE_HINTS_SOCK, and the counts agree with the library's stats;
  - GAPPACE_SHIM=0 logs nothing; results are right with and without the shim.

Exit status 77 when the MPI launcher is missing (ctest reports the test as skipped).
"""
import argparse
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time

RUN_TIMEOUT_S = 180

LINE = re.compile(r"^(gapctl-mpi|gp-test): rank=(\d+) (\w[\w-]*)(.*)$")
KV = re.compile(r"(\w+)=(\S+)")


class Failure(Exception):
    pass


def fields(text):
    return dict(KV.findall(text))


# --------------------------------------------------------------------------- hint listener

def hint_command_number(uapi_header):
    """GAPPACE_CMD_HINT's value: its position in enum gappace_cmd (comments stripped)."""
    text = open(uapi_header).read()
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    body = re.search(r"enum gappace_cmd\s*{(.*?)}", text, flags=re.S).group(1)
    names = [n.strip().split("=")[0].strip() for n in body.split(",") if n.strip()]
    return names.index("GAPPACE_CMD_HINT")


class HintListener:
    """Accepts seqpacket connections and counts the netlink messages in each datagram,
    checking only the framing: nlmsg_len covers the message, the type is 0 (libgapctl's
    socket carrier has no generic netlink family id to put there), and the generic netlink
    command is GAPPACE_CMD_HINT. The attributes are gappaced's business."""

    NLMSG_HDRLEN = 16
    GENL_HDRLEN = 4
    SOCKET_NLMSG_TYPE = 0

    def __init__(self, path, hint_cmd):
        self.path = path
        self.hint_cmd = hint_cmd
        self.messages = 0
        self.datagrams = 0
        self.connections = 0
        self.errors = []
        self.stop = threading.Event()
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.bind(path)
        self.sock.listen(64)
        self.sock.settimeout(0.2)
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _check(self, data):
        off = 0
        while off < len(data):
            if len(data) - off < self.NLMSG_HDRLEN + self.GENL_HDRLEN:
                self.errors.append(f"short message: {len(data) - off} bytes")
                return
            length, mtype, _flags, _seq, _pid = struct.unpack_from("=IHHII", data, off)
            if length < self.NLMSG_HDRLEN + self.GENL_HDRLEN or off + length > len(data):
                self.errors.append(f"bad nlmsg_len {length} in a {len(data)}-byte datagram")
                return
            if mtype != self.SOCKET_NLMSG_TYPE:
                self.errors.append(f"nlmsg type {mtype}, want {self.SOCKET_NLMSG_TYPE}")
            cmd = data[off + self.NLMSG_HDRLEN]
            if cmd != self.hint_cmd:
                self.errors.append(f"genl cmd {cmd}, want GAPPACE_CMD_HINT={self.hint_cmd}")
            self.messages += 1
            off += (length + 3) & ~3

    def _run(self):
        conns = []
        while not self.stop.is_set() or conns:
            try:
                conn, _ = self.sock.accept()
                conn.setblocking(False)
                conns.append(conn)
                self.connections += 1
            except (socket.timeout, BlockingIOError):
                pass
            for conn in list(conns):
                while True:
                    try:
                        data = conn.recv(1 << 16)
                    except BlockingIOError:
                        break
                    except OSError:
                        data = b""
                    if not data:
                        conn.close()
                        conns.remove(conn)
                        break
                    self.datagrams += 1
                    self._check(data)
            if self.stop.is_set() and conns:
                # Drain what is queued, then drop connections still open.
                time.sleep(0.05)
                for conn in conns:
                    conn.close()
                conns = []

    def close(self):
        self.stop.set()
        self.thread.join(timeout=5)
        self.sock.close()


# --------------------------------------------------------------------------- launching

class Launcher:
    def __init__(self, flavour, command):
        self.flavour = flavour
        self.command = command

    def argv(self, nprocs, env, program, args, outdir):
        # Each rank's output goes to its own file: launchers forward output in chunks that
        # may split lines and interleave ranks.
        if self.flavour == "openmpi":
            cmd = [self.command, "--allow-run-as-root", "--oversubscribe", "-np", str(nprocs),
                   "--mca", "btl", "tcp,self", "--mca", "btl_tcp_if_include", "lo",
                   "--mca", "oob_tcp_if_include", "lo", "--output-filename", outdir]
            for key, value in env.items():
                cmd += ["-x", f"{key}={value}"]
        else:
            cmd = [self.command, "-n", str(nprocs),
                   "-errfile-pattern", os.path.join(outdir, "stderr.%r"),
                   "-outfile-pattern", os.path.join(outdir, "stdout.%r")]
            for key, value in env.items():
                cmd += ["-genv", key, value]
        return cmd + [program] + list(args)

    def run(self, nprocs, env, program, args=(), name=""):
        outdir = tempfile.mkdtemp(prefix="ranks-")
        try:
            return self._run(nprocs, env, program, args, name, outdir)
        finally:
            shutil.rmtree(outdir, ignore_errors=True)

    def _run(self, nprocs, env, program, args, name, outdir):
        argv = self.argv(nprocs, env, program, args, outdir)
        base = {k: v for k, v in os.environ.items()
                if not k.startswith("GAPPACE_") and k != "LD_PRELOAD"}
        base.update(env)
        base.pop("LD_PRELOAD", None)	# only the ranks get it (-x / -genv), not mpirun
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL, env=base, start_new_session=True)
        try:
            out, _ = proc.communicate(timeout=RUN_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, _ = proc.communicate()
            raise Failure(f"{name}: timed out after {RUN_TIMEOUT_S}s\n{tail(out)}")
        launcher_out = out.decode(errors="replace")
        text = ""	# the ranks' own files only (Open MPI also echoes them, interleaved)
        for root, _dirs, files in sorted(os.walk(outdir)):
            for fname in sorted(files):
                with open(os.path.join(root, fname), errors="replace") as f:
                    text += "\n" + f.read()
        if proc.returncode != 0:
            raise Failure(f"{name}: exit status {proc.returncode}\n{tail(launcher_out)}"
                          f"\n{tail(text)}")
        return text


def tail(out, n=40):
    if isinstance(out, bytes):
        out = out.decode(errors="replace")
    return "\n".join(out.splitlines()[-n:])


# --------------------------------------------------------------------------- log checking

class RankLog:
    def __init__(self, rank):
        self.rank = rank
        self.queue = []		# announced, not yet begun
        self.none_mode = None	# why no phase may begin now
        self.phases = {}	# n -> dict
        self.tags = {}		# tag -> n (latest)
        self.marks = {}		# (kind, tag) -> event index
        self.exchanges = []
        self.begins = []
        self.expects = 0
        self.done = None
        self.stats = None
        self.index = 0
        self.open_blocking = None


RENDEZVOUS = 16  # GAPCTL_F_RENDEZVOUS
HEADER_ALLOWANCE = 64  # the shim's allowance for the MPI message header


def check_log(text, nprocs, name, transport, eager_limit=None):
    """transport: "tcp" (every rank pair connected over TCP), "shm" (none), or None.
    eager_limit: the GAPPACE_SHIM_EAGER_LIMIT the ranks ran with: announced phases larger
    than it (less the header allowance) must carry the rendezvous flag, the others not."""
    logs = {r: RankLog(r) for r in range(nprocs)}
    errors = []

    def err(log, msg):
        errors.append(f"rank {log.rank}: {msg}")

    for line in text.splitlines():
        m = LINE.match(line.strip())
        if not m:
            continue
        source, rank, word, rest = m.group(1), int(m.group(2)), m.group(3), m.group(4)
        if rank not in logs:
            errors.append(f"unknown rank in: {line}")
            continue
        log = logs[rank]
        log.index += 1
        f = fields(rest)
        if source == "gp-test":
            if log.open_blocking is not None:
                err(log, f"blocking phase n={log.open_blocking} did not end before: {line}")
                log.open_blocking = None
            if word == "expect" and rest.strip().startswith("none"):
                if log.queue:
                    err(log, f"no phase logged for {log.queue[0]['tag']}")
                    log.queue = []
                log.none_mode = rest.strip()
                continue
            log.none_mode = None
            if word == "expect":
                log.queue.append(f)
                log.expects += 1
            elif word == "mark":
                what, tag = rest.split()[0], rest.split()[1]
                if log.queue:
                    err(log, f"no phase logged for {log.queue[0]['tag']} (at mark {what} {tag})")
                    log.queue = []
                n = log.tags.get(tag)
                if n is None:
                    err(log, f"mark {what} {tag}: that phase never began")
                    continue
                phase = log.phases[n]
                if what == "before-complete":
                    if phase["end"] is not None:
                        err(log, f"{tag} ended before its completion call")
                    log.marks[("before", tag)] = log.index
                elif what == "after-complete":
                    if phase["end"] is None:
                        err(log, f"{tag} did not end in its completion call")
                    elif phase["end"] < log.marks.get(("before", tag), 1 << 60):
                        err(log, f"{tag} ended before its completion call")
            elif word == "done":
                if log.queue:
                    err(log, f"no phase logged for {log.queue[0]['tag']}")
                    log.queue = []
                log.done = f
            elif word == "FAIL":
                err(log, f"program check failed:{rest}")
            continue

        if word == "begin":
            n = int(f["n"])
            log.begins.append(f)
            if log.none_mode:
                err(log, f"phase {f['kind']} n={n} logged where none was expected "
                         f"({log.none_mode})")
                continue
            if not log.queue:
                err(log, f"unannounced phase: {line.strip()}")
                continue
            want = dict(log.queue.pop(0))
            if eager_limit and int(want["bytes"]) + HEADER_ALLOWANCE > eager_limit:
                want["flags"] = str(int(want["flags"]) | RENDEZVOUS)
            for key in ("kind", "flags", "bytes", "comm_size"):
                if want.get(key) != f.get(key):
                    err(log, f"{want['tag']}: {key}={f[key]}, want {want[key]}")
            log.phases[n] = {"tag": want["tag"], "end": None, "begin": f}
            log.tags[want["tag"]] = n
            if int(f["flags"]) & 6 == 0:
                log.open_blocking = n
        elif word == "end":
            n = int(f["n"])
            phase = log.phases.get(n)
            if phase is None:
                if n not in [int(b["n"]) for b in log.begins]:
                    err(log, f"end of unknown phase n={n}")
                continue
            if phase["end"] is not None:
                err(log, f"phase n={n} ended twice")
            phase["end"] = log.index
            phase["end_fields"] = f
            if log.open_blocking == n:
                log.open_blocking = None
        elif word == "exchange":
            log.exchanges.append(f)
        elif word == "stats":
            log.stats = f

    for log in logs.values():
        if log.done is None:
            err(log, "program did not finish")
        elif log.done.get("failures") != "0":
            err(log, f"program reported failures={log.done.get('failures')}")
        if log.queue:
            err(log, f"no phase logged for {log.queue[0]['tag']}")
        unended = [n for n, p in log.phases.items() if p["end"] is None]
        if unended:
            err(log, f"phases never ended: {unended}")
        if len(log.begins) != log.expects:
            err(log, f"{len(log.begins)} phases logged, {log.expects} announced")
        if log.stats is None:
            err(log, "no stats line at MPI_Finalize")

    check_exchanges(logs, nprocs, transport, errors)
    if errors:
        raise Failure(f"{name}:\n  " + "\n  ".join(errors[:40]))
    return logs


def check_exchanges(logs, nprocs, transport, errors):
    seqs = {}
    for log in logs.values():
        full = [x for x in log.exchanges if int(x["comm_size"]) == nprocs]
        seqs[log.rank] = [(x["seq"], x["due"], x["rescan"]) for x in full]
        for x in log.exchanges:
            seq, due = int(x["seq"]), int(x["due"])
            # The rescan rule: due at the first collective, then right after collective
            # 1, 2, 4, 8, ... (so at sequence numbers 2, 3, 5, 9, ...); run there, or at the
            # next blocking collective if it came due at a nonblocking one.
            if due != 1 and (due - 1) & (due - 2) != 0:
                errors.append(f"rank {log.rank}: exchange due at collective {due} breaks the rule")
            if seq < due:
                errors.append(f"rank {log.rank}: exchange at collective {seq} before it was due ({due})")
            if transport == "shm" and int(x["mapped_ranks"]) != 0:
                errors.append(f"rank {log.rank}: mapped TCP peers without TCP: {x}")
    reference = seqs.get(0)
    for rank, s in seqs.items():
        if s != reference:
            errors.append(f"rank {rank}: exchange sequence {s} differs from rank 0's "
                          f"{reference}: collectives would not match")
    if not reference:
        errors.append("no endpoint exchange on the world communicator")
        return
    if transport == "shm":
        # Nothing to map on one host without TCP: the initial exchange and the one
        # unconditional rescan, then no more.
        if [d for _, d, _ in reference[:2]] != ["1", "2"] or \
                any(x["any_unmapped"] != "0" for log in logs.values() for x in log.exchanges):
            errors.append(f"shm: unexpected exchange schedule {reference}")
    if transport != "tcp":
        return
    # The world communicator's last exchange: every other rank mapped, consistently.
    finals = {}
    for log in logs.values():
        full = [x for x in log.exchanges if int(x["comm_size"]) == nprocs]
        finals[log.rank] = full[-1]
    entries = {}
    for rank, x in finals.items():
        if int(x["mapped_ranks"]) != nprocs - 1:
            errors.append(f"rank {rank}: mapped {x['mapped_ranks']} of {nprocs - 1} peers "
                          f"after the rescans: {x}")
        entries[rank] = set()
        if x["map"] != "-":
            for entry in x["map"].split(","):
                peer, tup = entry.split("@", 1)
                entries[rank].add((int(peer), tup))
    for rank, es in entries.items():
        for peer, tup in es:
            local, remote = tup.split(">")
            if (rank, f"{remote}>{local}") not in entries.get(peer, set()):
                errors.append(f"rank {rank}: socket {tup} mapped to rank {peer}, which does "
                              f"not list {remote}>{local} for rank {rank}")
    # Phases after the mapping carry the tuples.
    for log in logs.values():
        last = log.begins[-1] if log.begins else None
        if last and int(last["tuples"]) < nprocs - 1:
            errors.append(f"rank {log.rank}: final phase has {last['tuples']} tuple peers")


def check_hints(logs, listener, name):
    """With the real libgapctl: one message per accepted begin/end, all delivered."""
    errors = list(listener.errors[:5])
    logged = 0
    sent = queued = 0
    for log in logs.values():
        stats = log.stats or {}
        if stats.get("carrier") != "2":
            errors.append(f"rank {log.rank}: carrier {stats.get('carrier')}, want 2 (socket)")
        sent += int(stats.get("sent", 0))
        queued += int(stats.get("queued", 0))
        if stats.get("dropped") != "0" or stats.get("rejected") != "0":
            errors.append(f"rank {log.rank}: hints dropped or rejected: {stats}")
        for phase in log.phases.values():
            logged += phase["begin"]["id"] != "0"
            logged += phase.get("end_fields", {}).get("id", "0") != "0"
    if not (listener.messages == sent == queued == logged) or logged == 0:
        errors.append(f"messages received {listener.messages}, stats sent {sent} queued "
                      f"{queued}, phases logged with an id {logged}: want all equal")
    if errors:
        raise Failure(f"{name}: hints:\n  " + "\n  ".join(errors))
    return listener.messages


# --------------------------------------------------------------------------- main

def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--flavour", required=True, choices=["openmpi", "mpich"])
    ap.add_argument("--launcher", required=True)
    ap.add_argument("--shim", required=True)
    ap.add_argument("--program", required=True)
    ap.add_argument("--fortran", action="append", default=[])
    ap.add_argument("--uapi", required=True, help="kmod/uapi/linux/gappace.h")
    ap.add_argument("--no-hints-check", action="store_true",
                    help="do not require hints on the socket (a stand-in libgapctl)")
    ap.add_argument("--bench", type=int, default=1000, help="MPI_Barrier iterations (0: skip)")
    ap.add_argument("--env", action="append", default=[], metavar="KEY=VALUE",
                    help="extra environment for the shim runs (debugging)")
    args = ap.parse_args()

    launcher_path = shutil.which(args.launcher)
    if not launcher_path:
        print(f"SKIP: {args.launcher} not found")
        return 77
    launcher = Launcher(args.flavour, launcher_path)
    hint_cmd = hint_command_number(args.uapi)
    passed = failed = 0
    tmp = tempfile.mkdtemp(prefix="gapctl-mpi-test-")

    def shim_env(sock, **extra):
        env = {"LD_PRELOAD": args.shim, "GAPPACE_SHIM_LOG": "1", "GAPPACE_SHIM_STATS": "1",
               "GAPPACE_HINTS_SOCK": sock, "GAPPACE_SHIM_CARRIER": "socket"}
        env.update(extra)
        env.update(dict(kv.split("=", 1) for kv in args.env))
        return env

    def case(name, fn):
        nonlocal passed, failed
        try:
            detail = fn()
            print(f"PASS {name}{': ' + detail if detail else ''}")
            passed += 1
        except Failure as e:
            print(f"FAIL {e}")
            failed += 1

    def run_checked(name, nprocs, program, transport, extra_env=None, prog_args=()):
        sock = os.path.join(tmp, f"hints-{passed + failed}.sock")
        listener = HintListener(sock, hint_cmd)
        try:
            text = launcher.run(nprocs, shim_env(sock, **(extra_env or {})), program,
                                prog_args, name)
        finally:
            time.sleep(0.2)
            listener.close()
        eager = (extra_env or {}).get("GAPPACE_SHIM_EAGER_LIMIT")
        logs = check_log(text, nprocs, name, transport, int(eager) if eager else None)
        phases = sum(len(log.begins) for log in logs.values())
        detail = f"{phases} phases"
        if eager:
            flagged = sum(1 for log in logs.values() for b in log.begins if int(b["flags"]) & RENDEZVOUS)
            if not flagged or flagged == phases:
                raise Failure(f"{name}: {flagged} of {phases} phases flagged rendezvous with eager "
                              f"limit {eager}: want some, not all")
            detail += f", {flagged} flagged rendezvous"
        if not args.no_hints_check:
            detail += f", {check_hints(logs, listener, name)} hint messages"
        return detail

    # Open MPI runs over its TCP BTL on loopback: every pair connects (lazily).
    # MPICH here is ch4:ucx: shared memory between local ranks by default, TCP when UCX
    # is told to (two ranks: UCX's TCP transport hangs at finalize with more here).
    if args.flavour == "openmpi":
        case("openmpi np=4 tcp", lambda: run_checked("openmpi np=4 tcp", 4, args.program, "tcp"))
        case("openmpi np=2 tcp", lambda: run_checked("openmpi np=2 tcp", 2, args.program, "tcp"))
        # Messages beyond the eager limit carry the rendezvous flag (the limit set low so
        # that the test's small messages fall on both sides of it).
        case("openmpi np=2 tcp eager limit 200",
             lambda: run_checked("openmpi np=2 tcp eager limit 200", 2, args.program, "tcp",
                                 {"GAPPACE_SHIM_EAGER_LIMIT": "200"}))
        for f in args.fortran:
            label = f"openmpi fortran {os.path.basename(f)}"
            case(label, lambda f=f, label=label: run_checked(label, 3, f, "tcp"))
    else:
        case("mpich np=3 shm", lambda: run_checked("mpich np=3 shm", 3, args.program, "shm"))
        ucx_tcp = {"UCX_TLS": "tcp,self", "UCX_NET_DEVICES": "lo"}
        case("mpich np=2 ucx-tcp",
             lambda: run_checked("mpich np=2 ucx-tcp", 2, args.program, "tcp", ucx_tcp))

    def threads():
        sock = os.path.join(tmp, "threads.sock")
        listener = HintListener(sock, hint_cmd)
        try:
            text = launcher.run(2, shim_env(sock), args.program, ["threads"], "threads")
        finally:
            time.sleep(0.2)
            listener.close()
        if "skip threads" in text:
            return "MPI_THREAD_MULTIPLE not provided, skipped"
        begins = len(re.findall(r"^gapctl-mpi: rank=\d+ begin ", text, flags=re.M))
        ends = len(re.findall(r"^gapctl-mpi: rank=\d+ end ", text, flags=re.M))
        # 2 ranks x 2 threads x 200 x (allreduce + ibarrier)
        if begins != 1600 or ends != 1600 or text.count("done failures=0") != 2:
            raise Failure(f"threads: {begins} begins, {ends} ends, want 1600 each\n{tail(text)}")
        return f"{begins} phases from 2 threads per rank"

    case(f"{args.flavour} MPI_THREAD_MULTIPLE", threads)

    def disabled():
        env = {"LD_PRELOAD": args.shim, "GAPPACE_SHIM": "0", "GAPPACE_SHIM_LOG": "1",
               "GAPPACE_SHIM_STATS": "1"}
        text = launcher.run(2, env, args.program, [], "GAPPACE_SHIM=0")
        if "gapctl-mpi:" in text or text.count("done failures=0") != 2:
            raise Failure(f"GAPPACE_SHIM=0: shim still active or program failed\n{tail(text)}")

    case(f"{args.flavour} GAPPACE_SHIM=0", disabled)

    def baseline():
        text = launcher.run(2, {}, args.program, [], "no shim")
        if text.count("done failures=0") != 2:
            raise Failure(f"no shim: program failed\n{tail(text)}")

    case(f"{args.flavour} without the shim", baseline)

    if args.bench > 0:
        def bench():
            # Barrier latency on a shared machine is noisy: interleave the two
            # configurations and take each one's best of 3. The shim also reports the time
            # spent inside itself (GAPPACE_SHIM_STATS), which does not depend on the noise.
            sock = os.path.join(tmp, "bench.sock")
            listener = HintListener(sock, hint_cmd)
            shim_env_bench = {"LD_PRELOAD": args.shim, "GAPPACE_HINTS_SOCK": sock,
                              "GAPPACE_SHIM_CARRIER": "socket", "GAPPACE_SHIM_STATS": "1"}
            plain, shim, inside = [], [], []
            try:
                for _ in range(3):
                    for env, out in (({}, plain), (shim_env_bench, shim)):
                        text = launcher.run(2, env, args.program, ["bench", str(args.bench)],
                                            "bench")
                        out.append(float(re.search(r"ns_per_call=(\d+)", text).group(1)))
                        inside += [int(v) for v in re.findall(r"shim_ns_per_phase=(\d+)", text)]
            finally:
                listener.close()
            return (f"MPI_Barrier x{args.bench}, 2 ranks, best of 3: {min(plain):.0f} ns "
                    f"without, {min(shim):.0f} ns with the shim; time inside the shim "
                    f"{min(inside)}..{max(inside)} ns per call")

        case(f"{args.flavour} overhead", bench)

    shutil.rmtree(tmp, ignore_errors=True)
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
