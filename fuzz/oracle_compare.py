#!/usr/bin/env python3
"""Sends a sample of the API fuzzer's request sequences to a REAL kube-apiserver and compares the
status codes with the embedded server's.

  fuzz/oracle_compare.py --fuzzer build/asan/fuzz/fuzz_api --kubeconfig ~/.cache/k8s-oracle/kubeconfig \\
      [--sample 200] CORPUS_DIR...

The fuzzer runs each sampled input once with GPUPOOL_FUZZ_TRACE set, which records every request
(method, path, content type, body) and the embedded server's status. Each input's sequence is then
sent, in order, to the real server in a namespace of its own (fz-<n>, in place of "default"); the
cluster-scoped objects the fuzzer touches (nodes and storage classes a, b, c-1) are deleted before
each sequence. Printed: how many requests got the same status code, and each kind of disagreement
(method, resource, embedded code -> real code) with a count and one example.

Some disagreements are expected and are not the embedded server's errors: the embedded fuzzer runs
its controllers synchronously and advances a manual clock between requests, while the real
controllers act a moment later (a Deployment deleted with propagation Foreground is still there
for the next request on the real server; a garbage collector has not yet removed a ReplicaSet).
"""
import argparse
import collections
import hashlib
import json
import os
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "fidelity"))
import raw_client  # noqa: E402

CLUSTER_SCOPED = ["/api/v1/nodes/", "/apis/storage.k8s.io/v1/storageclasses/"]
NAMES = ["a", "b", "c-1"]


class Server(raw_client.Server):
    def call(self, method, path, body=b"", content_type="application/json"):
        status, _, data = self.request(method, path, body if method in ("POST", "PUT", "PATCH", "DELETE") else None,
                                       content_type)
        return status, data


def sample(dirs, n):
    files = sorted(os.path.join(d, f) for d in dirs for f in os.listdir(d) if os.path.isfile(os.path.join(d, f)))
    # A deterministic spread over the corpus: ordered by a hash of the name.
    files.sort(key=lambda f: hashlib.sha1(os.path.basename(f).encode()).hexdigest())
    return files[:n]


def traces(fuzzer, files):
    with tempfile.NamedTemporaryFile(prefix="fuzz-trace-", suffix=".jsonl", delete=False) as t:
        path = t.name
    env = dict(os.environ, GPUPOOL_FUZZ_TRACE=path, ASAN_OPTIONS="detect_leaks=0")
    subprocess.run([fuzzer] + files, env=env, check=True, capture_output=True)
    seqs, cur = [], []
    for line in open(path, encoding="utf-8", errors="surrogateescape"):
        rec = json.loads(line)
        if rec.get("end"):
            seqs.append(cur)
            cur = []
        else:
            cur.append(rec)
    os.unlink(path)
    return seqs


def resource_of(path):
    parts = path.split("?")[0].strip("/").split("/")
    if "namespaces" in parts and len(parts) > parts.index("namespaces") + 2:
        return parts[parts.index("namespaces") + 2]
    return parts[3] if parts[0] == "apis" and len(parts) > 3 else parts[2] if len(parts) > 2 else path


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--fuzzer", required=True)
    ap.add_argument("--kubeconfig", required=True)
    ap.add_argument("--sample", type=int, default=200)
    ap.add_argument("corpus", nargs="+")
    o = ap.parse_args()
    server = Server(o.kubeconfig)
    files = sample(o.corpus, o.sample)
    seqs = traces(o.fuzzer, files)
    same = total = 0
    kinds = collections.Counter()
    example = {}
    for i, seq in enumerate(seqs):
        ns = "fz-%d" % i
        for prefix in CLUSTER_SCOPED:
            for n in NAMES:
                server.call("DELETE", prefix + n + "?gracePeriodSeconds=0")
        server.call("POST", "/api/v1/namespaces", json.dumps({"metadata": {"name": ns}}).encode())
        for _ in range(100):  # pods need the namespace's default ServiceAccount
            if server.call("GET", "/api/v1/namespaces/%s/serviceaccounts/default" % ns)[0] == 200:
                break
            time.sleep(0.05)
        for rec in seq:
            path = rec["path"].replace("/namespaces/default/", "/namespaces/%s/" % ns)
            body = rec["body"].replace('"namespace":"default"', '"namespace":"%s"' % ns).encode("utf-8", "surrogateescape")
            code, answer = server.call(rec["method"], path, body, rec["content_type"])
            total += 1
            if code == rec["status"]:
                same += 1
                continue
            key = (rec["method"], resource_of(rec["path"]), rec["status"], code)
            kinds[key] += 1
            if key not in example:
                try:
                    msg = json.loads(answer).get("message", "")[:300]
                except ValueError:
                    msg = answer[:300].decode(errors="replace")
                example[key] = (rec["path"], rec["content_type"], rec["body"][:300], msg)
        server.call("DELETE", "/api/v1/namespaces/" + ns)
    print("oracle_compare: %d inputs, %d requests, %d with the same status code (%.1f%%)"
          % (len(seqs), total, same, 100.0 * same / max(total, 1)))
    for key, n in kinds.most_common():
        path, ct, body, msg = example[key]
        print("  %-6s %-22s embedded %d, real %d: %d×  e.g. %s %s %s\n      real: %s" % (key + (n, path, ct, body, msg)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
