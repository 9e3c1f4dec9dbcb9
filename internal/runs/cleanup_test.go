package runs

import (
	"context"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/bootproof/bootproof/contract"
)

var now = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// runLease is run id's Lease, last renewed at renewed.
func runLease(id string, renewed time.Time) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: LeasePrefix + id, Namespace: LeaseNamespace, Labels: Labels(id)},
		Spec: coordinationv1.LeaseSpec{RenewTime: ptr.To(metav1.NewMicroTime(renewed)), LeaseDurationSeconds: ptr.To(int32(LeaseDuration / time.Second))}}
}

// object is an object of gvr (namespace ns, "" for cluster-scoped)
// with labels.
func object(gvr schema.GroupVersionResource, kind, ns, name string, labels map[string]string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(gvr.GroupVersion().String())
	u.SetKind(kind)
	u.SetNamespace(ns)
	u.SetName(name)
	u.SetLabels(labels)
	return u
}

// discovered answers discovery as a cluster serving Kinds, ConfigMaps
// and Deployments (with their scale subresource) and a resource that
// cannot be deleted would.
type discovered []*metav1.APIResourceList

func (d discovered) ServerPreferredResources() ([]*metav1.APIResourceList, error) { return d, nil }

var served = discovered{
	{GroupVersion: "v1", APIResources: []metav1.APIResource{
		{Name: "nodes", Verbs: metav1.Verbs{"list", "delete"}},
		{Name: "configmaps", Namespaced: true, Verbs: metav1.Verbs{"list", "delete"}},
		{Name: "componentstatuses", Verbs: metav1.Verbs{"list", "get"}},
	}},
	{GroupVersion: "apps/v1", APIResources: []metav1.APIResource{
		{Name: "deployments", Namespaced: true, Verbs: metav1.Verbs{"list", "delete"}},
		{Name: "deployments/scale", Namespaced: true, Verbs: metav1.Verbs{"get", "update"}},
	}},
}

var (
	configMaps  = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	deployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
)

var (
	nodes        = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	namespaces   = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	clusterRoles = schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}
	crds         = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
)

// cluster holds three runs: "live" (renewed now), "dead" (renewed two
// lease durations ago) and "gone" (no Lease at all); objects of each;
// objects they share; and objects no run labelled.
func cluster(t *testing.T, leases ...*coordinationv1.Lease) (*k8sfake.Clientset, *dynamicfake.FakeDynamicClient) {
	t.Helper()
	var typed []runtime.Object
	for _, l := range leases {
		typed = append(typed, l)
	}
	listKinds := map[schema.GroupVersionResource]string{}
	for _, gvr := range append([]schema.GroupVersionResource{configMaps, deployments}, Kinds...) {
		listKinds[gvr] = "List"
	}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), listKinds,
		object(nodes, "Node", "", "node-live", Labels("live")),
		object(nodes, "Node", "", "node-dead", Labels("dead")),
		object(nodes, "Node", "", "node-gone", Labels("gone")),
		object(namespaces, "Namespace", "", "bp-dead", Labels("dead")),
		object(contract.NMCResource, contract.NMCKind, "", "node-dead", Labels("dead")),
		object(crds, "CustomResourceDefinition", "", "nodemodulesconfigs.kmm.sigs.x-k8s.io", SharedLabels()),
		object(clusterRoles, "ClusterRole", "", "bootproof:kmm", SharedLabels()),
		// What subject files' manifests made, of any kind.
		object(configMaps, "ConfigMap", "ops", "cm-dead", Labels("dead")),
		object(deployments, "Deployment", "ops", "web-gone", Labels("gone")),
		object(configMaps, "ConfigMap", "ops", "cm-live", Labels("live")),
		// Nobody's: a real node, a role someone else installed, a
		// namespace with another label, a ConfigMap.
		object(configMaps, "ConfigMap", "ops", "users", nil),
		object(nodes, "Node", "", "worker-1", nil),
		object(clusterRoles, "ClusterRole", "", "admin", map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"}),
		object(namespaces, "Namespace", "", "kube-system", nil),
	)
	return k8sfake.NewClientset(typed...), dyn
}

func names(ds []Deleted) []string {
	var out []string
	for _, d := range ds {
		out = append(out, d.Resource+"/"+d.Name)
	}
	sort.Strings(out)
	return out
}

// remaining lists the objects of gvr still in the fake cluster.
func remaining(t *testing.T, dyn *dynamicfake.FakeDynamicClient, gvr schema.GroupVersionResource) []string {
	t.Helper()
	list, err := dyn.Resource(gvr).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, u := range list.Items {
		out = append(out, u.GetName())
	}
	sort.Strings(out)
	return out
}

