package controlplane_test

import (
	"context"
	"fmt"
	"time"

	"github.com/bootproof/bootproof/harness/controlplane"
)

// Start runs etcd, kube-apiserver and kube-controller-manager with a
// grace period of 8 s, like envtest plus the controller manager whose
// node lifecycle controller a reboot test needs.
func ExampleStart() {
	cp, err := controlplane.Start(context.Background(), controlplane.Config{GracePeriod: 8 * time.Second})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cp.Stop()
	fmt.Println(cp.Kubeconfig())
	creds, err := cp.NodeCredentials("node-1") // a system:node:node-1 identity
	if err != nil {
		fmt.Println(err)
		return
	}
	_ = creds.RESTConfig
}
