package subject

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/bootproof/bootproof/internal/runs"
	"github.com/bootproof/bootproof/scenarios"
)

// fakeDeploymentController plays the Deployment and ReplicaSet
// controllers and the kubelet on a fake clientset: it keeps as many
// running pods as spec.replicas asks and reports them available.
func fakeDeploymentController(ctx context.Context, cs *fake.Clientset, ns, name string, sel map[string]string) {
	made := 0
	for ctx.Err() == nil {
		time.Sleep(20 * time.Millisecond)
		dep, err := cs.AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			continue
		}
		want := int(ptr.Deref(dep.Spec.Replicas, 1))
		pods, _ := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		have := len(pods.Items)
		for ; have > want; have-- {
			_ = cs.CoreV1().Pods(ns).Delete(ctx, pods.Items[have-1].Name, metav1.DeleteOptions{})
		}
		for ; have < want; have++ {
			made++
			_, _ = cs.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", name, made), Namespace: ns, Labels: sel},
				Status: corev1.PodStatus{Phase: corev1.PodRunning, ContainerStatuses: []corev1.ContainerStatus{{Name: "manager", Ready: true,
					ContainerID: fmt.Sprintf("containerd://%s-%d-a", name, made), State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}, metav1.CreateOptions{})
		}
		n := int32(want)
		dep.Status = appsv1.DeploymentStatus{ObservedGeneration: dep.Generation, Replicas: n, UpdatedReplicas: n, AvailableReplicas: n, ReadyReplicas: n}
		_, _ = cs.AppsV1().Deployments(ns).UpdateStatus(ctx, dep, metav1.UpdateOptions{})
	}
}

// fakeOperator is Deployment ops/op of replicas pods on a fake clientset,
// kept by fakeDeploymentController until the test ends.
func fakeOperator(t *testing.T, replicas int32) (*fake.Clientset, context.Context) {
	t.Helper()
	sel := map[string]string{"app": "op"}
	cs := fake.NewClientset(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "op", Namespace: "ops"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: sel}}})
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	go fakeDeploymentController(ctx, cs, "ops", "op", sel)
	return cs, ctx
}

func TestDeploymentPauseResumeAndCrash(t *testing.T) {
	cs, ctx := fakeOperator(t, 2)

	f := &File{Name: "op", Deployment: &DeploymentSpec{Namespace: "ops", Name: "op", timeout: 20 * time.Second}}
	d := &Deployment{File: f, Cluster: restOnly{}, Client: cs}
	if err := d.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := d.Teardown(); err != nil {
			t.Errorf("teardown: %v", err)
		}
	}()
	inst, err := d.Start(ctx, scenarios.SubjectRequest{})
	if err != nil {
		t.Fatal(err)
	}
	pods := func() int {
		l, _ := cs.CoreV1().Pods("ops").List(ctx, metav1.ListOptions{})
		return len(l.Items)
	}
	if err := inst.(scenarios.Pauser).Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if n := pods(); n != 0 {
		t.Errorf("%d pods after Pause, want 0", n)
	}
	if err := inst.(scenarios.Pauser).Resume(ctx); err != nil {
		t.Fatal(err)
	}
	dep, _ := cs.AppsV1().Deployments("ops").Get(ctx, "op", metav1.GetOptions{})
	if *dep.Spec.Replicas != 2 || dep.Status.AvailableReplicas != 2 {
		t.Errorf("after Resume: replicas %d, available %d; want 2 and 2", *dep.Spec.Replicas, dep.Status.AvailableReplicas)
	}
	h := inst.(scenarios.HealthReporter)
	if err := h.Err(); err != nil {
		t.Fatalf("a pause and resume are not a crash: %v", err)
	}

	// The operator's container restarts: a crash.
	l, _ := cs.CoreV1().Pods("ops").List(ctx, metav1.ListOptions{})
	p := l.Items[0]
	p.Status.ContainerStatuses[0].RestartCount = 1
	p.Status.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 2}
	if _, err := cs.CoreV1().Pods("ops").UpdateStatus(ctx, &p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for h.Err() == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := h.Err(); err == nil || !strings.Contains(err.Error(), "container manager of pod "+p.Name+" restarted after Error (exit code 2)") {
		t.Errorf("after a container restart: Err = %v", err)
	}
	// Exit code 2 is the operator's own: its case fails subject-runs.
	var of scenarios.OwnFault
	if err := h.Err(); !errors.As(err, &of) || !of.OwnFault() {
		t.Errorf("a container that exited with status 2 is not the subject's own stop: %v", err)
	}
}

// A run that ends while the Deployment is scaled to 0 (interrupted during
// a pause) scales it back: nothing of the user's is lost.
func TestDeploymentTeardownRestoresReplicas(t *testing.T) {
	cs, ctx := fakeOperator(t, 3)
	f := &File{Name: "op", Deployment: &DeploymentSpec{Namespace: "ops", Name: "op", timeout: 20 * time.Second}}
	d := &Deployment{File: f, Cluster: restOnly{}, Client: cs}
	if err := d.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	inst, _ := d.Start(ctx, scenarios.SubjectRequest{})
	if err := inst.(scenarios.Pauser).Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if err := d.Teardown(); err != nil {
		t.Fatal(err)
	}
	dep, _ := cs.AppsV1().Deployments("ops").Get(ctx, "op", metav1.GetOptions{})
	if *dep.Spec.Replicas != 3 {
		t.Errorf("replicas %d after Teardown, want the 3 it had", *dep.Spec.Replicas)
	}
}

