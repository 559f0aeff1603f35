"""A real MCP client for berth's tests: the official Python SDK (`mcp`).

Usage: python mcp_client.py SERVER_COMMAND [ARGS...]

Starts the server over stdio, initializes, prints one JSON line
{"op": "initialized", ...}, then answers one JSON request per stdin line
with one JSON line on stdout, in the same session, until stdin closes:

  {"op": "list_tools"}
  {"op": "call", "tool": NAME, "args": {...}}   (a JSON-RPC error: {"protocol_error": ...})
  {"op": "bench", "tool": NAME, "args": {...}, "n": N}   (round-trip times in ms)
  {"op": "call_and_leave", "tool": NAME, "args": {...}, "after_secs": S}
      (cancels the call after S seconds and ends the session)

The Rust tests drive it step by step, so a person (the CLI) can act between
two calls of the same session.
"""

import json
import os
import sys
import time

import anyio
from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def call_result(result, ms):
    texts = [c.text for c in result.content if getattr(c, "type", None) == "text"]
    return {
        "is_error": bool(result.is_error),
        "text": "\n".join(texts),
        "structured": result.structured_content,
        "ms": ms,
    }


async def main():
    command, args = sys.argv[1], sys.argv[2:]
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            init = await session.initialize()
            emit(
                {
                    "op": "initialized",
                    "server": init.server_info.name,
                    "version": init.server_info.version,
                    "protocol_version": init.protocol_version,
                    "tools_capability": init.capabilities.tools is not None,
                    "instructions": init.instructions,
                }
            )
            while True:
                line = await anyio.to_thread.run_sync(sys.stdin.readline)
                if not line:
                    break
                req = json.loads(line)
                op = req["op"]
                if op == "list_tools":
                    tools = await session.list_tools()
                    emit(
                        {
                            "tools": [
                                {
                                    "name": t.name,
                                    "description": t.description,
                                    "input_schema": t.input_schema,
                                    "output_schema": t.output_schema,
                                    "annotations": t.annotations.model_dump(exclude_none=True)
                                    if t.annotations
                                    else None,
                                }
                                for t in tools.tools
                            ]
                        }
                    )
                elif op == "call":
                    start = time.perf_counter()
                    try:
                        result = await session.call_tool(req["tool"], req.get("args") or {})
                    except MCPError as e:
                        # A JSON-RPC error answer (not a tool result).
                        emit({"protocol_error": str(e)})
                        continue
                    emit(call_result(result, (time.perf_counter() - start) * 1000))
                elif op == "bench":
                    times = []
                    last = None
                    for _ in range(req["n"]):
                        start = time.perf_counter()
                        last = await session.call_tool(req["tool"], req.get("args") or {})
                        times.append((time.perf_counter() - start) * 1000)
                    emit({"ms": times, "last": call_result(last, times[-1])})
                elif op == "call_and_leave":
                    # Start a call, give up on it, and end the session while
                    # the server is still running it.
                    async with anyio.create_task_group() as tg:
                        tg.start_soon(session.call_tool, req["tool"], req.get("args") or {})
                        await anyio.sleep(req.get("after_secs", 0.5))
                        tg.cancel_scope.cancel()
                    emit({"left": True})
                    break
                else:
                    emit({"error": f"unknown op {op}"})


if __name__ == "__main__":
    anyio.run(main)
