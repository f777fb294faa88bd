"""Drives an MCP server with the official Python SDK (`mcp` on PyPI), so the
servers are tested by a client nobody here wrote.

Reads a JSON plan on stdin:
  {"server": {"url": "http://...", "bearer": "..."} | {"command": "...", "args": [...], "env": {...}},
   "mode": "legacy" | "auto",
   "calls": [{"tool": "name", "arguments": {...}}, ...]}
Prints one JSON object: the server's name, the listed tools (name and input
schema), and for each call whether it was an error and its content blocks.
"""

import json
import sys

import anyio
import httpx2
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client


def transport(server):
    if "url" in server:
        if server.get("bearer"):
            client = httpx2.AsyncClient(headers={"Authorization": "Bearer " + server["bearer"]}, timeout=60)
            return streamable_http_client(server["url"], http_client=client)
        return server["url"]
    return StdioServerParameters(command=server["command"], args=server.get("args", []), env=server.get("env"))


async def main():
    plan = json.load(sys.stdin)
    out = {"tools": [], "calls": []}
    async with Client(transport(plan["server"]), mode=plan.get("mode", "auto")) as client:
        listed = await client.list_tools()
        out["tools"] = [{"name": t.name, "input_schema": t.input_schema} for t in listed.tools]
        for call in plan.get("calls", []):
            try:
                result = await client.call_tool(call["tool"], call.get("arguments", {}))
                blocks = [getattr(b, "text", None) for b in result.content]
                out["calls"].append({"tool": call["tool"], "is_error": bool(result.is_error), "blocks": blocks})
            except Exception as e:  # a JSON-RPC error: recorded, not fatal
                out["calls"].append({"tool": call["tool"], "is_error": True, "exception": repr(e), "blocks": []})
    print(json.dumps(out))


anyio.run(main)