func TestDeploymentWithoutReplicas(t *testing.T) {
	cs := fake.NewClientset(&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "op", Namespace: "ops"},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "op"}}}})
	f := &File{Name: "op", Deployment: &DeploymentSpec{Namespace: "ops", Name: "op", timeout: time.Second}}
	err := (&Deployment{File: f, Cluster: restOnly{}, Client: cs}).Setup(context.Background())
	if err == nil || !strings.Contains(err.Error(), "deployment ops/op has 0 replicas") {
		t.Errorf("Setup = %v", err)
	}
	missing := &Deployment{File: &File{Name: "op", Deployment: &DeploymentSpec{Namespace: "ops", Name: "nope", timeout: time.Second}}, Cluster: restOnly{}, Client: cs}
	if err := missing.Setup(context.Background()); err == nil || !strings.Contains(err.Error(), "deployment ops/nope") {
		t.Errorf("Setup of a missing deployment = %v", err)
	}
}

// TestDeploymentPauseMarksTheRun: while paused, the Deployment carries
// the run and the replicas to give back (what 'bootproof cleanup' reads
// if the run dies holding it); resuming removes both; a Deployment
// another run holds at 0 is refused at Setup, naming that run.
func TestDeploymentPauseMarksTheRun(t *testing.T) {
	cs, ctx := fakeOperator(t, 2)
	f := &File{Name: "op", Deployment: &DeploymentSpec{Namespace: "ops", Name: "op", timeout: 20 * time.Second}}
	d := &Deployment{File: f, Cluster: restOnly{}, Client: cs, RunID: "run1"}
	if err := d.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	inst, _ := d.Start(ctx, scenarios.SubjectRequest{})
	if err := inst.(scenarios.Pauser).Pause(ctx); err != nil {
		t.Fatal(err)
	}
	dep, _ := cs.AppsV1().Deployments("ops").Get(ctx, "op", metav1.GetOptions{})
	if dep.Labels[runs.PausedLabel] != "run1" || dep.Annotations[runs.PausedReplicasAnnotation] != "2" {
		t.Errorf("paused: labels %v, annotations %v; want the run and 2 replicas", dep.Labels, dep.Annotations)
	}
	other := &Deployment{File: f, Cluster: restOnly{}, Client: cs, RunID: "run2"}
	if err := other.Setup(ctx); err == nil || !strings.Contains(err.Error(), "held at 0 replicas by bootproof run run1") {
		t.Errorf("another run's Setup on the held Deployment: %v", err)
	}
	if err := inst.(scenarios.Pauser).Resume(ctx); err != nil {
		t.Fatal(err)
	}
	dep, _ = cs.AppsV1().Deployments("ops").Get(ctx, "op", metav1.GetOptions{})
	if _, ok := dep.Labels[runs.PausedLabel]; ok || dep.Annotations[runs.PausedReplicasAnnotation] != "" || *dep.Spec.Replicas != 2 {
		t.Errorf("resumed: labels %v, annotations %v, replicas %d", dep.Labels, dep.Annotations, *dep.Spec.Replicas)
	}
	if err := d.Teardown(); err != nil {
		t.Fatal(err)
	}
}

// A Deployment subject's pods' logs are kept in LogDir/<name>.log: every
// container instance seen, a pod that came after a pause, and the
// instance before a container restart; each line names its pod and
// container.
func TestDeploymentKeepsPodLogs(t *testing.T) {
	cs, ctx := fakeOperator(t, 1)
	dir := t.TempDir()
	f := &File{Name: "op", Deployment: &DeploymentSpec{Namespace: "ops", Name: "op", timeout: 20 * time.Second}}
	d := &Deployment{File: f, Cluster: restOnly{}, Client: cs, LogDir: filepath.Join(dir, "subjects")}
	if err := d.Setup(ctx); err != nil {
		t.Fatal(err)
	}
	inst, err := d.Start(ctx, scenarios.SubjectRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if err := inst.(scenarios.Pauser).Pause(ctx); err != nil {
		t.Fatal(err)
	}
	if err := inst.(scenarios.Pauser).Resume(ctx); err != nil {
		t.Fatal(err)
	}
	l, _ := cs.CoreV1().Pods("ops").List(ctx, metav1.ListOptions{})
	p := l.Items[0]
	st := &p.Status.ContainerStatuses[0]
	st.RestartCount = 1
	st.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{Reason: "Error", ExitCode: 2, ContainerID: st.ContainerID}
	st.ContainerID += "-restarted"
	if _, err := cs.CoreV1().Pods("ops").UpdateStatus(ctx, &p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for inst.(scenarios.HealthReporter).Err() == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if err := d.Teardown(); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(d.LogPath())
	if err != nil {
		t.Fatal(err)
	}
	log := string(data)
	// The fake API server's log of any container is "fake logs".
	for _, want := range []string{"op-1/manager: logs", p.Name + "/manager: logs", "# bootproof: logs of the pods of the subject's Deployment in namespace ops"} {
		if !strings.Contains(log, want) {
			t.Errorf("pod log has no %q:\n%s", want, log)
		}
	}
	if n := strings.Count(log, "/manager: logs"); n != 3 {
		t.Errorf("%d container instances' logs, want 3 (the first pod, the one after the pause, and its instance after the restart):\n%s", n, log)
	}
}
