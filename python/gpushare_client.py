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

A forked worker may also be kept between runs (gpushare tune asks for it
with GPUSHARE_PARK=1): at "stop", running() and next_request() do not end
the loop but park the worker at its fork server, warm (its CUDA context,
model and memory as they are), until gpushare hands it the next run of the
same environment (strategy, batch, GPU); they then say ready again and go
on with that run's requests. A parked worker that is not wanted again is
told so (its loop then ends as usual) or killed with the fork server.
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
        self._stop_said = False   # gpushare said "stop" (not: it is gone)
        self._asked = version
        self._parkable = _park is not None and env.get("GPUSHARE_PARK", "") == "1"
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
                self._stop_said = True
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
            if self._rest():
                return True
        return not self.stopped

    def _rest(self):
        """At "stop" of a run that lets workers be kept (GPUSHARE_PARK=1,
        a worker forked by --preload): park at the fork server until the
        next run of the same environment, then start it (hello, ready, go)
        in place of this one. False: this worker's run is over for good."""
        if not (self._parkable and self._stop_said and self._sock is not None):
            return False
        self._flush()
        self._sock.close()
        self._sock = None
        if not _park_wait():
            return False
        self.__init__(version=self._asked)
        return self.active and self.ready()

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
            while True:
                while not self._reqs and not self.stopped:
                    self._poll(None)
                if self._reqs:
                    break
                if not self._rest():  # kept: the next run's requests follow
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
_park = None  # a forked worker's socket to its fork server (--preload); None otherwise


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


def _preload_child(srv, chan, report, status, envfd):
    """In a forked worker: leave the server's state, take the worker's
    environment, keep its channel to the server (for parking), die with the
    server."""
    global _park
    srv.ctl.close()
    for k in srv.kids.values():
        k.close()
    for c in srv.chans.values():
        c.close()
    for f in srv.wake + [status]:
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
    _park = chan
    _take_env(envfd, report)


def _read_env(envfd):
    """A worker's environment from its memfd (NAME=VALUE, each ended by a NUL)."""
    chunks = []
    off = 0
    while True:
        b = os.pread(envfd, 1 << 16, off)
        if not b:
            break
        chunks.append(b)
        off += len(b)
    env = {}
    for item in b"".join(chunks).split(b"\0"):
        if item:
            k, _, v = item.partition(b"=")
            env[os.fsdecode(k)] = os.fsdecode(v)
    return env


def _take_env(envfd, report):
    """Become the worker whose environment is in envfd, reporting on report."""
    env = _read_env(envfd)
    os.close(envfd)
    env["GPUSHARE_REPORT_FD"] = str(report)
    os.set_inheritable(report, True)
    os.environ.clear()
    os.environ.update(env)


# What tells apart the workers of one run: a parked worker serves a run
# whose environment is its own but for these.
_PER_WORKER = ("GPUSHARE_WORKER", "GPUSHARE_WORKERS", "GPUSHARE_REPORT_FD")


def _park_key(env):
    """What a kept worker must share with a run's environment. A
    CUDA_MPS_PIPE_DIRECTORY called no-mps is gpushare's empty one of each run
    for the strategies without a daemon: any such is one value."""
    key = {k: v for k, v in env.items() if k not in _PER_WORKER}
    if os.path.basename(key.get("CUDA_MPS_PIPE_DIRECTORY", "").rstrip("/")) == "no-mps":
        key["CUDA_MPS_PIPE_DIRECTORY"] = "no-mps"
    return tuple(sorted(key.items()))


def _park_wait():
    """In a worker at the end of its run: leave its process group (gpushare
    empties the group of a worker that ended) for the fork server's, say
    "park", and wait for "run" with the next run's report socket and
    environment. False when the server lets it go or is gone."""
    try:
        os.setpgid(0, os.getpgid(os.getppid()))
    except OSError:
        pass
    try:
        _park.send(b"park")
        msg, fds, _, _ = socket.recv_fds(_park, 16, 2)
    except OSError:
        msg, fds = b"", []
    if msg != b"run" or len(fds) != 2:
        for f in fds:
            os.close(f)
        return False
    try:
        os.setpgid(0, 0)
    except OSError:
        pass
    report, envfd = fds
    _take_env(envfd, report)
    return True


