package fakes

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// KubeletAPIQPS and KubeletAPIBurst are the kubelet's client limits, the
// defaults of its --kube-api-qps and --kube-api-burst (KubeletConfiguration
// kubeAPIQPS 50, kubeAPIBurst 100). Without them client-go's defaults (5
// and 10) would throttle a rebooted node's registration burst, which a
// real kubelet sends at once.
const (
	KubeletAPIQPS   = 50
	KubeletAPIBurst = 100
)

// KubeletRESTConfig returns a copy of rc that speaks to the API server as
// a kubelet does, with the kubelet's client limits where rc sets none:
// protobuf for the built-in objects a simulated kubelet
// reads and writes (Node, Lease, Pod, Event), the default of the kubelet's
// --kube-api-content-type, with JSON still accepted. Protobuf is cheaper
// to encode and decode on both sides, which matters for a fleet of
// thousands of nodes renewing their Leases.
func KubeletRESTConfig(rc *rest.Config) *rest.Config {
	rc = rest.CopyConfig(rc)
	rc.ContentType = runtime.ContentTypeProtobuf
	rc.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	if rc.QPS == 0 {
		rc.QPS = KubeletAPIQPS
	}
	if rc.Burst == 0 {
		rc.Burst = KubeletAPIBurst
	}
	return rc
}
