package subject

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"

	"github.com/bootproof/bootproof/internal/runs"
	"github.com/bootproof/bootproof/scenarios"
)

// Deployment is a subject file's operator already deployed in the
// cluster. The harness checks that it is available, scales it to 0 for
// pause-subject and back for resume-subject, and watches its pods: a
// container restart is the operator stopping on its own (a crash).
type Deployment struct {
	File    *File
	Cluster scenarios.Cluster
	// Client, when set, is used instead of one made from Cluster (tests).
	Client kubernetes.Interface
	// RunID labels what the file's manifests create, and marks the
	// Deployment while the harness holds it at 0 replicas.
	RunID string
	// LogDir, when set, receives <name>.log: the logs of the
	// Deployment's pods during the run (podLogs).
	LogDir string
	// LogFile, when set, names that file instead of <name>.log.
	LogFile string

	mu       sync.Mutex
	cs       kubernetes.Interface
	replicas int32 // the replicas it had before the run
	scaled   bool  // scaled to 0 by the harness
	crashes  []crash
	restarts map[string]int32 // container restarts per pod/container
	stopInf  context.CancelFunc
	applied  *Applied
	logs     *podLogs
}

// LogPath is the file the pods' logs go to ("" without LogDir).
func (d *Deployment) LogPath() string {
	if d.LogDir == "" {
		return ""
	}
	if d.LogFile != "" {
		return filepath.Join(d.LogDir, d.LogFile)
	}
	return filepath.Join(d.LogDir, d.File.Name+".log")
}

// Name implements scenarios.Subject.
// ReloadSLO implements scenarios.ReloadSLOSetter: the file's reloadSLO.
func (d *Deployment) ReloadSLO() (time.Duration, bool) { return d.File.SLO() }

func (d *Deployment) Name() string { return d.File.Name }

// Expectation implements scenarios.Expecter.
func (d *Deployment) Expectation(s *scenarios.Scenario) (scenarios.Expectation, bool) {
	return d.File.Expectation(s)
}

// CanPause implements scenarios.PauseChecker.
func (d *Deployment) CanPause() error { return nil }

func (d *Deployment) key() string { return d.File.Deployment.Namespace + "/" + d.File.Deployment.Name }

// Setup applies the file's CRDs and manifests, waits until the
// Deployment is available and starts watching its pods.
func (d *Deployment) Setup(ctx context.Context) error {
	start := time.Now() // the pods' logs are kept from here
	var err error
	if d.applied, err = applyAll(ctx, d.Cluster.RESTConfig(), d.File, d.RunID); err != nil {
		return err
	}
	d.cs = d.Client
	if d.cs == nil {
		if d.cs, err = kubernetes.NewForConfig(d.Cluster.RESTConfig()); err != nil {
			return fmt.Errorf("subject %s: client: %w", d.File.Name, err)
		}
	}
	spec := d.File.Deployment
	dep, err := d.cs.AppsV1().Deployments(spec.Namespace).Get(ctx, spec.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("subject %s: deployment %s: %w", d.File.Name, d.key(), err)
	}
	d.replicas = 1
	if dep.Spec.Replicas != nil {
		d.replicas = *dep.Spec.Replicas
	}
	if run := dep.Labels[runs.PausedLabel]; d.replicas == 0 && run != "" {
		return fmt.Errorf("subject %s: deployment %s is held at 0 replicas by bootproof run %s (it paused the subject): once that run has ended, 'bootproof cleanup' scales it back", d.File.Name, d.key(), run)
	}
	if d.replicas == 0 {
		return fmt.Errorf("subject %s: deployment %s has 0 replicas: scale it up (the harness pauses it by scaling to 0 and back)", d.File.Name, d.key())
	}
	if err := d.waitAvailable(ctx); err != nil {
		return err
	}
	sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
	if err != nil {
		return fmt.Errorf("subject %s: deployment %s selector: %w", d.File.Name, d.key(), err)
	}
	return d.watchPods(sel, start)
}

