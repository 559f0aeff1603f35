"""The official Python MCP SDK (`mcp`) against a `command` agent turn's
streamable HTTP endpoint: berth's conformance check for `{mcp_config}`.

Usage: python mcp_http_client.py MCP_CONFIG COMMAND

Reads the server `berth` from MCP_CONFIG (Claude Code's `--mcp-config`
format), connects with the SDK's streamable HTTP client and the config's
headers, initializes, lists the tools, calls run_command with COMMAND, and
prints one JSON line with what it saw.
"""

import json
import sys

import anyio
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client


async def main():
    config_file, command = sys.argv[1], sys.argv[2]
    with open(config_file, encoding="utf-8") as f:
        server = json.load(f)["mcpServers"]["berth"]
    async with create_mcp_http_client(headers=server["headers"]) as http:
        async with streamable_http_client(server["url"], http_client=http) as (read, write):
            async with ClientSession(read, write) as session:
                init = await session.initialize()
                tools = await session.list_tools()
                result = await session.call_tool("run_command", {"command": command})
                texts = [c.text for c in result.content if getattr(c, "type", None) == "text"]
                print(
                    json.dumps(
                        {
                            "server": init.server_info.name,
                            "protocol_version": init.protocol_version,
                            "tools": sorted(t.name for t in tools.tools),
                            "is_error": bool(result.is_error),
                            "text": "\n".join(texts),
                            "structured": result.structured_content,
                        }
                    ),
                    flush=True,
                )


if __name__ == "__main__":
    anyio.run(main)
