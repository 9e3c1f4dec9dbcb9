package kmm_test

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/yaml"

	"github.com/bootproof/bootproof/kmm"
	kmmv1beta1 "github.com/bootproof/bootproof/kmm/api/v1beta1"
	"github.com/bootproof/bootproof/kmm/controller"
	"github.com/bootproof/bootproof/kmm/worker"
)

const (
	load   = worker.ActionLoad
	unload = worker.ActionUnload
)

// loadOnce brings module on node n to "loaded in bootID": it waits for the
// one loader pod a fresh spec entry gets, finishes it in bootID and waits
// for the status.
func loadOnce(t *testing.T, e *env, n *testNode, module, bootID string) {
	t.Helper()
	pod := e.waitPods(t, n.name, module, load)
	n.finish(t, pod, bootID)
	e.waitStatus(t, n.name, module, "loaded in boot "+bootID, func(s *kmmv1beta1.NodeModuleStatus) bool {
		return s != nil && s.BootID == bootID
	})
	e.waitPodGone(t, pod)
}

// TestFreshSpecLoadsOnce: a new spec entry gets exactly one loader pod
// that follows the worker contract; when it succeeds, status records the
// config and the boot named in the termination message, the pod is
// released and deleted, and nothing more happens. A pod without a
// termination message records the node's current boot instead.
func TestFreshSpecLoadsOnce(t *testing.T) {
	e := sharedEnv(t)
	logs := newLogCapture(t)
	n := e.newNode(t, "fresh", "boot-fresh-a")
	e.startController(t, kmm.Options{}, logs)

	spec := moduleSpec("fresh-mod", "registry.example/fresh-mod:1")
	spec.Tolerations = []corev1.Toleration{{Key: "example.com/gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}
	spec.Version = "1.2.3"
	spec.Config.Modprobe.ModulesLoadingOrder = []string{"fresh_mod", "fresh_dep"}
	plain := moduleSpec("plain-mod", "registry.example/plain-mod:1")
	e.createNMC(t, n.name, spec, plain)
	nmc := e.nmc(t, n.name)

	pod := e.waitPods(t, n.name, "fresh-mod", load)
	checkContract(t, pod, nmc, nmc.Spec.Modules[0], load)

	n.finish(t, pod, "boot-fresh-a")
	st := e.waitStatus(t, n.name, "fresh-mod", "recorded", func(s *kmmv1beta1.NodeModuleStatus) bool { return s != nil })
	if st.BootID != "boot-fresh-a" {
		t.Errorf("status bootId = %q, want the boot from the termination message, boot-fresh-a", st.BootID)
	}
	if got, want := mustYAML(t, st.Config), mustYAML(t, nmc.Spec.Modules[0].Config); got != want {
		t.Errorf("status config:\n%s\nwant the spec's:\n%s", got, want)
	}
	if st.LastTransitionTime.IsZero() {
		t.Error("status lastTransitionTime is not set")
	}
	if st.Version != "1.2.3" {
		t.Errorf("status version = %q, want 1.2.3", st.Version)
	}
	e.waitPodGone(t, pod)
	e.waitEvent(t, n.name, controller.ReasonModuleLoaded)

	// An upstream worker writes no termination message: fall back to the
	// node's current boot ID.
	plainPod := e.waitPods(t, n.name, "plain-mod", load)
	n.finish(t, plainPod, "")
	e.waitStatus(t, n.name, "plain-mod", "recorded in the node's boot", func(s *kmmv1beta1.NodeModuleStatus) bool {
		return s != nil && s.BootID == "boot-fresh-a"
	})
	e.waitPodGone(t, plainPod)

	e.settle(t, logs, n.name, "boot-fresh-a", true)
	e.assertPods(t, n.name, "fresh-mod", load)
	e.assertPods(t, n.name, "plain-mod", load)
}

// checkContract checks a worker pod against the contract the simulated
// kubelet implements.
func checkContract(t *testing.T, pod *corev1.Pod, nmc *kmmv1beta1.NodeModulesConfig, spec kmmv1beta1.NodeModuleSpec, action worker.Action) {
	t.Helper()
	if want := "kmm-worker-" + nmc.Name + "-" + spec.Name; pod.Name != want {
		t.Errorf("pod name = %q, want %q", pod.Name, want)
	}
	if pod.Namespace != spec.Namespace {
		t.Errorf("pod namespace = %q, want the module's %q", pod.Namespace, spec.Namespace)
	}
	if pod.Spec.NodeName != nmc.Name {
		t.Errorf("spec.nodeName = %q, want %q", pod.Spec.NodeName, nmc.Name)
	}
	if pod.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		t.Errorf("restartPolicy = %q, want OnFailure", pod.Spec.RestartPolicy)
	}
	if len(pod.Spec.Containers) != 1 || pod.Spec.Containers[0].Name != "worker" {
		t.Fatalf("containers = %+v, want one named worker", pod.Spec.Containers)
	}
	c := pod.Spec.Containers[0]
	if c.Image != spec.Config.ContainerImage {
		t.Errorf("worker image = %q, want config.containerImage %q", c.Image, spec.Config.ContainerImage)
	}
	verb := map[worker.Action]string{load: "load", unload: "unload"}[action]
	if want := []string{"kmod", verb, "/etc/kmm-worker/config.yaml"}; !slices.Equal(c.Args, want) {
		t.Errorf("worker args = %q, want %q", c.Args, want)
	}
	if got := pod.Labels["kmm.node.kubernetes.io/worker-action"]; got != string(action) {
		t.Errorf("worker-action label = %q, want %q", got, action)
	}
	var cfg kmmv1beta1.ModuleConfig
	if err := yaml.UnmarshalStrict([]byte(pod.Annotations["kmm.node.kubernetes.io/worker-config"]), &cfg); err != nil {
		t.Errorf("worker-config annotation: %v", err)
	} else if got, want := mustYAML(t, cfg), mustYAML(t, spec.Config); got != want {
		t.Errorf("worker-config annotation:\n%s\nwant:\n%s", got, want)
	}
	raw := map[string]any{}
	if err := yaml.Unmarshal([]byte(pod.Annotations["kmm.node.kubernetes.io/worker-config"]), &raw); err == nil {
		mp, _ := raw["modprobe"].(map[string]any)
		if mp["moduleName"] != spec.Config.Modprobe.ModuleName || raw["kernelVersion"] != spec.Config.KernelVersion || raw["containerImage"] != spec.Config.ContainerImage {
			t.Errorf("worker-config annotation lacks the upstream field names: %v", raw)
		}
	}
	if pod.Annotations[worker.HashAnnotation] == "" {
		t.Errorf("no %s annotation", worker.HashAnnotation)
	}
	owner := metav1.GetControllerOf(pod)
	if owner == nil || owner.Kind != "NodeModulesConfig" || owner.Name != nmc.Name || owner.UID != nmc.UID {
		t.Errorf("controller owner = %+v, want NodeModulesConfig %s (%s)", owner, nmc.Name, nmc.UID)
	}
	if !slices.Contains(pod.Finalizers, worker.Finalizer) {
		t.Errorf("finalizers = %v, want %s", pod.Finalizers, worker.Finalizer)
	}
	for _, tol := range spec.Tolerations {
		if !slices.ContainsFunc(pod.Spec.Tolerations, func(x corev1.Toleration) bool { return x.MatchToleration(&tol) }) {
			t.Errorf("tolerations = %v, want to include %v", pod.Spec.Tolerations, tol)
		}
	}
}

func mustYAML(t *testing.T, v any) string {
	t.Helper()
	b, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestFastReboot: the boot ID changes while Ready stays True (a reboot
// inside the grace period). bootid loads again exactly once; legacy, the
// negative control, does not load at all.
func TestFastReboot(t *testing.T) {
	for _, tc := range []struct {
		detector string
		reload   bool
	}{{"bootid", true}, {"legacy", false}} {
		t.Run(tc.detector, func(t *testing.T) {
			e := sharedEnv(t)
			logs := newLogCapture(t)
			n := e.newNode(t, "fast-"+tc.detector, "boot-a")
			e.startController(t, kmm.Options{Detector: tc.detector}, logs)
			e.createNMC(t, n.name, moduleSpec("fast-mod", "registry.example/fast-mod:1"))
			loadOnce(t, e, n, "fast-mod", "boot-a")

			n.reboot(t, "boot-b")
			if tc.reload {
				pod := e.waitPods(t, n.name, "fast-mod", load, load)
				e.waitEvent(t, n.name, controller.ReasonRebootDetected)
				n.finish(t, pod, "boot-b")
				e.waitStatus(t, n.name, "fast-mod", "loaded in boot-b", func(s *kmmv1beta1.NodeModuleStatus) bool {
					return s != nil && s.BootID == "boot-b"
				})
				e.settle(t, logs, n.name, "boot-b", true)
				e.assertPods(t, n.name, "fast-mod", load, load)
				return
			}
			e.settle(t, logs, n.name, "boot-b", true)
			e.assertPods(t, n.name, "fast-mod", load)
			if st := statusOf(e.nmc(t, n.name), "fast-mod"); st == nil || st.BootID != "boot-a" {
				t.Errorf("legacy status = %+v, want still loaded in boot-a (and so, in truth, not loaded in boot-b)", st)
			}
		})
	}
}

// TestReadyBlip: Ready goes False and back. With the same boot ID (a
// network blip or kubelet restart) bootid does nothing. With a new boot ID
// (a slow reboot) both detectors load again, so the legacy negative
// control still catches the reboots it was made for.
func TestReadyBlip(t *testing.T) {
	for _, tc := range []struct {
		name, detector, newBoot string
		reload                  bool
	}{
		{"bootid same boot", "bootid", "", false},
		{"bootid slow reboot", "bootid", "boot-b", true},
		{"legacy slow reboot", "legacy", "boot-b", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := sharedEnv(t)
			logs := newLogCapture(t)
			n := e.newNode(t, "blip-"+map[bool]string{true: "reboot", false: "same"}[tc.reload]+"-"+tc.detector, "boot-a")
			e.startController(t, kmm.Options{Detector: tc.detector}, logs)
			e.createNMC(t, n.name, moduleSpec("blip-mod", "registry.example/blip-mod:1"))
			loadOnce(t, e, n, "blip-mod", "boot-a")

			n.setReady(t, corev1.ConditionFalse)
			boot := "boot-a"
			if tc.newBoot != "" {
				boot = tc.newBoot
				n.status(t, func(node *corev1.Node) { node.Status.NodeInfo.BootID = boot })
			}
			e.settle(t, logs, n.name, boot, false)
			e.assertPods(t, n.name, "blip-mod", load)
			// The legacy detector compares second-granular times; keep
			// the return to Ready in a later second than the load.
			time.Sleep(1100 * time.Millisecond)
			n.setReady(t, corev1.ConditionTrue)
			if !tc.reload {
				// Judge only after the node lifecycle controller took
				// its not-ready taints off again.
				e.waitUntainted(t, n.name)
				e.settle(t, logs, n.name, boot, true)
				e.assertPods(t, n.name, "blip-mod", load)
				return
			}
			pod := e.waitPods(t, n.name, "blip-mod", load, load)
			n.finish(t, pod, boot)
			e.waitStatus(t, n.name, "blip-mod", "loaded in "+boot, func(s *kmmv1beta1.NodeModuleStatus) bool {
				return s != nil && s.BootID == boot
			})
			e.settle(t, logs, n.name, boot, true)
			e.assertPods(t, n.name, "blip-mod", load, load)
		})
	}
}

// TestConfigChange: a changed config with the same kernel version is
// unloaded with the old config, then loaded with the new one; a changed
// kernel version is loaded at once.
func TestConfigChange(t *testing.T) {
	e := sharedEnv(t)
	logs := newLogCapture(t)
	n := e.newNode(t, "config", "boot-a")
	e.startController(t, kmm.Options{}, logs)
	e.createNMC(t, n.name, moduleSpec("cfg-mod", "registry.example/cfg-mod:1"))
	loadOnce(t, e, n, "cfg-mod", "boot-a")
	oldSpec := e.nmc(t, n.name).Spec.Modules[0]

	e.updateSpec(t, n.name, func(s *kmmv1beta1.NodeModulesConfigSpec) {
		s.Modules[0].Config.ContainerImage = "registry.example/cfg-mod:2"
	})
	unloader := e.waitPods(t, n.name, "cfg-mod", load, unload)
	checkContract(t, unloader, e.nmc(t, n.name), oldSpec, unload)
	n.finish(t, unloader, "boot-a")
	loader := e.waitPods(t, n.name, "cfg-mod", load, unload, load)
	if loader.Spec.Containers[0].Image != "registry.example/cfg-mod:2" {
		t.Errorf("loader after the change runs %q, want the new image", loader.Spec.Containers[0].Image)
	}
	n.finish(t, loader, "boot-a")
	e.waitStatus(t, n.name, "cfg-mod", "new config loaded", func(s *kmmv1beta1.NodeModuleStatus) bool {
		return s != nil && s.Config.ContainerImage == "registry.example/cfg-mod:2"
	})
	e.waitPodGone(t, loader)

	e.updateSpec(t, n.name, func(s *kmmv1beta1.NodeModulesConfigSpec) {
		s.Modules[0].Config.KernelVersion = "6.2.0-bootproof"
		s.Modules[0].Config.ContainerImage = "registry.example/cfg-mod:3"
	})
	loader = e.waitPods(t, n.name, "cfg-mod", load, unload, load, load)
	n.finish(t, loader, "boot-a")
	e.waitStatus(t, n.name, "cfg-mod", "new kernel's config loaded", func(s *kmmv1beta1.NodeModuleStatus) bool {
		return s != nil && s.Config.KernelVersion == "6.2.0-bootproof"
	})
	e.settle(t, logs, n.name, "boot-a", true)
	e.assertPods(t, n.name, "cfg-mod", load, unload, load, load)
}

// TestSpecRemoved: a removed spec entry is unloaded and its status goes.
func TestSpecRemoved(t *testing.T) {
	e := sharedEnv(t)
	logs := newLogCapture(t)
	n := e.newNode(t, "removed", "boot-a")
	e.startController(t, kmm.Options{}, logs)
	e.createNMC(t, n.name, moduleSpec("gone-mod", "registry.example/gone-mod:1"))
	loadOnce(t, e, n, "gone-mod", "boot-a")

	e.updateSpec(t, n.name, func(s *kmmv1beta1.NodeModulesConfigSpec) { s.Modules = nil })
	unloader := e.waitPods(t, n.name, "gone-mod", load, unload)
	n.finish(t, unloader, "boot-a")
	e.waitStatus(t, n.name, "gone-mod", "removed", func(s *kmmv1beta1.NodeModuleStatus) bool { return s == nil })
	e.waitPodGone(t, unloader)
	e.waitEvent(t, n.name, controller.ReasonModuleUnloaded)
	e.settle(t, logs, n.name, "boot-a", true)
	e.assertPods(t, n.name, "gone-mod", load, unload)
}

// TestSpecRemovedWhileRebooted: when the spec entry goes while the node
// has rebooted since the load, nothing is loaded any more: the status is
// dropped without an unloader pod.
func TestSpecRemovedWhileRebooted(t *testing.T) {
	e := sharedEnv(t)
	logs := newLogCapture(t)
	n := e.newNode(t, "removed-rebooted", "boot-a")
	run := e.startController(t, kmm.Options{}, logs)
	e.createNMC(t, n.name, moduleSpec("dropped-mod", "registry.example/dropped-mod:1"))
	loadOnce(t, e, n, "dropped-mod", "boot-a")

	// Both happen while the reconciler is down, so it sees them together.
	run.stop(t)
	e.updateSpec(t, n.name, func(s *kmmv1beta1.NodeModulesConfigSpec) { s.Modules = nil })
	n.reboot(t, "boot-b")
	e.startController(t, kmm.Options{}, logs)
	e.waitStatus(t, n.name, "dropped-mod", "dropped", func(s *kmmv1beta1.NodeModuleStatus) bool { return s == nil })
	e.waitEvent(t, n.name, controller.ReasonStatusDropped)
	e.settle(t, logs, n.name, "boot-b", true)
	e.assertPods(t, n.name, "dropped-mod", load)
}

// TestRestartBetweenSuccessAndSync: the reconciler stops after creating
// the loader pod and the pod succeeds while it is down; the next instance
// (with leader election, as the command runs it) records the load and
// creates no second loader pod for the same boot.
func TestRestartBetweenSuccessAndSync(t *testing.T) {
	e := sharedEnv(t)
	logs := newLogCapture(t)
	n := e.newNode(t, "restart", "boot-a")
	leader := kmm.Options{LeaderElection: true, LeaderElectionID: "bootproof-kmm-restart-test"}
	run := e.startController(t, leader, logs)
	e.createNMC(t, n.name, moduleSpec("restart-mod", "registry.example/restart-mod:1"))
	pod := e.waitPods(t, n.name, "restart-mod", load)

	run.stop(t)
	n.finish(t, pod, "boot-a")
	e.startController(t, leader, logs)
	e.waitStatus(t, n.name, "restart-mod", "loaded in boot-a", func(s *kmmv1beta1.NodeModuleStatus) bool {
		return s != nil && s.BootID == "boot-a"
	})
	e.waitPodGone(t, pod)
	e.settle(t, logs, n.name, "boot-a", true)
	e.assertPods(t, n.name, "restart-mod", load)
}

// TestLoadFinishedBeforeReboot is the race the harness must catch: the
// loader pod succeeds in boot A and the node reboots into B before the
// reconciler sees the pod. Recording the boot from the worker's
// termination message records A and loads again in B. Recording the
// node's boot ID at sync time (RecordBootFrom "node", the bug kept as a
// control) records B, loads nothing, and leaves the module unloaded while
// status claims it is loaded.
func TestLoadFinishedBeforeReboot(t *testing.T) {
	for _, source := range []string{"worker", "node"} {
		t.Run("record boot from "+source, func(t *testing.T) {
			e := sharedEnv(t)
			logs := newLogCapture(t)
			n := e.newNode(t, "race-"+source, "boot-a")
			o := kmm.Options{RecordBootFrom: source}
			run := e.startController(t, o, logs)
			e.createNMC(t, n.name, moduleSpec("race-mod", "registry.example/race-mod:1"))
			first := e.waitPods(t, n.name, "race-mod", load)

			// Ground truth, as the kubelet knows it: the boots in which
			// the module was really loaded.
			loadedIn := map[string]bool{}
			run.stop(t)
			n.finish(t, first, "boot-a")
			loadedIn["boot-a"] = true
			n.reboot(t, "boot-b")
			e.startController(t, o, logs)

			if source == "worker" {
				st := e.waitStatus(t, n.name, "race-mod", "recorded", func(s *kmmv1beta1.NodeModuleStatus) bool { return s != nil })
				if st.BootID != "boot-a" {
					t.Errorf("status bootId = %q, want boot-a, the boot the load ran in", st.BootID)
				}
				second := e.waitPods(t, n.name, "race-mod", load, load)
				e.waitEvent(t, n.name, controller.ReasonRebootDetected)
				n.finish(t, second, "boot-b")
				loadedIn["boot-b"] = true
				e.waitStatus(t, n.name, "race-mod", "loaded in boot-b", func(s *kmmv1beta1.NodeModuleStatus) bool {
					return s != nil && s.BootID == "boot-b"
				})
				e.settle(t, logs, n.name, "boot-b", true)
				e.assertPods(t, n.name, "race-mod", load, load)
				if !loadedIn["boot-b"] {
					t.Error("module is not loaded in the current boot")
				}
				return
			}

			st := e.waitStatus(t, n.name, "race-mod", "recorded", func(s *kmmv1beta1.NodeModuleStatus) bool { return s != nil })
			e.settle(t, logs, n.name, "boot-b", true)
			e.assertPods(t, n.name, "race-mod", load)
			// The failure this control exists to show: status says
			// "loaded in boot-b", the node is in boot-b, and the module
			// was never loaded in boot-b.
			if st.BootID != "boot-b" {
				t.Errorf("status bootId = %q, want boot-b (the node's boot at sync time)", st.BootID)
			}
			if loadedIn["boot-b"] {
				t.Error("module was loaded in boot-b; the recording bug did not show")
			}
			t.Logf("as expected for the buggy recorder: status claims boot %s, the node is in boot-b, the module was loaded only in %v", st.BootID, loadedIn)
		})
	}
}

// TestFailedWorkerPod: a Failed loader pod records nothing; it is deleted
// and a new loader pod is created, as upstream KMM does.
func TestFailedWorkerPod(t *testing.T) {
	e := sharedEnv(t)
	logs := newLogCapture(t)
	n := e.newNode(t, "failed", "boot-a")
	e.startController(t, kmm.Options{}, logs)
	e.createNMC(t, n.name, moduleSpec("failing-mod", "registry.example/failing-mod:1"))
	first := e.waitPods(t, n.name, "failing-mod", load)
	n.podStatus(t, first, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodFailed
		p.Status.Reason = "Evicted"
		p.Status.Message = "the node was low on memory"
	})
	e.waitPodGone(t, first)
	second := e.waitPods(t, n.name, "failing-mod", load, load)
	if st := statusOf(e.nmc(t, n.name), "failing-mod"); st != nil {
		t.Errorf("status after a failed loader = %+v, want none", st)
	}
	e.waitEvent(t, n.name, controller.ReasonWorkerFailed)
	n.finish(t, second, "boot-a")
	e.waitStatus(t, n.name, "failing-mod", "loaded", func(s *kmmv1beta1.NodeModuleStatus) bool { return s != nil && s.BootID == "boot-a" })
	e.settle(t, logs, n.name, "boot-a", true)
	e.assertPods(t, n.name, "failing-mod", load, load)
}

// TestRestartingLoaderWithOutdatedConfig: a loader pod that keeps
// restarting is replaced when the spec's config changed (upstream's hash
// rule); one that has not restarted is left to finish.
func TestRestartingLoaderWithOutdatedConfig(t *testing.T) {
	e := sharedEnv(t)
	logs := newLogCapture(t)
	n := e.newNode(t, "restarting", "boot-a")
	e.startController(t, kmm.Options{}, logs)
	e.createNMC(t, n.name, moduleSpec("crash-mod", "registry.example/crash-mod:1"))
	first := e.waitPods(t, n.name, "crash-mod", load)
	n.podStatus(t, first, func(p *corev1.Pod) {
		p.Status.Phase = corev1.PodRunning
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: worker.ContainerName, Image: p.Spec.Containers[0].Image, RestartCount: 3,
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}}}
	})
	e.settle(t, logs, n.name, "boot-a", true)
	e.assertPods(t, n.name, "crash-mod", load)

	e.updateSpec(t, n.name, func(s *kmmv1beta1.NodeModulesConfigSpec) {
		s.Modules[0].Config.ContainerImage = "registry.example/crash-mod:2"
	})
	n.confirmDeletion(t, first)
	second := e.waitPods(t, n.name, "crash-mod", load, load)
	if second.Spec.Containers[0].Image != "registry.example/crash-mod:2" {
		t.Errorf("replacement loader runs %q, want the new image", second.Spec.Containers[0].Image)
	}
	n.finish(t, second, "boot-a")
	e.waitStatus(t, n.name, "crash-mod", "new config loaded", func(s *kmmv1beta1.NodeModuleStatus) bool {
		return s != nil && s.Config.ContainerImage == "registry.example/crash-mod:2"
	})
}

