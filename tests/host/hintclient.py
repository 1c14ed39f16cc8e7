#!/usr/bin/python3
"""A stand-in MPI rank for the control-plane tests: holds TCP connections and sends hints
through libgapctl's C ABI (ctypes), driven line by line on stdin:

  connect HOST PORT        open a TCP connection (kept), prints "connected LOCAL REMOTE"
  begin KIND SIZE PEERS... phase_begin (PEERS: addresses, or "fd" = every held connection
                           as a tuple), prints "phase ID"
  end ID                   phase_end, prints "ended ID"
  stats                    prints the library counters as JSON
  pacing                   prints SO_MAX_PACING_RATE of every held connection
  quit
Every reply ends with a newline and is flushed. Errors print "error ..." and carry on.
"""
import ctypes, json, os, socket, sys

SO_MAX_PACING_RATE = 47


class Peer(ctypes.Structure):
    _fields_ = [("fd", ctypes.c_int), ("family", ctypes.c_int), ("addr", ctypes.c_uint8 * 16),
                ("local_addr", ctypes.c_uint8 * 16), ("port", ctypes.c_uint16),
                ("local_port", ctypes.c_uint16), ("rank", ctypes.c_int32)]


class Phase(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("kind", ctypes.c_uint32), ("algorithm", ctypes.c_uint32),
                ("flags", ctypes.c_uint32), ("bytes_per_peer", ctypes.c_uint64), ("comm_size", ctypes.c_uint32),
                ("rank", ctypes.c_int32), ("repetitions", ctypes.c_uint32), ("n_peers", ctypes.c_uint32),
                ("peers", ctypes.POINTER(Peer))]


class Stats(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint32), ("carrier", ctypes.c_uint32), ("hints_queued", ctypes.c_uint64),
                ("hints_sent", ctypes.c_uint64), ("hints_dropped", ctypes.c_uint64),
                ("hints_rejected", ctypes.c_uint64), ("carrier_errors", ctypes.c_uint64)]


def main():
    lib = ctypes.CDLL(os.environ.get("GAPCTL_LIB", "libgapctl.so.1"))
    lib.gapctl_kind_from_name.argtypes = [ctypes.c_char_p]
    lib.gapctl_kind_from_name.restype = ctypes.c_uint32
    handle = ctypes.c_void_p()
    flags = 1 if os.environ.get("GAPCTL_NO_KERNEL") else 0
    rc = lib.gapctl_open(ctypes.byref(handle), flags)
    if rc:
        print(f"error open {rc}", flush=True)
        return 1
    conns = []
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        try:
            if words[0] == "connect":
                s = socket.create_connection((words[1], int(words[2])), timeout=5)
                conns.append(s)
                l, r = s.getsockname(), s.getpeername()
                print(f"connected {l[0]}:{l[1]} {r[0]}:{r[1]}", flush=True)
            elif words[0] == "begin":
                kind = lib.gapctl_kind_from_name(words[1].encode())
                peers = []
                for p in words[3:]:
                    if p == "fd":
                        for s in conns:
                            peers.append(Peer(fd=s.fileno(), rank=len(peers) + 1))
                    else:
                        fam = socket.AF_INET6 if ":" in p else socket.AF_INET
                        raw = socket.inet_pton(fam, p)
                        peer = Peer(fd=-1, family=fam, rank=len(peers) + 1)
                        ctypes.memmove(peer.addr, raw, len(raw))
                        peers.append(peer)
                arr = (Peer * max(1, len(peers)))(*peers)
                ph = Phase(struct_size=ctypes.sizeof(Phase), kind=kind, algorithm=2, flags=0,
                           bytes_per_peer=int(words[2]), comm_size=len(peers) + 1, rank=0, repetitions=0,
                           n_peers=len(peers), peers=arr)
                pid = ctypes.c_uint64()
                rc = lib.gapctl_phase_begin(handle, ctypes.byref(ph), ctypes.byref(pid))
                lib.gapctl_flush(handle, 1000)
                print(f"phase {pid.value}" if rc == 0 else f"error begin {rc}", flush=True)
            elif words[0] == "end":
                rc = lib.gapctl_phase_end(handle, ctypes.c_uint64(int(words[1])), ctypes.c_uint64(1000))
                lib.gapctl_flush(handle, 1000)
                print(f"ended {words[1]}" if rc == 0 else f"error end {rc}", flush=True)
            elif words[0] == "stats":
                st = Stats(struct_size=ctypes.sizeof(Stats))
                lib.gapctl_get_stats(handle, ctypes.byref(st))
                print(json.dumps({f: getattr(st, f) for f, _ in Stats._fields_}), flush=True)
            elif words[0] == "pacing":
                rates = [int.from_bytes(s.getsockopt(socket.SOL_SOCKET, SO_MAX_PACING_RATE, 8), "little")
                         for s in conns]
                print("pacing " + " ".join(str(r) for r in rates), flush=True)
            elif words[0] == "quit":
                break
            else:
                print(f"error unknown command {words[0]}", flush=True)
        except Exception as e:  # a test driver: report and go on
            print(f"error {e}", flush=True)
    lib.gapctl_close(handle)
    return 0


if __name__ == "__main__":
    sys.exit(main())
