#!/usr/bin/python3
"""Command latency on a local server (issue 18 item 2): `gpupool get` and `gpupool submit` against
kubectl on the same embedded server, interleaved in one run, and where gpupool's time goes.

  bench_cmd.py <gpupool binary> [N]      (N runs of each command; default 21)

It starts its own server (`gpupool cluster serve --fresh`: the seed topology, HTTPS on 127.0.0.1),
then for each of N rounds runs, one after the other:
  gpupool get NAME                  kubectl get deployment NAME          (the same Deployment)
  gpupool submit deployment ...     kubectl apply -f <the same Deployment as JSON>  (each creates one)
(in even rounds gpupool first, in odd rounds kubectl first: counterbalanced, since a command run
right after kubectl finds the CPU caches cold)
gpupool runs with its cache directory warm (discovery documents and the TLS session of the previous
run, as a user's second command finds them) and, as a second figure, cold (an empty cache
directory each time: discovery fetched, full TLS handshake). kubectl keeps its own discovery cache
(~/.kube/cache, or $KUBECACHEDIR) warm, as it does for its users.

Figures: median wall time (perf_counter around the child) and median CPU time of the child
(wait4's rusage: user + system), then the breakdown of gpupool's warm runs from GPUPOOL_TIMING=1
and --loglevel debug: CPU spent before main (exec, dynamic loader, static initialisers), the
kubeconfig, the new connection's TCP and TLS times (and whether TLS resumed), the requests (how
many, how many were discovery, in how many round trips: pipelined GETs share one), and the rest. `RESULT` lines end the output.
"""
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

KUBECTL = "kubectl"


def run(argv, env, stdin=None):
    """(wall seconds, child CPU seconds, stdout, stderr) of one run; fails loudly on an error."""
    t0 = time.perf_counter()
    p = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=stdin)
    out, err = p.communicate()
    wall = time.perf_counter() - t0
    # communicate() reaped it: its rusage is the difference of RUSAGE_CHILDREN.
    if p.returncode != 0:
        sys.exit(f"bench_cmd: {' '.join(argv)} failed ({p.returncode}): {err.decode()[-2000:]}")
    return wall, out.decode(), err.decode()


def run_cpu(argv, env):
    import resource
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall, out, err = run(argv, env)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, out, err


def start_server(gpupool, work):
    kc_dir = os.path.join(work, "kc")
    env = dict(os.environ, GPUPOOL_STATE_DIR=os.path.join(work, "state"))
    p = subprocess.Popen([gpupool, "cluster", "serve", "--fresh", "--kubeconfig-dir", kc_dir], env=env,
                         stdout=subprocess.PIPE, stdin=subprocess.DEVNULL)
    banner = b""
    while b"press Ctrl-C to stop" not in banner:
        line = p.stdout.readline()
        if not line:
            sys.exit("bench_cmd: the embedded server did not start")
        banner += line
    return p, os.path.join(kc_dir, "admin.kubeconfig")


def deployment(name):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default", "labels": {"app": name}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "main", "image": "busybox",
                                                           "command": ["sleep", "1"],
                                                           "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}}}}


def breakdown(err):
    """The figures of one GPUPOOL_TIMING=1 --loglevel debug run."""
    b = {"requests": 0, "round_trips": 0, "discovery": 0, "request_ms": 0.0, "tcp_ms": 0.0, "tls_ms": 0.0,
         "resumed": 0}
    for line in err.splitlines():
        m = re.match(r"timing: cpu-before-main ([\d.]+) ms, cpu-total ([\d.]+) ms, wall-in-main ([\d.]+) ms", line)
        if m:
            b["cpu_before_main"], b["cpu_total"], b["wall_in_main"] = map(float, m.groups())
        m = re.match(r"debug: kubeconfig read, client ready: ([\d.]+) ms", line)
        if m:
            b["kubeconfig_ms"] = float(m.group(1))
        m = re.match(r"debug: (GET|POST|PUT|PATCH|DELETE) (\S+) -> \d+ \(([\d.]+) ms(.*)\)$", line)
        if m:
            b["requests"] += 1
            # Pipelined requests (", pipelined k/n") share one round trip: counted at k = 1.
            p = re.search(r"pipelined (\d+)/\d+", m.group(4))
            if not p or p.group(1) == "1":
                b["round_trips"] += 1
            path = m.group(2).split("?")[0]
            if path in ("/api", "/apis") or re.fullmatch(r"/api/v1|/apis/[^/]+/[^/]+", path):
                b["discovery"] += 1
            b["request_ms"] += float(m.group(3))
            c = re.search(r"TCP ([\d.]+) ms, TLS ([\d.]+) ms(?: \((\w+)\))?", m.group(4))
            if c:
                b["tcp_ms"], b["tls_ms"] = float(c.group(1)), float(c.group(2))
                b["resumed"] = 1 if c.group(3) == "resumed" else 0
    return b


