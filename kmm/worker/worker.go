package worker

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	kmmv1beta1 "github.com/bootproof/bootproof/kmm/api/v1beta1"
)

// Action is what a worker pod does with a module.
type Action string

// Worker actions, the values of the ActionLabel.
const (
	ActionLoad   Action = "Load"
	ActionUnload Action = "Unload"
)

// Contract names.
const (
	ActionLabel      = "kmm.node.kubernetes.io/worker-action"
	ModuleNameLabel  = "kmm.node.kubernetes.io/module.name"
	ConfigAnnotation = "kmm.node.kubernetes.io/worker-config"
	HashAnnotation   = "kmm.node.kubernetes.io/worker-hash"
	// VersionAnnotation carries the module's version, if any, so the
	// status written from a finished pod keeps it.
	VersionAnnotation = "kmm.node.kubernetes.io/module-version"
	Finalizer         = "kmm.node.kubernetes.io/nodemodulesconfig-reconciler"
	// StartDelayAnnotation asks the lightweight kubelet to start the pod
	// later (the slow-pod-start calibration variant); a real kubelet
	// ignores it.
	StartDelayAnnotation = "bootproof.io/start-delay"
	ContainerName        = "worker"
	ConfigDir            = "/etc/kmm-worker"
	ConfigPath           = ConfigDir + "/config.yaml"
	configVolume         = "config"
)

// PodName is the name of the worker pod of module on node.
func PodName(node, module string) string {
	return fmt.Sprintf("kmm-worker-%s-%s", node, module)
}

// Owner identifies the NodeModulesConfig that owns the worker pods.
type Owner struct {
	Name string
	UID  types.UID
}

// Pod returns the worker pod that applies action to the module item with
// config on the node of the NodeModulesConfig owner (NMC name = node name).
func Pod(owner Owner, item kmmv1beta1.ModuleItem, config kmmv1beta1.ModuleConfig, action Action) (*corev1.Pod, error) {
	if action != ActionLoad && action != ActionUnload {
		return nil, fmt.Errorf("worker pod for module %s/%s on node %s: unknown action %q", item.Namespace, item.Name, owner.Name, action)
	}
	cfgYAML, err := yaml.Marshal(config)
	if err != nil {
		return nil, fmt.Errorf("worker pod for module %s/%s on node %s: marshal config: %w", item.Namespace, item.Name, owner.Name, err)
	}
	verb := "load"
	if action == ActionUnload {
		verb = "unload"
	}
	var pullSecrets []corev1.LocalObjectReference
	if item.ImageRepoSecret != nil {
		pullSecrets = []corev1.LocalObjectReference{*item.ImageRepoSecret}
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      PodName(owner.Name, item.Name),
			Namespace: item.Namespace,
			Labels: map[string]string{
				"app.kubernetes.io/name":      "kmm",
				"app.kubernetes.io/component": "worker",
				"app.kubernetes.io/part-of":   "kmm",
				ActionLabel:                   string(action),
				ModuleNameLabel:               item.Name,
			},
			Annotations: map[string]string{ConfigAnnotation: string(cfgYAML)},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion:         kmmv1beta1.GroupVersion.String(),
				Kind:               "NodeModulesConfig",
				Name:               owner.Name,
				UID:                owner.UID,
				Controller:         ptr.To(true),
				BlockOwnerDeletion: ptr.To(true),
			}},
			Finalizers: []string{Finalizer},
		},
		Spec: corev1.PodSpec{
			NodeName:           owner.Name,
			RestartPolicy:      corev1.RestartPolicyOnFailure,
			ServiceAccountName: item.ServiceAccountName,
			ImagePullSecrets:   pullSecrets,
			Tolerations:        item.Tolerations,
			Containers: []corev1.Container{{
				Name:            ContainerName,
				Image:           config.ContainerImage,
				ImagePullPolicy: config.ImagePullPolicy,
				Args:            []string{"kmod", verb, ConfigPath},
				SecurityContext: &corev1.SecurityContext{
					Capabilities: &corev1.Capabilities{Add: []corev1.Capability{"SYS_MODULE"}},
				},
				VolumeMounts: []corev1.VolumeMount{{Name: configVolume, MountPath: ConfigDir, ReadOnly: true}},
			}},
			Volumes: []corev1.Volume{{
				Name: configVolume,
				VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
					Items: []corev1.DownwardAPIVolumeFile{{
						Path:     "config.yaml",
						FieldRef: &corev1.ObjectFieldSelector{FieldPath: fmt.Sprintf("metadata.annotations['%s']", ConfigAnnotation)},
					}},
				}},
			}},
		},
	}
	if item.Version != "" {
		pod.Annotations[VersionAnnotation] = item.Version
	}
	hash, err := templateHash(pod)
	if err != nil {
		return nil, fmt.Errorf("worker pod for module %s/%s on node %s: %w", item.Namespace, item.Name, owner.Name, err)
	}
	pod.Annotations[HashAnnotation] = hash
	return pod, nil
}