// TestUnschedulableNodeSkipped: a module is not loaded on a node with a
// NoSchedule taint it does not tolerate, or on a cordoned node; it is
// loaded once the taint goes, and at once when the module tolerates it.
func TestUnschedulableNodeSkipped(t *testing.T) {
	e := sharedEnv(t)
	logs := newLogCapture(t)
	n := e.newNode(t, "tainted", "boot-a")
	taint := corev1.Taint{Key: "example.com/maintenance", Effect: corev1.TaintEffectNoSchedule}
	e.updateNode(t, n.name, func(node *corev1.Node) {
		node.Spec.Taints = append(node.Spec.Taints, taint)
		node.Spec.Unschedulable = true
	})
	e.startController(t, kmm.Options{}, logs)
	tolerant := moduleSpec("tolerant-mod", "registry.example/tolerant-mod:1")
	tolerant.Tolerations = []corev1.Toleration{{Operator: corev1.TolerationOpExists}}
	e.createNMC(t, n.name, moduleSpec("skipped-mod", "registry.example/skipped-mod:1"), tolerant)
	e.waitPods(t, n.name, "tolerant-mod", load)
	e.settle(t, logs, n.name, "boot-a", true)
	e.assertPods(t, n.name, "skipped-mod")

	e.updateNode(t, n.name, func(node *corev1.Node) { node.Spec.Taints, node.Spec.Unschedulable = nil, false })
	e.waitPods(t, n.name, "skipped-mod", load)
}

