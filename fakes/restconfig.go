package fakes

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// KubeletRESTConfig returns a copy of rc that speaks to the API server as
// a kubelet does: protobuf for the built-in objects a simulated kubelet
// reads and writes (Node, Lease, Pod, Event), the default of the kubelet's
// --kube-api-content-type, with JSON still accepted. Protobuf is cheaper
// to encode and decode on both sides, which matters for a fleet of
// thousands of nodes renewing their Leases.
func KubeletRESTConfig(rc *rest.Config) *rest.Config {
	rc = rest.CopyConfig(rc)
	rc.ContentType = runtime.ContentTypeProtobuf
	rc.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	return rc
}
