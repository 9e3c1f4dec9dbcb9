package subject

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/internal/runs"
	"github.com/bootproof/bootproof/kmm"
)

// TestApplyChangesOnlyWhatItCreated, on a real API server: an object a
// subject file names that exists and that bootproof did not create is
// refused (an InputError naming it and adopt) and left as it was; what
// ApplyFiles creates carries the run's label (a later apply of the same
// run may apply it again, another run's may not) or, for a CRD, the
// shared label; adopt applies over the stranger's object; Remove deletes
// only the object it created, by UID.
func TestApplyChangesOnlyWhatItCreated(t *testing.T) {
	cp := cptest.Start(t, controlplane.Config{})
	ctx := context.Background()
	rc := cp.RESTConfig()
	cs, err := kubernetes.NewForConfig(rc)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	theirs := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "theirs", Namespace: "default"}, Data: map[string]string{"a": "theirs"}}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, theirs, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	over := write("over.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: theirs}\ndata: {a: ours}\n")
	mine := write("mine.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: mine}\ndata: {a: ours}\n")

	// Someone else's ConfigMap: refused, unchanged.
	_, err = ApplyFiles(ctx, rc, ApplyOptions{Manifests: []string{over}, RunID: "run1", Source: "op.yaml"})
	var ie *contract.InputError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), "ConfigMap default/theirs exists and bootproof did not create it") || !strings.Contains(err.Error(), "adopt: true") {
		t.Fatalf("apply over a stranger's object: %v", err)
	}
	if cm, _ := cs.CoreV1().ConfigMaps("default").Get(ctx, "theirs", metav1.GetOptions{}); cm.Data["a"] != "theirs" {
		t.Errorf("the stranger's ConfigMap was changed: %v", cm.Data)
	}

	// Created: labelled with the run; the same run applies it again,
	// another run may not.
	a, err := ApplyFiles(ctx, rc, ApplyOptions{Manifests: []string{mine}, RunID: "run1"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(a.Created(), []string{"ConfigMap default/mine"}) {
		t.Errorf("created %v", a.Created())
	}
	if cm, _ := cs.CoreV1().ConfigMaps("default").Get(ctx, "mine", metav1.GetOptions{}); cm.Labels[contract.RunLabel] != "run1" {
		t.Errorf("created without the run's label: %v", cm.Labels)
	}
	if again, err := ApplyFiles(ctx, rc, ApplyOptions{Manifests: []string{mine}, RunID: "run1"}); err != nil || len(again.Created()) != 0 {
		t.Errorf("the same run applying its own object again: created %v, %v", again.Created(), err)
	}
	if _, err := ApplyFiles(ctx, rc, ApplyOptions{Manifests: []string{mine}, RunID: "run2"}); !errors.As(err, &ie) {
		t.Errorf("another run applying run1's object: %v", err)
	}

	// Replaced by someone else during the run: Remove leaves the new one.
	if err := cs.CoreV1().ConfigMaps("default").Delete(ctx, "mine", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "mine", Namespace: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := a.Remove(ctx, removeTimeout); err == nil || !strings.Contains(err.Error(), "was replaced by another object") {
		t.Errorf("Remove of a replaced object: %v", err)
	}
	if _, err := cs.CoreV1().ConfigMaps("default").Get(ctx, "mine", metav1.GetOptions{}); err != nil {
		t.Errorf("Remove deleted the object that replaced its own: %v", err)
	}

	// adopt: applied over, as asked.
	if _, err := ApplyFiles(ctx, rc, ApplyOptions{Manifests: []string{over}, RunID: "run1", Adopt: true}); err != nil {
		t.Fatal(err)
	}
	if cm, _ := cs.CoreV1().ConfigMaps("default").Get(ctx, "theirs", metav1.GetOptions{}); cm.Data["a"] != "ours" {
		t.Errorf("adopt did not apply: %v", cm.Data)
	}

	// CRDs: one it creates is shared (bootproof's, applied again by the
	// next subject); one that was there is refused.
	crd := func(plural string) string {
		return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: " + plural + ".example.com}\nspec:\n  group: example.com\n  scope: Namespaced\n  names: {plural: " + plural + ", singular: " + strings.TrimSuffix(plural, "s") + ", kind: " + strings.ToUpper(plural[:1]) + strings.TrimSuffix(plural[1:], "s") + "}\n  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]\n"
	}
	ours := write("widgets.yaml", crd("widgets"))
	if _, err := ApplyFiles(ctx, rc, ApplyOptions{CRDs: []string{ours}, RunID: "run1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := ApplyFiles(ctx, rc, ApplyOptions{CRDs: []string{ours}, RunID: "run2"}); err != nil {
		t.Errorf("a CRD bootproof created, applied again by another run: %v", err)
	}
	c, err := client.New(rc, client.Options{})
	if err != nil {
		t.Fatal(err)
	}
	got := &unstructured.Unstructured{}
	got.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	if err := c.Get(ctx, client.ObjectKey{Name: "widgets.example.com"}, got); err != nil || got.GetLabels()[runs.SharedLabel] != "true" {
		t.Errorf("created CRD: labels %v, %v", got.GetLabels(), err)
	}
	// One that was there and serves what the file's asks for is used as it
	// is: not applied over, not labelled.
	gadgets := write("gadgets.yaml", crd("gadgets"))
	if err := c.Create(ctx, mustCRD(t, crd("gadgets"))); err != nil {
		t.Fatal(err)
	}
	if _, err := ApplyFiles(ctx, rc, ApplyOptions{CRDs: []string{gadgets}, RunID: "run1"}); err != nil {
		t.Errorf("a CRD someone else installed, serving what the file asks for: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKey{Name: "gadgets.example.com"}, got); err != nil || len(got.GetLabels()) != 0 || got.GetGeneration() != 1 {
		t.Errorf("someone else's CRD changed: labels %v, generation %d, %v", got.GetLabels(), got.GetGeneration(), err)
	}
	// One that lacks fields is refused, naming them, unless the file says
	// its operator can do without them.
	typed := func(fields string) string {
		return strings.Replace(crd("sprockets"), "{type: object, x-kubernetes-preserve-unknown-fields: true}",
			"{type: object, properties: {spec: {type: object, properties: {"+fields+"}}}}", 1)
	}
	if err := c.Create(ctx, mustCRD(t, typed("size: {type: integer}"))); err != nil {
		t.Fatal(err)
	}
	sprockets := write("sprockets.yaml", typed("size: {type: integer}, color: {type: string}, tags: {type: array, items: {type: string}}"))
	_, err = ApplyFiles(ctx, rc, ApplyOptions{CRDs: []string{sprockets}, RunID: "run1"})
	if !errors.As(err, &ie) || ie.Field.String() != "crds" || !strings.Contains(err.Error(), "CustomResourceDefinition sprockets.example.com exists") ||
		!strings.Contains(err.Error(), "lacks v1: spec.color; v1: spec.tags") {
		t.Errorf("a CRD someone else installed, lacking two fields: %v", err)
	}
	if _, err := ApplyFiles(ctx, rc, ApplyOptions{CRDs: []string{sprockets}, CRDOptionalFields: []string{"spec.color", "spec.tags"}, RunID: "run1"}); err != nil {
		t.Errorf("the same, both fields optional: %v", err)
	}
	_, err = ApplyFiles(ctx, rc, ApplyOptions{CRDs: []string{sprockets}, CRDOptionalFields: []string{"spec.colour"}, RunID: "run1"})
	if !errors.As(err, &ie) || ie.Field.String() != "crdOptionalFields[0]" || !strings.Contains(err.Error(), "no served version of the file's CRDs has this field") {
		t.Errorf("an optional field no CRD of the file has: %v", err)
	}
}

// mustCRD decodes one YAML document into an object to create.
func mustCRD(t *testing.T, data string) client.Object {
	t.Helper()
	objs, err := kmm.DecodeObjects([]byte(data), "crd.yaml")
	if err != nil || len(objs) != 1 {
		t.Fatalf("decode: %v (%d objects)", err, len(objs))
	}
	return objs[0]
}
