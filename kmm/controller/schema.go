package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"

	"github.com/go-logr/logr"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kmmv1beta1 "github.com/bootproof/bootproof/kmm/api/v1beta1"
	"github.com/bootproof/bootproof/kmm/detect"
)

// LoadTimesAnnotation holds, on a NodeModulesConfig, the time of each
// module's load ({"<namespace>/<name>": "<RFC 3339 time>"}) when the
// cluster's schema prunes status.modules[].lastTransitionTime (upstream
// KMM's has no such field): the legacy detector's memory, kept where the
// schema allows. Only the legacy detector writes and reads it.
const LoadTimesAnnotation = "kmm.bootproof.dev/load-times"

// Status fields a detector records each load's evidence in.
const (
	fieldBootID         = "status.modules[].bootId"
	fieldLastTransition = "status.modules[].lastTransitionTime"
)

// SchemaError says that the cluster's NodeModulesConfig schema prunes a
// status field the reconciler cannot work without.
type SchemaError struct {
	// NMC is the NodeModulesConfig the probe wrote to (dry run).
	NMC string
	// Field is the pruned field; Detector needs it.
	Field, Detector string
}

func (e *SchemaError) Error() string {
	return fmt.Sprintf("the cluster's NodeModulesConfig schema prunes %s (a status written to %s with it, dry run, came back without it): the %s detector records each load's boot there and cannot tell a reboot without it; install a NodeModulesConfig CRD that has the field (kmm/config/crd, or a KMM with boot-ID support)",
		e.Field, e.NMC, e.Detector)
}

// statusSchema is what the cluster's NodeModulesConfig schema keeps of a
// status entry, learned once by checkSchema.
type statusSchema struct {
	known atomic.Bool
	// loadTimesInAnnotation: lastTransitionTime is pruned and the legacy
	// detector keeps its load times in LoadTimesAnnotation.
	loadTimesInAnnotation atomic.Bool
}

// keptFields says which evidence fields a status write keeps.
type keptFields struct{ bootID, loadTime bool }

// probeName names the status entry probeSchema writes (dry run).
const probeName = "bootproof-schema-probe"

// checkSchema learns, on the first reconcile that can, which of the
// status fields the detector records in the cluster's schema keeps
// (probeSchema). A detector whose field is pruned cannot work: a
// *SchemaError, returned by every reconcile (which then does nothing: it
// could not tell a reboot) and so logged with its retries; the legacy
// detector's lastTransitionTime, pruned, is kept in LoadTimesAnnotation
// instead.
func (r *Reconciler) checkSchema(ctx context.Context, nmc *kmmv1beta1.NodeModulesConfig) error {
	if r.schema.known.Load() {
		return nil
	}
	kept, err := r.probeSchema(ctx, nmc)
	if err != nil {
		return err
	}
	log := logr.FromContextOrDiscard(ctx)
	switch r.Detector.Name() {
	case detect.BootID:
		if !kept.bootID {
			return &SchemaError{NMC: nmc.Name, Field: fieldBootID, Detector: detect.BootID}
		}
	case detect.Legacy:
		if !kept.loadTime {
			r.schema.loadTimesInAnnotation.Store(true)
			log.Info("the cluster's NodeModulesConfig schema prunes "+fieldLastTransition+"; the legacy detector keeps each load's time in an annotation instead",
				"annotation", LoadTimesAnnotation)
		}
	default:
		return fmt.Errorf("reboot detector %q: no status field known to check", r.Detector.Name())
	}
	r.schema.known.Store(true)
	log.Info("NodeModulesConfig status schema probed", "keepsBootID", kept.bootID, "keepsLastTransitionTime", kept.loadTime)
	return nil
}

