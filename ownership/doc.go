// Package ownership names what a bootproof process leaves on its host so
// that, when it is SIGKILLed and no cleanup runs, a later run or
// 'bootproof cleanup' can tell what belongs to a process that is gone:
// every temporary directory is bootproof-<kind>-<pid>-<random> (TempDir,
// SweepTempDirs), and an Owner (a pid and the process's start time,
// "pid/start") marks what outlives a directory, such as a VM's
// description or a kind cluster's name.
//
// It is a leaf of the standard library: the simulated nodes (package
// fakes, whose control-socket directory is such a directory) and the
// harness both use it, so they name things one way.
package ownership
