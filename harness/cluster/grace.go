package cluster

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// UpstreamDefaultGracePeriod is kube-controller-manager's default
// --node-monitor-grace-period since Kubernetes 1.32.
const UpstreamDefaultGracePeriod = 50 * time.Second

// DetectGracePeriod reads kube-controller-manager's
// --node-monitor-grace-period from its static pod in kube-system, as
// kubeadm-based clusters (kind among them) run it. It fails when no such
// pod is visible (managed control planes, the embedded cluster): then the
// caller must be told the value.
func DetectGracePeriod(ctx context.Context, cs kubernetes.Interface) (time.Duration, error) {
	pods, err := cs.CoreV1().Pods("kube-system").List(ctx, metav1.ListOptions{LabelSelector: "component=kube-controller-manager"})
	if err != nil {
		return 0, fmt.Errorf("look for kube-controller-manager in kube-system: %w", err)
	}
	if len(pods.Items) == 0 {
		return 0, fmt.Errorf("no kube-controller-manager pod (label component=kube-controller-manager) in kube-system")
	}
	for _, c := range pods.Items[0].Spec.Containers {
		if d, ok, err := graceFromArgs(append(append([]string{}, c.Command...), c.Args...)); ok || err != nil {
			return d, err
		}
	}
	return UpstreamDefaultGracePeriod, nil
}

func graceFromArgs(args []string) (time.Duration, bool, error) {
	for i, a := range args {
		var v string
		switch {
		case strings.HasPrefix(a, "--node-monitor-grace-period="):
			v = strings.TrimPrefix(a, "--node-monitor-grace-period=")
		case a == "--node-monitor-grace-period" && i+1 < len(args):
			v = args[i+1]
		default:
			continue
		}
		d, err := time.ParseDuration(v)
		if err != nil {
			return 0, true, fmt.Errorf("kube-controller-manager --node-monitor-grace-period %q: %w", v, err)
		}
		return d, true, nil
	}
	return 0, false, nil
}
