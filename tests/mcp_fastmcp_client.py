"""A second, independent MCP client for berth's conformance test: FastMCP's
`Client` (PyPI `fastmcp`), which the official SDK's tests do not use.

Usage: python mcp_fastmcp_client.py CALLS_JSON SERVER_COMMAND [ARGS...]

CALLS_JSON is a list of {"tool": NAME, "args": {...}}. Prints one JSON line:
the handshake (protocol version, server name), whether ping answered, the
tools with their schemas, and per call: is_error, the text, the structured
content, whether FastMCP hydrated it through the tool's outputSchema
(`data_parsed`) and whether it validates against that schema (`schema_error`,
null when it does; checked with `jsonschema` for error results too).
"""

import json
import os
import sys

import anyio
import jsonschema
from fastmcp import Client
from fastmcp.client.transports import StdioTransport


async def main():
    calls = json.loads(sys.argv[1])
    command, args = sys.argv[2], sys.argv[3:]
    transport = StdioTransport(command=command, args=args, env=dict(os.environ))
    out = {}
    async with Client(transport) as client:
        # FastMCP negotiates the newest revision it can: the `initialize`
        # handshake, or `server/discover` from 2026-07-28 on.
        out["protocol_version"] = client.protocol_version
        out["server"] = client.server_info.name
        out["ping"] = await client.ping()
        tools = await client.list_tools()
        schemas = {t.name: t.output_schema for t in tools}
        out["tools"] = {
            t.name: {"input_schema": t.input_schema, "output_schema": t.output_schema}
            for t in tools
        }
        results = []
        for call in calls:
            r = await client.call_tool(call["tool"], call["args"], raise_on_error=False)
            texts = [c.text for c in r.content if getattr(c, "type", None) == "text"]
            schema_error = None
            try:
                jsonschema.validate(r.structured_content, schemas[call["tool"]])
            except jsonschema.ValidationError as e:
                schema_error = e.message
            results.append(
                {
                    "tool": call["tool"],
                    "is_error": bool(r.is_error),
                    "text": "\n".join(texts),
                    "structured": r.structured_content,
                    "data_parsed": r.data is not None,
                    "schema_error": schema_error,
                }
            )
        out["calls"] = results
    sys.stdout.write(json.dumps(out) + "\n")


if __name__ == "__main__":
    anyio.run(main)
