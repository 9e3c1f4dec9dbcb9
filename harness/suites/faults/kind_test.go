package faults_test

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/bootproof/bootproof/harness/cluster"
	"github.com/bootproof/bootproof/internal/backend"
	"github.com/bootproof/bootproof/internal/subject"
)

// envKindImage names the kind node image of TestKindControlPlaneFaults
// ('make e2e-kind' sets it to the image it runs on).
const envKindImage = "BOOTPROOF_KIND_IMAGE"

// TestKindControlPlaneFaults freezes (docker pause) or kills (docker kill)
// a kind cluster's control-plane container in the middle of a case: the
// API server, etcd and kind's own kube-controller-manager all stop with
// it. The case must end as an error naming the cluster fault, never as a
// verdict on the subject.
func TestKindControlPlaneFaults(t *testing.T) {
	if os.Getenv(envFaults) != "1" {
		t.Skipf("the fault-injection suite runs with 'make test-faults' and 'make e2e-kind' (%s=1)", envFaults)
	}
	image := os.Getenv(envKindImage)
	if image == "" {
		t.Skipf("needs a kind node image in %s: 'make e2e-kind' runs this test on the image it built or chose", envKindImage)
	}
	for _, fault := range []struct {
		name   string
		inject func(t *testing.T, container string)
	}{
		{"docker pause of the control-plane container for 15s", func(t *testing.T, c string) {
			docker(t, "pause", c)
			time.Sleep(15 * time.Second)
			docker(t, "unpause", c)
		}},
		{"docker kill of the control-plane container", func(t *testing.T, c string) { docker(t, "kill", c) }},
	} {
		t.Run(fault.name, func(t *testing.T) {
			k, err := cluster.StartKind(context.Background(), cluster.KindConfig{Image: image, GracePeriod: 10 * time.Second, MonitorPeriod: time.Second})
			if err != nil {
				t.Fatalf("start kind: %v", err)
			}
			t.Cleanup(func() {
				if err := k.Stop(false); err != nil {
					t.Errorf("delete kind cluster %s: %v", k.ClusterName(), err)
				}
			})
			subj, _ := subject.New(subject.BootID, k)
			c := runCase(t, k, &backend.Fake{Cluster: k}, scenario(t, "fault-window"), subj, "boot", func(string) {
				fault.inject(t, k.ClusterName()+"-control-plane")
			})
			record(t, "kind: "+fault.name, c, "cluster fault during the case", "kube-apiserver")
		})
	}
}

func docker(t *testing.T, args ...string) {
	t.Helper()
	if out, err := exec.Command("docker", args...).CombinedOutput(); err != nil {
		t.Errorf("docker %v: %v: %s", args, err, out)
	}
}
