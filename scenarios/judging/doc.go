// Package judging holds bootproof's assertions and verdict: pure
// functions of a case's Facts (what the scenario claims and what the
// engine did) and a Record (what the observer saw), with no client, no
// clock and no I/O. The scenario engine (package scenarios) drives the
// timeline, observes the cluster and copies both into these types; every
// judgement here can be tested on values built by hand, and a judgement
// reads the expectation only in Decide, after everything was observed.
//
// The import boundary is enforced: depguard allows this package only the
// standard library's pure packages and bootproof's nodeapi leaf, and
// TestImportsNoWorld checks its dependency graph for client-go and I/O.
package judging