def main(a):
    if not a:
        sys.exit(__doc__)
    gpupool, n = os.path.abspath(a[0]), int(a[1]) if len(a) > 1 else 21
    work = tempfile.mkdtemp(prefix="bench_cmd.")
    server, kubeconfig = start_server(gpupool, work)
    try:
        warm = os.path.join(work, "cache-warm")
        env = dict(os.environ, KUBECONFIG=kubeconfig, GPUPOOL_CACHE_DIR=warm)
        env.pop("GPUPOOL_TIMING", None)
        kenv = dict(os.environ, KUBECONFIG=kubeconfig, KUBECACHEDIR=os.path.join(work, "kube-cache"))
        name = "bench-cmd"
        run([gpupool, "submit", "deployment", "--name", name, "--image", "busybox", "--gpus", "1", "sleep 1"], env)
        run([KUBECTL, "get", "deployment", name], kenv)  # kubectl's discovery cache, as a user's second command
        jobs = os.path.join(work, "jobs")
        os.makedirs(jobs)
        fig = {k: ([], []) for k in ("gget", "kget", "gsubmit", "kapply", "gget_cold", "gsubmit_cold")}
        bd_get, bd_submit = [], []
        for i in range(n):
            def timed(key, argv, e):
                w, c, _, err = run_cpu(argv, e)
                fig[key][0].append(w)
                fig[key][1].append(c)
                return err
            job = os.path.join(jobs, f"k{i}.json")
            with open(job, "w") as f:
                json.dump(deployment(f"bench-k{i}"), f)
            # Counterbalanced: a command that follows kubectl (a 50 MB Go binary) finds the CPU
            # caches and TLB cold, one that follows gpupool warm, so which of the two goes first
            # alternates from round to round (before, gpupool get always followed gpupool and
            # gpupool submit always followed kubectl get).
            pairs = [(("gget", [gpupool, "get", name], env), ("kget", [KUBECTL, "get", "deployment", name], kenv)),
                     (("gsubmit", [gpupool, "submit", "deployment", "--name", f"bench-g{i}", "--image", "busybox",
                                   "--gpus", "1", "sleep 1"], env),
                      ("kapply", [KUBECTL, "apply", "-f", job], kenv))]
            for first, second in pairs:
                if i % 2:
                    first, second = second, first
                timed(*first)
                timed(*second)
            cold = dict(env, GPUPOOL_CACHE_DIR=os.path.join(work, f"cache-cold-{i}"))
            timed("gget_cold", [gpupool, "get", name], cold)
            timed("gsubmit_cold", [gpupool, "submit", "deployment", "--name", f"bench-c{i}", "--image", "busybox",
                                   "--gpus", "1", "sleep 1"], cold)
            # The breakdown, from separate runs (the debug lines cost a little themselves).
            t = dict(env, GPUPOOL_TIMING="1")
            bd_get.append(breakdown(run([gpupool, "--loglevel", "debug", "get", name], t)[2]))
            bd_submit.append(breakdown(run([gpupool, "--loglevel", "debug", "submit", "deployment", "--name",
                                            f"bench-t{i}", "--image", "busybox", "--gpus", "1", "sleep 1"], t)[2]))
        # Process start alone: `gpupool --version` (no kubeconfig, no connection) and /bin/true.
        ver = [run_cpu([gpupool, "--version"], env) for _ in range(n)]
        true = [run_cpu(["/bin/true"], env) for _ in range(n)]
    finally:
        server.terminate()  # `cluster serve` stops cleanly on SIGTERM
        server.wait()
        shutil.rmtree(work, ignore_errors=True)

    med = lambda xs: statistics.median(xs) * 1e3
    print(f"# command latency: {n} runs each, interleaved; load average {open('/proc/loadavg').read().split()[0]}")
    print(f"{'command':52s} {'wall median':>12s} {'CPU median':>11s}")
    labels = {"gget": "gpupool get (warm cache)", "gget_cold": "gpupool get (cold: no cache)",
              "kget": "kubectl get deployment", "gsubmit": "gpupool submit deployment (warm cache)",
              "gsubmit_cold": "gpupool submit deployment (cold: no cache)", "kapply": "kubectl apply -f (creates)"}
    for k in ("gget", "gget_cold", "kget", "gsubmit", "gsubmit_cold", "kapply"):
        print(f"{labels[k]:52s} {med(fig[k][0]):9.2f} ms {med(fig[k][1]):8.2f} ms")
    print(f"{'gpupool --version (process start only)':52s} {med([v[0] for v in ver]):9.2f} ms "
          f"{med([v[1] for v in ver]):8.2f} ms")
    print(f"{'/bin/true':52s} {med([v[0] for v in true]):9.2f} ms {med([v[1] for v in true]):8.2f} ms")
    for what, g, k in (("get", "gget", "kget"), ("submit", "gsubmit", "kapply")):
        rw = statistics.median(fig[k][0]) / statistics.median(fig[g][0])
        rc = statistics.median(fig[k][1]) / statistics.median(fig[g][1])
        print(f"kubectl / gpupool {what}: {rw:.1f}x wall, {rc:.1f}x CPU   (targets: gpupool <= 10 ms median, >= 10x)")
    for label, bd in (("get", bd_get), ("submit", bd_submit)):
        m = lambda key: statistics.median(b.get(key, 0.0) for b in bd)
        rest = m("cpu_total") - m("cpu_before_main")
        print(f"where `gpupool {label}` goes (warm cache, median of {len(bd)} runs):")
        print(f"  CPU before main (exec, loader, static init)  {m('cpu_before_main'):7.2f} ms CPU")
        print(f"  CPU in main                                  {rest:7.2f} ms CPU  (wall in main {m('wall_in_main'):.2f} ms)")
        print(f"    kubeconfig read + client ready             {m('kubeconfig_ms'):7.2f} ms wall")
        print(f"    new connection: TCP {m('tcp_ms'):.2f} ms, TLS {m('tls_ms'):.2f} ms wall; "
              f"resumed in {sum(b['resumed'] for b in bd)}/{len(bd)} runs")
        print(f"    requests: {m('requests'):.0f} ({m('discovery'):.0f} discovery) in {m('round_trips'):.0f} round trips "
              f"(pipelined GETs share one)")
        print(f"RESULT cmd_breakdown_{label} {m('cpu_before_main'):.3f} {rest:.3f} {m('kubeconfig_ms'):.3f} "
              f"{m('tls_ms'):.3f} {m('requests'):.0f} {m('discovery'):.0f} {m('round_trips'):.0f}")
    print(f"RESULT cmd_get_ms {med(fig['gget'][0]):.2f} {med(fig['kget'][0]):.2f} {med(fig['gget_cold'][0]):.2f} "
          f"{med(fig['gget'][1]):.2f} {med(fig['kget'][1]):.2f}")
    print(f"RESULT cmd_submit_ms {med(fig['gsubmit'][0]):.2f} {med(fig['kapply'][0]):.2f} "
          f"{med(fig['gsubmit_cold'][0]):.2f} {med(fig['gsubmit'][1]):.2f} {med(fig['kapply'][1]):.2f}")


if __name__ == "__main__":
    main(sys.argv[1:])
