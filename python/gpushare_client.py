"""gpushare client: report requests to `gpushare bench -- CMD` (docs/protocol.md).

Dependency-free (standard library only). A script run as a gpushare worker
needs three added lines::

    import gpushare_client as gs     # 1
    ... load the model, warm up ...
    gs.ready()                       # 2: waits until every worker is ready
    while gs.running():              #    False once gpushare says stop
        with gs.request():           # 3: times one request (synchronize GPU work inside)
            model(batch)

Protocol version 2 (gpushare hands each request over; needed for open-loop
load, `gpushare bench --load open`)::

    import gpushare_client as gs
    gs.init(version=2)
    ... load the model, warm up ...
    gs.ready()
    for rid in gs.requests():        # waits for "req ID"; ends at stop
        model(batch)
        gs.done(rid)

When gpushare speaks only version 1 (GPUSHARE_PROTOCOL), the client falls
back to it: requests() then runs the loop itself and done() reports the
time since the request was handed out.

Outside gpushare (no GPUSHARE_REPORT_FD) everything is a no-op and
running() stays True: bound the loop yourself then (gs.active() tells).

Timestamps are time.monotonic_ns(), which is CLOCK_MONOTONIC on Linux, the
clock gpushare uses. One client per process; not thread-safe.

Under `gpushare ... --preload -- CMD` (GPUSHARE_PRELOAD_FD set) the first
call of this module (batch(), init(), ready(), ...) does not return in the
process gpushare started: that process becomes a fork server, and the call
returns in each worker gpushare asks it to fork, with that worker's
environment. So imports before it are paid once per sweep or tune, not per
run. The GPU must be untouched until then (CUDA initialised earlier is
refused, and the workers start the command as usual); see docs/bench.md.
"""

import contextlib
import os
import select
import signal
import socket
import struct
import sys
import threading
import time

PROTOCOL = 2  # the highest version this client speaks

__all__ = ["Client", "init", "ready", "running", "request", "report", "error", "fail", "requests", "next_request",
           "done",
           "active", "worker", "workers", "batch", "warmup_requests", "now_ns", "measure_start_ns"]


def now_ns():
    """CLOCK_MONOTONIC in nanoseconds, the clock of the protocol."""
    return time.monotonic_ns()


def _env_int(name, default):
    try:
        return int(os.environ.get(name, ""))
    except ValueError:
        return default


