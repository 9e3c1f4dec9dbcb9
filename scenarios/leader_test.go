package scenarios

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

func lease(ns, name, holder, rv string) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, ResourceVersion: rv}}
	if holder != "" {
		l.Spec.HolderIdentity = ptr.To(holder)
	}
	return l
}

// The follower keeps every write seen after its list: HeldAfter is the
// first one after a time that leaves a holder (a release does not count,
// a renewal by the same holder does), FirstAcquired the first Lease that
// took a holder it did not have at the list, after a time. A relist of
// what was seen is no write.
func TestLeaseFollower(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)
	clk := clocktesting.NewFakePassiveClock(t0)
	var changes []string
	f := &LeaseFollower{Clock: clk, leases: map[LeaseRef]*leaseSeen{}, OnHolder: func(ref LeaseRef, w LeaseWrite, previous string) {
		changes = append(changes, ref.String()+":"+previous+">"+w.Holder)
	}}
	at := func(d time.Duration, l *coordinationv1.Lease) {
		clk.SetTime(t0.Add(d))
		f.on(l)
	}
	op, other := LeaseRef{"ns", "op"}, LeaseRef{"kube-system", "kube-controller-manager"}
	at(0, lease("ns", "op", "old", "1"))
	at(0, lease("kube-system", "kube-controller-manager", "kcm", "5"))
	f.synced = true
	at(1*time.Second, lease("kube-system", "kube-controller-manager", "kcm", "6")) // a renewal
	at(2*time.Second, lease("ns", "op", "", "2"))                                  // released
	at(2*time.Second, lease("ns", "op", "", "2"))                                  // relisted
	at(5*time.Second, lease("ns", "op", "new", "3"))                               // taken
	at(7*time.Second, lease("ns", "op", "new", "4"))                               // renewed

	for _, tc := range []struct {
		ref   LeaseRef
		after time.Duration
		want  time.Duration // -1: none
	}{
		{op, 0, 5 * time.Second},
		{op, 1500 * time.Millisecond, 5 * time.Second},
		{op, 5 * time.Second, 7 * time.Second},
		{op, 7 * time.Second, -1},
		{other, 0, 1 * time.Second},
		{LeaseRef{"ns", "nobody"}, 0, -1},
	} {
		w, ok := f.HeldAfter(tc.ref, t0.Add(tc.after))
		if tc.want < 0 {
			if ok {
				t.Errorf("HeldAfter(%s, %s) = %v, want none", tc.ref, tc.after, w)
			}
			continue
		}
		if !ok || !w.At.Equal(t0.Add(tc.want)) {
			t.Errorf("HeldAfter(%s, %s) = %v, %v; want a write at %s", tc.ref, tc.after, w, ok, tc.want)
		}
	}
	ref, w, ok := f.FirstAcquired(t0)
	if !ok || ref != op || w.Holder != "new" || !w.At.Equal(t0.Add(5*time.Second)) {
		t.Errorf("FirstAcquired = %s %v %v, want ns/op taken by new at 5s", ref, w, ok)
	}
	if ref, _, ok := f.FirstAcquired(t0.Add(6 * time.Second)); ok {
		t.Errorf("FirstAcquired after the taking = %s, want none", ref)
	}
	want := []string{"ns/op:>old", "kube-system/kube-controller-manager:>kcm", "ns/op:old>", "ns/op:>new"}
	if len(changes) != len(want) {
		t.Fatalf("holder changes %q, want %q", changes, want)
	}
	for i := range want {
		if changes[i] != want[i] {
			t.Errorf("holder change %d = %q, want %q", i, changes[i], want[i])
		}
	}
}

// Start lists and watches through the API: the node Leases are left
// out, and a Lease created after the list is a write seen.
func TestLeaseFollowerWatches(t *testing.T) {
	cs := fake.NewClientset(lease(corev1.NamespaceNodeLease, "n0", "n0", "1"), lease("ns", "other", "x", "1"))
	f := &LeaseFollower{Clientset: cs}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := f.Start(ctx); err != nil {
		t.Fatal(err)
	}
	defer f.Stop()
	start := time.Now().Add(-time.Second)
	if _, err := cs.CoordinationV1().Leases("ns").Create(ctx, lease("ns", "op", "me", ""), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if ref, w, ok := f.FirstAcquired(start); ok {
			if ref != (LeaseRef{"ns", "op"}) || w.Holder != "me" {
				t.Fatalf("FirstAcquired = %s held by %s, want ns/op held by me", ref, w.Holder)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the Lease created after the list was not seen within 30s")
		}
		time.Sleep(50 * time.Millisecond)
	}
	f.mu.Lock()
	_, node := f.leases[LeaseRef{corev1.NamespaceNodeLease, "n0"}]
	f.mu.Unlock()
	if node {
		t.Error("a node Lease was followed")
	}
}
