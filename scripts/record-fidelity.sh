#!/usr/bin/env bash
# Records the fidelity suite's answers (tests/fidelity/golden/) from a REAL control plane:
#   scripts/record-fidelity.sh [KUBECONFIG] [scenario...]
# KUBECONFIG defaults to the oracle's (../shared/oracle: build.sh, start.sh, sched-up.sh first).
# Review the diff of tests/fidelity/golden/ before committing: it is what Kubernetes answers now.
set -euo pipefail
cd "$(dirname "$0")/.."
kc=${1:-${K8S_ORACLE:-$HOME/.cache/k8s-oracle}/kubeconfig}; shift || true
[ -f "$kc" ] || { echo "record-fidelity: no kubeconfig at $kc (start ../shared/oracle first)" >&2; exit 2; }
exec /usr/bin/python3 tests/fidelity/fidelity.py --kubeconfig "$kc" --record "$@"