class Client:
    """One process's connection to gpushare (an inherited socket)."""

    def __init__(self, environ=None, version=1):
        env = os.environ if environ is None else environ
        self.worker = _env_int("GPUSHARE_WORKER", 0) if "GPUSHARE_REPORT_FD" in env else 0
        self.workers = _env_int("GPUSHARE_WORKERS", 1)
        self.batch = _env_int("GPUSHARE_BATCH", 0)
        self.warmup_requests = _env_int("GPUSHARE_WARMUP_REQUESTS", -1)
        self.started = False
        self.stopped = False
        self.measure_start_ns = 0
        self.measure_end_ns = 0
        self._in = b""
        self._sock = None
        self._reqs = []           # v2: ids handed over and not taken yet
        self._next_id = 0         # v1 fallback
        self._t0 = 0
        # Version-1 reports are batched: sent 2 ms after the first waiting one,
        # at 64, before any other line, once stop is seen and at close.
        self._out = []
        self._out_since = 0
        self._polled = 0
        # The highest version both sides speak; 1 unless asked for 2.
        self.version = 2 if version >= 2 and _env_int("GPUSHARE_PROTOCOL", 1) >= 2 else 1
        fd = env.get("GPUSHARE_REPORT_FD", "")
        if fd == "":
            return
        # socket.socket(fileno=) takes the descriptor over; closing it is ours.
        self._sock = socket.socket(fileno=int(fd))
        self._send("hello %d\n" % self.version)

    @property
    def active(self):
        return self._sock is not None

    def _flush(self):
        if not self._out or self._sock is None:
            self._out = []
            return
        data, self._out = "".join(self._out), []
        try:
            self._sock.sendall(data.encode("ascii"))
        except OSError:
            self.stopped = True  # gpushare is gone

    def _send(self, line):
        self._flush()
        if self._sock is None or (self.stopped and not line.startswith("fail")):
            return
        try:
            self._sock.sendall(line.encode("ascii", "replace"))
        except OSError:
            self.stopped = True  # gpushare is gone

    def _poll(self, timeout):
        if self._sock is None or self.stopped:
            return
        r, _, _ = select.select([self._sock], [], [], timeout)
        if not r:
            return
        try:
            data = self._sock.recv(4096)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self.stopped = True
            return
        self._in += data
        while b"\n" in self._in:
            line, self._in = self._in.split(b"\n", 1)
            words = line.decode("ascii", "replace").split()
            if not words:
                continue
            if words[0] == "go":
                if len(words) >= 3 and words[1].isdigit() and words[2].isdigit():
                    self.measure_start_ns, self.measure_end_ns = int(words[1]), int(words[2])
                self.started = True
            elif words[0] == "stop":
                self.stopped = True
            elif words[0] == "req" and len(words) == 2 and words[1].isdigit():
                self._reqs.append(int(words[1]))
        if len(self._in) > 4096:
            self._in = b""

    def ready(self):
        """Warm-up done: tell gpushare and wait for the start signal.
        True to start measuring; False when gpushare said stop instead."""
        if self._sock is None:
            return True
        self._send("ready\n")
        while not self.started and not self.stopped:
            self._poll(None)
        return self.started and not self.stopped

    def running(self):
        """Whether to run another request (checks for "stop" without blocking)."""
        if self._sock is None:
            return True
        now = time.monotonic_ns()
        if now - self._polled >= 1000000:  # look for "stop" every 1 ms
            self._polled = now
            self._poll(0)
        if self.stopped:
            self._flush()
        return not self.stopped

    def report(self, start_ns, end_ns):
        """One request from start_ns to end_ns (now_ns() values)."""
        if self._sock is None:
            return
        if self.stopped:
            self._flush()
            return
        if not self._out:
            self._out_since = end_ns
        self._out.append("span %d %d\n" % (start_ns, end_ns))
        if len(self._out) >= 64 or end_ns - self._out_since >= 2000000:
            self._flush()

    @contextlib.contextmanager
    def request(self):
        """Time the block as one request; an exception counts as an error."""
        t0 = time.monotonic_ns()
        try:
            yield
        except Exception as e:
            self.error(type(e).__name__)
            raise
        self.report(t0, time.monotonic_ns())

    def next_request(self):
        """The next request's id, or None once gpushare said stop. Version 2
        waits for gpushare to hand one over; version 1 (and outside
        gpushare) numbers them itself while running()."""
        if self._sock is not None and self.version >= 2:
            while not self._reqs and not self.stopped:
                self._poll(None)
            if not self._reqs:
                return None
            rid = self._reqs.pop(0)
        else:
            if not self.running():
                return None
            rid = self._next_id
            self._next_id += 1
        self._t0 = time.monotonic_ns()
        return rid

    def requests(self):
        """Iterate over request ids until stop; answer each with done(id)."""
        while True:
            rid = self.next_request()
            if rid is None:
                return
            yield rid

    def done(self, rid):
        """Request rid is finished (version 1: its span since it was handed out)."""
        if self.version >= 2:
            self._send("done %d\n" % rid)
        else:
            self.report(self._t0, time.monotonic_ns())

    @staticmethod
    def _text(text):
        text = "".join(c if " " <= c <= "~" else "?" for c in str(text))
        return text[:200]

    def error(self, text=""):
        """A request failed; the program goes on."""
        self._send(("error %s" % self._text(text)).rstrip() + "\n")

    def fail(self, text=""):
        """The program gives up: say why, then exit non-zero."""
        self._send(("fail %s" % self._text(text)).rstrip() + "\n")

    def close(self):
        if self._sock is not None:
            self._flush()
            self._sock.close()
            self._sock = None


_client = None


def _cuda_initialised():
    """Whether this process has called cuInit. Loading libcuda is not enough
    (torch loads it at import): a driver call made before cuInit answers
    CUDA_ERROR_NOT_INITIALIZED (3) without initialising anything."""
    try:
        with open("/proc/self/maps") as f:
            if not any("libcuda.so" in line for line in f):
                return False
        import ctypes
        n = ctypes.c_int(0)
        return ctypes.CDLL("libcuda.so.1").cuDeviceGetCount(ctypes.byref(n)) != 3
    except (OSError, AttributeError):
        return True  # loaded, and it cannot be asked: take it as used


def _preload_refusal():
    """Why this process cannot fork workers, or None."""
    if _cuda_initialised():
        return "CUDA is initialised before the first gpushare call; move GPU work after it"
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            return "torch initialised CUDA before the first gpushare call; move GPU work after it"
    except Exception:  # an odd torch: the maps check above stands
        pass
    if threading.active_count() > 1:
        return "the program runs %d Python threads before its first gpushare call" % threading.active_count()
    return None


