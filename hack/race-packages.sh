#!/usr/bin/env bash
# Prints the packages whose tests need no control plane (their tests import
# neither harness/controlplane nor harness/cluster): 'make test' runs these
# with the race detector. The others start etcd and kube-apiserver, which
# the race detector would slow several-fold without looking at their code.
set -euo pipefail
go list -f '{{.ImportPath}} {{join .TestImports " "}} {{join .XTestImports " "}}' ./... |
  awk '{ cp = 0; for (i = 2; i <= NF; i++) if ($i ~ /\/harness\/(controlplane|cluster)(\/cptest)?$/) cp = 1; if (!cp) print $1 }'