// watchPods records the container restarts of the Deployment's pods and,
// with LogDir, keeps their logs from since.
func (d *Deployment) watchPods(sel labels.Selector, since time.Time) error {
	ctx, cancel := context.WithCancel(context.Background())
	d.stopInf = cancel
	d.restarts = map[string]int32{}
	if p := d.LogPath(); p != "" {
		if err := os.MkdirAll(d.LogDir, 0o755); err != nil {
			cancel()
			return fmt.Errorf("subject %s: log directory: %w", d.File.Name, err)
		}
		logs, err := newPodLogs(d.cs, d.File.Deployment.Namespace, p, since)
		if err != nil {
			cancel()
			return fmt.Errorf("subject %s: %w", d.File.Name, err)
		}
		d.logs = logs
	}
	f := informers.NewSharedInformerFactoryWithOptions(d.cs, 0, informers.WithNamespace(d.File.Deployment.Namespace),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = sel.String() }))
	inf := f.Core().V1().Pods().Informer()
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    d.onPod,
		UpdateFunc: func(_, o any) { d.onPod(o) },
	})
	if err != nil {
		cancel()
		return fmt.Errorf("subject %s: watch pods: %w", d.File.Name, err)
	}
	f.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		cancel()
		return fmt.Errorf("subject %s: cannot watch the pods of deployment %s", d.File.Name, d.key())
	}
	return nil
}

func (d *Deployment) onPod(obj any) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	if d.logs != nil {
		d.logs.observe(p)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, cs := range p.Status.ContainerStatuses {
		k := p.Name + "/" + cs.Name
		if before, seen := d.restarts[k]; seen && cs.RestartCount > before {
			why, own := "restarted", false
			if t := cs.LastTerminationState.Terminated; t != nil {
				why = fmt.Sprintf("restarted after %s (exit code %d)", t.Reason, t.ExitCode)
				own = containerExitedByItself(t)
			}
			d.crashes = append(d.crashes, crash{at: time.Now(), own: own, err: fmt.Errorf("container %s of pod %s %s", cs.Name, p.Name, why)})
		}
		d.restarts[k] = cs.RestartCount
	}
}

// Teardown stops watching. A Deployment that was deployed before the run
// is scaled back if the harness left it at 0; the objects the file's
// manifests created (the Deployment itself, when it is among them) are
// deleted, and Teardown waits until they and their pods are gone, so
// nothing of the subject acts on a later subject's cases.
func (d *Deployment) Teardown() error {
	if d.stopInf != nil {
		d.stopInf()
	}
	var errs []error
	d.mu.Lock()
	scaled := d.scaled
	d.mu.Unlock()
	if scaled && d.cs != nil && !slices.Contains(d.applied.Created(), "Deployment "+d.key()) {
		ctx, cancel := context.WithTimeout(context.Background(), d.File.Deployment.timeout)
		errs = append(errs, d.scale(ctx, d.replicas))
		cancel()
	}
	if err := d.applied.Remove(context.Background(), removeTimeout); err != nil {
		errs = append(errs, fmt.Errorf("subject %s: %w", d.File.Name, err))
	}
	if d.logs != nil {
		errs = append(errs, d.logs.Close())
	}
	return errors.Join(errs...)
}

// Start implements scenarios.Subject: the Deployment runs already.
func (d *Deployment) Start(context.Context, scenarios.SubjectRequest) (scenarios.SubjectInstance, error) {
	return &deploymentInstance{d: d, since: time.Now()}, nil
}

