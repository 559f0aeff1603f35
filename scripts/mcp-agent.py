#!/usr/bin/env python3
"""A stand-in for an agent CLI: berth's `command` agent runs it for a turn.

    mcp-agent.py PROMPT_FILE MCP_CONFIG

It plays what Claude Code or Codex CLI do with berth's tools, without a
model: it reads its prompt, connects to the MCP server named `berth` in
MCP_CONFIG (Claude Code's `--mcp-config` format, which berth writes for the
turn: streamable HTTP on 127.0.0.1 with a bearer token), lists the tools,
runs `cat README.md`, writes a file saying what it read, commits, pushes and
opens a pull request -- each one a proposed action berth's policy decides.
A step a person must approve is waited for (action_status) up to
MCP_AGENT_WAIT_SECS (default 600). It prints what it did and exits 0, or
exits 1 saying which step failed.

Only the Python standard library: the MCP 2025-06-18 streamable HTTP
transport is JSON-RPC POSTed to one URL, answered as JSON or as an SSE
stream, in a session named by the Mcp-Session-Id header.
"""

import json
import os
import sys
import time
import urllib.error
import urllib.request

PROTOCOL = "2025-06-18"


class McpError(Exception):
    pass


class Client:
    """One MCP session over streamable HTTP."""

    def __init__(self, url, headers):
        self.url = url
        self.headers = dict(headers)
        self.session = None
        self.protocol = None
        self.next_id = 0

    def _post(self, message):
        request = urllib.request.Request(
            self.url, data=json.dumps(message).encode(), method="POST"
        )
        request.add_header("Content-Type", "application/json")
        request.add_header("Accept", "application/json, text/event-stream")
        for name, value in self.headers.items():
            request.add_header(name, value)
        if self.session:
            request.add_header("Mcp-Session-Id", self.session)
        if self.protocol:
            request.add_header("MCP-Protocol-Version", self.protocol)
        try:
            response = urllib.request.urlopen(request, timeout=900)
        except urllib.error.HTTPError as e:
            raise McpError(f"HTTP {e.code} from {self.url}: {e.read().decode(errors='replace').strip()}")
        with response:
            self.session = response.headers.get("Mcp-Session-Id") or self.session
            if "id" not in message or response.status == 202:
                return None
            kind = response.headers.get("Content-Type", "")
            if kind.startswith("text/event-stream"):
                return self._from_stream(response, message["id"])
            return json.loads(response.read())

    @staticmethod
    def _from_stream(response, want):
        """The answer to request `want` from an SSE stream (other events skipped)."""
        data = []
        for raw in response:
            line = raw.decode().rstrip("\r\n")
            if line.startswith("data:"):
                data.append(line[5:][1:] if line[5:6] == " " else line[5:])
                continue
            if line or not data:
                continue
            text, data = "\n".join(data), []
            if not text.strip():
                continue
            message = json.loads(text)
            if message.get("id") == want and ("result" in message or "error" in message):
                return message
        raise McpError("the event stream ended without an answer")

    def request(self, method, params=None):
        self.next_id += 1
        answer = self._post(
            {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params or {}}
        )
        if answer is None:
            raise McpError(f"{method}: no answer")
        if "error" in answer:
            raise McpError(f"{method}: {answer['error'].get('message')}")
        return answer["result"]

    def notify(self, method, params=None):
        self._post({"jsonrpc": "2.0", "method": method, "params": params or {}})

    def close(self):
        """Ends the session (DELETE), as the transport asks of a client that is done."""
        if not self.session:
            return
        request = urllib.request.Request(self.url, method="DELETE")
        for name, value in self.headers.items():
            request.add_header(name, value)
        request.add_header("Mcp-Session-Id", self.session)
        try:
            urllib.request.urlopen(request, timeout=10).close()
        except (urllib.error.URLError, OSError):
            pass


def text_of(result):
    return "".join(b.get("text", "") for b in result.get("content", []) if b.get("type") == "text")


def call(client, tool, arguments, wait_secs):
    """Calls `tool`; a pending action is waited for until a person decides it."""
    result = client.request("tools/call", {"name": tool, "arguments": arguments})
    facts = result.get("structuredContent") or {}
    deadline = time.monotonic() + wait_secs
    while facts.get("status") == "pending":
        if time.monotonic() > deadline:
            raise McpError(f"{tool}: still waiting for a person after {wait_secs}s ({facts.get('approve')})")
        print(f"  {tool}: waiting for a person: {facts.get('approve')}", flush=True)
        time.sleep(1)
        result = client.request("tools/call", {"name": "action_status", "arguments": {"id": facts["action_id"]}})
        facts = result.get("structuredContent") or {}
    if result.get("isError") or facts.get("status") != "executed":
        raise McpError(f"{tool}: {text_of(result).strip()}")
    return result, facts


def main(argv):
    if len(argv) != 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    prompt_file, config_file = argv[1], argv[2]
    with open(prompt_file, encoding="utf-8") as f:
        prompt = f.read()
    with open(config_file, encoding="utf-8") as f:
        server = json.load(f)["mcpServers"]["berth"]
    if server.get("type") != "http":
        print(f"mcp-agent: server `berth` is {server.get('type')!r}, not http", file=sys.stderr)
        return 1
    wait_secs = int(os.environ.get("MCP_AGENT_WAIT_SECS", "600"))
    client = Client(server["url"], server.get("headers", {}))
    try:
        init = client.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "berth-mcp-agent", "version": "0.1"},
            },
        )
        client.protocol = init["protocolVersion"]
        client.notify("notifications/initialized")
        info = init.get("serverInfo", {})
        print(f"connected to {info.get('name')} {info.get('version')} (MCP {client.protocol}, session {client.session})")
        first_line = prompt.strip().splitlines()[0] if prompt.strip() else "(empty prompt)"
        print(f"prompt: {first_line}")

        tools = [t["name"] for t in client.request("tools/list")["tools"]]
        print(f"tools: {', '.join(tools)}")

        result, facts = call(client, "run_command", {"command": "cat README.md", "description": "read the project's README"}, wait_secs)
        readme = facts["result"]["stdout"]
        print(f"ran `cat README.md` (action {facts['action_id'][:8]}): {len(readme)} bytes, first line {readme.splitlines()[0] if readme else ''!r}")

        note = f"# Notes from the agent\n\nPrompt: {first_line}\n\nThe README begins: {readme.splitlines()[0] if readme else '(empty)'}\n"
        _, facts = call(client, "write_file", {"path": "/work/AGENT_NOTES.md", "content": note}, wait_secs)
        print(f"wrote AGENT_NOTES.md (action {facts['action_id'][:8]}): {facts['result']['bytes']} bytes")

        _, facts = call(client, "commit", {"message": f"Add agent notes\n\n{first_line}"}, wait_secs)
        print(f"committed {facts['result']['commit'][:12]} on {facts['result']['branch']} (action {facts['action_id'][:8]})")

        _, facts = call(client, "push", {}, wait_secs)
        print(f"pushed {facts['result']['branch']} (action {facts['action_id'][:8]})")

        _, facts = call(client, "open_pr", {"title": f"Agent notes: {first_line[:60]}"}, wait_secs)
        pr = facts["result"]
        print(f"opened PR #{pr['number']}: {pr['branch']} into {pr['base']} (action {facts['action_id'][:8]})")
    except (McpError, urllib.error.URLError, OSError, KeyError, ValueError) as e:
        print(f"mcp-agent: FAILED: {e}", file=sys.stderr)
        return 1
    finally:
        client.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