// templateHash hashes what the reconciler decides about a pod: labels,
// annotations (but the hash) and spec.
func templateHash(pod *corev1.Pod) (string, error) {
	ann := make(map[string]string, len(pod.Annotations))
	for k, v := range pod.Annotations {
		if k != HashAnnotation {
			ann[k] = v
		}
	}
	data, err := json.Marshal(struct {
		Labels      map[string]string `json:"labels"`
		Annotations map[string]string `json:"annotations"`
		Spec        corev1.PodSpec    `json:"spec"`
	}{pod.Labels, ann, pod.Spec})
	if err != nil {
		return "", fmt.Errorf("hash pod template: %w", err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16]), nil
}

// Result is what a kubelet reported about a finished worker action in the
// worker container's termination message.
type Result struct {
	BootID        string   `json:"bootID"`
	Action        Action   `json:"action,omitempty"`
	Modules       []string `json:"modules,omitempty"`
	KernelVersion string   `json:"kernelVersion,omitempty"`
}

// ParseResult reads the worker container's termination message of pod.
// ok is false when the pod carries no parsable message with a non-empty
// bootID, or one for another action than the pod's.
func ParseResult(pod *corev1.Pod) (r Result, ok bool) {
	t := TerminatedState(pod)
	if t == nil {
		return Result{}, false
	}
	msg := strings.TrimSpace(t.Message)
	if msg == "" {
		return Result{}, false
	}
	if err := json.Unmarshal([]byte(msg), &r); err != nil {
		// One line of JSON is the contract; tolerate output before it.
		i := strings.LastIndexByte(msg, '\n')
		r = Result{}
		if i < 0 || json.Unmarshal([]byte(strings.TrimSpace(msg[i+1:])), &r) != nil {
			return Result{}, false
		}
	}
	if r.BootID == "" {
		return Result{}, false
	}
	if r.Action != "" && r.Action != Action(pod.Labels[ActionLabel]) {
		return Result{}, false
	}
	return r, true
}

// TerminatedState is the worker container's terminated state, or nil.
func TerminatedState(pod *corev1.Pod) *corev1.ContainerStateTerminated {
	if s := ContainerStatus(pod); s != nil {
		return s.State.Terminated
	}
	return nil
}

// ContainerStatus is the worker container's status, or nil.
func ContainerStatus(pod *corev1.Pod) *corev1.ContainerStatus {
	for i := range pod.Status.ContainerStatuses {
		if pod.Status.ContainerStatuses[i].Name == ContainerName {
			return &pod.Status.ContainerStatuses[i]
		}
	}
	return nil
}

// ConfigOf decodes the ModuleConfig in the pod's worker-config annotation.
func ConfigOf(pod *corev1.Pod) (kmmv1beta1.ModuleConfig, error) {
	var cfg kmmv1beta1.ModuleConfig
	raw, ok := pod.Annotations[ConfigAnnotation]
	if !ok {
		return cfg, fmt.Errorf("pod %s/%s has no %s annotation", pod.Namespace, pod.Name, ConfigAnnotation)
	}
	if err := yaml.UnmarshalStrict([]byte(raw), &cfg); err != nil {
		return cfg, fmt.Errorf("pod %s/%s: decode %s: %w", pod.Namespace, pod.Name, ConfigAnnotation, err)
	}
	return cfg, nil
}

// ActionOf is the pod's worker action, or "" for a pod that is not a
// worker pod.
func ActionOf(pod *corev1.Pod) Action {
	switch a := Action(pod.Labels[ActionLabel]); a {
	case ActionLoad, ActionUnload:
		return a
	}
	return ""
}

// ItemOf rebuilds the module item a worker pod was made for.
func ItemOf(pod *corev1.Pod) kmmv1beta1.ModuleItem {
	item := kmmv1beta1.ModuleItem{
		Name:               pod.Labels[ModuleNameLabel],
		Namespace:          pod.Namespace,
		ServiceAccountName: pod.Spec.ServiceAccountName,
		Tolerations:        pod.Spec.Tolerations,
		Version:            pod.Annotations[VersionAnnotation],
	}
	if len(pod.Spec.ImagePullSecrets) > 0 {
		s := pod.Spec.ImagePullSecrets[0]
		item.ImageRepoSecret = &s
	}
	return item
}
