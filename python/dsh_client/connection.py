"""The connection under the synchronous client: one reader thread parses the runtime's stdout; one dispatcher thread runs
listeners in wire order, so a listener (or an approval handler) may itself send requests."""

import json
import os
import queue
import shutil
import subprocess
import threading
from typing import Any, Callable, Dict, List, Optional, Sequence, Union

TRANSPORT_ERROR = -32099

Notification = Dict[str, Any]
Listener = Callable[[Notification], None]
ApprovalAnswer = Union[str, Dict[str, Any], None]


class DshRpcError(Exception):
    """A JSON-RPC error answered by the runtime, or a transport failure (code -32099)."""

    def __init__(self, code: int, message: str, data: Any = None):
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data

    def __repr__(self) -> str:
        return "DshRpcError(%r, %r, %r)" % (self.code, self.message, self.data)


class _Pending:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.result: Any = None
        self.error: Optional[DshRpcError] = None


def _default_cli() -> List[str]:
    here = os.path.dirname(os.path.abspath(__file__))
    checkout_bin = os.path.join(here, "..", "..", "apps", "cli", "bin", "dsh.js")
    if os.path.exists(checkout_bin):
        return ["node", os.path.normpath(checkout_bin)]
    return [shutil.which("dsh") or "dsh"]


