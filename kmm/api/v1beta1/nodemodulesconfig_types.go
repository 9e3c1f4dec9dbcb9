package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ModprobeArgs are extra modprobe arguments for loading and unloading.
type ModprobeArgs struct {
	// Load is an optional list of arguments used when loading the module.
	// +optional
	// +kubebuilder:validation:MinItems=1
	Load []string `json:"load,omitempty"`
	// Unload is an optional list of arguments used when unloading the module.
	// +optional
	// +kubebuilder:validation:MinItems=1
	Unload []string `json:"unload,omitempty"`
}

// ModprobeSpec says which module modprobe loads and how.
type ModprobeSpec struct {
	// ModuleName is the name of the kernel module to load.
	// +kubebuilder:validation:MinLength=1
	ModuleName string `json:"moduleName"`
	// Parameters are module parameters (key=value) passed to modprobe.
	// +optional
	Parameters []string `json:"parameters,omitempty"`
	// DirName is the root directory for modules (modprobe -d).
	// +optional
	// +kubebuilder:default=/opt
	DirName string `json:"dirName,omitempty"`
	// Args are passed to modprobe before the module name.
	// +optional
	Args *ModprobeArgs `json:"args,omitempty"`
	// RawArgs, when set, are passed to modprobe as they are; every other
	// field of this object is then ignored.
	// +optional
	RawArgs *ModprobeArgs `json:"rawArgs,omitempty"`
	// FirmwarePath is the directory in the image holding firmware files.
	// +optional
	FirmwarePath string `json:"firmwarePath,omitempty"`
	// ModulesLoadingOrder lists modules in the order they are loaded; the
	// first is ModuleName. Unloading goes in reverse.
	// +optional
	ModulesLoadingOrder []string `json:"modulesLoadingOrder,omitempty"`
}

// ModuleConfig is what a worker pod needs to load or unload a module. It is
// the YAML in the worker pod's kmm.node.kubernetes.io/worker-config
// annotation.
type ModuleConfig struct {
	// KernelVersion is the kernel the module was built for.
	KernelVersion string `json:"kernelVersion"`
	// ContainerImage holds the module files; the worker container runs it.
	ContainerImage string `json:"containerImage"`
	// ImagePullPolicy of the worker container.
	// +optional
	// +kubebuilder:default=IfNotPresent
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`
	// InsecurePull allows pulling ContainerImage without TLS. Required,
	// as in upstream KMM's schema: writers state false explicitly.
	InsecurePull bool `json:"insecurePull"`
	// InTreeModulesToRemove are in-tree modules removed before loading.
	// +optional
	InTreeModulesToRemove []string `json:"inTreeModulesToRemove,omitempty"`
	// Modprobe says which module to load and how.
	Modprobe ModprobeSpec `json:"modprobe"`
}

// ModuleItem identifies a module and how its worker pods run.
type ModuleItem struct {
	// Name of the Module.
	// +kubebuilder:validation:MinLength=1
	Name string `json:"name"`
	// Namespace of the Module; its worker pods run there.
	// +kubebuilder:validation:MinLength=1
	Namespace string `json:"namespace"`
	// ServiceAccountName runs the worker pods. Required, as in upstream
	// KMM's schema; empty means the namespace's default ServiceAccount.
	ServiceAccountName string `json:"serviceAccountName"`
	// ImageRepoSecret is the pull secret for ContainerImage.
	// +optional
	ImageRepoSecret *corev1.LocalObjectReference `json:"imageRepoSecret,omitempty"`
	// Tolerations are added to every worker pod of this module.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// Version is the Module's version label, if any.
	// +optional
	Version string `json:"version,omitempty"`
}

// NodeModuleSpec is one module that should be loaded on the node.
type NodeModuleSpec struct {
	ModuleItem `json:",inline"`
	// Config is the configuration the module should be loaded with.
	Config ModuleConfig `json:"config"`
}

// NodeModulesConfigSpec is the desired state of the modules on a node.
type NodeModulesConfigSpec struct {
	// Modules should be loaded on the node.
	// +optional
	// +listType=map
	// +listMapKey=namespace
	// +listMapKey=name
	Modules []NodeModuleSpec `json:"modules,omitempty"`
}

// NodeModuleStatus is one module loaded on the node.
type NodeModuleStatus struct {
	ModuleItem `json:",inline"`
	// Config is the configuration the module was loaded with.
	Config ModuleConfig `json:"config"`
	// BootID is the node's boot ID (status.nodeInfo.bootID) in which the
	// module was loaded, as reported by the worker that loaded it.
	// +optional
	BootID string `json:"bootId,omitempty"`
	// LastTransitionTime is when the module was loaded; the legacy reboot
	// detector compares it with the node's Ready transition.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
}

// NodeModulesConfigStatus is the observed state of the modules on a node.
type NodeModulesConfigStatus struct {
	// Modules are loaded on the node.
	// +optional
	// +listType=map
	// +listMapKey=namespace
	// +listMapKey=name
	Modules []NodeModuleStatus `json:"modules,omitempty"`
}

// NodeModulesConfig keeps the desired and observed kernel modules of one
// node; its name is the node's name.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:path=nodemodulesconfigs,scope=Cluster,shortName=nmc
// +kubebuilder:storageversion
type NodeModulesConfig struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   NodeModulesConfigSpec   `json:"spec,omitempty"`
	Status NodeModulesConfigStatus `json:"status,omitempty"`
}

// NodeModulesConfigList is a list of NodeModulesConfig.
//
// +kubebuilder:object:root=true
type NodeModulesConfigList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []NodeModulesConfig `json:"items"`
}
