"""A fastmcp server over stdio whose ``fetch`` asks the host for input first (an
``InputRequiredResult``, 2026-07-28 only), naming its token ``$API_TOKEN``; answered, it
fails saying so. For ``--handshake``: a modern connection hears the request, a legacy one
(``initialize``) gets a result the client cannot read."""

import os

import fastmcp
import mcp.types as types
from fastmcp.exceptions import ToolError

server = fastmcp.FastMCP("asking")
TOKEN = os.environ.get("API_TOKEN", "")


@server.tool
async def fetch(item: str, ctx: fastmcp.Context) -> types.InputRequiredResult:
    """Fetch an item."""
    if ctx.input_responses:
        raise ToolError(f"could not fetch {item}: the user declined")
    ask = types.ElicitRequestFormParams(
        message=f"The API refused Authorization: Bearer {TOKEN}; retry?",
        requested_schema={"type": "object", "properties": {}},
    )
    return types.InputRequiredResult(input_requests={"retry": types.ElicitRequest(params=ask)})


if __name__ == "__main__":
    server.run(show_banner=False)
