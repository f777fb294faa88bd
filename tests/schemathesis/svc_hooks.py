"""Schemathesis hooks for svc (tests/it/schemathesis.rs runs them).

A `before_call` hook signs each request the way svc's RFC 9421 profile asks,
with the key the operation's security scheme names: requests' auth hook sees
the body exactly as sent, so `Content-Digest` and the signature cover those
bytes. A check asks that every refusal is an RFC 9457 problem with a `code`.
"""

import base64
import hashlib
import json
import os
import secrets
import time

import requests
import schemathesis
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

AUTHORITY = os.environ["SVC_ST_AUTHORITY"]


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _key(name: str):
    seed = base64.urlsafe_b64decode(os.environ[name] + "==")
    private = Ed25519PrivateKey.from_private_bytes(seed)
    public = private.public_key().public_bytes_raw()
    members = json.dumps({"crv": "Ed25519", "kty": "OKP", "x": _b64url(public)}, separators=(",", ":"))
    return private, _b64url(hashlib.sha256(members.encode()).digest())


KEYS = {
    "svc-retrieval": _key("SVC_ST_RETRIEVAL_SEED"),
    "svc-push": _key("SVC_ST_BUSINESS_SEED"),
    "svc-business-read": _key("SVC_ST_BUSINESS_SEED"),
}


class Signed(requests.auth.AuthBase):
    """Signs a prepared request: the body is final by then."""

    def __init__(self, tag: str):
        self.tag = tag

    def __call__(self, request):
        private, keyid = KEYS[self.tag]
        url = requests.utils.urlparse(request.url)
        body = request.body or b""
        if isinstance(body, str):
            body = body.encode()
        request.headers["Host"] = AUTHORITY
        lines = [
            f'"@method": {request.method}',
            f'"@authority": {AUTHORITY}',
            f'"@path": {url.path or "/"}',
        ]
        components = ['"@method"', '"@authority"', '"@path"']
        if url.query:
            lines.append(f'"@query": ?{url.query}')
            components.append('"@query"')
        if body:
            digest = "sha-256=:" + base64.b64encode(hashlib.sha256(body).digest()).decode() + ":"
            request.headers["Content-Digest"] = digest
            lines.append(f'"content-digest": {digest}')
            components.append('"content-digest"')
        created = int(time.time())
        params = (
            f'({" ".join(components)});created={created};expires={created + 60};'
            f'nonce="{_b64url(secrets.token_bytes(32))}";keyid="{keyid}";tag="{self.tag}"'
        )
        lines.append(f'"@signature-params": {params}')
        signature = private.sign("\n".join(lines).encode())
        request.headers["Signature-Input"] = f"sig1={params}"
        request.headers["Signature"] = f"sig1=:{base64.b64encode(signature).decode()}:"
        return request


@schemathesis.hook
def before_call(context, case, kwargs):
    security = case.operation.definition.raw.get("security") or []
    for requirement in security:
        for scheme in requirement:
            kwargs["auth"] = Signed(scheme)
            return
    case.headers = {**(case.headers or {}), "Host": AUTHORITY}


@schemathesis.check
def refusals_are_problems_with_a_code(ctx, response, case):
    """Every answer of 400 and above is an RFC 9457 problem naming its code."""
    if response.status_code < 400:
        return
    if case.path == "/readyz" and response.status_code == 503:
        return
    kind = response.headers.get("content-type", [""])
    kind = kind[0] if isinstance(kind, list) else kind
    if not kind.startswith("application/problem+json"):
        raise AssertionError(f"a {response.status_code} answered as {kind!r}, not application/problem+json")
    body = response.json()
    if not isinstance(body, dict) or not isinstance(body.get("code"), str) or not body["code"]:
        raise AssertionError(f"a {response.status_code} problem without a code: {body!r}")
