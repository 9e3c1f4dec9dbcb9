package observe

import (
	"github.com/bootproof/bootproof/contract"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// workerConfig is the part of a worker pod's config the observer reads.
type workerConfig struct {
	ContainerImage string `json:"containerImage"`
	Modprobe       struct {
		ModuleName string `json:"moduleName"`
	} `json:"modprobe"`
}

// workerConfigOf reads a worker pod's config (modprobe.moduleName and
// containerImage); empty where it does not parse.
func workerConfigOf(p *corev1.Pod) workerConfig {
	var c workerConfig
	_ = yaml.Unmarshal([]byte(p.Annotations[contract.WorkerConfigAnnotation]), &c)
	return c
}

// terminationBoot reads the boot a worker's action ran in, and the
// modules it loaded, from the worker container's termination message
// (contract.WorkerTerminationMessage); empty when the worker wrote none.
func terminationBoot(p *corev1.Pod) (string, []string) {
	t := contract.WorkerTerminated(p)
	if t == nil {
		return "", nil
	}
	m, err := contract.ParseWorkerTerminationMessage(t.Message)
	if err != nil {
		return "", nil
	}
	return m.BootID, m.Modules
}
