package subject

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/go-logr/logr"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/internal/runs"
	"github.com/bootproof/bootproof/kmm"
	"github.com/bootproof/bootproof/scenarios/fileformat"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// FieldManager is the server-side apply field manager of what a subject
// file asks the harness to apply.
const FieldManager = "bootproof"

// crdTimeout bounds the wait for an applied CRD to be established.
const crdTimeout = time.Minute

// manifestObject is one document of a manifest file.
type manifestObject struct {
	obj    *unstructured.Unstructured
	source string // file and document number, for errors
}

// applyAll applies f's CRDs and manifests for run runID; see ApplyFiles.
func applyAll(ctx context.Context, rc *rest.Config, f *File, runID string) (*Applied, error) {
	a, err := ApplyFiles(ctx, rc, ApplyOptions{CRDs: f.CRDs, CRDOptionalFields: f.CRDOptionalFields, Manifests: f.Manifests, RunID: runID, Adopt: f.Adopt, Source: f.Path})
	if err != nil {
		return a, fmt.Errorf("subject %s: %w", f.Name, err)
	}
	return a, nil
}

// Applied is what ApplyFiles created of the manifests: the objects that
// did not exist before it applied them, in the order applied. CRDs are
// not among them: they outlive a subject (other subjects, and the
// NodeModulesConfigs of the run, use them).
type Applied struct {
	c       client.Client
	created []*unstructured.Unstructured
}

// Created names the objects Remove deletes ("Deployment ns/name").
func (a *Applied) Created() []string {
	if a == nil {
		return nil
	}
	var out []string
	for _, u := range a.created {
		out = append(out, objectName(u))
	}
	return out
}

func objectName(u *unstructured.Unstructured) string {
	if u.GetNamespace() == "" {
		return u.GetKind() + " " + u.GetName()
	}
	return u.GetKind() + " " + u.GetNamespace() + "/" + u.GetName()
}

// Remove deletes the objects ApplyFiles created, last first, in the
// foreground (a Deployment goes only once its pods are gone), and waits
// until each is gone, at most timeout in all. Each delete carries the
// created object's UID as a precondition: an object deleted and created
// again by someone else meanwhile is left alone. Objects that existed
// before ApplyFiles are left as they are.
func (a *Applied) Remove(ctx context.Context, timeout time.Duration) error {
	if a == nil || len(a.created) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var errs []error
	for i := len(a.created) - 1; i >= 0; i-- {
		u := a.created[i]
		uid := u.GetUID()
		err := a.c.Delete(ctx, u, client.PropagationPolicy(metav1.DeletePropagationForeground), client.Preconditions{UID: &uid})
		switch {
		case apierrors.IsConflict(err):
			errs = append(errs, fmt.Errorf("%s was replaced by another object (not UID %s) during the run: left as it is", objectName(u), uid))
			continue
		case err != nil && !apierrors.IsNotFound(err):
			errs = append(errs, fmt.Errorf("delete %s: %w", objectName(u), err))
			continue
		}
		key := client.ObjectKeyFromObject(u)
		err = wait.PollUntilContextCancel(ctx, 250*time.Millisecond, true, func(ctx context.Context) (bool, error) {
			probe := &unstructured.Unstructured{}
			probe.SetGroupVersionKind(u.GroupVersionKind())
			err := a.c.Get(ctx, key, probe)
			return apierrors.IsNotFound(err) || (err == nil && probe.GetUID() != uid), nil
		})
		if err != nil {
			errs = append(errs, fmt.Errorf("%s still there after %s", objectName(u), timeout))
		}
	}
	return errors.Join(errs...)
}

// ApplyOptions say what ApplyFiles applies and for whom.
type ApplyOptions struct {
	// CRDs and Manifests are YAML or JSON files of one or more
	// documents, or directories standing for their *.yaml, *.yml and
	// *.json files.
	CRDs, Manifests []string
	// RunID labels (contract.RunLabel) the manifests' objects created,
	// and lets a later subject of the same run apply them again.
	RunID string
	// CRDOptionalFields are fields of the CRDs' schemas the operator can
	// do without (File.CRDOptionalFields).
	CRDOptionalFields []string
	// Adopt allows applying over objects bootproof did not create.
	Adopt bool
	// Source names the subject file in errors.
	Source string
}

