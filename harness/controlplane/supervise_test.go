package controlplane_test

import (
	"context"
	"fmt"
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
// past MaxRestarts the plane is dead. A process may also exit because
// another was down (kube-controller-manager losing its leader Lease while
// the API server restarts on a loaded machine): that outage is recorded
// and restarted too, and counts toward MaxRestarts.
func TestSupervisorRestartsKilledProcesses(t *testing.T) {
	const maxRestarts = 6
	cp := cptest.Start(t, controlplane.Config{GracePeriod: 6 * time.Second, MonitorPeriod: time.Second, MaxRestarts: maxRestarts})
	cs := kubernetes.NewForConfigOrDie(cp.RESTConfig())
	ctx := context.Background()
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{controlplane.BinKubeAPIServer, controlplane.BinEtcd, controlplane.BinKubeControllerManager} {
		before := cp.Pids()[name]
		seen := len(cp.Outages())
		if err := syscall.Kill(before, syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		o := waitOutagesOver(t, cp, seen, name)
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
	// Past MaxRestarts exits in all the plane is dead, and says so.
	for len(cp.Outages()) < maxRestarts {
		seen := len(cp.Outages())
		if err := syscall.Kill(cp.Pids()[controlplane.BinKubeControllerManager], syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		waitOutagesOver(t, cp, seen, controlplane.BinKubeControllerManager)
	}
	if err := syscall.Kill(cp.Pids()[controlplane.BinKubeControllerManager], syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	select {
	case <-cp.Died():
	case <-time.After(time.Minute):
		t.Fatal("the plane did not die past MaxRestarts")
	}
	if err := cp.Err(); err == nil || !strings.Contains(err.Error(), "kube-controller-manager exited early") || !strings.Contains(err.Error(), fmt.Sprintf("the limit is %d", maxRestarts)) {
		t.Errorf("Err = %v", err)
	}
}

// waitOutagesOver waits until the plane recorded an outage of name after
// the first seen ones and every outage has ended, and returns name's.
func waitOutagesOver(t *testing.T, cp *controlplane.ControlPlane, seen int, name string) controlplane.Outage {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		o := cp.Outages()
		var mine *controlplane.Outage
		over := true
		for i := seen; i < len(o); i++ {
			if o[i].Process == name && mine == nil {
				mine = &o[i]
			}
			over = over && !o[i].End.IsZero()
		}
		if mine != nil && over {
			for _, x := range o[seen:] {
				if x.Process != name {
					t.Logf("%s also exited while %s was down (%s) and was restarted", x.Process, name, x.Detail)
				}
			}
			return *mine
		}
		if cp.Err() != nil || time.Now().After(deadline) {
			t.Fatalf("%s not back within 3 minutes: outages %+v, died: %v", name, o, cp.Err())
		}
		time.Sleep(100 * time.Millisecond)
	}
}
