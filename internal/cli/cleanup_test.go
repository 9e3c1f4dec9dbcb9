package cli_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/harness/controlplane/cptest"
	"github.com/bootproof/bootproof/internal/cli"
	"github.com/bootproof/bootproof/internal/runs"
)

// runObjects creates, for run id (labels l), a Node and its Lease, a
// namespace, a ClusterRole, a CSR, and a ConfigMap and a Deployment (as a
// subject file's manifests would); it returns a function that reports
// which of them still exist (a namespace being deleted counts as gone).
func runObjects(ctx context.Context, t *testing.T, cs kubernetes.Interface, id string, l map[string]string) func() []string {
	t.Helper()
	meta := func(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name, Labels: l} }
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: meta("node-" + id)}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	lease := &coordinationv1.Lease{ObjectMeta: meta("node-" + id)}
	lease.Namespace = corev1.NamespaceNodeLease
	if _, err := cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Create(ctx, lease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: meta("ns-" + id)}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: meta("role-" + id)}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "u-" + id}}, key)
	if err != nil {
		t.Fatal(err)
	}
	csr := &certificatesv1.CertificateSigningRequest{ObjectMeta: meta("csr-" + id), Spec: certificatesv1.CertificateSigningRequestSpec{
		Request: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), SignerName: certificatesv1.KubeAPIServerClientSignerName,
		Usages: []certificatesv1.KeyUsage{certificatesv1.UsageClientAuth}}}
	if _, err := cs.CertificatesV1().CertificateSigningRequests().Create(ctx, csr, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// What a subject file's manifests would have made: objects of any
	// kind, labelled with the run.
	cm := &corev1.ConfigMap{ObjectMeta: meta("cm-" + id)}
	cm.Namespace = metav1.NamespaceDefault
	if _, err := cs.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	sel := map[string]string{"app": "op-" + id}
	dep := &appsv1.Deployment{ObjectMeta: meta("op-" + id), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](0),
		Selector: &metav1.LabelSelector{MatchLabels: sel}, Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: sel},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "op", Image: "example.invalid/op"}}}}}}
	dep.Namespace = metav1.NamespaceDefault
	if _, err := cs.AppsV1().Deployments(metav1.NamespaceDefault).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return func() []string {
		var left []string
		check := func(what string, err error) {
			if err == nil {
				left = append(left, what)
			} else if !apierrors.IsNotFound(err) {
				t.Fatal(err)
			}
		}
		_, err := cs.CoreV1().Nodes().Get(ctx, "node-"+id, metav1.GetOptions{})
		check("node", err)
		_, err = cs.CoordinationV1().Leases(corev1.NamespaceNodeLease).Get(ctx, "node-"+id, metav1.GetOptions{})
		check("lease", err)
		ns, err := cs.CoreV1().Namespaces().Get(ctx, "ns-"+id, metav1.GetOptions{})
		if err == nil && ns.DeletionTimestamp != nil {
			err = apierrors.NewNotFound(corev1.Resource("namespaces"), ns.Name)
		}
		check("namespace", err)
		_, err = cs.RbacV1().ClusterRoles().Get(ctx, "role-"+id, metav1.GetOptions{})
		check("clusterrole", err)
		_, err = cs.CertificatesV1().CertificateSigningRequests().Get(ctx, "csr-"+id, metav1.GetOptions{})
		check("csr", err)
		_, err = cs.CoreV1().ConfigMaps(metav1.NamespaceDefault).Get(ctx, "cm-"+id, metav1.GetOptions{})
		check("configmap", err)
		_, err = cs.AppsV1().Deployments(metav1.NamespaceDefault).Get(ctx, "op-"+id, metav1.GetOptions{})
		check("deployment", err)
		return left
	}
}

