package scenarios

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/bootproof/bootproof/contract"
)

// collectTimeout bounds delete-nmc's wait for the garbage collector to
// begin deleting the worker pods a deleted NodeModulesConfig owned. The
// collector learns of a resource type by re-reading discovery every 30 s
// (kube-controller-manager's garbage collector), so on a cluster whose
// NodeModulesConfig CRD is new it may not act on one for that long: the
// premise of a scenario that deletes one (the collector deletes its
// worker pods under the subject) would not hold, and a subject that never
// releases them would pass.
const collectTimeout = 90 * time.Second

// awaitCollected waits until every worker pod of the case that one of the
// NodeModulesConfigs deleted (node by UID) owned has its deletion begun
// (or is gone), whoever began it: the garbage collector, or the subject
// itself. A subject can keep such a pod (its finalizer) but cannot stop
// its deletion from beginning, so the wait is the same whatever it does;
// a collector that does not begin within collectTimeout is the cluster's
// fault, never the subject's.
func (c *caseRun) awaitCollected(ctx context.Context, a Action, deleted map[types.UID]string) error {
	if c.cs == nil || len(deleted) == 0 {
		return nil // a test's engine without a cluster
	}
	start := time.Now()
	var pending, seen []string
	var last error
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, collectTimeout, true, func(ctx context.Context) (bool, error) {
		list, err := c.cs.CoreV1().Pods(c.ns).List(ctx, metav1.ListOptions{LabelSelector: contract.WorkerActionLabel})
		if err != nil {
			last = err
			return false, nil
		}
		pending = pending[:0]
		for _, p := range list.Items {
			for _, ref := range p.OwnerReferences {
				n, ok := deleted[ref.UID]
				if !ok {
					continue
				}
				what := fmt.Sprintf("%s on %s", p.Name, n)
				if !slices.Contains(seen, what) {
					seen = append(seen, what)
				}
				if p.DeletionTimestamp == nil {
					pending = append(pending, what)
				}
			}
		}
		return len(pending) == 0, nil
	})
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return ctx.Err()
	case last != nil && len(seen) == 0 && !apierrors.IsNotFound(last):
		return infra("list the worker pods of the deleted NodeModulesConfigs: %w", last)
	default:
		return infra("the garbage collector did not begin deleting the worker pods the deleted NodeModulesConfig owned within %s: %s "+
			"(is kube-controller-manager's garbage-collector-controller running, and does it serve %s?)",
			collectTimeout, strings.Join(pending, ", "), contract.NMCResource.GroupResource())
	}
	if len(seen) > 0 {
		slices.Sort(seen)
		c.obs.Action("", a.Kind, fmt.Sprintf("the deletion of the worker pods it owned began %d ms after the delete: %s",
			time.Since(start).Milliseconds(), strings.Join(seen, ", ")))
	}
	return nil
}

// awaitCollector makes sure, before a case that deletes a
// NodeModulesConfig starts its subject, that the garbage collector acts
// on NodeModulesConfig owners: it creates a ConfigMap in the case's
// namespace owned by a NodeModulesConfig that does not exist and waits
// until the collector deletes it, which it does once it has re-read
// discovery and knows the type (and, in the same step, watches it). The
// first such case of an engine waits for that (up to collectTimeout, 30 s
// or so on a cluster whose CRD is new); the next ones find it done. Were
// the collector still blind when the case deletes the NodeModulesConfig,
// awaitCollected would hold the write refusal of nmc-deleted-while-loading
// open for as long, which a correct subject, backing off, does not
// survive.
func (c *caseRun) awaitCollector(ctx context.Context) error {
	if c.cs == nil || c.e.collectorReady.Load() {
		return nil
	}
	name := "bootproof-gc-probe-" + c.id
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.ns, Labels: c.labels(),
		OwnerReferences: []metav1.OwnerReference{{APIVersion: contract.NMCResource.GroupVersion().String(), Kind: contract.NMCKind,
			Name: name, UID: types.UID(uuid.NewString())}}}}
	if _, err := c.cs.CoreV1().ConfigMaps(c.ns).Create(ctx, probe, metav1.CreateOptions{}); err != nil {
		return infra("create the garbage collector's probe ConfigMap %s/%s: %w", c.ns, name, err)
	}
	start := time.Now()
	var last error
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, collectTimeout, true, func(ctx context.Context) (bool, error) {
		_, last = c.cs.CoreV1().ConfigMaps(c.ns).Get(ctx, name, metav1.GetOptions{})
		return apierrors.IsNotFound(last), nil
	})
	switch {
	case err == nil:
	case ctx.Err() != nil:
		return ctx.Err()
	default:
		_ = c.cs.CoreV1().ConfigMaps(c.ns).Delete(context.WithoutCancel(ctx), name, metav1.DeleteOptions{})
		return infra("the garbage collector did not delete ConfigMap %s/%s, owned by a %s that does not exist, within %s (last read: %v): "+
			"it does not act on %s owners (is kube-controller-manager's garbage-collector-controller running?)",
			c.ns, name, contract.NMCKind, collectTimeout, last, contract.NMCResource.GroupResource())
	}
	c.e.collectorReady.Store(true)
	c.obs.Action("", "", fmt.Sprintf("the garbage collector acts on %s owners (its probe collected in %d ms)", contract.NMCKind, time.Since(start).Milliseconds()))
	return nil
}
