"""dsh_client: a synchronous Python client of ``dsh rpc`` (standard library only, Python >= 3.9).

It mirrors the TypeScript ``@dsh/sdk``: the runtime is spawned on first use, ``initialize`` is
memoised (retried once with a fresh process), ``run()`` waits for an activity interval, events can be
narrowed to a session tree, and ``close()`` reaps the process (shutdown, stdin EOF, terminate, kill).
"""

from .client import DshClient, DshRpcError, RunResult, attachment

__all__ = ["DshClient", "DshRpcError", "RunResult", "attachment"]
