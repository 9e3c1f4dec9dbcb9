package worker_test

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	kmmv1beta1 "github.com/bootproof/bootproof/kmm/api/v1beta1"
	"github.com/bootproof/bootproof/kmm/worker"
)

var (
	owner = worker.Owner{Name: "node-1", UID: "uid-1"}
	item  = kmmv1beta1.ModuleItem{
		Name: "mod", Namespace: "ns", ServiceAccountName: "sa", Version: "v2",
		ImageRepoSecret: &corev1.LocalObjectReference{Name: "pull"},
		Tolerations:     []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists}},
	}
	cfg = kmmv1beta1.ModuleConfig{
		KernelVersion: "6.1.0", ContainerImage: "img:1", ImagePullPolicy: corev1.PullAlways,
		Modprobe: kmmv1beta1.ModprobeSpec{ModuleName: "mod", DirName: "/opt", ModulesLoadingOrder: []string{"mod", "dep"}},
	}
)

func TestPod(t *testing.T) {
	for _, tc := range []struct {
		action worker.Action
		verb   string
	}{{worker.ActionLoad, "load"}, {worker.ActionUnload, "unload"}} {
		t.Run(string(tc.action), func(t *testing.T) {
			pod, err := worker.Pod(owner, item, cfg, tc.action)
			if err != nil {
				t.Fatal(err)
			}
			if pod.Name != "kmm-worker-node-1-mod" || pod.Namespace != "ns" || pod.Spec.NodeName != "node-1" {
				t.Errorf("name/namespace/node = %s/%s/%s", pod.Namespace, pod.Name, pod.Spec.NodeName)
			}
			if pod.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
				t.Errorf("restartPolicy = %s", pod.Spec.RestartPolicy)
			}
			c := pod.Spec.Containers[0]
			if len(pod.Spec.Containers) != 1 || c.Name != "worker" || c.Image != "img:1" || c.ImagePullPolicy != corev1.PullAlways {
				t.Errorf("containers = %+v", pod.Spec.Containers)
			}
			if want := []string{"kmod", tc.verb, "/etc/kmm-worker/config.yaml"}; !slices.Equal(c.Args, want) {
				t.Errorf("args = %q, want %q", c.Args, want)
			}
			if pod.Labels[worker.ActionLabel] != string(tc.action) || pod.Labels[worker.ModuleNameLabel] != "mod" {
				t.Errorf("labels = %v", pod.Labels)
			}
			if worker.ActionOf(pod) != tc.action {
				t.Errorf("ActionOf = %q", worker.ActionOf(pod))
			}
			got, err := worker.ConfigOf(pod)
			if err != nil {
				t.Fatal(err)
			}
			if got.ContainerImage != cfg.ContainerImage || got.KernelVersion != cfg.KernelVersion ||
				!slices.Equal(got.Modprobe.ModulesLoadingOrder, cfg.Modprobe.ModulesLoadingOrder) {
				t.Errorf("config round trip = %+v, want %+v", got, cfg)
			}
			ref := metav1.GetControllerOf(pod)
			if ref == nil || ref.Kind != "NodeModulesConfig" || ref.Name != "node-1" || ref.UID != "uid-1" ||
				ref.APIVersion != "kmm.sigs.x-k8s.io/v1beta1" || ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
				t.Errorf("controller reference = %+v", ref)
			}
			if !slices.Equal(pod.Finalizers, []string{worker.Finalizer}) {
				t.Errorf("finalizers = %v", pod.Finalizers)
			}
			if pod.Spec.ServiceAccountName != "sa" || len(pod.Spec.ImagePullSecrets) != 1 || pod.Spec.ImagePullSecrets[0].Name != "pull" ||
				len(pod.Spec.Tolerations) != 1 {
				t.Errorf("service account, pull secrets, tolerations = %s, %v, %v", pod.Spec.ServiceAccountName, pod.Spec.ImagePullSecrets, pod.Spec.Tolerations)
			}
			back := worker.ItemOf(pod)
			if back.Name != "mod" || back.Namespace != "ns" || back.Version != "v2" || back.ImageRepoSecret == nil || back.ImageRepoSecret.Name != "pull" {
				t.Errorf("ItemOf = %+v", back)
			}
		})
	}
}