def _preload_child(ctl, kids, wake, report, status, envfd):
    """In a forked worker: leave the server's state, take the worker's
    environment, die with the server."""
    ctl.close()
    for k in kids.values():
        k.close()
    for f in wake + [status]:
        os.close(f)
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)
    server = os.getppid()
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    try:
        import ctypes
        ctypes.CDLL(None).prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass
    if os.getppid() != server:
        os._exit(1)
    chunks = []
    os.lseek(envfd, 0, os.SEEK_SET)
    while True:
        b = os.read(envfd, 1 << 16)
        if not b:
            break
        chunks.append(b)
    os.close(envfd)
    env = {}
    for item in b"".join(chunks).split(b"\0"):
        if item:
            k, _, v = item.partition(b"=")
            env[os.fsdecode(k)] = os.fsdecode(v)
    env["GPUSHARE_REPORT_FD"] = str(report)
    os.set_inheritable(report, True)
    os.environ.clear()
    os.environ.update(env)


def _preload_serve(fd):
    """The fork server of --preload (docs/protocol.md, "Preloading").
    Returns only in a forked worker."""
    ctl = socket.socket(fileno=fd)
    why = _preload_refusal()
    if why:
        try:
            ctl.send(("refuse " + why).encode("ascii", "replace")[:300])
        finally:
            os._exit(0)
    wake = list(os.pipe())
    os.set_blocking(wake[1], False)
    signal.set_wakeup_fd(wake[1])
    signal.signal(signal.SIGCHLD, lambda *_: None)
    kids = {}  # pid -> its status socket
    ctl.send(b"ready")
    while True:
        try:
            r, _, _ = select.select([ctl, wake[0]], [], [])
        except InterruptedError:
            r = []
        if wake[0] in r:
            os.read(wake[0], 4096)
        while kids:
            try:
                pid, st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            k = kids.pop(pid, None)
            if k is not None:
                try:
                    k.send(struct.pack("i", st))
                except OSError:
                    pass
                k.close()
        if ctl not in r:
            continue
        try:
            msg, fds, _, _ = socket.recv_fds(ctl, 16, 4)
        except InterruptedError:
            continue
        except OSError:
            msg, fds = b"", []
        if not msg:  # gpushare is gone: so are its workers
            for pid in kids:
                try:
                    os.killpg(pid, signal.SIGKILL)
                except OSError:
                    pass
            os._exit(0)
        if msg != b"fork" or len(fds) != 3:
            for f in fds:
                os.close(f)
            continue
        report, status, envfd = fds
        try:
            pid = os.fork()
        except OSError as e:
            os.write(status, struct.pack("i", -(e.errno or 1)))
            for f in fds:
                os.close(f)
            continue
        if pid == 0:
            _preload_child(ctl, kids, wake, report, status, envfd)
            return
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass
        os.close(report)
        os.close(envfd)
        k = socket.socket(fileno=status)
        try:
            k.send(struct.pack("i", pid))
        except OSError:
            pass
        kids[pid] = k


def _preload():
    fd = os.environ.pop("GPUSHARE_PRELOAD_FD", "")
    if fd.isdigit():
        _preload_serve(int(fd))


def _get():
    global _client
    if _client is None:
        _preload()
        _client = Client()
    return _client


def init(version=1):
    """Start the process-wide client speaking up to `version` (2: gpushare
    hands requests over). Call before any other function; later calls
    return the client already started."""
    global _client
    if _client is None:
        _preload()
        _client = Client(version=version)
    return _client


def requests():
    return _get().requests()


def next_request():
    return _get().next_request()


def done(rid):
    _get().done(rid)


# Module-level shortcuts over one process-wide client.
def ready():
    return _get().ready()


def running():
    return _get().running()


def request():
    return _get().request()


def report(start_ns, end_ns):
    _get().report(start_ns, end_ns)


def error(text=""):
    _get().error(text)


def fail(text=""):
    _get().fail(text)


def active():
    return _get().active


def worker():
    return _get().worker


def workers():
    return _get().workers


def batch(default=1):
    b = _get().batch
    return b if b > 0 else default


def warmup_requests(default=3):
    w = _get().warmup_requests
    return w if w >= 0 else default


def measure_start_ns():
    return _get().measure_start_ns
