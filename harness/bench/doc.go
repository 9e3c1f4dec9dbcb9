// Package bench holds what bootproof's benchmarks measure with: a process's
// CPU time and memory from /proc (Process), and an Observer that watches a
// fleet's Nodes and Leases from the API (false NotReady, lease-renewal
// lateness). BenchmarkFleetVsKWOK ('make bench-fleet') runs bootproof's
// simulated fleet and KWOK side by side with them; BenchmarkFleetScale in
// fakes uses them too.
package bench
