package runs

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/bootproof/bootproof/contract"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
)

// Kinds are the resources a run's objects may be of, in the order they
// are deleted: what lives in a namespace or on a node first, the
// NodeModulesConfig CRD last (it takes every NodeModulesConfig with it).
var Kinds = []schema.GroupVersionResource{
	contract.NMCResource,
	{Version: "v1", Resource: "nodes"},
	{Group: "coordination.k8s.io", Version: "v1", Resource: "leases"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"},
	{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
	{Group: "certificates.k8s.io", Version: "v1", Resource: "certificatesigningrequests"},
	{Version: "v1", Resource: "namespaces"},
	{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"},
}

// Discovery lists the resources a cluster serves, in their preferred
// versions (client-go's discovery client).
type Discovery interface {
	ServerPreferredResources() ([]*metav1.APIResourceList, error)
}

// servedKinds are the resources the cluster serves that a run's objects
// may be of beyond Kinds: what a subject file's manifests create (a
// Deployment, a ConfigMap, a custom resource, ...), labelled with the run
// like every object a run makes. Only resources that can be listed and
// deleted count; a group the server fails to describe (an unavailable
// aggregated API) is left out, the others kept.
func servedKinds(disco Discovery) ([]schema.GroupVersionResource, error) {
	lists, err := disco.ServerPreferredResources()
	if err != nil && !discovery.IsGroupDiscoveryFailedError(err) {
		return nil, fmt.Errorf("discover the cluster's resources: %w", err)
	}
	var out []schema.GroupVersionResource
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			gvr := gv.WithResource(r.Name)
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") || !slices.Contains(r.Verbs, "delete") ||
				slices.ContainsFunc(Kinds, func(k schema.GroupVersionResource) bool { return k.GroupResource() == gvr.GroupResource() }) {
				continue
			}
			out = append(out, gvr)
		}
	}
	slices.SortFunc(out, func(a, b schema.GroupVersionResource) int { return strings.Compare(a.String(), b.String()) })
	return out, nil
}

// Options choose what Cleanup deletes.
type Options struct {
	// Only, when set, deletes run Only's objects whether it is alive or
	// not (a run's own end), and the shared objects when no other run is
	// alive. Empty: every dead run's objects, and the shared objects when
	// no run is alive.
	Only string
	// DryRun lists what would be deleted and deletes nothing.
	DryRun bool
	// Now is the time liveness is judged at; default time.Now.
	Now func() time.Time
}

// Deleted is one object Cleanup deleted (or, with DryRun, would delete).
type Deleted struct {
	Resource  string // e.g. nodes, leases.coordination.k8s.io
	Namespace string
	Name      string
	// Run is the run the object belonged to; empty for a shared object.
	Run string
	// Action, when set, is what was done instead of a delete (a paused
	// Deployment scaled back).
	Action string
}

func (d Deleted) String() string {
	name := d.Name
	if d.Namespace != "" {
		name = d.Namespace + "/" + name
	}
	owner := "shared"
	if d.Run != "" {
		owner = "run " + d.Run
	}
	if d.Action != "" {
		return fmt.Sprintf("%s %s (%s): %s", d.Resource, name, owner, d.Action)
	}
	return fmt.Sprintf("%s %s (%s)", d.Resource, name, owner)
}

// Cleaner cleans what runs left outside the cluster (e.g. libvirt
// domains and volumes named or tagged with a run ID). Clean deletes what
// belongs to runs for which alive is false and returns it.
type Cleaner interface {
	Name() string
	Clean(ctx context.Context, alive func(run string) bool) ([]Deleted, error)
}

// Cleanup deletes the objects of dead runs (or of run o.Only) from the
// cluster of cfg, and the shared objects when no run (other than o.Only)
// is alive; then each Cleaner cleans outside the cluster with the same
// liveness. A resource the cluster does not serve (no NodeModulesConfig
// CRD) is skipped; every other error is returned after the rest was
// tried.
func Cleanup(ctx context.Context, cfg *rest.Config, o Options, cleaners ...Cleaner) ([]Deleted, error) {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return cleanup(ctx, cs, dyn, cs.Discovery(), o, cleaners...)
}

// cleanup is Cleanup with its clients.
func cleanup(ctx context.Context, cs kubernetes.Interface, dyn dynamic.Interface, disco Discovery, o Options, cleaners ...Cleaner) ([]Deleted, error) {
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	live, err := alive(ctx, cs, now())
	if err != nil {
		return nil, err
	}
	isAlive := func(run string) bool { return live[run] && run != o.Only }
	doomed := func(run string) bool { return run == o.Only || (o.Only == "" && !live[run]) }
	anyAlive := false
	for run := range live {
		anyAlive = anyAlive || run != o.Only
	}
	var out []Deleted
	var errs []error
	// A subject's objects of any kind first, then Kinds in their order
	// (namespaces and the CRD last).
	kinds, err := servedKinds(disco)
	if err != nil {
		errs = append(errs, err)
	}
	for _, gvr := range append(kinds, Kinds...) {
		d, err := sweep(ctx, dyn, gvr, doomed, !anyAlive, o.DryRun)
		out = append(out, d...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	restored, err := restorePaused(ctx, cs, doomed, o.DryRun)
	out = append(out, restored...)
	if err != nil {
		errs = append(errs, err)
	}
	for _, c := range cleaners {
		d, err := c.Clean(ctx, isAlive)
		out = append(out, d...)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", c.Name(), err))
		}
	}
	return out, errors.Join(errs...)
}

// restorePaused scales back the Deployments doomed runs hold at 0
// replicas (PausedLabel), to their PausedReplicasAnnotation, and removes
// both marks. A Deployment whose replicas someone changed since (not 0
// any more) only loses the marks.
func restorePaused(ctx context.Context, cs kubernetes.Interface, doomed func(string) bool, dryRun bool) ([]Deleted, error) {
	list, err := cs.AppsV1().Deployments("").List(ctx, metav1.ListOptions{LabelSelector: PausedLabel})
	if err != nil {
		return nil, fmt.Errorf("list paused deployments: %w", err)
	}
	var out []Deleted
	var errs []error
	for _, dep := range list.Items {
		run := dep.Labels[PausedLabel]
		if !doomed(run) {
			continue
		}
		replicas, err := strconv.ParseInt(dep.Annotations[PausedReplicasAnnotation], 10, 32)
		if err != nil || replicas < 1 {
			errs = append(errs, fmt.Errorf("deployment %s/%s paused by run %s: annotation %s=%q is not a replica count: scale it back by hand",
				dep.Namespace, dep.Name, run, PausedReplicasAnnotation, dep.Annotations[PausedReplicasAnnotation]))
			continue
		}
		d := Deleted{Resource: "deployments.apps", Namespace: dep.Namespace, Name: dep.Name, Run: run,
			Action: fmt.Sprintf("scaled back to %d replicas", replicas)}
		patch := fmt.Sprintf(`{"metadata":{"labels":{%q:null},"annotations":{%q:null}},"spec":{"replicas":%d}}`, PausedLabel, PausedReplicasAnnotation, replicas)
		if dep.Spec.Replicas != nil && *dep.Spec.Replicas != 0 {
			d.Action = fmt.Sprintf("marks removed (its replicas are %d, set since)", *dep.Spec.Replicas)
			patch = fmt.Sprintf(`{"metadata":{"labels":{%q:null},"annotations":{%q:null}}}`, PausedLabel, PausedReplicasAnnotation)
		}
		if !dryRun {
			_, err := cs.AppsV1().Deployments(dep.Namespace).Patch(ctx, dep.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			if apierrors.IsNotFound(err) {
				continue
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("restore %s: %w", d, err))
				continue
			}
		}
		out = append(out, d)
	}
	return out, errors.Join(errs...)
}

// sweep deletes the objects of gvr that belong to a doomed run, and the
// shared ones when shared is set.
func sweep(ctx context.Context, dyn dynamic.Interface, gvr schema.GroupVersionResource, doomed func(string) bool, shared, dryRun bool) ([]Deleted, error) {
	res := gvr.Resource
	if gvr.Group != "" {
		res += "." + gvr.Group
	}
	var out []Deleted
	var errs []error
	for _, sel := range []string{contract.RunLabel, SharedLabel + "=true"} {
		if sel != contract.RunLabel && !shared {
			continue
		}
		list, err := dyn.Resource(gvr).List(ctx, metav1.ListOptions{LabelSelector: sel})
		if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
			return out, nil // not served here
		}
		if err != nil {
			return out, fmt.Errorf("list %s: %w", res, err)
		}
		for _, u := range list.Items {
			run := u.GetLabels()[contract.RunLabel]
			if sel == contract.RunLabel && !doomed(run) {
				continue
			}
			if u.GetDeletionTimestamp() != nil {
				continue
			}
			d := Deleted{Resource: res, Namespace: u.GetNamespace(), Name: u.GetName(), Run: run}
			if !dryRun {
				err := dyn.Resource(gvr).Namespace(u.GetNamespace()).Delete(ctx, u.GetName(), metav1.DeleteOptions{
					Preconditions: &metav1.Preconditions{UID: ptr.To(u.GetUID())}})
				if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
					continue
				}
				if err != nil {
					errs = append(errs, fmt.Errorf("delete %s: %w", d, err))
					continue
				}
			}
			out = append(out, d)
		}
	}
	return out, errors.Join(errs...)
}
