"""A raw HTTPS client of a kubeconfig's current context (token or client certificate), for the tools
that compare servers byte for byte without kubectl in between: tests/fidelity/fuzz.py and
fuzz/oracle_compare.py. Credentials are never printed."""
import base64
import http.client
import os
import re
import ssl
import tempfile

import yaml


class Server:
    """One kept-alive connection to the server of `kubeconfig`'s current context."""

    def __init__(self, kubeconfig):
        cfg = yaml.safe_load(open(kubeconfig))
        ctx = next(c["context"] for c in cfg["contexts"] if c["name"] == cfg["current-context"])
        cluster = next(c["cluster"] for c in cfg["clusters"] if c["name"] == ctx["cluster"])
        user = next(u["user"] for u in cfg["users"] if u["name"] == ctx["user"])
        m = re.match(r"https://([^:/]+):(\d+)", cluster["server"])
        self.host, self.port = m.group(1), int(m.group(2))
        self.tls = ssl.create_default_context(cadata=base64.b64decode(cluster["certificate-authority-data"]).decode())
        self.headers = {"Accept": "application/json"}
        if "token" in user:
            self.headers["Authorization"] = "Bearer " + user["token"]
        else:
            with tempfile.TemporaryDirectory() as d:
                cert, key = os.path.join(d, "c"), os.path.join(d, "k")
                for path, field in ((cert, "client-certificate-data"), (key, "client-key-data")):
                    with open(path, "wb") as f:
                        f.write(base64.b64decode(user[field]))
                self.tls.load_cert_chain(cert, key)
        self.conn = None

    def request(self, method, path, body=None, content_type="application/json"):
        """(status, headers, body bytes); a dropped keep-alive connection is made again once."""
        headers = dict(self.headers, **{"Content-Type": content_type or "application/json"})
        for attempt in range(2):
            if self.conn is None:
                self.conn = http.client.HTTPSConnection(self.host, self.port, context=self.tls, timeout=30)
            try:
                self.conn.request(method, path, body=body or None, headers=headers)
                r = self.conn.getresponse()
                return r.status, r.getheaders(), r.read()
            except (http.client.HTTPException, OSError):
                self.conn.close()
                self.conn = None
                if attempt:
                    raise
