"""The synchronous client: the operations of ``dsh rpc`` as methods and ``run()``, on a ``Connection``
(one reader thread parses the runtime's stdout; one dispatcher thread runs listeners in wire order,
so a listener or an approval handler may itself send requests)."""

import base64
import os
import sys
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

from .connection import TRANSPORT_ERROR, Connection, DshRpcError

__all__ = ["DshClient", "DshRpcError", "RunResult", "attachment"]


@dataclass
class RunResult:
    """The outcome of ``run()``; see ``DshClient.run`` for the interval it covers."""

    session_id: str
    message_id: str
    #: The last committed assistant text of the root session in the interval ("" when none).
    text: str
    #: The reason of the last ``turn/end`` of the root session in the interval, if one ended.
    reason: Optional[str] = None
    #: Every committed event notification of the session tree in the interval, in order.
    events: List[Dict[str, Any]] = field(default_factory=list)


class DshClient(Connection):
    """A client of one ``dsh rpc`` runtime process.

    ``cli`` is the command that starts dsh (default: ``node <checkout>/apps/cli/bin/dsh.js`` when this
    package sits in a dsh checkout, else ``dsh`` on PATH); a ``.js`` path is run with ``node``.
    ``args`` go before ``rpc`` (global options such as ``--profile`` or ``--patch FILE``).
    """

    # ---- requests ----

    def request(self, method: str, params: Optional[Dict[str, Any]] = None) -> Any:
        """Sends any request of the protocol after ``start()``."""
        self.start()
        return self._call(method, params or {})

    def create_session(
        self,
        cwd: Optional[str] = None,
        provider: Optional[str] = None,
        model: Optional[str] = None,
        preset: Optional[str] = None,
    ) -> Dict[str, Any]:
        """Creates a session; ``preset`` picks its agent preset (logged in the session, kept on resume)."""
        params = {
            k: v for k, v in (("cwd", cwd), ("provider", provider), ("model", model), ("preset", preset)) if v is not None
        }
        result = self.request("session/create", params)
        self._open.add(result["sessionId"])
        return result

    def resume_session(self, session_id: str) -> Dict[str, Any]:
        """Opens a durable session on this runtime (cold resume); an open one is returned as is."""
        result = self.request("session/resume", {"sessionId": session_id})
        self._open.add(session_id)
        return result

    def list_presets(self, cwd: Optional[str] = None) -> Dict[str, Any]:
        """The agent presets a new session can take: ``{"data": [{name, description, origin}], "default"}``."""
        return self.request("preset/list", {} if cwd is None else {"cwd": cwd})

    def list_sessions(self, cursor: Optional[str] = None, limit: Optional[int] = None) -> Dict[str, Any]:
        params = {k: v for k, v in (("cursor", cursor), ("limit", limit)) if v is not None}
        return self.request("session/list", params)

    def fork_session(self, session_id: str, at: Optional[int] = None) -> Dict[str, Any]:
        """Forks a session (live or durable) and opens the fork on this runtime."""
        params: Dict[str, Any] = {"sessionId": session_id}
        if at is not None:
            params["at"] = at
        result = self.request("session/fork", params)
        self._open.add(result["sessionId"])
        self._parents[result["sessionId"]] = session_id
        return result

    def usage(self, session_id: str) -> Dict[str, Any]:
        """The session's usage and cost folded from its log (``models``, ``usd``, ``unknownRequests``,
        ``requests``, ``modelMs``, ``toolMs``) and ``context`` (``tokens``, ``window``, ``pressure``)."""
        return self.request("session/usage", {"sessionId": session_id})

    def rewind_points(self, session_id: str) -> List[Dict[str, Any]]:
        """The messages a rewind can go back to (``number`` from 1), each with the files its turn changed."""
        return self.request("session/rewind-points", {"sessionId": session_id})["points"]

    def rewind(self, session_id: str, point: int, mode: str = "both", overwrite: bool = False) -> Dict[str, Any]:
        """Rewinds an idle session to user message ``point``: ``files``, ``conversation`` (a fork, opened
        here) or ``both``. ``result["files"]["code"] == "REWIND_CONFLICT"`` means nothing changed."""
        params: Dict[str, Any] = {"sessionId": session_id, "point": point, "mode": mode}
        if overwrite:
            params["overwrite"] = True
        result = self.request("session/rewind", params)
        if result.get("previousSessionId"):
            self._open.add(result["sessionId"])
            self._parents[result["sessionId"]] = session_id
        return result

    def prompt(self, session_id: str, text: str, attachments: Optional[List[Dict[str, Any]]] = None) -> Dict[str, Any]:
        """Queues ``text`` for the session's next turn; returns the receipt at once. ``attachments``:
        ``{"path": ...}`` (read by the runtime) or ``{"data": <base64>, "mimeType": ..., "name": ...}``;
        ``attachment(path)`` builds the second kind from a local file."""
        return self.request("prompt", _prompt_params(session_id, text, attachments))

    def steer(self, session_id: str, text: str) -> Dict[str, Any]:
        """Queues ``text`` for the next step of the running turn (or the next turn)."""
        return self.request("steer", {"sessionId": session_id, "text": text})

    def command(self, session_id: str, line: str) -> Dict[str, Any]:
        """Runs a human /command (``/compact``, ``/plan on``...) for the session, without a model turn."""
        return self.request("command/run", {"sessionId": session_id, "line": line})

    def cancel(self, session_id: str) -> Dict[str, Any]:
        """Cancels the session's running activity; returns once its agent is idle."""
        return self.request("cancel", {"sessionId": session_id})

    def respond_approval(self, request_id: str, decision: str, reason: Optional[str] = None) -> Dict[str, Any]:
        params = {"requestId": request_id, "decision": decision}
        if reason is not None:
            params["reason"] = reason
        return self.request("approval/respond", params)

    def respond_question(self, question_id: str, answer: str) -> Dict[str, Any]:
        return self.request("question/respond", {"questionId": question_id, "answer": answer})

    def run(
        self,
        text: str,
        session_id: Optional[str] = None,
        timeout: Optional[float] = None,
        attachments: Optional[List[Dict[str, Any]]] = None,
        preset: Optional[str] = None,
    ) -> RunResult:
        """Prompts a session (a new one unless ``session_id`` is given; a durable one not yet open here
        is resumed) and waits for its activity interval: from the prompt's receipt to the next time the
        session's agent reports whole-agent ``idle``. ``text`` of the result is the last committed
        assistant text of the root session in that interval. The interval is not causally tied to this
        prompt: steering, queued follow-ups and descendant activity in it are covered too. ``preset``
        applies to a new session only."""
        self.start()
        if session_id is None:
            session_id = self.create_session(preset=preset)["sessionId"]
        elif session_id not in self._open:
            self.resume_session(session_id)
        root = session_id
        events: List[Dict[str, Any]] = []
        state = {"prompt_id": -1, "receipt_seen": False}
        idle = threading.Event()
        gone = threading.Event()

        def watch(kind: str, payload: Any) -> None:
            if kind == "response":
                if payload == state["prompt_id"]:
                    state["receipt_seen"] = True
                return
            if kind == "exit":
                gone.set()
                idle.set()
                return
            method, params = payload
            sid = params.get("sessionId")
            if not sid or not self.in_tree(sid, root):
                return
            if method == "session/event":
                events.append(params)
            elif method == "agent/status" and state["receipt_seen"] and sid == root and params.get("status") == "idle":
                idle.set()

        remove = self._add_raw(watch)
        try:
            with self._lock:
                prompt_id, pending = self._send("prompt", _prompt_params(root, text, attachments))
                state["prompt_id"] = prompt_id
            receipt = self._wait(pending)
            if not idle.wait(timeout):
                raise DshRpcError(TRANSPORT_ERROR, "timed out waiting for the session to become idle")
            if gone.is_set():
                raise DshRpcError(TRANSPORT_ERROR, "the dsh runtime exited during run()")
        finally:
            remove()
        last = ""
        reason = None
        for item in events:
            if item["sessionId"] != root:
                continue
            event = item["event"]
            if event["type"] == "assistant/message":
                said = "".join(b.get("text", "") for b in event["data"]["message"]["content"] if b.get("type") == "text")
                if said.strip():
                    last = said
            elif event["type"] == "turn/end":
                reason = event["data"]["reason"]
        return RunResult(session_id=root, message_id=receipt["messageId"], text=last, reason=reason, events=events)


if sys.version_info < (3, 9):  # pragma: no cover
    raise ImportError("dsh_client needs Python >= 3.9")


def attachment(path: str, mime_type: Optional[str] = None) -> Dict[str, Any]:
    """A local file as prompt attachment bytes (base64), for a runtime that may not see this file system."""
    with open(path, "rb") as handle:
        data = base64.b64encode(handle.read()).decode("ascii")
    item: Dict[str, Any] = {"data": data, "name": os.path.basename(path)}
    if mime_type is not None:
        item["mimeType"] = mime_type
    return item


def _prompt_params(session_id: str, text: str, attachments: Optional[List[Dict[str, Any]]]) -> Dict[str, Any]:
    params: Dict[str, Any] = {"sessionId": session_id, "text": text}
    if attachments:
        params["attachments"] = attachments
    return params
