"""dsh_client against the built CLI: ``dsh rpc`` as a child process, DSH_HOME in a temp dir, the model
behind the mock SSE server of @dsh/test-support, test tools loaded with a --patch row. Needs Node and
a built checkout (``npm ci``). Run from python/: ``python3 -m unittest``."""

import base64
import hashlib
import json
import os
import struct
import zlib
import shutil
import subprocess
import tempfile
import threading
import time
import unittest

from dsh_client import DshClient, DshRpcError, attachment

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
CLI = os.path.join(ROOT, "apps", "cli", "bin", "dsh.js")
TOOLS = os.path.join(ROOT, "packages", "surfaces", "test", "rpc", "fixtures", "test-tools.mjs")


class MockModel:
    """The Node mock model server, scripted over its stdin."""

    def __init__(self):
        self.proc = subprocess.Popen(
            ["node", os.path.join(HERE, "mock_model.mjs")],
            cwd=ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        self.url = json.loads(self.proc.stdout.readline())["url"]

    def _command(self, command):
        self.proc.stdin.write(json.dumps(command) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def enqueue(self, *scripts):
        self._command({"enqueue": list(scripts)})

    def bodies(self):
        return self._command({"requests": True})["bodies"]

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(10)
        self.proc.stdout.close()


def tiny_png(width, height, rgb):
    """A valid RGB PNG made with the standard library only."""
    def chunk(kind, body):
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF)
    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def tool_call(call_id, name, args):
    return {"id": call_id, "name": name, "arguments": json.dumps(args)}


def wait_for(check, timeout=45.0):
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError("timed out waiting")
        time.sleep(0.02)


class DshClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.home = tempfile.mkdtemp(prefix="dsh-py-")
        cls.model = MockModel()
        cls.patch = os.path.join(cls.home, "tools.yml")
        with open(cls.patch, "w") as handle:
            handle.write("- id: test-tools\n  use: %s\n  config: { ask: [write_file] }\n" % json.dumps(TOOLS))
        cls.stderr = []
        cls.dsh = cls.client()

    @classmethod
    def client(cls, **extra):
        env = {
            "PATH": os.environ.get("PATH", ""),
            "DSH_HOME": cls.home,
            "DEEPSEEK_API_KEY": "sk-test",
            "DEEPSEEK_BASE_URL": cls.model.url,
        }
        options = dict(cli=CLI, args=["--patch", cls.patch], cwd=cls.home, env=env, timeout=60, on_stderr=cls.stderr.append)
        options.update(extra)
        return DshClient(**options)

    @classmethod
    def tearDownClass(cls):
        cls.dsh.close()
        cls.model.close()
        shutil.rmtree(cls.home, ignore_errors=True)

    def durable(self, session_id):
        # Each line ends with its chain hash ("hash") and a CRC-32 seal ("crc"), which the store checks
        # and strips on read.
        with open(os.path.join(self.home, "sessions", session_id + ".jsonl")) as handle:
            events = [json.loads(line) for line in handle.read().strip().split("\n")[1:]]
        for event in events:
            event.pop("crc", None)
            event.pop("hash", None)
        return events

    def test_1_tool_task_with_approval_round_trip(self):
        info = self.dsh.start()
        self.assertIs(self.dsh.start(), info)
        self.assertEqual(info["protocolVersion"], 1)
        self.assertEqual(info["capabilities"], {"persistence": True, "approvals": True, "questions": True})
        allowed = os.path.join(self.home, "py-allowed.txt")
        refused = os.path.join(self.home, "py-refused.txt")
        asked = []

        def decide(request):
            asked.append(request["toolCallId"])
            if request["toolCallId"] == "c2":
                return {"decision": "rejected", "reason": "not that one"}
            return "allowed-once"

        self.dsh.on_approval(decide)
        self.model.enqueue(
            {"toolCalls": [tool_call("c1", "write_file", {"path": allowed, "content": "from python"}),
                           tool_call("c2", "write_file", {"path": refused, "content": "no"})]},
            {"text": ["Wrote ", "it."]},
        )
        seen = []
        stop = self.dsh.on_event(seen.append)
        result = self.dsh.run("write files")
        stop()
        self.dsh.on_approval(None)
        self.__class__.session_id = result.session_id
        self.assertEqual((result.text, result.reason), ("Wrote it.", "completed"))
        self.assertEqual(asked, ["c1", "c2"])
        with open(allowed) as handle:
            self.assertEqual(handle.read(), "from python")
        self.assertFalse(os.path.exists(refused))
        log = self.durable(result.session_id)
        results = [event["data"] for event in log if event["type"] == "tool/result"]
        self.assertEqual([r["message"]["isError"] for r in results], [False, True])
        self.assertEqual(results[1]["code"], "APPROVAL_REJECTED")
        self.assertEqual([n["event"] for n in result.events], log[len(log) - len(result.events):])

    def test_1b_questions_reach_the_client(self):
        self.dsh.on_question(lambda request: "green" if request["options"] == ["green", "grey"] else None)
        self.model.enqueue(
            {"toolCalls": [tool_call("q1", "ask_user", {"question": "Colour?", "options": ["green", "grey"]})]},
            {"text": "Green."},
        )
        result = self.dsh.run("ask me")
        self.dsh.on_question(None)
        self.assertEqual(result.text, "Green.")
        answered = [e["data"] for e in self.durable(result.session_id) if e["type"] == "tool/result"]
        self.assertFalse(answered[0]["message"]["isError"])
        self.assertIn("green", json.dumps(answered[0]))

    def test_1c_attachment_reaches_the_model_as_an_image(self):
        shot = os.path.join(self.home, "py-shot.png")
        png = tiny_png(3, 2, (200, 10, 10))
        with open(shot, "wb") as handle:
            handle.write(png)
        session = self.dsh.create_session(model="deepseek-flash")["sessionId"]
        before = len(self.model.bodies())
        self.model.enqueue({"text": "A red strip."})
        result = self.dsh.run("what is this?", session_id=session, attachments=[attachment(shot)])
        self.assertEqual((result.text, result.reason), ("A red strip.", "completed"))
        body = self.model.bodies()[before]
        parts = [part for message in body["messages"] if isinstance(message["content"], list) for part in message["content"]]
        urls = [part["image_url"]["url"] for part in parts if part["type"] == "image_url"]
        self.assertEqual(urls, ["data:image/png;base64," + base64.b64encode(png).decode("ascii")])
        # The log holds the reference; the bytes are the blob named by their hash.
        digest = hashlib.sha256(png).hexdigest()
        logged = [e for e in self.durable(session) if e["type"] == "user/message"]
        self.assertIn("sha256:" + digest, json.dumps(logged))
        self.assertTrue(os.path.exists(os.path.join(self.home, "blobs", "sha256", digest[:2], digest)))
        with self.assertRaises(DshRpcError) as refused:
            self.dsh.prompt(session, "bad", attachments=[{"data": "%%%"}])
        self.assertEqual(refused.exception.data["code"], "ATTACHMENT_INVALID")

    def test_1d_preset_chosen_at_creation(self):
        presets = self.dsh.list_presets()
        self.assertEqual(presets["default"], "code")
        self.assertEqual([p["name"] for p in presets["data"]], ["ask", "code", "minimal", "plan", "review"])
        target = os.path.join(self.home, "py-plan.txt")
        self.model.enqueue(
            {"toolCalls": [tool_call("p1", "write_file", {"path": target, "content": "no"})]},
            {"text": "Planned."},
        )
        result = self.dsh.run("plan it", preset="plan")
        self.assertEqual(result.text, "Planned.")
        offered = [tool["function"]["name"] for tool in self.model.bodies()[-2].get("tools", [])]
        self.assertIn("read", offered)
        self.assertNotIn("write_file", offered)
        self.assertFalse(os.path.exists(target))
        log = self.durable(result.session_id)
        self.assertEqual(
            [e["data"] for e in log if e["type"] == "preset/selected"], [{"name": "plan", "by": "request", "origin": "shipped"}]
        )
        self.assertEqual([e["data"]["code"] for e in log if e["type"] == "tool/result"], ["TOOL_NOT_ALLOWED"])

    def test_2_cancel(self):
        session_id = self.dsh.create_session()["sessionId"]
        marker = os.path.join(self.home, "py-wait")
        self.model.enqueue({"toolCalls": [tool_call("w1", "wait", {"ms": 60000, "marker": marker})]})
        receipt = self.dsh.prompt(session_id, "wait")
        self.assertEqual(receipt["target"], "next-turn")
        wait_for(lambda: os.path.exists(marker))
        began = time.monotonic()
        self.dsh.cancel(session_id)
        self.assertLess(time.monotonic() - began, 10)
        wait_for(lambda: self.durable(session_id)[-1]["type"] == "turn/end")
        log = self.durable(session_id)
        self.assertEqual(log[-1]["data"]["reason"], "aborted")
        self.assertIn("stopped early", json.dumps([e for e in log if e["type"] == "tool/result"]))

    def test_3_resume_by_id_in_a_fresh_runtime(self):
        self.dsh.close()
        with self.client() as again:
            self.model.enqueue({"text": "Back again."})
            result = again.run("still there?", session_id=self.session_id)
            self.assertEqual((result.session_id, result.text), (self.session_id, "Back again."))
            users = [json.dumps(m["content"]) for m in self.model.bodies()[-1]["messages"] if m["role"] == "user"]
            self.assertTrue(any("write files" in text for text in users))
            listed = again.list_sessions()["data"]
            self.assertIn(self.session_id, [s["sessionId"] for s in listed])
        reasons = [e["data"]["reason"] for e in self.durable(self.session_id) if e["type"] == "turn/end"]
        self.assertEqual(reasons, ["completed", "completed"])

    def test_4_errors_and_garbage(self):
        with self.client() as rpc:
            with self.assertRaises(DshRpcError) as caught:
                rpc.prompt("nope", "hi")
            self.assertEqual((caught.exception.code, caught.exception.data["code"]), (-32000, "SESSION_NOT_ATTACHED"))
            with self.assertRaises(DshRpcError) as caught:
                rpc.request("frobnicate")
            self.assertEqual(caught.exception.code, -32601)
            with self.assertRaises(DshRpcError) as caught:
                rpc.request("session/list", {"limit": "ten"})
            self.assertEqual(caught.exception.code, -32602)
            # Raw garbage on the wire gets an error line and the runtime keeps serving.
            lines = []
            rpc.subscribe(lines.append)
            rpc._proc.stdin.write(b"this is not json\n")
            rpc._proc.stdin.flush()
            self.assertTrue(rpc.create_session()["sessionId"])

    def test_6_rewind_files_and_conversation(self):
        workspace = tempfile.mkdtemp(prefix="dsh-py-rewind-")
        try:
            with self.client(cwd=workspace) as rpc:
                rpc.on_approval(lambda request: "allowed-once")
                self.model.enqueue(
                    {"toolCalls": [tool_call("w1", "write", {"path": "a.txt", "content": "one\n"})]}, {"text": "a"}
                )
                first = rpc.run("first")
                self.model.enqueue(
                    {"toolCalls": [tool_call("b1", "bash", {"command": "printf two > a.txt && printf x > b.txt"})]},
                    {"text": "b"},
                )
                rpc.run("second", session_id=first.session_id)
                points = rpc.rewind_points(first.session_id)
                self.assertEqual([(p["number"], p["text"]) for p in points], [(1, "first"), (2, "second")])
                result = rpc.rewind(first.session_id, 2, mode="files")
                self.assertTrue(result["files"]["ok"])
                with open(os.path.join(workspace, "a.txt")) as handle:
                    self.assertEqual(handle.read(), "one\n")
                self.assertFalse(os.path.exists(os.path.join(workspace, "b.txt")))
                fork = rpc.rewind(first.session_id, 2, mode="conversation")
                self.assertEqual((fork["previousSessionId"], fork["text"]), (first.session_id, "second"))
                self.assertNotEqual(fork["sessionId"], first.session_id)
        finally:
            shutil.rmtree(workspace, ignore_errors=True)

    def test_7_usage_sums_the_session_log(self):
        with self.client() as rpc:
            self.model.enqueue({"text": "one"})
            first = rpc.run("first")
            self.model.enqueue({"text": "two"})
            rpc.run("second", session_id=first.session_id)
            usage = rpc.usage(first.session_id)
            self.assertEqual(usage["sessionId"], first.session_id)
            self.assertEqual(usage["requests"], 2)
            # The mock reports usage per answer; the sum is the log's, per model.
            self.assertEqual(sum(m["requests"] for m in usage["models"]), 2)
            self.assertGreater(usage["models"][0]["inputTokens"], 0)
            self.assertGreater(usage["context"]["tokens"], 0)

    def test_5_close_ladder_reaps_a_runtime_that_ignores_shutdown(self):
        stuck = os.path.join(self.home, "stuck.py")
        with open(stuck, "w") as handle:
            handle.write(
                "import json, signal, sys\n"
                "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                "for line in sys.stdin:\n"
                "    m = json.loads(line)\n"
                "    if m['method'] == 'initialize':\n"
                "        print(json.dumps({'jsonrpc': '2.0', 'id': m['id'], 'result': {'protocolVersion': 1}}), flush=True)\n"
                "import time\n"
                "time.sleep(60)\n"
            )
        client = DshClient(cli=["python3", stuck], close_step=0.3, timeout=10)
        self.assertEqual(client.start(), {"protocolVersion": 1})
        proc = client._proc
        began = time.monotonic()
        client.close()
        self.assertIsNotNone(proc.poll())
        self.assertLess(time.monotonic() - began, 5)
        self.assertEqual(proc.returncode, -9)


if __name__ == "__main__":
    unittest.main()
