package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bootproof/bootproof/contract"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// probeTimeout bounds the first request to an existing cluster; tests
// shorten it.
var probeTimeout = 10 * time.Second

// ProbeAPIServer asks the API server of rc (loaded from the kubeconfig
// at path; empty for the default one) for its version, within a bounded
// time. An answer means the server is there; a refusal of the
// credentials (401, or 403 for what any identity may read) is a
// *contract.InputError about the Kubeconfig that says so. No answer (a closed port, a host that drops packets,
// a server that hangs, a TLS failure) is a *contract.InputError about
// the Kubeconfig, so a run against a cluster that is not there stops at
// once with one line instead of hanging or failing every case.
func ProbeAPIServer(ctx context.Context, rc *rest.Config, path string) error {
	c := rest.CopyConfig(rc)
	c.Timeout = probeTimeout
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		return &contract.InputError{Field: field.NewPath("Kubeconfig"), Value: path, Err: err}
	}
	err = cs.Discovery().RESTClient().Get().AbsPath("/version").Do(ctx).Error()
	if apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err) {
		return rejected(rc, path, "its version", err)
	}
	var status apierrors.APIStatus
	if err == nil || errors.As(err, &status) {
		return nil
	}
	return &contract.InputError{Field: field.NewPath("Kubeconfig"), Value: cmp.Or(path, "(the default kubeconfig)"), Err: err,
		Reason: fmt.Sprintf("its API server %s did not answer within %s: check the server address in the kubeconfig and that the cluster is up", rc.Host, probeTimeout)}
}

// probeNodes checks that the kubeconfig's identity may list Nodes, as
// every run on an existing cluster must: a refusal is an InputError now,
// not every case's error later.
func probeNodes(ctx context.Context, rc *rest.Config, path string) error {
	c := rest.CopyConfig(rc)
	c.Timeout = probeTimeout
	cs, err := kubernetes.NewForConfig(c)
	if err != nil {
		return &contract.InputError{Field: field.NewPath("Kubeconfig"), Value: path, Err: err}
	}
	_, err = cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{Limit: 1})
	if apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err) {
		return rejected(rc, path, "the list of Nodes", err)
	}
	return nil
}

// rejected is the InputError of credentials the API server refused.
func rejected(rc *rest.Config, path, what string, err error) error {
	return &contract.InputError{Field: field.NewPath("Kubeconfig"), Value: cmp.Or(path, "(the default kubeconfig)"),
		Reason: fmt.Sprintf("its API server %s refused its credentials (%s, asked for %s): check the user of the kubeconfig's context; bootproof needs an identity that may manage Nodes, Leases, CRDs and pods (cluster-admin on a test cluster)",
			rc.Host, apierrors.ReasonForError(err), what)}
}
