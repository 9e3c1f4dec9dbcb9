// Package fakes holds bootproof's simulated nodes: a lightweight kubelet
// over a Kernel interface, a simulated kernel, and a fleet that runs many
// kubelets in one process. The same kubelet runs inside VMs over the real
// kernel (package vmprovision). fakes never imports kmm: the two meet only
// through the Kubernetes API, as a kubelet and an operator do.
//
// # The lightweight kubelet
//
// As the API sees it, it behaves like a kubelet:
//
//   - it registers its Node (labels, capacity, addresses, nodeInfo with
//     bootID and kernelVersion), always labelled contract.SimulatedLabel
//     and tainted SimulatedTaints (NoSchedule and NoExecute), and takes
//     over an existing Node only if it carries that label (otherwise
//     Start fails with a *ForeignNodeError: a real node is never taken
//     over); it posts Ready, MemoryPressure,
//     DiskPressure and PIDPressure with the kubelet's lastHeartbeatTime /
//     lastTransitionTime semantics, by strategic-merge patches of status;
//   - it renews its Lease in kube-node-lease every Timing.RenewInterval
//     plus jitter, computes status every Timing.StatusInterval and posts it
//     when it changed (compared with the Node in the API, so a Ready=Unknown
//     set by the controller manager is overwritten at once) or when
//     Timing.ReportInterval passed;
//   - it runs the KMM worker pods bound to its node, which follow the
//     upstream worker contract (see below); any other pod bound there is
//     Failed at once (reason SimulatedNodeReason), never reported
//     Running; RejectWorkerPods makes it reject the next worker pods at
//     admission the same way (reason AdmissionRejectedReason, as after a
//     restart before a device plugin is back); a pod write the API server does not take (a status, the
//     final delete) is made again every Timing.StatusInterval until it
//     is taken, as the kubelet's status manager syncs again, so a pod
//     never stays Running for good because one request failed;
//   - a reboot stops heartbeats at once, kills running containers, halts
//     the kernel (every module is gone), and after the downtime boots with a
//     new boot ID; at startup it finds the Node's old bootID and records a
//     "Rebooted" Warning event, as the real kubelet does, and posts Ready at
//     once or after a Ready=False blip (reason KubeletNotReady, message
//     NotReadyBlipMessage);
//   - RestartKubelet is a heartbeat gap in the same boot; Pause/Resume cut
//     the node off the API (a network blip) while its containers go on.
//
// Timing profiles: "kubelet-defaults" (Lease 40s renewed every 10s, status
// every 10s, report every 5m) and "fast" (about 5x quicker, for tests).
//
// What a real kubelet does that this one does not: it runs no containers
// (images, volumes, probes, exec, logs and resource limits are ignored; a
// worker pod's image is never pulled, its volumes never mounted), runs no
// static or mirror pods, has no CRI, CNI, cgroups or eviction manager,
// reports fixed capacity and never pressure, does no TLS bootstrap or
// certificate rotation, serves no kubelet API (port 10250), and restarts a
// failed container with a shortened CrashLoopBackOff.
//
// # The worker contract
//
// A pod with label kmm.node.kubernetes.io/worker-action (Load or Unload)
// and annotation kmm.node.kubernetes.io/worker-config (upstream KMM's
// ModuleConfig YAML: kernelVersion, modprobe.moduleName,
// modprobe.modulesLoadingOrder) is a worker. Its container "worker" moves
// Pending -> Running -> terminated after Timing.PodStartLatency and
// Timing.ActionLatency, the latter counted from when Running was
// published, so the API shows Running before the action's effect. A Load runs modprobe for modulesLoadingOrder from
// last to first (or moduleName alone); an Unload runs modprobe -r first to
// last. A worker whose kernelVersion differs from the running kernel fails.
// On success the container's state.terminated.message is one line of JSON
// (contract.WorkerTerminationMessage):
//
//	{"bootID":"<boot id>","action":"Load","modules":["b","a"],"kernelVersion":"<uname -r>"}
//
// where bootID is the boot in which the action ran. On failure the message
// is the error, which names the module. With restartPolicy Never the pod
// ends Failed (status.message carries the error); with OnFailure the
// container restarts with back-off, as a real kubelet's would. A container
// that finished before a reboot keeps its result (the runtime keeps exited
// containers); one still running dies with the reboot and restarts by the
// pod's restartPolicy.
//
// # Ground truth
//
// After every worker action, at startup and with every renewal, the kubelet
// publishes its kernel's state (boot ID, version, loaded modules with load
// times) as JSON in the annotation contract.GroundTruthAnnotation of its own Lease;
// contract.ReadGroundTruth decodes it. That needs no permission beyond the node's
// own identity, and no KMM operator reads Leases. Each publication is also
// a renewal, made only while the kubelet runs: kube-controller-manager 1.37
// (NodeControllerLeaseCircuitBreaker) takes a Lease write without a newer
// renewTime for a stale cache and would never mark the node Unknown.
//
// # The simulated kernel
//
// SimKernel keeps a boot ID (a random UUID per boot), a version, the
// modules that exist (with dependencies, as modules.dep gives them) and a
// per-boot table of loaded modules with load times. Load and Unload follow
// modprobe: dependencies first, a loaded module is no error, an unknown one
// is (ErrUnknownModule, naming it), removing an unloaded module is no error,
// removing one in use is. Unlike a real kernel it loads no code, has no
// module parameters, reference counts from userspace or taint flags.
//
// # Fleets and permissions
//
// A Fleet runs many kubelets in one process with one shared pod informer
// indexed by node name and one shared Node informer, from which each
// kubelet's status loop reads its Node as a kubelet (1.31 and later) reads
// it from its node lister. The informers cache no managedFields, and the
// Node informer keeps of each Node only what the status loop reads (its
// name, conditions and nodeInfo), so a fleet of thousands holds little
// more than KWOK does. Each kubelet acts with its own client, ideally
// its own system:node:<name> identity (Node authorizer +
// NodeRestriction), so it may change only its Node, its Lease, its pods
// and events. The shared informers need one more rule, get/list/watch on
// pods and nodes cluster-wide, which FleetRBAC returns. A lone kubelet
// (the VM agent) watches only its own pods, reads its Node from the API
// server's watch cache, and needs nothing beyond its node identity. KubeletRESTConfig
// makes a client speak protobuf, as the kubelet does by default.
//
// A running node costs two goroutines (Lease renewal and status) plus one
// per container running; its pod sync runs in the pod event's handler.
//
// The control socket (ServeControl, ControlClient) lets a person reboot
// nodes of a running fleet by hand ('bootproof nodes reboot').
package fakes
