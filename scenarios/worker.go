package scenarios

import (
	"encoding/json"
	"strings"

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

// terminationBoot reads the boot a worker's action ran in from the worker
// container's termination message ({"bootID": ...}); empty when the
// worker wrote none.
func terminationBoot(p *corev1.Pod) (string, []string) {
	for _, s := range p.Status.ContainerStatuses {
		if s.Name != contract.WorkerContainerName || s.State.Terminated == nil {
			continue
		}
		var m struct {
			BootID  string   `json:"bootID"`
			Modules []string `json:"modules"`
		}
		if json.Unmarshal([]byte(strings.TrimSpace(s.State.Terminated.Message)), &m) == nil {
			return m.BootID, m.Modules
		}
	}
	return "", nil
}
