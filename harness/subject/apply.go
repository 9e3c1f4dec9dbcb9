package subject

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/bootproof/bootproof/kmm"
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

// applyAll applies f's CRDs and manifests; see ApplyFiles.
func applyAll(ctx context.Context, rc *rest.Config, f *File) error {
	if err := ApplyFiles(ctx, rc, f.CRDs, f.Manifests); err != nil {
		return fmt.Errorf("subject %s: %w", f.Name, err)
	}
	return nil
}

// ApplyFiles applies, server-side with field manager FieldManager, the
// CustomResourceDefinitions in crds (and waits until they are
// established), then the objects in manifests, Namespaces first. Each
// path is a YAML or JSON file of one or more documents, or a directory
// standing for its *.yaml, *.yml and *.json files.
func ApplyFiles(ctx context.Context, rc *rest.Config, crds, manifests []string) error {
	if len(crds) == 0 && len(manifests) == 0 {
		return nil
	}
	c, err := client.New(rc, client.Options{})
	if err != nil {
		return fmt.Errorf("client: %w", err)
	}
	defs, err := readManifests(crds)
	if err != nil {
		return fmt.Errorf("crds: %w", err)
	}
	for _, m := range defs {
		if m.obj.GetKind() != "CustomResourceDefinition" {
			return fmt.Errorf("crds: %s is not a CustomResourceDefinition (put it under manifests)", m.source)
		}
	}
	if err := apply(ctx, c, defs); err != nil {
		return fmt.Errorf("crds: %w", err)
	}
	for _, m := range defs {
		if err := kmm.WaitEstablished(ctx, c, m.obj.GetName(), crdTimeout); err != nil {
			return fmt.Errorf("crds: %s: %w", m.source, err)
		}
	}
	objs, err := readManifests(manifests)
	if err != nil {
		return fmt.Errorf("manifests: %w", err)
	}
	// Namespaces first, so the objects in them can be created.
	slices.SortStableFunc(objs, func(a, b manifestObject) int {
		return boolRank(a.obj.GetKind() != "Namespace") - boolRank(b.obj.GetKind() != "Namespace")
	})
	if err := apply(ctx, c, objs); err != nil {
		return fmt.Errorf("manifests: %w", err)
	}
	return nil
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

func decodeManifest(file string) ([]manifestObject, error) {
	data, err := os.ReadFile(file)
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

// apply applies objs server-side; a namespaced object without a
// namespace goes to "default", as kubectl does.
func apply(ctx context.Context, c client.Client, objs []manifestObject) error {
	for _, m := range objs {
		u := m.obj
		namespaced, err := c.IsObjectNamespaced(u)
		if err != nil {
			return fmt.Errorf("%s: %s %s: %w", m.source, u.GetAPIVersion(), u.GetKind(), err)
		}
		if namespaced && u.GetNamespace() == "" {
			u.SetNamespace("default")
		}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
			return fmt.Errorf("%s: apply %s %s: %w", m.source, u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}
