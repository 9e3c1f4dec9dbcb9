// Package worker is the reconciler's side of the worker-pod contract it
// shares with kubelets (upstream Kernel Module Management's contract, which
// bootproof's simulated kubelet implements independently):
//
//   - name kmm-worker-<node>-<module>, in the module's namespace, bound to
//     the node through spec.nodeName, restartPolicy OnFailure;
//   - one container "worker" running config.containerImage with the args
//     "kmod load|unload /etc/kmm-worker/config.yaml";
//   - label kmm.node.kubernetes.io/worker-action = Load | Unload and label
//     kmm.node.kubernetes.io/module.name = the module;
//   - annotation kmm.node.kubernetes.io/worker-config = the ModuleConfig as
//     YAML (also mounted at /etc/kmm-worker/config.yaml through the
//     downward API) and kmm.node.kubernetes.io/worker-hash = a hash of the
//     pod template;
//   - a controller owner reference to the NodeModulesConfig and the
//     finalizer kmm.node.kubernetes.io/nodemodulesconfig-reconciler, which
//     the reconciler removes once it has recorded the pod's result;
//   - the module's tolerations, service account and pull secret.
//
// A kubelet may report the boot in which the action really ran as one line
// of JSON in the worker container's state.terminated.message:
//
//	{"bootID":"<boot id>","action":"Load","modules":["b","a"],"kernelVersion":"<version>"}
//
// ParseResult reads it. An upstream worker writes no such message; the
// reconciler then falls back to the node's current boot ID.
package worker
