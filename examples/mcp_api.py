"""A small HTTP API, described by an OpenAPI document: what the example MCP servers turn
into agent tools (``FastMCP.from_openapi``).

Two operations of a deployments service, the same as the example gateways':

===================  ==========================================  =========================
operationId (tool)   request                                     answer
===================  ==========================================  =========================
create_deployment    ``POST /v1/deployments`` ``{"repo", ...}``  201 ``{"id", "repo", ...}``
get_deployment       ``GET /v1/deployments/{deployment_id}``     200 ``{"id", "status"}``
===================  ==========================================  =========================

``SPEC`` is the document; ``DeploymentsAPI`` a working in-memory implementation of it (an
``httpx2`` transport handler), for a healthy call in tests. The API takes a bearer token,
an API key header or query parameter, or Basic credentials: the servers pass on whatever
they are configured with.
"""

from __future__ import annotations

import copy
import functools
import json
import os
import re
import ssl
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx2

__all__ = [
    "SPEC", "TOOLS", "ApiSettings", "DeploymentsAPI", "SettingsError", "closes", "spec",
    "tls_context",
]  # fmt: skip

#: the tools the document turns into (one per operation), with a valid argument set each
TOOLS: dict[str, dict[str, Any]] = {
    "create_deployment": {"repo": "web"},
    "get_deployment": {"deployment_id": "dep_7"},
}

SPEC: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "Deployments API", "version": "1.0.0"},
    "servers": [{"url": "https://api.deployments.example"}],
    "components": {
        "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        "schemas": {
            "Deployment": {
                "type": "object",
                "properties": {
                    "id": {"type": "string"},
                    "repo": {"type": "string"},
                    "status": {"type": "string", "enum": ["queued", "running", "done"]},
                },
                "required": ["id", "status"],
            },
        },
    },
    "security": [{"bearer": []}],
    "paths": {
        "/v1/deployments": {
            "post": {
                "operationId": "create_deployment",
                "summary": "Start a deployment of a repository",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {
                                    "repo": {"type": "string", "pattern": "^[a-z0-9][a-z0-9-]*$"},
                                    "ref": {"type": "string"},
                                    "replicas": {"type": "integer", "minimum": 1},
                                    "source_url": {"type": "string"},
                                    "options": {"type": "object"},
                                },
                                "required": ["repo"],
                            }
                        }
                    },
                },
                "responses": {
                    "201": {
                        "description": "The deployment was queued",
                        "content": {
                            "application/json": {
                                "schema": {"$ref": "#/components/schemas/Deployment"}
                            }
                        },
                    }
                },
            }
        },
        "/v1/deployments/{deployment_id}": {
            "get": {
                "operationId": "get_deployment",
                "summary": "Read a deployment's status",
                "parameters": [
                    {
                        "name": "deployment_id",
                        "in": "path",
                        "required": True,
                        "schema": {"type": "string"},
                    }
                ],
                "responses": {
                    "200": {
                        "description": "The deployment",
                        "content": {
                            "application/json": {
                                "schema": {"$ref": "#/components/schemas/Deployment"}
                            }
                        },
                    }
                },
            }
        },
    },
}


def spec() -> dict[str, Any]:
    """A copy of ``SPEC`` (fastmcp keeps references into the document it is given)."""
    return copy.deepcopy(SPEC)


def closes(
    client: httpx2.AsyncClient,
) -> Callable[[Any], AbstractAsyncContextManager[dict[str, Any]]]:
    """A server lifespan that closes the server's HTTP client when the server stops
    (``from_openapi`` closes only a client it made itself)."""

    @asynccontextmanager
    async def lifespan(server: Any) -> AsyncIterator[dict[str, Any]]:
        try:
            yield {}
        finally:
            await client.aclose()

    return lifespan


_DEPLOYMENT = re.compile(r"^/v1/deployments/(dep_[a-z0-9]{1,32})$")


