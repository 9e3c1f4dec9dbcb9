// Package observe is the scenario engine's observer: for one case it
// watches the case's Nodes, their Leases (heartbeats and the ground truth
// the nodes publish), the worker pods and the NodeModulesConfigs, and
// keeps what it saw, stamped with its clock, as two things:
//
//   - a trace (package trace): the ordered events the reports draw;
//   - a Record (package judging): the per-node history the assertions
//     and the verdict are judged on.
//
// It never samples: every state it holds came from a watch event. It
// notices when a watch broke off and relisted (WatchGap), because the
// informer then coalesces what happened in between and a short NotReady
// or a worker pod that came and went may be lost.
//
// Tests feed it scripted objects with Observe, as an informer would.
package observe