// scale sets the Deployment's replicas and waits: at 0 until none of its
// pods is left, else until it is available.
func (d *Deployment) scale(ctx context.Context, replicas int32) error {
	spec := d.File.Deployment
	d.mu.Lock()
	d.scaled = replicas == 0
	d.mu.Unlock()
	// While at 0 it carries the run and the replicas to give back, so
	// that 'bootproof cleanup' can restore it if this run dies holding it.
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:null},"annotations":{%q:null}},"spec":{"replicas":%d}}`,
		runs.PausedLabel, runs.PausedReplicasAnnotation, replicas)
	if replicas == 0 && d.RunID != "" {
		patch = fmt.Appendf(nil, `{"metadata":{"labels":{%q:%q},"annotations":{%q:"%d"}},"spec":{"replicas":0}}`,
			runs.PausedLabel, d.RunID, runs.PausedReplicasAnnotation, d.replicas)
	}
	if _, err := d.cs.AppsV1().Deployments(spec.Namespace).Patch(ctx, spec.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("scale deployment %s to %d: %w", d.key(), replicas, err)
	}
	if replicas > 0 {
		return d.waitAvailable(ctx)
	}
	dep, err := d.cs.AppsV1().Deployments(spec.Namespace).Get(ctx, spec.Name, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("deployment %s: %w", d.key(), err)
	}
	sel, err := metav1.LabelSelectorAsSelector(dep.Spec.Selector)
	if err != nil {
		return fmt.Errorf("deployment %s selector: %w", d.key(), err)
	}
	var left int
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, spec.timeout, true, func(ctx context.Context) (bool, error) {
		pods, err := d.cs.CoreV1().Pods(spec.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
		if err != nil {
			return false, err
		}
		left = len(pods.Items)
		return left == 0, nil
	})
	if err != nil {
		return fmt.Errorf("deployment %s scaled to 0, but %d pod(s) still exist after %s: %w", d.key(), left, spec.timeout, err)
	}
	return nil
}

// waitAvailable waits until the Deployment's controller has seen its
// spec and every replica is updated and available.
func (d *Deployment) waitAvailable(ctx context.Context) error {
	spec := d.File.Deployment
	var last string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, spec.timeout, true, func(ctx context.Context) (bool, error) {
		dep, err := d.cs.AppsV1().Deployments(spec.Namespace).Get(ctx, spec.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		last = availability(dep)
		want := int32(1)
		if dep.Spec.Replicas != nil {
			want = *dep.Spec.Replicas
		}
		st := dep.Status
		return st.ObservedGeneration >= dep.Generation && st.UpdatedReplicas == want && st.AvailableReplicas == want && st.Replicas == want, nil
	})
	if err != nil {
		return fmt.Errorf("subject %s: deployment %s not available within %s (%s): %w", d.File.Name, d.key(), spec.timeout, last, err)
	}
	return nil
}

func availability(dep *appsv1.Deployment) string {
	st := dep.Status
	return fmt.Sprintf("replicas %d, updated %d, available %d, observed generation %d of %d",
		st.Replicas, st.UpdatedReplicas, st.AvailableReplicas, st.ObservedGeneration, dep.Generation)
}

// crashedSince returns the first stop of the operator the harness did not
// cause after t.
func (d *Deployment) crashedSince(t time.Time) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range d.crashes {
		if !c.at.Before(t) {
			return &stopped{own: c.own, err: fmt.Errorf("%w at %s", c.err, c.at.Format("15:04:05"))}
		}
	}
	return nil
}

type deploymentInstance struct {
	d     *Deployment
	since time.Time
}

func (in *deploymentInstance) Stop() error { return nil }

// LeaderLease implements scenarios.LeaderLeaser: the Lease the file
// names (a Deployment's is not found: its pods were running before the
// run started).
func (in *deploymentInstance) LeaderLease() (scenarios.LeaseRef, bool) {
	if le := in.d.File.LeaderElection; le != nil {
		return *le, true
	}
	return scenarios.LeaseRef{}, false
}

// Pause scales the Deployment to 0 and waits until its pods are gone.
func (in *deploymentInstance) Pause(ctx context.Context) error { return in.d.scale(ctx, 0) }

// Resume scales it back and waits until it is available.
func (in *deploymentInstance) Resume(ctx context.Context) error {
	return in.d.scale(ctx, in.d.replicas)
}

// Err implements scenarios.HealthReporter.
func (in *deploymentInstance) Err() error { return in.d.crashedSince(in.since) }