class DeploymentsAPI:
    """The API itself, in memory: ``httpx2.MockTransport(DeploymentsAPI())``. It answers
    401 to a request without credentials; ``seen`` keeps each request's method and path."""

    def __init__(self) -> None:
        self.seen: list[str] = []
        self._deployments: dict[str, dict[str, Any]] = {
            "dep_7": {"id": "dep_7", "repo": "web", "status": "running"}
        }

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        self.seen.append(f"{request.method} {request.url.path}")
        credentialed = (
            "authorization" in request.headers
            or "x-api-key" in request.headers
            or "api_key" in request.url.params
        )
        if not credentialed:
            return httpx2.Response(401, json={"error": "unauthorized"})
        if request.method == "POST" and request.url.path == "/v1/deployments":
            body = json.loads(request.content or b"{}")
            deployment = {
                "id": f"dep_{len(self._deployments) + 1}",
                "repo": str(body.get("repo", "")),
                "status": "queued",
            }
            self._deployments[deployment["id"]] = deployment
            return httpx2.Response(201, json=deployment)
        match = _DEPLOYMENT.match(request.url.path)
        if request.method == "GET" and match and match.group(1) in self._deployments:
            return httpx2.Response(200, json=self._deployments[match.group(1)])
        return httpx2.Response(404, json={"error": "not found"})


# --- how the servers are configured ----------------------------------------------------------


class SettingsError(ValueError):
    """A setting that cannot be used; the message names the variable, never its value."""


@dataclass(frozen=True, repr=False)
class ApiSettings:
    """Where the API is and how to authenticate to it: what both example servers take,
    as constructor arguments or from the environment (``from_env``), the way MCP servers
    are configured in a client's ``mcpServers`` entry:

    ==================  ===============================================================
    ``API_URL``         the API's base URL (userinfo ``https://user:pass@host`` allowed)
    ``API_TOKEN``       a bearer token (``Authorization: Bearer ...``)
    ``API_HEADERS``     a JSON object of further request headers (an API key header...)
    ``API_QUERY``       a JSON object of query parameters sent with every request
    ``API_CA_FILE``     a PEM bundle to trust instead of the system's (``SSL_CERT_FILE``
                        works too)
    ``API_TIMEOUT``     the HTTP client timeout in seconds (default 10)
    ==================  ===============================================================
    """

    url: str
    token: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    query: Mapping[str, str] = field(default_factory=dict)
    verify: ssl.SSLContext | bool = True
    timeout: float = 10.0

    def __repr__(self) -> str:  # names what is set, never a value
        return (
            f"ApiSettings(token={'set' if self.token else 'unset'}, "
            f"headers={sorted(self.headers)}, query={sorted(self.query)})"
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> ApiSettings:
        env = os.environ if environ is None else environ
        url = env.get("API_URL", "")
        if not url:
            raise SettingsError("API_URL is not set")
        ca_file = env.get("API_CA_FILE")
        verify: ssl.SSLContext | bool = (
            ssl.create_default_context(cafile=ca_file) if ca_file else True
        )
        try:
            timeout = float(env.get("API_TIMEOUT", "10"))
        except ValueError:
            raise SettingsError("API_TIMEOUT is not a number of seconds") from None
        return cls(
            url=url,
            token=env.get("API_TOKEN") or None,
            headers=_json_object(env, "API_HEADERS"),
            query=_json_object(env, "API_QUERY"),
            verify=verify,
            timeout=timeout,
        )


def tls_context(verify: ssl.SSLContext | bool) -> ssl.SSLContext | bool:
    """``verify`` for an httpx2 transport; ``True`` becomes the system trust store (or
    ``SSL_CERT_FILE``), loaded once per process rather than per client."""
    if verify is True:
        return _system_trust(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    return verify


@functools.cache
def _system_trust(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    return httpx2.create_ssl_context(verify=True)


def _json_object(env: Mapping[str, str], name: str) -> dict[str, str]:
    text = env.get(name)
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        raise SettingsError(f"{name} is not valid JSON") from None
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise SettingsError(f"{name} must be a JSON object of strings")
    return value
