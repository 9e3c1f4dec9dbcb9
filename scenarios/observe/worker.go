package observe

import (
	"github.com/bootproof/bootproof/contract"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// moduleNameOf reads modprobe.moduleName from a worker pod's config.
func moduleNameOf(p *corev1.Pod) string {
	var c struct {
		Modprobe struct {
			ModuleName string `json:"moduleName"`
		} `json:"modprobe"`
	}
	_ = yaml.Unmarshal([]byte(p.Annotations[contract.WorkerConfigAnnotation]), &c)
	return c.Modprobe.ModuleName
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
