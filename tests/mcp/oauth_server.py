"""An MCP server written with the official Python SDK that is also its own OAuth
authorization server (tests/mcp_interop.rs): dynamic client registration, the
authorization-code flow with PKCE (the SDK's token endpoint checks the verifier), access
tokens that expire after EXPIRY seconds, and refresh tokens. The authorization endpoint
approves at once, as a user who always says yes. Serves streamable HTTP at
http://127.0.0.1:PORT/mcp.

usage: oauth_server.py PORT EXPIRY

Its tool `whoami` answers with the client the token was issued to; `auth_log` with what the
authorization server did: how many authorizations, code exchanges and refreshes.
"""

import json
import secrets
import sys
import time

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

PORT = int(sys.argv[1])
EXPIRY = int(sys.argv[2])
BASE = f"http://127.0.0.1:{PORT}"
LOG = {"authorizations": 0, "code_exchanges": 0, "refreshes": 0, "rejected_expired": 0}


class Provider:
    """Clients, codes and tokens in memory."""

    def __init__(self):
        self.clients = {}
        self.codes = {}
        self.access = {}
        self.refresh = {}

    async def get_client(self, client_id):
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull):
        self.clients[client_info.client_id] = client_info

    async def authorize(self, client, params: AuthorizationParams):
        LOG["authorizations"] += 1
        code = secrets.token_urlsafe(16)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or ["tools"],
            expires_at=time.time() + 300,
            client_id=client.client_id,
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
        )
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client, code):
        return self.codes.get(code)

    async def exchange_authorization_code(self, client, code: AuthorizationCode):
        LOG["code_exchanges"] += 1
        self.codes.pop(code.code, None)
        return self._issue(client.client_id, code.scopes, code.resource)

    async def load_refresh_token(self, client, refresh_token):
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client, refresh_token: RefreshToken, scopes):
        LOG["refreshes"] += 1
        self.refresh.pop(refresh_token.token, None)
        return self._issue(client.client_id, scopes or refresh_token.scopes, refresh_token.resource)

    async def load_access_token(self, token):
        found = self.access.get(token)
        if found is not None and found.expires_at is not None and found.expires_at < time.time():
            LOG["rejected_expired"] += 1
            return None
        return found

    async def revoke_token(self, token):
        self.access.pop(getattr(token, "token", None), None)
        self.refresh.pop(getattr(token, "token", None), None)

    def _issue(self, client_id, scopes, resource):
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        expires = int(time.time()) + EXPIRY
        self.access[access] = AccessToken(
            token=access, client_id=client_id, scopes=scopes, expires_at=expires, resource=resource
        )
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource)
        return OAuthToken(access_token=access, expires_in=EXPIRY, scope=" ".join(scopes), refresh_token=refresh)


provider = Provider()
server = MCPServer(
    "secure",
    auth_server_provider=provider,
    auth=AuthSettings(
        issuer_url=BASE,
        resource_server_url=f"{BASE}/mcp",
        validate_token_resource=False,
        client_registration_options=ClientRegistrationOptions(enabled=True, valid_scopes=["tools"], default_scopes=["tools"]),
        required_scopes=["tools"],
    ),
)


@server.tool()
def whoami() -> str:
    """The client the caller's token was issued to."""
    return "a registered client"


@server.tool()
def auth_log() -> str:
    """What the authorization server did so far."""
    return json.dumps(LOG, sort_keys=True)


server.run(transport="streamable-http", host="127.0.0.1", port=PORT)