// updateNode changes a Node as the admin (taints are not the kubelet's).
func (e *env) updateNode(t *testing.T, name string, change func(*corev1.Node)) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), deadline)
	defer cancel()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		node, err := e.adminC.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		change(node)
		_, err = e.adminC.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatalf("update node %s: %v", name, err)
	}
}

// waitUntainted waits until the node lifecycle controller has removed the
// not-ready and unreachable taints from the node.
func (e *env) waitUntainted(t *testing.T, name string) {
	t.Helper()
	eventually(t, "node "+name+" without not-ready and unreachable taints", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), deadline)
		defer cancel()
		node, err := e.adminC.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return !slices.ContainsFunc(node.Spec.Taints, func(x corev1.Taint) bool {
			return x.Key == corev1.TaintNodeNotReady || x.Key == corev1.TaintNodeUnreachable
		})
	})
}

// Two replicas in one process elect a leader: exactly one of them holds
// the Lease and reconciles (its log lines name it), the other only
// waits, so a fresh spec gets one loader pod, not two.
func TestTwoReplicasOneReconciles(t *testing.T) {
	e := sharedEnv(t)
	logs := newLogCapture(t)
	n := e.newNode(t, "replicas", "boot-replicas-a")
	const leaseName = "bootproof-kmm-two-replicas"
	e.startController(t, kmm.Options{Replicas: 2, LeaderElection: true, LeaderElectionID: leaseName}, logs)

	e.createNMC(t, n.name, moduleSpec("replica-mod", "registry.example/replica-mod:1"))
	pod := e.waitPods(t, n.name, "replica-mod", load)
	n.finish(t, pod, "boot-replicas-a")
	e.waitStatus(t, n.name, "replica-mod", "recorded", func(s *kmmv1beta1.NodeModuleStatus) bool {
		return s != nil && s.BootID == "boot-replicas-a"
	})
	e.waitPodGone(t, pod)
	e.settle(t, logs, n.name, "boot-replicas-a", true)
	e.assertPods(t, n.name, "replica-mod", load)

	lease, err := e.adminC.CoordinationV1().Leases(kmm.DefaultLeaderElectionNamespace).Get(context.Background(), leaseName, metav1.GetOptions{})
	if err != nil || lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		t.Fatalf("leader Lease %s: %v (held by %v)", leaseName, err, lease)
	}
	reconciled := map[any]int{}
	logs.mu.Lock()
	for _, le := range logs.entries {
		if le.Msg == "reconciled" {
			reconciled[le.Values["replica"]]++
		}
	}
	logs.mu.Unlock()
	if len(reconciled) != 1 {
		t.Errorf("reconciles by replica: %v; want every one by the single leader", reconciled)
	}
	for r := range reconciled {
		if r != float64(0) && r != float64(1) {
			t.Errorf("reconciles logged by replica %v; want 0 or 1 (each replica's logger names it)", r)
		}
	}
}
