"""One connection to a server store, shared by a whole DAG's hooks.

Reaching a PostgreSQL store costs a hook far more than the work it does
there: importing the driver (psycopg and its libpq binding: 250–450 ms,
against a SQLite hook's ~100 ms in all) and a fresh server backend per
connection. The reaper, which runs as long as the DAG, holds one
connection and serves the hooks of its own run over a Unix socket in the
run directory (:func:`condor_rlrep.rundir.layout.broker_socket`, mode 0600: the hooks run as the user who owns the run). A
request is one JSON line, its answer one JSON line.

The broker is an optimisation, never a requirement: a hook that finds no
broker (not started yet, already stopped, path too long for a socket)
opens the store itself, and a request the broker cannot answer fails like
an unreachable server, so the hooks' fail-open and spool rules hold
unchanged. The broker never retries a request (a decide whose answer was
lost may have been committed); after a store error it reopens the store
for the next request.
"""

from __future__ import annotations

import json
import os
import socket
from dataclasses import asdict
from typing import Any

from condor_rlrep.errors import StaleExposureError, StoreError

__all__ = ["StoreBroker", "BrokerClient", "connect"]

_MAX_LINE = 1 << 20
BACKLOG = 4096
"""Pending connections the broker's socket holds (the kernel may cap it lower)."""


class StoreBroker:
    """Serve ``spec``'s store on ``path`` from a background thread (``start`` / ``stop``)."""

    def __init__(self, spec: str, path: str, *, open_store: Any = None, busy_timeout: float | None = None):
        import threading

        from condor_rlrep.store.location import open_store as open_direct

        self.spec = spec
        self.path = path
        self.requests = 0
        self.errors = 0
        self._open = open_store or (lambda: open_direct(spec, busy_timeout=busy_timeout))
        self._store: Any = None
        self._lock = threading.Lock()  # one connection: one request at a time
        self._server: Any = None
        self._thread: Any = None

    def start(self) -> None:
        """Open the store and listen (StoreError / OSError: no broker; the hooks go direct)."""
        import socketserver
        import threading

        class Server(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
            daemon_threads = True
            # DAGMan starts hundreds of PREs at once (the default 5 refused the rest, 128 refused
            # some of 400): the kernel caps this at net.core.somaxconn; a hook refused goes direct
            request_queue_size = BACKLOG

            def handle_error(self, request: Any, client_address: Any) -> None:
                broker.errors += 1  # one client's trouble: never a traceback in the reaper's output

        broker = self

        self._store = self._open()
        if os.path.exists(self.path):  # a stale socket of a reaper that was killed
            os.unlink(self.path)
        umask = os.umask(0o177)
        try:
            self._server = Server(self.path, self._handler(socketserver.StreamRequestHandler))
        finally:
            os.umask(umask)
        os.chmod(self.path, 0o600)
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2},
                                        name="rlrep-store-broker", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        try:
            os.unlink(self.path)
        except OSError:
            pass
        with self._lock:
            if self._store is not None:
                self._store.close()
                self._store = None

    def __enter__(self) -> StoreBroker:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """One request → its answer (also what the socket handler sends)."""
        with self._lock:
            self.requests += 1
            try:
                if self._store is None:
                    self._store = self._open()
                return {"ok": _call(self._store, request)}
            except StaleExposureError as err:  # an answer about the request: the connection is fine
                return {"error": str(err), "kind": "stale"}
            except StoreError as err:
                self.errors += 1
                self._drop()
                return {"error": str(err), "kind": "store"}
            except Exception as err:
                self.errors += 1
                return {"error": f"{type(err).__name__}: {err}", "kind": "request"}

    def _drop(self) -> None:
        store, self._store = self._store, None
        if store is not None:
            try:
                store.close()
            except Exception:
                pass

    def _handler(self, base: type) -> type:
        broker = self

        class Handler(base):  # type: ignore[misc, valid-type]
            timeout = 30.0

            def handle(self) -> None:
                try:
                    self._serve()
                except OSError:  # the client went away (a hook killed or timed out): BrokenPipe, reset
                    return

            def _serve(self) -> None:
                while True:
                    line = self.rfile.readline(_MAX_LINE)
                    if not line:
                        return
                    try:
                        request = json.loads(line)
                        if not isinstance(request, dict):
                            raise ValueError("a request is a JSON object")
                    except RecursionError:
                        answer: dict[str, Any] = {"error": "bad request: nested too deeply", "kind": "request"}
                    except ValueError as err:
                        answer = {"error": f"bad request: {err}", "kind": "request"}
                    else:
                        answer = broker.answer(request)
                    self.wfile.write(json.dumps(answer).encode() + b"\n")
                    self.wfile.flush()

            def finish(self) -> None:
                try:
                    super().finish()
                except OSError:
                    pass

        return Handler


