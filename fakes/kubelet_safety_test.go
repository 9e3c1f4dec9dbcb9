package fakes_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/fakes"
)

// hasTaint reports whether taints hold key with effect.
func hasTaint(taints []corev1.Taint, key string, effect corev1.TaintEffect) bool {
	for _, t := range taints {
		if t.Key == key && t.Effect == effect {
			return true
		}
	}
	return false
}

// TestUnitNodeTaintedAndLabelled: every node is tainted NoSchedule and
// NoExecute and labelled simulated, with its run's label on the Node and
// its Lease, whatever taints and labels its Config adds.
func TestUnitNodeTaintedAndLabelled(t *testing.T) {
	extra := corev1.Taint{Key: "example.com/extra", Value: "x", Effect: corev1.TaintEffectNoSchedule}
	u := startUnitWith(t, func(c *fakes.Config) {
		c.Labels = map[string]string{contract.RunLabel: "run-1", contract.SimulatedLabel: "false", "team": "a"}
		c.Taints = []corev1.Taint{extra, contract.SimulatedTaints()[0]}
	})
	n := u.node()
	for _, eff := range []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectNoExecute} {
		if !hasTaint(n.Spec.Taints, contract.SimulatedTaintKey, eff) {
			t.Errorf("taints %v: no %s:%s", n.Spec.Taints, contract.SimulatedTaintKey, eff)
		}
	}
	if !hasTaint(n.Spec.Taints, extra.Key, extra.Effect) || len(n.Spec.Taints) != 3 {
		t.Errorf("taints %v, want the two simulated taints once each and %s", n.Spec.Taints, extra.Key)
	}
	if n.Labels[contract.SimulatedLabel] != "true" || n.Labels[contract.RunLabel] != "run-1" || n.Labels["team"] != "a" {
		t.Errorf("node labels %v, want %s=true, %s=run-1, team=a", n.Labels, contract.SimulatedLabel, contract.RunLabel)
	}
	l, err := u.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(context.Background(), "n1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if l.Labels[contract.SimulatedLabel] != "true" || l.Labels[contract.RunLabel] != "run-1" {
		t.Errorf("lease labels %v, want %s=true, %s=run-1", l.Labels, contract.SimulatedLabel, contract.RunLabel)
	}
}