class Connection:
    """The ``dsh rpc`` process and its JSON-RPC framing; ``DshClient`` adds the operations."""

    def __init__(
        self,
        cli: Union[str, Sequence[str], None] = None,
        args: Sequence[str] = (),
        cwd: Optional[str] = None,
        env: Optional[Dict[str, str]] = None,
        initialize: Optional[Dict[str, Any]] = None,
        on_stderr: Optional[Callable[[str], None]] = None,
        close_step: float = 3.0,
        timeout: Optional[float] = None,
    ) -> None:
        if cli is None:
            self._cli = _default_cli()
        elif isinstance(cli, str):
            self._cli = ["node", cli] if cli.endswith((".js", ".mjs")) else [cli]
        else:
            self._cli = list(cli)
        self._args = list(args)
        self._cwd = cwd
        self._env = env
        self._init_params = dict(initialize or {})
        self._on_stderr = on_stderr
        self._close_step = close_step
        #: Seconds a request waits for its answer (None: forever).
        self.timeout = timeout
        self._lock = threading.RLock()
        self._start_lock = threading.Lock()
        self._proc: Optional[subprocess.Popen] = None
        self._exited = threading.Event()
        self._init_result: Optional[Dict[str, Any]] = None
        self._next_id = 1
        self._pending: Dict[int, _Pending] = {}
        self._listeners: List[Callable[[str, Any], None]] = []
        self._parents: Dict[str, str] = {}
        self._open: set = set()
        self._approval_handler: Optional[Callable[[Dict[str, Any]], ApprovalAnswer]] = None
        self._question_handler: Optional[Callable[[Dict[str, Any]], Optional[str]]] = None
        self._dispatch: "queue.Queue[Any]" = queue.Queue()
        self._closed = False
        threading.Thread(target=self._dispatch_loop, name="dsh-dispatch", daemon=True).start()

    # ---- process and transport ----

    def _spawn(self) -> None:
        proc = subprocess.Popen(
            self._cli + self._args + ["rpc"],
            cwd=self._cwd,
            env=self._env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            bufsize=0,
        )
        exited = threading.Event()
        self._proc = proc
        self._exited = exited
        threading.Thread(target=self._read_stdout, args=(proc, exited), name="dsh-stdout", daemon=True).start()
        threading.Thread(target=self._read_stderr, args=(proc,), name="dsh-stderr", daemon=True).start()

    def _read_stdout(self, proc: subprocess.Popen, exited: threading.Event) -> None:
        assert proc.stdout is not None
        for raw in iter(proc.stdout.readline, b""):
            line = raw.decode("utf-8", "replace").strip()
            if not line:
                continue
            try:
                message = json.loads(line)
            except ValueError:
                self._stderr("dsh_client: unparsable line from the runtime: %s" % line[:200])
                continue
            if isinstance(message.get("method"), str):
                self._dispatch.put(("notification", message["method"], message.get("params") or {}))
                continue
            msg_id = message.get("id")
            with self._lock:
                pending = self._pending.pop(msg_id, None) if isinstance(msg_id, int) else None
            if pending is None:
                continue
            error = message.get("error")
            if error is not None:
                pending.error = DshRpcError(error.get("code", -32603), error.get("message", ""), error.get("data"))
            else:
                pending.result = message.get("result")
            # The receipt marker rides the dispatch queue, so run() sees it in wire order.
            self._dispatch.put(("response", msg_id, None))
            pending.done.set()
        proc.stdout.close()
        proc.wait()
        exited.set()
        self._fail_pending("the dsh runtime exited (code %s)" % proc.returncode)
        self._dispatch.put(("exit", None, None))

    def _read_stderr(self, proc: subprocess.Popen) -> None:
        assert proc.stderr is not None
        for raw in iter(proc.stderr.readline, b""):
            self._stderr(raw.decode("utf-8", "replace").rstrip("\n"))
        proc.stderr.close()

    def _stderr(self, line: str) -> None:
        if self._on_stderr is not None:
            self._on_stderr(line)

    def _fail_pending(self, message: str) -> None:
        with self._lock:
            pending = list(self._pending.values())
            self._pending.clear()
        for item in pending:
            item.error = DshRpcError(TRANSPORT_ERROR, message)
            item.done.set()

    def _send(self, method: str, params: Dict[str, Any]) -> "tuple[int, _Pending]":
        with self._lock:
            proc = self._proc
            msg_id = self._next_id
            self._next_id += 1
            pending = _Pending()
            if proc is None or proc.poll() is not None or proc.stdin is None:
                pending.error = DshRpcError(TRANSPORT_ERROR, "the dsh runtime is not running")
                pending.done.set()
                return msg_id, pending
            self._pending[msg_id] = pending
            line = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}) + "\n"
            try:
                proc.stdin.write(line.encode("utf-8"))
                proc.stdin.flush()
            except (BrokenPipeError, OSError) as error:
                self._pending.pop(msg_id, None)
                pending.error = DshRpcError(TRANSPORT_ERROR, "cannot write to the dsh runtime: %s" % error)
                pending.done.set()
        return msg_id, pending

    def _wait(self, pending: _Pending, timeout: Optional[float] = None) -> Any:
        if not pending.done.wait(self.timeout if timeout is None else timeout):
            raise DshRpcError(TRANSPORT_ERROR, "timed out waiting for the dsh runtime")
        if pending.error is not None:
            raise pending.error
        return pending.result

    def _call(self, method: str, params: Dict[str, Any], timeout: Optional[float] = None) -> Any:
        return self._wait(self._send(method, params)[1], timeout)

    # ---- notifications ----

    def _dispatch_loop(self) -> None:
        while True:
            kind, first, params = self._dispatch.get()
            if kind == "notification":
                if first in ("session/event", "agent/lifecycle") and params.get("parentSessionId"):
                    self._parents[params["sessionId"]] = params["parentSessionId"]
                if first == "approval/requested":
                    self._answer(params)
                if first == "question/requested":
                    self._reply(params)
            with self._lock:
                listeners = list(self._listeners)
            for listener in listeners:
                try:
                    listener(kind, (first, params) if kind == "notification" else first)
                except Exception as error:  # a listener must not stop the others
                    self._stderr("dsh_client: a listener raised: %r" % (error,))

    def _answer(self, request: Dict[str, Any]) -> None:
        handler = self._approval_handler
        if handler is None:
            return

        def work() -> None:
            try:
                answer = handler(request)
                if answer is None:
                    return
                if isinstance(answer, str):
                    self.respond_approval(request["requestId"], answer)
                else:
                    self.respond_approval(request["requestId"], answer["decision"], answer.get("reason"))
            except Exception as error:
                self._stderr("dsh_client: the approval handler failed: %r" % (error,))

        threading.Thread(target=work, name="dsh-approval", daemon=True).start()

    def _reply(self, request: Dict[str, Any]) -> None:
        handler = self._question_handler
        if handler is None:
            return

        def work() -> None:
            try:
                answer = handler(request)
                if answer is not None:
                    self.respond_question(request["questionId"], answer)
            except Exception as error:
                self._stderr("dsh_client: the question handler failed: %r" % (error,))

        threading.Thread(target=work, name="dsh-question", daemon=True).start()

    def in_tree(self, session_id: str, root: str) -> bool:
        """Whether ``session_id`` is ``root`` or descends from it (fork or subagent links seen so far)."""
        seen = set()
        current: Optional[str] = session_id
        while current is not None and current not in seen:
            if current == root:
                return True
            seen.add(current)
            current = self._parents.get(current)
        return False

    def _add_raw(self, listener: Callable[[str, Any], None]) -> Callable[[], None]:
        with self._lock:
            self._listeners.append(listener)

        def remove() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return remove

    def subscribe(self, listener: Listener, session_id: Optional[str] = None) -> Callable[[], None]:
        """Calls ``listener({"method", "params"})`` for each notification (on the dispatcher thread).

        With ``session_id``, only notifications about that session's tree. Returns the unsubscribe
        function."""

        def raw(kind: str, payload: Any) -> None:
            if kind != "notification":
                return
            method, params = payload
            if session_id is not None:
                sid = params.get("sessionId")
                if not sid or not self.in_tree(sid, session_id):
                    return
            listener({"method": method, "params": params})

        return self._add_raw(raw)

    def on_event(self, listener: Callable[[Dict[str, Any]], None], session_id: Optional[str] = None) -> Callable[[], None]:
        """Committed session events only (``{"sessionId", "event", ...}``), narrowed like ``subscribe``."""
        return self.subscribe(lambda n: listener(n["params"]) if n["method"] == "session/event" else None, session_id)

    def on_approval(self, handler: Optional[Callable[[Dict[str, Any]], ApprovalAnswer]]) -> None:
        """Answers approval questions: return "allowed-once", "rejected", ``{"decision", "reason"}`` or None."""
        self._approval_handler = handler

    def on_question(self, handler: Optional[Callable[[Dict[str, Any]], Optional[str]]]) -> None:
        """Answers the model's questions (``ask_user``): return the answer text, or None to answer later."""
        self._question_handler = handler

    # ---- lifecycle ----

    def start(self) -> Dict[str, Any]:
        """Spawns the runtime and performs ``initialize`` once (memoised); on failure the process is
        reaped and one fresh process is tried before the error is raised."""
        with self._start_lock:
            if self._closed:
                raise DshRpcError(TRANSPORT_ERROR, "the client is closed")
            if self._init_result is not None:
                return self._init_result
            try:
                self._init_result = self._handshake()
            except DshRpcError:
                self._init_result = self._handshake()
            return self._init_result

    def _handshake(self) -> Dict[str, Any]:
        self._spawn()
        params = dict(self._init_params)
        if self._cwd is not None:
            params.setdefault("cwd", self._cwd)
        try:
            return self._call("initialize", params)
        except DshRpcError:
            self._reap(graceful=False)
            raise

    def close(self) -> None:
        """Shuts the runtime down and returns once its process has exited: ``shutdown`` (best effort),
        stdin EOF, ``terminate()``, ``kill()``, each after ``close_step`` seconds without an exit."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._reap(graceful=True)

    def _reap(self, graceful: bool) -> None:
        proc, exited = self._proc, self._exited
        if proc is None:
            return
        step = self._close_step
        if graceful and proc.poll() is None:
            self._send("shutdown", {})
            if exited.wait(step):
                self._forget(proc)
                return
        try:
            if proc.stdin is not None:
                proc.stdin.close()
        except OSError:
            pass
        if not exited.wait(step):
            proc.terminate()
            if not exited.wait(step):
                proc.kill()
        proc.wait()
        exited.wait()
        self._forget(proc)

    def _forget(self, proc: subprocess.Popen) -> None:
        try:
            if proc.stdin is not None:
                proc.stdin.close()
        except OSError:
            pass
        with self._lock:
            if self._proc is proc:
                self._proc = None
                self._init_result = None
                self._open.clear()

    def __enter__(self) -> "Connection":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
