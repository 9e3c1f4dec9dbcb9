// Package faults is the fault-injection suite ('make test-faults'): it
// breaks the harness's own world while cases run on the embedded cluster
// (SIGKILL of kube-apiserver, kube-controller-manager or etcd, which the
// plane restarts; a forced watch expiry; a subject crash; a reboot nobody
// asked for; SIGINT of the run) and checks that each ends as an error or
// not run, never as a pass or a fail. It writes the table fault x subject
// -> verdict to _output/faults/.
package faults