// TestUnitNonWorkerPodFailed: a pod that is not a KMM worker bound to the
// node is Failed (reason SimulatedNode), never Running; a worker beside it
// still runs.
func TestUnitNonWorkerPodFailed(t *testing.T) {
	u := startUnit(t)
	plain := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default", UID: "uid-app"},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "app", Image: "example.invalid/app"}}}}
	created, err := u.client.CoreV1().Pods("default").Create(context.Background(), plain, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	u.pods.send(created)
	p := u.waitPhase("app", corev1.PodFailed)
	if p.Status.Reason != fakes.SimulatedNodeReason || !strings.Contains(p.Status.Message, "n1 is simulated") {
		t.Errorf("pod status reason %q message %q, want %s and a message saying node n1 is simulated", p.Status.Reason, p.Status.Message, fakes.SimulatedNodeReason)
	}
	if len(p.Status.ContainerStatuses) != 0 {
		t.Errorf("container statuses %+v, want none: nothing ran", p.Status.ContainerStatuses)
	}
	// The update that says Failed reaches the kubelet: it does nothing more.
	u.pods.send(p)
	u.settle(2)
	u.startWorker("w")
	u.settle(3)
	u.step(time.Second, 3)
	u.clock.Step(2 * time.Second)
	u.waitPhase("w", corev1.PodSucceeded)
	if got := u.pod("app"); got.Status.Phase != corev1.PodFailed {
		t.Errorf("pod app phase %s after the worker ran, want Failed", got.Status.Phase)
	}
}

// TestUnitRejectWorkerPods: after RejectWorkerPods(1) the next worker
// pod is Failed at admission (reason AdmissionRejectedReason), with no
// container and nothing loaded; the one after it runs and loads.
func TestUnitRejectWorkerPods(t *testing.T) {
	u := startUnit(t)
	u.kl.RejectWorkerPods(1)
	u.startWorker("rejected")
	p := u.waitPhase("rejected", corev1.PodFailed)
	if p.Status.Reason != fakes.AdmissionRejectedReason || !strings.Contains(p.Status.Message, "rejected this pod at admission") {
		t.Errorf("pod status reason %q message %q, want %s and a message saying admission rejected it", p.Status.Reason, p.Status.Message, fakes.AdmissionRejectedReason)
	}
	if len(p.Status.ContainerStatuses) != 0 {
		t.Errorf("container statuses %+v, want none: nothing ran", p.Status.ContainerStatuses)
	}
	if got := u.kern.Loaded(); len(got) != 0 {
		t.Errorf("modules %v after a rejected loader, want none", got)
	}
	u.pods.send(p)
	u.settle(2)
	u.startWorker("admitted")
	u.settle(3)
	u.step(time.Second, 3)
	u.clock.Step(2 * time.Second)
	u.waitPhase("admitted", corev1.PodSucceeded)
	if got := u.kern.Loaded(); len(got) != 1 || got[0].Name != "dummy" {
		t.Errorf("modules %v after the next loader, want dummy: one rejection only", got)
	}
	if got := u.pod("rejected"); got.Status.Phase != corev1.PodFailed {
		t.Errorf("pod rejected phase %s after the next worker ran, want Failed", got.Status.Phase)
	}
}

// TestUnitRefusesForeignNode: a Node of the kubelet's name that no
// bootproof kubelet created is never taken over: Start fails with a
// *fakes.ForeignNodeError naming it and the Node is left as it was. One
// that carries the simulated label is taken over.
func TestUnitRefusesForeignNode(t *testing.T) {
	foreign := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "worker-0", Labels: map[string]string{"team": "a"}},
		Status: corev1.NodeStatus{NodeInfo: corev1.NodeSystemInfo{BootID: "real-boot"}}}
	ours := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "bp-0", Labels: map[string]string{contract.SimulatedLabel: "true"}}}
	client := fake.NewSimpleClientset(foreign, ours)
	start := func(name string) error {
		kern, err := fakes.NewSimKernel(fakes.SimKernelConfig{})
		if err != nil {
			t.Fatal(err)
		}
		kl, err := fakes.New(fakes.Config{NodeName: name, Client: client, Kernel: kern, Timing: unitTiming(), Pods: &podFeed{}})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan error, 1)
		go func() { done <- kl.Start(ctx) }()
		select {
		case err := <-done:
			return err
		case <-kl.Registered():
			cancel()
			return wait(t, "Start", done)
		case <-time.After(5 * time.Second):
			t.Fatalf("kubelet %s neither registered nor failed within 5s", name)
			return nil
		}
	}
	err := start("worker-0")
	var fe *fakes.ForeignNodeError
	if !errors.As(err, &fe) || fe.Node != "worker-0" || !strings.Contains(err.Error(), "worker-0") {
		t.Fatalf("Start on a foreign node: %v, want a *fakes.ForeignNodeError naming worker-0", err)
	}
	n, err := client.CoreV1().Nodes().Get(context.Background(), "worker-0", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n.Status.NodeInfo.BootID != "real-boot" || len(n.Status.Conditions) != 0 || len(n.Spec.Taints) != 0 {
		t.Errorf("foreign node changed: %+v", n)
	}
	if _, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(context.Background(), "worker-0", metav1.GetOptions{}); err == nil {
		t.Error("a Lease was written for the foreign node")
	}
	if err := start("bp-0"); err != nil {
		t.Errorf("Start on a node a bootproof kubelet created: %v, want it taken over", err)
	}
}
