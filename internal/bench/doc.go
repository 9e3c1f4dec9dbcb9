// Package bench holds what bootproof's benchmarks measure with: a process's
// CPU time and memory from /proc (Process), and an Observer that watches a
// fleet's Nodes and Leases from the API (false NotReady, lease-renewal
// lateness). BenchmarkFleetVsKWOK ('make bench-fleet') runs bootproof's
// simulated fleet and KWOK side by side with them; BenchmarkFleetMax
// ('make bench-fleet-max') ramps bootproof's fleet alone until the machine
// no longer holds it (Limits), reading latency histograms from
// kube-apiserver's /metrics (ParseHistogram); BenchmarkFleetScale in fakes
// uses them too.
package bench
