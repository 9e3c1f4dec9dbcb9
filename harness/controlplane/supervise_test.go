package controlplane_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
)

// TestSupervisorRestartsKilledProcesses kills each process of a running
// plane in turn: each is started again, its outage is recorded from its
// exit to its health check passing again, the API keeps its data, and
// past MaxRestarts the plane is dead.
func TestSupervisorRestartsKilledProcesses(t *testing.T) {
	cp := cptest.Start(t, controlplane.Config{GracePeriod: 6 * time.Second, MonitorPeriod: time.Second, MaxRestarts: 3})
	cs := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	ctx := context.Background()
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{controlplane.BinKubeAPIServer, controlplane.BinEtcd, controlplane.BinKubeControllerManager} {
		before := cp.Pids()[name]
		if err := syscall.Kill(before, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(3 * time.Minute)
		for {
			o := cp.Outages()
			if len(o) == i+1 && !o[i].End.IsZero() {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s not back within 3 minutes: outages %+v, died: %v", name, o, cp.Err())
			}
			time.Sleep(100 * time.Millisecond)
		}
		o := cp.Outages()[i]
		if o.Process != name || o.Detail != "signal: killed" || !o.End.After(o.Start) {
			t.Errorf("outage %+v", o)
		}
		if after := cp.Pids()[name]; after == before || syscall.Kill(after, 0) != nil {
			t.Errorf("%s: pid %d before, %d after the restart", name, before, after)
		}
		if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "kept", metav1.GetOptions{}); err != nil {
			t.Errorf("after restarting %s: %v", name, err)
		}
		if cp.Err() != nil {
			t.Fatalf("the plane died: %v", cp.Err())
		}
	}
	// The fourth exit is past MaxRestarts: the plane is dead, and says so.
	if err := syscall.Kill(cp.Pids()[controlplane.BinKubeControllerManager], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-cp.Died():
	case <-time.After(time.Minute):
		t.Fatal("the plane did not die past MaxRestarts")
	}
	if err := cp.Err(); err == nil || !strings.Contains(err.Error(), "kube-controller-manager exited early") || !strings.Contains(err.Error(), "the limit is 3") {
		t.Errorf("Err = %v", err)
	}
}