// ApplyFiles applies, server-side with field manager FieldManager, the
// CustomResourceDefinitions of o.CRDs (and waits until they are
// established), then the objects of o.Manifests, Namespaces first.
//
// It changes nothing it did not create: an object that exists is applied
// over only when bootproof made it — a CRD labelled runs.SharedLabel
// (what bootproof installs and runs share; the CRDs it creates here get
// the label), a manifest object labelled with this run — or when
// o.Adopt is set; any other existing object is an error naming it, and
// nothing after it is applied.
//
// The returned Applied holds the manifests' objects it created, for
// Remove; it is non-nil whenever a client could be made, on error too,
// so what was created before the error can be removed.
func ApplyFiles(ctx context.Context, rc *rest.Config, o ApplyOptions) (*Applied, error) {
	if len(o.CRDs) == 0 && len(o.Manifests) == 0 {
		return nil, nil
	}
	c, err := client.New(rc, client.Options{})
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	applied := &Applied{c: c}
	defs, err := readManifests(o.CRDs)
	if err != nil {
		return applied, fmt.Errorf("crds: %w", err)
	}
	for _, m := range defs {
		if m.obj.GetKind() != "CustomResourceDefinition" {
			return applied, fmt.Errorf("crds: %s is not a CustomResourceDefinition (put it under manifests)", m.source)
		}
	}
	if defs, err = existingCRDs(ctx, c, defs, o); err != nil {
		return applied, fmt.Errorf("crds: %w", err)
	}
	if err := apply(ctx, c, defs, applyOwner{label: runs.SharedLabel, value: "true", adopt: o.Adopt, source: o.Source}, nil); err != nil {
		return applied, fmt.Errorf("crds: %w", err)
	}
	for _, m := range defs {
		if err := kmm.WaitEstablished(ctx, c, m.obj.GetName(), crdTimeout); err != nil {
			return applied, fmt.Errorf("crds: %s: %w", m.source, err)
		}
	}
	objs, err := readManifests(o.Manifests)
	if err != nil {
		return applied, fmt.Errorf("manifests: %w", err)
	}
	// Namespaces first, so the objects in them can be created.
	slices.SortStableFunc(objs, func(a, b manifestObject) int {
		return boolRank(a.obj.GetKind() != "Namespace") - boolRank(b.obj.GetKind() != "Namespace")
	})
	own := applyOwner{label: contract.RunLabel, value: o.RunID, adopt: o.Adopt, source: o.Source}
	if err := apply(ctx, c, objs, own, &applied.created); err != nil {
		return applied, fmt.Errorf("manifests: %w", err)
	}
	return applied, nil
}

// existingCRDs returns the CRDs of defs to apply: without the ones that
// exist on the cluster, were not created by bootproof and serve what
// the file's CRD asks for (every served version, the status subresource
// and every field but o.CRDOptionalFields): those are used as they are,
// and the optional fields they prune are logged. One that lacks more is
// an error naming what it lacks, unless o.Adopt lets bootproof apply
// over it. Every optional field must be one of the CRDs' fields.
func existingCRDs(ctx context.Context, c client.Client, defs []manifestObject, o ApplyOptions) ([]manifestObject, error) {
	for i, f := range o.CRDOptionalFields {
		if !slices.ContainsFunc(defs, func(m manifestObject) bool { return declares(m.obj, f) }) {
			return nil, &contract.InputError{Field: field.NewPath("crdOptionalFields").Index(i), Value: f,
				Reason: fmt.Sprintf("%s: no served version of the file's CRDs has this field; give a field path of their schemas, e.g. status.modules[].lastTransitionTime", o.Source)}
		}
	}
	log := logr.FromContextOrDiscard(ctx)
	var out []manifestObject
	for _, m := range defs {
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(m.obj.GroupVersionKind())
		err := c.Get(ctx, client.ObjectKeyFromObject(m.obj), cur)
		switch {
		case apierrors.IsNotFound(err):
			out = append(out, m)
			continue
		case err != nil:
			return nil, fmt.Errorf("%s: get %s: %w", m.source, objectName(m.obj), err)
		case o.Adopt || cur.GetLabels()[runs.SharedLabel] == "true":
			out = append(out, m)
			continue
		}
		lack := compareCRD(cur, m.obj, o.CRDOptionalFields)
		if !lack.none() {
			return nil, &contract.InputError{Field: field.NewPath("crds"), Value: o.Source,
				Reason: fmt.Sprintf("%s: %s exists, bootproof did not create it, and it %s: the operator would not get what its CRD asks for. Install a CRD that serves it, list in crdOptionalFields the fields the operator can do without, or set adopt: true to apply the file's CRD over it (it then stays changed after the run)",
					m.source, objectName(m.obj), lack.describe())}
		}
		log.Info("CRD exists and serves what the subject file asks for: used as it is", "crd", cur.GetName(), "source", m.source)
		if len(lack.Optional) > 0 {
			log.Info("the cluster's CRD prunes fields the subject file marks optional: the operator must do without them", "crd", cur.GetName(), "pruned", lack.optionalSummary())
		}
		// Wait for it as for one applied.
		if err := kmm.WaitEstablished(ctx, c, cur.GetName(), crdTimeout); err != nil {
			return nil, fmt.Errorf("%s: %w", m.source, err)
		}
	}
	return out, nil
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// readManifests reads every document of the files given, a directory
// standing for its *.yaml, *.yml and *.json files in name order.
func readManifests(paths []string) ([]manifestObject, error) {
	var out []manifestObject
	for _, p := range paths {
		files := []string{p}
		if st, err := os.Stat(p); err != nil {
			return nil, err
		} else if st.IsDir() {
			entries, err := os.ReadDir(p)
			if err != nil {
				return nil, err
			}
			files = files[:0]
			for _, e := range entries {
				ext := filepath.Ext(e.Name())
				if !e.IsDir() && (ext == ".yaml" || ext == ".yml" || ext == ".json") {
					files = append(files, filepath.Join(p, e.Name()))
				}
			}
			if len(files) == 0 {
				return nil, fmt.Errorf("%s: no .yaml, .yml or .json files", p)
			}
		}
		for _, file := range files {
			objs, err := decodeManifest(file)
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
		}
	}
	return out, nil
}

// maxManifestSize bounds a manifest file (CRDs are the largest: upstream
// KMM's are a few hundred KiB).
const maxManifestSize = 16 << 20

func decodeManifest(file string) ([]manifestObject, error) {
	data, err := fileformat.ReadInputFile(file, maxManifestSize)
	if err != nil {
		return nil, err
	}
	objs, err := kmm.DecodeObjects(data, file)
	if err != nil {
		return nil, err
	}
	out := make([]manifestObject, len(objs))
	for i, u := range objs {
		out[i] = manifestObject{obj: u, source: fmt.Sprintf("%s (%s %s)", file, u.GetKind(), u.GetName())}
		if u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("%s: apiVersion is required", out[i].source)
		}
		if strings.HasSuffix(u.GetKind(), "List") {
			return nil, fmt.Errorf("%s: give the items of a %s as separate documents", out[i].source, u.GetKind())
		}
	}
	return out, nil
}