func TestCleanup(t *testing.T) {
	ctx := context.Background()
	live, dead := runLease("live", now.Add(-5*time.Second)), runLease("dead", now.Add(-2*LeaseDuration))
	at := func(tm time.Time) func() time.Time { return func() time.Time { return tm } }
	for _, tc := range []struct {
		name   string
		leases []*coordinationv1.Lease
		o      Options
		want   []string // deleted
	}{
		{"dead runs' objects go; the live run's and the shared ones stay", []*coordinationv1.Lease{live, dead}, Options{Now: at(now)},
			[]string{"configmaps/cm-dead", "deployments.apps/web-gone", "namespaces/bp-dead", "nodemodulesconfigs.kmm.sigs.x-k8s.io/node-dead", "nodes/node-dead", "nodes/node-gone"}},
		{"no run alive: the shared objects go too", []*coordinationv1.Lease{live, dead}, Options{Now: at(now.Add(2 * LeaseDuration))},
			[]string{"clusterroles.rbac.authorization.k8s.io/bootproof:kmm", "configmaps/cm-dead", "configmaps/cm-live",
				"customresourcedefinitions.apiextensions.k8s.io/nodemodulesconfigs.kmm.sigs.x-k8s.io", "deployments.apps/web-gone",
				"namespaces/bp-dead", "nodemodulesconfigs.kmm.sigs.x-k8s.io/node-dead", "nodes/node-dead", "nodes/node-gone", "nodes/node-live"}},
		{"a run's own end while another run lives: its objects, not the shared ones", []*coordinationv1.Lease{live, runLease("other", now)},
			Options{Only: "live", Now: at(now)}, []string{"configmaps/cm-live", "nodes/node-live"}},
		{"a run's own end when it was the last: the shared ones too", []*coordinationv1.Lease{live},
			Options{Only: "live", Now: at(now)}, []string{"clusterroles.rbac.authorization.k8s.io/bootproof:kmm", "configmaps/cm-live",
				"customresourcedefinitions.apiextensions.k8s.io/nodemodulesconfigs.kmm.sigs.x-k8s.io", "nodes/node-live"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs, dyn := cluster(t, tc.leases...)
			dry, err := cleanup(ctx, cs, dyn, served, Options{Only: tc.o.Only, Now: tc.o.Now, DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			if got := names(dry); !slices.Equal(got, tc.want) {
				t.Errorf("dry run would delete\n %v\nwant\n %v", got, tc.want)
			}
			if got := remaining(t, dyn, nodes); len(got) != 4 {
				t.Errorf("a dry run deleted nodes: %v left", got)
			}
			deleted, err := cleanup(ctx, cs, dyn, served, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if got := names(deleted); !slices.Equal(got, tc.want) {
				t.Errorf("deleted\n %v\nwant\n %v", got, tc.want)
			}
			// What no run labelled is never touched.
			for gvr, want := range map[schema.GroupVersionResource]string{nodes: "worker-1", clusterRoles: "admin", namespaces: "kube-system", configMaps: "users"} {
				if !slices.Contains(remaining(t, dyn, gvr), want) {
					t.Errorf("unlabelled %s %s was deleted", gvr.Resource, want)
				}
			}
			for _, d := range deleted {
				if strings.HasPrefix(d.Name, "node-") && d.Run == "" {
					t.Errorf("%s deleted as shared", d)
				}
			}
		})
	}
}

// A run is alive until its renewal plus the Lease's duration; a Lease
// not named for its run's label, or never renewed, keeps no run alive.
func TestAlive(t *testing.T) {
	odd := runLease("x", now)
	odd.Name = "not-a-run-lease"
	never := runLease("y", now)
	never.Spec.RenewTime = nil
	short := runLease("z", now.Add(-20*time.Second))
	short.Spec.LeaseDurationSeconds = ptr.To(int32(10))
	cs, _ := cluster(t, runLease("live", now.Add(-LeaseDuration+time.Second)), runLease("dead", now.Add(-LeaseDuration)), odd, never, short)
	got, err := alive(context.Background(), cs, now)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || !got["live"] {
		t.Errorf("alive = %v, want only live", got)
	}
}

// TestCleanupRestoresPausedDeployments: a Deployment a dead run held at 0
// replicas (PausedLabel) is scaled back to its PausedReplicasAnnotation
// and loses both marks; a live run's stays; one someone scaled since
// only loses the marks; an unmarked one at 0 is not touched.
func TestCleanupRestoresPausedDeployments(t *testing.T) {
	ctx := context.Background()
	dep := func(name, run string, replicas int32) *appsv1.Deployment {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ops"}, Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas)}}
		if run != "" {
			d.Labels = map[string]string{PausedLabel: run}
			d.Annotations = map[string]string{PausedReplicasAnnotation: "3"}
		}
		return d
	}
	cs := k8sfake.NewClientset(runLease("live", now), runLease("dead", now.Add(-2*LeaseDuration)),
		dep("held-by-dead", "dead", 0), dep("held-by-live", "live", 0), dep("scaled-since", "dead", 5), dep("users", "", 0))
	_, dyn := cluster(t)
	got, err := cleanup(ctx, cs, dyn, served, Options{Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	var actions []string
	for _, d := range got {
		if d.Action != "" {
			actions = append(actions, d.String())
		}
	}
	sort.Strings(actions)
	want := []string{"deployments.apps ops/held-by-dead (run dead): scaled back to 3 replicas", "deployments.apps ops/scaled-since (run dead): marks removed (its replicas are 5, set since)"}
	if !slices.Equal(actions, want) {
		t.Errorf("restored\n %q\nwant\n %q", actions, want)
	}
	for name, want := range map[string]struct {
		replicas int32
		marked   bool
	}{"held-by-dead": {3, false}, "held-by-live": {0, true}, "scaled-since": {5, false}, "users": {0, false}} {
		d, err := cs.AppsV1().Deployments("ops").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		_, marked := d.Labels[PausedLabel]
		_, noted := d.Annotations[PausedReplicasAnnotation]
		if *d.Spec.Replicas != want.replicas || marked != want.marked || (name != "users" && noted != want.marked) {
			t.Errorf("%s: replicas %d, marked %t, annotated %t; want %d, %t", name, *d.Spec.Replicas, marked, noted, want.replicas, want.marked)
		}
	}
}
