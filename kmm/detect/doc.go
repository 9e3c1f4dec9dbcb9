// Package detect decides whether a node rebooted since a module was
// loaded. A Detector is a pure function of the Node and the module's
// NodeModulesConfig status entry, so every strategy is table-tested
// without a cluster.
//
// Two strategies exist:
//
//   - bootid (the default): the node is Ready and status.nodeInfo.bootID
//     differs from the boot recorded for the module. It sees every
//     reboot, including fast ones during which the node never left Ready.
//   - legacy: the node's Ready condition became True after the module's
//     recorded lastTransitionTime, which is what Kernel Module Management
//     did before it compared boot IDs. A reboot that finishes inside
//     kube-controller-manager's --node-monitor-grace-period never shows
//     NotReady, so legacy misses it. That is on purpose: bootproof keeps
//     it as the negative control that proves the harness catches the bug.
package detect