def _call(store: Any, request: dict[str, Any]) -> Any:
    op, args = request.get("op"), request.get("args") or {}
    if op == "config":
        return store.config.to_dict()
    if op == "decide":
        return asdict(store.decide(**{k: args[k] for k in ("phi_prime", "hour", "timestamp", "context", "now",
                                                           "max_replicas") if k in args}))
    if op == "record":
        return bool(store.record(int(args["decision_id"]), float(args["reward"]), args.get("outcome"),
                                 **({"now": float(args["now"])} if args.get("now") is not None else {})))
    if op == "decision":
        return asdict(store.decision(int(args["decision_id"])))
    if op == "survival_cells":
        return [list(cell) for cell in store.survival_cells()]
    if op == "record_exposure":
        return bool(store.record_exposure(str(args["key"]), args["cells"],
                                          **{k: float(args[k]) for k in ("now", "ran_until") if args.get(k) is not None}))
    raise ValueError(f"unknown operation {op!r}")


class BrokerClient:
    """The part of :class:`~condor_rlrep.store.interface.AgentStore` the hooks use, through a broker."""

    def __init__(self, sock: socket.socket, spec: str):
        self._sock = sock
        self._file = sock.makefile("rwb")
        self.location = spec

    def _ask(self, op: str, **args: Any) -> Any:
        try:
            self._file.write(json.dumps({"op": op, "args": args}).encode() + b"\n")
            self._file.flush()
            line = self._file.readline(_MAX_LINE)
        except OSError as err:
            raise StoreError(f"{self.location}: store broker: {err}") from None
        if not line:
            raise StoreError(f"{self.location}: store broker closed the connection")
        try:
            answer = json.loads(line)
            if not isinstance(answer, dict):
                raise ValueError("not a JSON object")
        except (ValueError, RecursionError) as err:
            raise StoreError(f"{self.location}: store broker answered nonsense ({type(err).__name__})") from None
        if "error" in answer:
            if answer.get("kind") == "stale":  # already names the store
                raise StaleExposureError(str(answer["error"]))
            raise StoreError(f"{self.location}: {answer['error']}")
        return answer["ok"]

    @property
    def config(self) -> Any:
        from condor_rlrep.agent.config import AgentConfig

        return AgentConfig.from_dict(self._ask("config"))

    def decide(self, **kwargs: Any) -> Any:
        from condor_rlrep.store.interface import Decision

        kwargs.pop("rng", None)  # the broker's store draws its own
        return Decision(**self._ask("decide", **kwargs))

    def record(self, decision_id: int, reward: float, outcome: Any = None, *, now: float | None = None) -> bool:
        return bool(self._ask("record", decision_id=decision_id, reward=reward, outcome=outcome, now=now))

    def record_outcome(self, decision_id: int, outcome: Any, *, now: float | None = None) -> bool:
        return self.record(decision_id, outcome.reward, asdict(outcome), now=now)

    def decision(self, decision_id: int) -> Any:
        from condor_rlrep.store.interface import DecisionRecord

        return DecisionRecord(**self._ask("decision", decision_id=decision_id))

    def survival_cells(self) -> list[tuple[int, int, float, float]]:
        return [tuple(cell) for cell in self._ask("survival_cells")]  # type: ignore[misc]

    def record_exposure(self, key: str, cells: Any, *, now: float | None = None,
                        ran_until: float | None = None) -> bool:
        return bool(self._ask("record_exposure", key=key, cells=[list(c) for c in cells], now=now,
                              ran_until=ran_until))

    def close(self) -> None:
        try:
            self._file.close()
        finally:
            self._sock.close()

    def __enter__(self) -> BrokerClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def connect(path: str, spec: str, *, timeout: float = 10.0, connect_timeout: float = 0.5) -> BrokerClient | None:
    """A client of the broker at ``path``, or None when none answers there."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    sock.settimeout(connect_timeout)
    try:
        sock.connect(path)
    except OSError:
        sock.close()
        return None
    sock.settimeout(timeout)
    return BrokerClient(sock, spec)
