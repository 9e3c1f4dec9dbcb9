// Package observetest scripts the ground truth of nodes for tests of the
// observer and the engine: a plain Lease annotation stands for what a
// backend's kubelet publishes, and Reader reads it as a node backend's
// observe.GroundTruthReader would.
package observetest

import (
	"encoding/json"
	"time"

	"github.com/bootproof/bootproof/contract"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Annotation is the Lease annotation a scripted ground truth is in.
const Annotation = "truth"

type truth struct {
	Boot    string   `json:"boot"`
	Modules []string `json:"modules"`
}

// Value is the annotation of a node in boot with modules loaded.
func Value(boot string, modules ...string) string {
	data, _ := json.Marshal(truth{Boot: boot, Modules: modules})
	return string(data)
}

// Lease is node's Lease carrying the ground truth Value(boot, modules...).
func Lease(node, boot string, modules ...string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: node, Annotations: map[string]string{Annotation: Value(boot, modules...)}}}
}

// Reader reads a scripted ground truth; each module is loaded at the
// time it is read. A Lease without the annotation has published nothing.
type Reader struct{}

// ReadGroundTruth implements observe.GroundTruthReader.
func (Reader) ReadGroundTruth(l *coordinationv1.Lease) (*contract.GroundTruth, error) {
	s, ok := l.Annotations[Annotation]
	if !ok {
		return nil, nil
	}
	var t truth
	if err := json.Unmarshal([]byte(s), &t); err != nil {
		return nil, err
	}
	out := &contract.GroundTruth{Node: l.Name, BootID: t.Boot}
	for _, m := range t.Modules {
		out.Modules = append(out.Modules, contract.LoadedModule{Name: m, LoadedAt: time.Now()})
	}
	return out, nil
}