// applyOwner is who may apply over an existing object: one carrying
// label=value is bootproof's; with adopt, any.
type applyOwner struct {
	label, value string
	adopt        bool
	// source is the subject file, for errors.
	source string
}

// ours reports whether an existing object is bootproof's to apply over.
func (o applyOwner) ours(cur *unstructured.Unstructured) bool {
	return o.value != "" && cur.GetLabels()[o.label] == o.value
}

// apply applies objs server-side; a namespaced object without a
// namespace goes to "default", as kubectl does. An object that does not
// exist is created carrying own's label; one that exists is applied over
// only when own says it is bootproof's, or with adopt; else it is an
// error naming it. With created set, the objects created are appended to
// it (with their UIDs, for Remove).
func apply(ctx context.Context, c client.Client, objs []manifestObject, own applyOwner, created *[]*unstructured.Unstructured) error {
	for _, m := range objs {
		u := m.obj
		namespaced, err := c.IsObjectNamespaced(u)
		if err != nil {
			return fmt.Errorf("%s: %s %s: %w", m.source, u.GetAPIVersion(), u.GetKind(), err)
		}
		if namespaced && u.GetNamespace() == "" {
			u.SetNamespace("default")
		}
		cur := &unstructured.Unstructured{}
		cur.SetGroupVersionKind(u.GroupVersionKind())
		err = c.Get(ctx, client.ObjectKeyFromObject(u), cur)
		isNew := apierrors.IsNotFound(err)
		switch {
		case isNew:
		case err != nil:
			return fmt.Errorf("%s: get %s: %w", m.source, objectName(u), err)
		case !own.ours(cur) && !own.adopt:
			return &contract.InputError{Field: field.NewPath("adopt"), Value: own.source,
				Reason: fmt.Sprintf("%s: %s exists and bootproof did not create it: bootproof changes nothing it did not create on a cluster; delete it, give the file's object another name, or set adopt: true in the subject file to apply over it (it then stays changed after the run)", m.source, objectName(u))}
		}
		if isNew || own.ours(cur) {
			if own.value != "" {
				labels := u.GetLabels()
				if labels == nil {
					labels = map[string]string{}
				}
				labels[own.label] = own.value
				u.SetLabels(labels)
			}
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("%s: apply %s: %w", m.source, objectName(u), err)
		}
		if isNew && created != nil {
			after := &unstructured.Unstructured{}
			after.SetGroupVersionKind(u.GroupVersionKind())
			if err := c.Get(ctx, client.ObjectKeyFromObject(u), after); err != nil {
				return fmt.Errorf("%s: get %s after creating it: %w", m.source, objectName(u), err)
			}
			*created = append(*created, after)
		}
	}
	return nil
}