func TestPodHash(t *testing.T) {
	a, _ := worker.Pod(owner, item, cfg, worker.ActionLoad)
	b, _ := worker.Pod(owner, item, cfg, worker.ActionLoad)
	if a.Annotations[worker.HashAnnotation] == "" || a.Annotations[worker.HashAnnotation] != b.Annotations[worker.HashAnnotation] {
		t.Errorf("hash not stable: %q vs %q", a.Annotations[worker.HashAnnotation], b.Annotations[worker.HashAnnotation])
	}
	other := cfg
	other.ContainerImage = "img:2"
	c, _ := worker.Pod(owner, item, other, worker.ActionLoad)
	u, _ := worker.Pod(owner, item, cfg, worker.ActionUnload)
	for name, p := range map[string]*corev1.Pod{"other config": c, "other action": u} {
		if p.Annotations[worker.HashAnnotation] == a.Annotations[worker.HashAnnotation] {
			t.Errorf("%s: same hash", name)
		}
	}
	if _, err := worker.Pod(owner, item, cfg, "Reload"); err == nil {
		t.Error("unknown action accepted")
	}
}

func TestParseResult(t *testing.T) {
	pod := func(action worker.Action, container, msg string) *corev1.Pod {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{worker.ActionLabel: string(action)}}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: container,
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Message: msg}}}}
		return p
	}
	const good = `{"bootID":"b-1","action":"Load","modules":["b","a"],"kernelVersion":"6.1.0"}`
	tests := []struct {
		name string
		pod  *corev1.Pod
		boot string
		ok   bool
	}{
		{"contract message", pod(worker.ActionLoad, "worker", good), "b-1", true},
		{"trailing newline", pod(worker.ActionLoad, "worker", good+"\n"), "b-1", true},
		{"output before the line", pod(worker.ActionLoad, "worker", "loading b\nloading a\n"+good), "b-1", true},
		{"no action in message", pod(worker.ActionLoad, "worker", `{"bootID":"b-2"}`), "b-2", true},
		{"no message (upstream worker)", pod(worker.ActionLoad, "worker", ""), "", false},
		{"not JSON", pod(worker.ActionLoad, "worker", "modprobe: done"), "", false},
		{"empty bootID", pod(worker.ActionLoad, "worker", `{"bootID":"","action":"Load"}`), "", false},
		{"other action", pod(worker.ActionUnload, "worker", good), "", false},
		{"other container", pod(worker.ActionLoad, "sidecar", good), "", false},
		{"not terminated", &corev1.Pod{Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "worker"}}}}, "", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, ok := worker.ParseResult(tc.pod)
			if ok != tc.ok || r.BootID != tc.boot {
				t.Errorf("ParseResult = %+v, %v; want bootID %q, %v", r, ok, tc.boot, tc.ok)
			}
		})
	}
	r, _ := worker.ParseResult(pod(worker.ActionLoad, "worker", good))
	if !slices.Equal(r.Modules, []string{"b", "a"}) || r.KernelVersion != "6.1.0" || r.Action != worker.ActionLoad {
		t.Errorf("parsed %+v", r)
	}
}

func TestConfigOfRejectsBadAnnotations(t *testing.T) {
	for name, ann := range map[string]map[string]string{
		"missing":       nil,
		"unknown field": {worker.ConfigAnnotation: "containerImage: x\nkernelVersion: y\nmodprobe: {moduleName: m}\nbogus: 1\n"},
		"not YAML":      {worker.ConfigAnnotation: "{"},
	} {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Annotations: ann}}
		if _, err := worker.ConfigOf(p); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
