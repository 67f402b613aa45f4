"""Webhook POSTs under the fetch rules: the hub must not become a way into private networks.

The URL is checked before each request and the address each connection reaches is checked
again (sources.fetch.guard's rules, BLACKWIDOW_FETCH_ALLOW as for feeds); redirects are not
followed and the answer's body is not read.
"""

from __future__ import annotations

import requests

from blackwidow.alerts.signing import SIGNATURE_HEADER, signature
from sources.fetch.errors import FetchError
from sources.fetch.fetcher import USER_AGENT
from sources.fetch.guard import check_url, peer_checked_adapter, peer_refusal

SEND_TIMEOUT = 10.0  # seconds for connecting and for the answer's status line


class SendFailed(Exception):
    """No answer, or a refused URL; str() is a short reason kept as the delivery's last error."""


class WebhookSender:
    def __init__(self, allow_hosts: frozenset[str], timeout: float = SEND_TIMEOUT) -> None:
        self._allow_hosts = allow_hosts
        self._timeout = timeout
        self._session = requests.Session()
        self._session.trust_env = False  # no proxies from the environment: the rules apply here
        adapter = peer_checked_adapter(peer_refusal(allow_hosts))
        self._session.mount("http://", adapter)
        self._session.mount("https://", adapter)

    def send(self, url: str, secret: str, body: str, event_type: str) -> int:
        """POST a signed body; the receiver's HTTP status, or SendFailed."""
        raw = body.encode("utf-8")
        headers = {
            "Content-Type": "application/json",
            "User-Agent": USER_AGENT,
            "X-Blackwidow-Event": event_type,
            SIGNATURE_HEADER: signature(secret, raw),
        }
        try:
            check_url(url, self._allow_hosts)
            response = self._session.post(
                url,
                data=raw,
                headers=headers,
                timeout=self._timeout,
                allow_redirects=False,
                stream=True,  # the body is never read: a receiver cannot make us hold one
            )
        except FetchError as error:
            raise SendFailed(str(error)) from None
        except requests.RequestException as error:
            raise SendFailed(f"connection failed ({type(error).__name__})") from None
        response.close()
        return response.status_code
