"""A real MCP server for the tests, written with the mcp SDK's server API (MCPServer).

Run as ``python mcp_server.py stdio`` or ``python mcp_server.py http PORT`` (streamable
HTTP on 127.0.0.1). Its tools: ``add``, ``echo-text`` (a name with a dash), ``where``
(cwd and a variable), ``write_note`` (writes in its cwd), ``fail`` (an error result),
``crash`` (the process dies mid-call), ``hang`` (never answers), ``shout`` (a huge result).
"""

from __future__ import annotations

import os
import sys
import time

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

app = MCPServer("gg-test", log_level="CRITICAL")


@app.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@app.tool(name="echo-text")
def echo_text(text: str) -> str:
    """Echo the text back, prefixed."""
    return f"echo: {text}"


@app.tool()
def where() -> str:
    """Say where the server runs and what GG_MCP_TOKEN and HOME it sees."""
    token = os.environ.get("GG_MCP_TOKEN", "<unset>")
    return f"cwd={os.getcwd()} token={token} secret={os.environ.get('GG_MCP_SECRET', '<unset>')}"


@app.tool()
def write_note(name: str, text: str) -> str:
    """Write a file in the server's working directory."""
    with open(name, "w") as f:
        f.write(text)
    return f"wrote {name}"


@app.tool()
def fail(reason: str) -> str:
    """Always fail with the reason."""
    raise ToolError(f"refused: {reason}")


@app.tool()
def crash() -> str:
    """Die in the middle of the call."""
    print("about to crash", file=sys.stderr, flush=True)
    os._exit(7)


@app.tool()
def hang() -> str:
    """Never answer."""
    time.sleep(3600)
    return "never"


@app.tool()
def shout(n: int) -> str:
    """Return n characters."""
    return "A" * n


if __name__ == "__main__":
    if sys.argv[1] == "stdio":
        app.run()
    else:
        import uvicorn

        uvicorn.run(
            app.streamable_http_app(stateless_http=True, json_response=True),
            host="127.0.0.1",
            port=int(sys.argv[2]),
            log_level="warning",
        )
