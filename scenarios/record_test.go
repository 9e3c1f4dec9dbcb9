package scenarios

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// A Record is a copy: what the observer sees later does not change it.
func TestRecordIsACopy(t *testing.T) {
	o := newObserver(t0, []string{"n0"}, scriptedBackend{})
	node := func(ready corev1.ConditionStatus, boot string) {
		o.onNode(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n0"}, Status: corev1.NodeStatus{
			Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}, NodeInfo: corev1.NodeSystemInfo{BootID: boot}}})
	}
	node(corev1.ConditionTrue, "a")
	r := o.Record()
	node(corev1.ConditionUnknown, "b")
	if n := r.Nodes["n0"]; len(n.NotReadyAt) != 0 || len(n.BootSeen) != 1 {
		t.Errorf("record changed after it was taken: %+v", n)
	}
	if n := o.Record().Nodes["n0"]; len(n.NotReadyAt) != 1 || len(n.BootSeen) != 2 {
		t.Errorf("a new record misses the later events: %+v", n)
	}
}