class _Server:
    """The fork server's state: its socket to gpushare, the SIGCHLD wake-up
    pipe, each running worker's status socket, each worker's channel (its
    "park"), the parked workers and the environment each was forked or
    handed on with."""

    DROP_WAIT_S = 5.0  # a worker let go ends its program; then SIGKILL

    def __init__(self, fd):
        self.ctl = socket.socket(fileno=fd)
        self.wake = []
        self.kids = {}    # pid -> status socket (running a run)
        self.chans = {}   # pid -> the server's end of its channel
        self.keys = {}    # pid -> _park_key of its environment
        self.parked = set()

    def reap(self):
        while True:
            try:
                pid, st = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            k = self.kids.pop(pid, None)
            if k is not None:
                try:
                    k.send(struct.pack("i", st))
                except OSError:
                    pass
                k.close()
            self.forget(pid)

    def forget(self, pid):
        c = self.chans.pop(pid, None)
        if c is not None:
            c.close()
        self.keys.pop(pid, None)
        self.parked.discard(pid)

    def on_chan(self, pid):
        """A worker said "park" (its run is over; it waits, warm), or its
        channel closed (it is ending)."""
        c = self.chans[pid]
        try:
            msg = c.recv(16)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            msg = b""
        if msg != b"park" or pid not in self.kids:
            if not msg:
                c.close()
                del self.chans[pid]
            return
        try:
            os.setpgid(pid, os.getpgrp())  # as the worker did: out of the group gpushare empties
        except OSError:
            pass
        k = self.kids.pop(pid)
        try:
            k.send(struct.pack("i", 0))  # its run ended well
        except OSError:
            pass
        k.close()
        self.parked.add(pid)

    def drop(self, gone):
        """Let the parked workers gone go (their loops end) and wait for
        them, bounded; SIGKILL what is left."""
        for pid in gone:
            c = self.chans.pop(pid, None)
            if c is not None:
                c.close()
            self.parked.discard(pid)
        deadline = time.monotonic() + self.DROP_WAIT_S
        for pid in gone:
            while True:
                try:
                    got, _ = os.waitpid(pid, os.WNOHANG)
                except ChildProcessError:
                    break
                if got == pid:
                    break
                if time.monotonic() >= deadline:
                    try:
                        os.kill(pid, signal.SIGKILL)
                        os.waitpid(pid, 0)
                    except OSError:
                        pass
                    break
                time.sleep(0.01)
            self.keys.pop(pid, None)

    def start(self, report, status, envfd):
        """A run's worker: a parked one of the same environment when the run
        lets workers be kept, else a fresh fork (after letting go the parked
        ones of other environments: they hold GPU memory). Returns only in a
        forked worker (True)."""
        env = _read_env(envfd)
        key = _park_key(env)
        if env.get("GPUSHARE_PARK", "") == "1":
            pid = next((p for p in sorted(self.parked) if self.keys.get(p) == key), None)
            if pid is not None:
                self.parked.discard(pid)
                try:
                    socket.send_fds(self.chans[pid], [b"run"], [report, envfd])
                    ok = True
                except OSError:
                    ok = False
                if ok:
                    try:
                        os.setpgid(pid, pid)
                    except OSError:
                        pass
                    os.close(report)
                    os.close(envfd)
                    self.keys[pid] = key
                    self.handed(pid, status)
                    return False
                self.drop([pid])
        self.drop([p for p in self.parked if self.keys.get(p) != key])
        chan = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            pid = os.fork()
        except OSError as e:
            os.write(status, struct.pack("i", -(e.errno or 1)))
            for f in (report, status, envfd):
                os.close(f)
            for c in chan:
                c.close()
            return False
        if pid == 0:
            chan[0].close()
            _preload_child(self, chan[1], report, status, envfd)
            return True
        chan[1].close()
        try:
            os.setpgid(pid, pid)
        except OSError:
            pass
        os.close(report)
        os.close(envfd)
        self.chans[pid] = chan[0]
        self.keys[pid] = key
        self.handed(pid, status)
        return False

    def handed(self, pid, status):
        k = socket.socket(fileno=status)
        try:
            k.send(struct.pack("i", pid))
        except OSError:
            pass
        self.kids[pid] = k

    def end(self):
        """gpushare is gone: so are its workers, running and parked."""
        for pid in self.kids:
            try:
                os.killpg(pid, signal.SIGKILL)
            except OSError:
                pass
        for pid in self.parked:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        os._exit(0)


def _preload_serve(fd):
    """The fork server of --preload (docs/protocol.md, "Preloading").
    Returns only in a forked worker."""
    srv = _Server(fd)
    why = _preload_refusal()
    if why:
        try:
            srv.ctl.send(("refuse " + why).encode("ascii", "replace")[:300])
        finally:
            os._exit(0)
    srv.wake = list(os.pipe())
    os.set_blocking(srv.wake[1], False)
    signal.set_wakeup_fd(srv.wake[1])
    signal.signal(signal.SIGCHLD, lambda *_: None)
    srv.ctl.send(b"ready")
    while True:
        chans = {c.fileno(): pid for pid, c in srv.chans.items() if pid in srv.kids}
        try:
            r, _, _ = select.select([srv.ctl, srv.wake[0]] + list(chans), [], [])
        except InterruptedError:
            r = []
        if srv.wake[0] in r:
            os.read(srv.wake[0], 4096)
        for f in r:
            if f in chans and chans[f] in srv.chans:
                srv.on_chan(chans[f])
        srv.reap()
        if srv.ctl not in r:
            continue
        try:
            msg, fds, _, _ = socket.recv_fds(srv.ctl, 16, 4)
        except InterruptedError:
            continue
        except OSError:
            msg, fds = b"", []
        if not msg:
            srv.end()
        if msg == b"drop" and not fds:
            srv.drop(list(srv.parked))
            try:
                srv.ctl.send(b"dropped")
            except OSError:
                pass
            continue
        if msg != b"fork" or len(fds) != 3:
            for f in fds:
                os.close(f)
            continue
        if srv.start(*fds):
            return


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
