package detect_test

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kmmv1beta1 "github.com/bootproof/bootproof/kmm/api/v1beta1"
	"github.com/bootproof/bootproof/kmm/detect"
)

var (
	t0       = time.Date(2026, 1, 2, 3, 4, 0, 0, time.UTC)
	bootUp   = metav1.NewTime(t0)                       // node became Ready
	loadedAt = metav1.NewTime(t0.Add(30 * time.Second)) // module loaded
	after    = metav1.NewTime(t0.Add(2 * time.Minute))  // a later Ready transition
)

func node(bootID string, ready corev1.ConditionStatus, readySince metav1.Time) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}
	n.Status.NodeInfo.BootID = bootID
	if ready != "" {
		n.Status.Conditions = []corev1.NodeCondition{
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastTransitionTime: after},
			{Type: corev1.NodeReady, Status: ready, LastTransitionTime: readySince},
		}
	}
	return n
}

func status(bootID string, at metav1.Time) *kmmv1beta1.NodeModuleStatus {
	return &kmmv1beta1.NodeModuleStatus{
		ModuleItem:         kmmv1beta1.ModuleItem{Name: "m", Namespace: "ns"},
		BootID:             bootID,
		LastTransitionTime: at,
	}
}

func TestDetectors(t *testing.T) {
	tests := []struct {
		name         string
		node         *corev1.Node
		status       *kmmv1beta1.NodeModuleStatus
		bootid       bool
		legacy       bool
		reasonBootID string
	}{
		{
			name:   "steady state: same boot, Ready since before the load",
			node:   node("A", corev1.ConditionTrue, bootUp),
			status: status("A", loadedAt),
			bootid: false, legacy: false, reasonBootID: "still in boot A",
		},
		{
			name:   "fast reboot: Ready stays True, boot ID changes",
			node:   node("B", corev1.ConditionTrue, bootUp),
			status: status("A", loadedAt),
			bootid: true, legacy: false, reasonBootID: "from A to B",
		},
		{
			name:   "slow reboot: NotReady and back, boot ID changes",
			node:   node("B", corev1.ConditionTrue, after),
			status: status("A", loadedAt),
			bootid: true, legacy: true, reasonBootID: "from A to B",
		},
		{
			name:   "network blip: Ready went Unknown and back, same boot ID",
			node:   node("A", corev1.ConditionTrue, after),
			status: status("A", loadedAt),
			bootid: false, legacy: true, reasonBootID: "still in boot A",
		},
		{
			name:   "rebooted but not Ready yet (Unknown)",
			node:   node("B", corev1.ConditionUnknown, after),
			status: status("A", loadedAt),
			bootid: false, legacy: false, reasonBootID: "not Ready (Ready=Unknown)",
		},
		{
			name:   "rebooted but not Ready yet (False)",
			node:   node("B", corev1.ConditionFalse, after),
			status: status("A", loadedAt),
			bootid: false, legacy: false, reasonBootID: "not Ready (Ready=False)",
		},
		{
			name:   "no Ready condition yet",
			node:   node("B", "", metav1.Time{}),
			status: status("A", loadedAt),
			bootid: false, legacy: false, reasonBootID: "no Ready condition",
		},
		{
			name:   "node reports no boot ID",
			node:   node("", corev1.ConditionTrue, bootUp),
			status: status("A", loadedAt),
			bootid: false, legacy: false, reasonBootID: "no boot ID",
		},
		{
			name:   "status without a recorded boot (older controller)",
			node:   node("A", corev1.ConditionTrue, bootUp),
			status: status("", loadedAt),
			bootid: true, legacy: false, reasonBootID: "no boot recorded",
		},
		{
			name:   "Ready transition in the same second as the load",
			node:   node("A", corev1.ConditionTrue, loadedAt),
			status: status("A", loadedAt),
			bootid: false, legacy: false, reasonBootID: "still in boot A",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			for _, d := range []struct {
				det  detect.Detector
				want bool
			}{{detect.BootIDDetector{}, tc.bootid}, {detect.LegacyDetector{}, tc.legacy}} {
				before := tc.status.DeepCopy()
				nodeBefore := tc.node.DeepCopy()
				v := d.det.Rebooted(tc.node, tc.status)
				if v.Rebooted != d.want {
					t.Errorf("%s: Rebooted = %v (%s), want %v", d.det.Name(), v.Rebooted, v.Reason, d.want)
				}
				if v.Reason == "" {
					t.Errorf("%s: empty reason", d.det.Name())
				}
				// Only a boot-tracking verdict on an entry without a
				// recorded boot is unrecorded.
				if want := d.det.Name() == detect.BootID && v.Rebooted && tc.status.BootID == ""; v.Unrecorded != want {
					t.Errorf("%s: Unrecorded = %v, want %v", d.det.Name(), v.Unrecorded, want)
				}
				if d.det.Name() == detect.BootID && !strings.Contains(v.Reason, tc.reasonBootID) {
					t.Errorf("bootid: reason %q does not contain %q", v.Reason, tc.reasonBootID)
				}
				if before.BootID != tc.status.BootID || !before.LastTransitionTime.Equal(&tc.status.LastTransitionTime) ||
					nodeBefore.Status.NodeInfo.BootID != tc.node.Status.NodeInfo.BootID {
					t.Errorf("%s changed its inputs", d.det.Name())
				}
			}
		})
	}
}

func TestByName(t *testing.T) {
	for _, name := range detect.Names {
		d, err := detect.ByName(name)
		if err != nil {
			t.Fatalf("ByName(%q): %v", name, err)
		}
		if d.Name() != name {
			t.Errorf("ByName(%q).Name() = %q", name, d.Name())
		}
		if !detect.Known(name) {
			t.Errorf("Known(%q) = false", name)
		}
	}
	_, err := detect.ByName("ready")
	if err == nil {
		t.Fatal("ByName(\"ready\") succeeded")
	}
	for _, w := range []string{`"ready"`, "bootid", "legacy"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not contain %q", err, w)
		}
	}
	if detect.Names[0] != detect.BootID {
		t.Errorf("default detector = %q, want %q", detect.Names[0], detect.BootID)
	}
}
