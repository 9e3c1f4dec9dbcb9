package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/bootproof/bootproof/contract"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// probeTimeout bounds the first request to an existing cluster; tests
// shorten it.
var probeTimeout = 10 * time.Second

// ProbeAPIServer asks the API server of rc (loaded from the kubeconfig
// at path; empty for the default one) for its version, within a bounded
// time. Any HTTP answer, even a refusal of the credentials, means the
// server is there. No answer (a closed port, a host that drops packets,
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
	var status apierrors.APIStatus
	if err == nil || errors.As(err, &status) {
		return nil
	}
	return &contract.InputError{Field: field.NewPath("Kubeconfig"), Value: cmp.Or(path, "(the default kubeconfig)"), Err: err,
		Reason: fmt.Sprintf("its API server %s did not answer within %s: check the server address in the kubeconfig and that the cluster is up", rc.Host, probeTimeout)}
}
