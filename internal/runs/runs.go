// Package runs gives every bootproof run on a cluster an identity and a
// life: a run ID that labels everything the run creates
// (contract.RunLabel), and a Lease the run renews while it lives. At its
// end a run deletes what it labelled (Run.Finish); 'bootproof cleanup'
// deletes what runs that died left (Cleanup).
//
// # When is a run alive
//
// A run is alive while its Lease bootproof-run-<id> in LeaseNamespace is
// renewed: the run renews it every RenewInterval, and it counts as alive
// until its renewTime plus leaseDurationSeconds (LeaseDuration) has
// passed. A run that was killed (SIGKILL, a lost machine) stops renewing
// and is dead one LeaseDuration later; a run without a Lease is dead. The
// Lease also records the host and PID of the run (HostAnnotation,
// PIDAnnotation) for people; liveness is decided by the renewal alone, so
// it holds across hosts and clocks within LeaseDuration of each other.
//
// # What is deleted
//
// A Deployment labelled PausedLabel=<id> is one run <id> scaled to 0 to
// pause a subject; when <id> is dead (or ends) it is scaled back to its
// PausedReplicasAnnotation and the label and annotation go. Nothing else
// of it is touched.
//
// Objects labelled contract.RunLabel=<id> belong to run <id> alone
// (Nodes and their Leases, case namespaces, NodeModulesConfigs, CSRs,
// RBAC of one run): they are deleted when <id> is dead (Cleanup) or at
// <id>'s end (Finish). Objects labelled SharedLabel are what bootproof
// installed and runs share (the NodeModulesConfig CRD and cluster roles
// when bootproof created them, not when they were there already): they
// are deleted only when no run is alive any more. An object without
// either label is never touched.
//
// Resources outside the cluster (libvirt domains and volumes) are not
// this package's: a Cleaner cleans them, given the same liveness.
package runs

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/bootproof/bootproof/contract"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// The run Lease and the labels.
const (
	// LeaseNamespace holds every run's Lease.
	LeaseNamespace = "default"
	// LeasePrefix + run ID is a run's Lease name.
	LeasePrefix = "bootproof-run-"
	// LeaseDuration is how long a run counts as alive after a renewal.
	LeaseDuration = 60 * time.Second
	// RenewInterval is how often a run renews its Lease.
	RenewInterval = 15 * time.Second
	// SharedLabel (value "true") marks objects bootproof created that
	// runs share; they go when no run is alive.
	SharedLabel = "bootproof.dev/shared"
	// PausedLabel (value: a run ID) marks a Deployment a run holds at 0
	// replicas (a subject paused by pause-subject), and
	// PausedReplicasAnnotation the replicas to give it back: a run that
	// dies holding it leaves it restorable by 'bootproof cleanup'.
	PausedLabel              = "bootproof.dev/paused-by-run"
	PausedReplicasAnnotation = "bootproof.dev/paused-replicas"
	// HostAnnotation and PIDAnnotation say where a run's process runs.
	HostAnnotation = "bootproof.dev/host"
	PIDAnnotation  = "bootproof.dev/pid"
)

// NewID returns a new run ID: 12 lowercase hex digits, valid as a label
// value and in object names.
func NewID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// Labels returns the labels of an object of run id.
func Labels(id string) map[string]string { return map[string]string{contract.RunLabel: id} }

// SharedLabels returns the labels of an object runs share.
func SharedLabels() map[string]string { return map[string]string{SharedLabel: "true"} }

// Run is one run's identity on a cluster, alive while Start's Lease is
// renewed.
type Run struct {
	ID string

	cfg    *rest.Config
	cs     kubernetes.Interface
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

// Start creates run id's Lease and renews it every RenewInterval until
// Finish (or ctx ends).
func Start(ctx context.Context, cfg *rest.Config, id string) (*Run, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: LeasePrefix + id, Namespace: LeaseNamespace, Labels: Labels(id),
			Annotations: map[string]string{HostAnnotation: host, PIDAnnotation: strconv.Itoa(os.Getpid())}},
		Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(host + "/" + strconv.Itoa(os.Getpid())),
			LeaseDurationSeconds: ptr.To(int32(LeaseDuration / time.Second)), AcquireTime: &now, RenewTime: &now},
	}
	if _, err := cs.CoordinationV1().Leases(LeaseNamespace).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		return nil, fmt.Errorf("run %s: create its lease %s/%s: %w", id, LeaseNamespace, lease.Name, err)
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	r := &Run{ID: id, cfg: cfg, cs: cs, cancel: cancel, done: make(chan struct{})}
	go r.renew(rctx)
	return r, nil
}

// Labels returns the labels of an object of this run.
func (r *Run) Labels() map[string]string { return Labels(r.ID) }

func (r *Run) renew(ctx context.Context) {
	defer close(r.done)
	t := time.NewTicker(RenewInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		leases := r.cs.CoordinationV1().Leases(LeaseNamespace)
		l, err := leases.Get(ctx, LeasePrefix+r.ID, metav1.GetOptions{})
		if err != nil {
			continue // a renewal missed; the lease is long enough for a few
		}
		l.Spec.RenewTime = ptr.To(metav1.NewMicroTime(time.Now()))
		_, _ = leases.Update(ctx, l, metav1.UpdateOptions{})
	}
}

// Finish ends the run: it stops renewing, deletes every object labelled
// with the run's ID, the shared objects when no other run is alive, and
// then the run's Lease. It returns what it deleted.
func (r *Run) Finish(ctx context.Context) ([]Deleted, error) {
	var deleted []Deleted
	var err error
	r.once.Do(func() {
		r.cancel()
		<-r.done
		deleted, err = Cleanup(ctx, r.cfg, Options{Only: r.ID})
		derr := r.cs.CoordinationV1().Leases(LeaseNamespace).Delete(ctx, LeasePrefix+r.ID, metav1.DeleteOptions{})
		if derr != nil && !apierrors.IsNotFound(derr) {
			err = errors.Join(err, fmt.Errorf("run %s: delete its lease: %w", r.ID, derr))
		}
	})
	return deleted, err
}

// alive reads every run Lease and returns the IDs of the runs alive at
// now.
func alive(ctx context.Context, cs kubernetes.Interface, now time.Time) (map[string]bool, error) {
	list, err := cs.CoordinationV1().Leases(LeaseNamespace).List(ctx, metav1.ListOptions{LabelSelector: contract.RunLabel})
	if err != nil {
		return nil, fmt.Errorf("list run leases in %s: %w", LeaseNamespace, err)
	}
	out := map[string]bool{}
	for _, l := range list.Items {
		id := l.Labels[contract.RunLabel]
		if l.Name != LeasePrefix+id || l.Spec.RenewTime == nil {
			continue
		}
		d := LeaseDuration
		if l.Spec.LeaseDurationSeconds != nil {
			d = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
		}
		if now.Before(l.Spec.RenewTime.Add(d)) {
			out[id] = true
		}
	}
	return out, nil
}