// probeSchema writes nmc's status with one more entry carrying every
// evidence field, as a dry run, and reads back what the API server would
// have stored.
func (r *Reconciler) probeSchema(ctx context.Context, nmc *kmmv1beta1.NodeModulesConfig) (keptFields, error) {
	probe := nmc.DeepCopy()
	probe.Status.Modules = append(probe.Status.Modules, kmmv1beta1.NodeModuleStatus{
		ModuleItem: kmmv1beta1.ModuleItem{Name: probeName, Namespace: probeName, ServiceAccountName: "default"},
		Config: kmmv1beta1.ModuleConfig{KernelVersion: probeName, ContainerImage: probeName,
			Modprobe: kmmv1beta1.ModprobeSpec{ModuleName: probeName}},
		BootID:             probeName,
		LastTransitionTime: metav1.NewTime(r.Clock.Now()),
	})
	if err := r.Client.Status().Patch(ctx, probe, client.MergeFrom(nmc), client.DryRunAll); err != nil {
		return keptFields{}, fmt.Errorf("probe the NodeModulesConfig status schema (dry-run status patch of %s): %w", nmc.Name, err)
	}
	got := findStatus(probe, probeName, probeName)
	if got == nil {
		return keptFields{}, nil
	}
	return keptFields{bootID: got.BootID != "", loadTime: !got.LastTransitionTime.IsZero()}, nil
}

// loadTimesInAnnotation reports whether load times live in
// LoadTimesAnnotation (see checkSchema).
func (r *Reconciler) loadTimesInAnnotation() bool { return r.schema.loadTimesInAnnotation.Load() }

// restoreLoadTimes gives every status entry without a lastTransitionTime
// the time LoadTimesAnnotation holds for it.
func (r *Reconciler) restoreLoadTimes(nmc *kmmv1beta1.NodeModulesConfig) error {
	if !r.loadTimesInAnnotation() {
		return nil
	}
	times, err := loadTimes(nmc)
	if err != nil {
		return err
	}
	for i := range nmc.Status.Modules {
		s := &nmc.Status.Modules[i]
		if t, ok := times[moduleKey(s.Namespace, s.Name)]; ok && s.LastTransitionTime.IsZero() {
			s.LastTransitionTime = t
		}
	}
	return nil
}

func loadTimes(nmc *kmmv1beta1.NodeModulesConfig) (map[string]metav1.Time, error) {
	times := map[string]metav1.Time{}
	v, ok := nmc.Annotations[LoadTimesAnnotation]
	if !ok {
		return times, nil
	}
	if err := json.Unmarshal([]byte(v), &times); err != nil {
		return nil, fmt.Errorf("nodemodulesconfig %s: annotation %s: %w", nmc.Name, LoadTimesAnnotation, err)
	}
	return times, nil
}

// saveLoadTimes writes LoadTimesAnnotation from status when it changed,
// before the status write (which the API server prunes of the times):
// nmc keeps its status and takes the annotation and resourceVersion the
// write returned.
func (r *Reconciler) saveLoadTimes(ctx context.Context, nmc *kmmv1beta1.NodeModulesConfig, status []kmmv1beta1.NodeModuleStatus) error {
	if !r.loadTimesInAnnotation() {
		return nil
	}
	times := map[string]metav1.Time{}
	for _, s := range status {
		times[moduleKey(s.Namespace, s.Name)] = s.LastTransitionTime
	}
	data, err := json.Marshal(times)
	if err != nil {
		return err
	}
	if nmc.Annotations[LoadTimesAnnotation] == string(data) {
		return nil
	}
	// Patch a copy: the response carries the stored status, which is not
	// yet the one about to be written.
	meta := nmc.DeepCopy()
	if meta.Annotations == nil {
		meta.Annotations = map[string]string{}
	}
	meta.Annotations[LoadTimesAnnotation] = string(data)
	if err := r.Client.Patch(ctx, meta, client.MergeFromWithOptions(nmc, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("keep load times of nodemodulesconfig %s in annotation %s: %w", nmc.Name, LoadTimesAnnotation, err)
	}
	nmc.Annotations = meta.Annotations
	nmc.ResourceVersion = meta.ResourceVersion
	return nil
}