// TestCleanupDeletesDeadRunsOnly: 'bootproof cleanup' deletes the
// objects of a run whose Lease expired and of a run without a Lease, and
// leaves a live run's objects, the shared objects (a run is alive) and
// unlabelled objects alone. The live run's Finish then deletes its own
// objects and, as no other run is alive, the shared ones.
func TestCleanupDeletesDeadRunsOnly(t *testing.T) {
	cp := cptest.Start(t, controlplane.Config{GracePeriod: 8 * time.Second, MonitorPeriod: time.Second})
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(cp.RESTConfig())

	live, err := runs.Start(ctx, cp.RESTConfig(), "live00000001")
	if err != nil {
		t.Fatal(err)
	}
	liveLeft := runObjects(ctx, t, cs, live.ID, live.Labels())
	// dead: its Lease was last renewed ten minutes ago.
	stale := metav1.NewMicroTime(time.Now().Add(-10 * time.Minute))
	deadLease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: runs.LeasePrefix + "dead00000001", Namespace: runs.LeaseNamespace,
		Labels: runs.Labels("dead00000001")}, Spec: coordinationv1.LeaseSpec{RenewTime: &stale, LeaseDurationSeconds: ptr.To[int32](60)}}
	if _, err := cs.CoordinationV1().Leases(runs.LeaseNamespace).Create(ctx, deadLease, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadLeft := runObjects(ctx, t, cs, "dead00000001", runs.Labels("dead00000001"))
	// gone: no Lease at all.
	goneLeft := runObjects(ctx, t, cs, "gone00000001", runs.Labels("gone00000001"))
	// Not bootproof's: never touched.
	if _, err := cs.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "real-node"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	shared := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "bootproof:shared-test", Labels: runs.SharedLabels()}}
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, shared, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	var out, errb bytes.Buffer
	if code := cli.Run(ctx, []string{"cleanup", "--kubeconfig", cp.Kubeconfig(), "--dry-run"}, &out, &errb); code != cli.ExitOK {
		t.Fatalf("cleanup --dry-run: exit %d: %s", code, errb.String())
	}
	if left := deadLeft(); len(left) != 7 {
		t.Errorf("after --dry-run the dead run still has %v, want all 7 objects", left)
	}
	out.Reset()
	if code := cli.Run(ctx, []string{"cleanup", "--kubeconfig", cp.Kubeconfig()}, &out, &errb); code != cli.ExitOK {
		t.Fatalf("cleanup: exit %d: %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "nodes node-dead00000001 (run dead00000001)") {
		t.Errorf("cleanup output %q does not list the dead run's node", out.String())
	}
	if left := deadLeft(); len(left) != 0 {
		t.Errorf("dead run's objects left: %v", left)
	}
	if left := goneLeft(); len(left) != 0 {
		t.Errorf("objects of a run without a lease left: %v", left)
	}
	if _, err := cs.CoordinationV1().Leases(runs.LeaseNamespace).Get(ctx, deadLease.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("dead run's lease: %v, want it deleted", err)
	}
	if left := liveLeft(); len(left) != 7 {
		t.Errorf("live run's objects left %v, want all 7", left)
	}
	if _, err := cs.CoreV1().Nodes().Get(ctx, "real-node", metav1.GetOptions{}); err != nil {
		t.Errorf("unlabelled node: %v", err)
	}
	if _, err := cs.RbacV1().ClusterRoles().Get(ctx, shared.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("shared cluster role while a run is alive: %v", err)
	}

	deleted, err := live.Finish(ctx)
	if err != nil {
		t.Fatalf("Finish: %v (deleted %v)", err, deleted)
	}
	if left := liveLeft(); len(left) != 0 {
		t.Errorf("live run's objects left after its Finish: %v", left)
	}
	if _, err := cs.RbacV1().ClusterRoles().Get(ctx, shared.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("shared cluster role after the last run finished: %v, want it deleted", err)
	}
	if _, err := cs.CoordinationV1().Leases(runs.LeaseNamespace).Get(ctx, runs.LeasePrefix+live.ID, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("live run's lease after Finish: %v, want it deleted", err)
	}
	if _, err := cs.CoreV1().Nodes().Get(ctx, "real-node", metav1.GetOptions{}); err != nil {
		t.Errorf("unlabelled node after Finish: %v", err)
	}
}
