//go:build linux

package vmprovision_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/bootproof/bootproof/contract"
	"github.com/bootproof/bootproof/harness/controlplane"
	"github.com/bootproof/bootproof/vmprovision"
	"github.com/bootproof/bootproof/vmprovision/agentapi"
	"github.com/bootproof/bootproof/vmprovision/guest"
	"github.com/bootproof/bootproof/vmprovision/vmtest"
)

// vmTestEnv gates the tests that boot a real VM.
const vmTestEnv = vmtest.EnvVMTest

// TestVMBootRebootQEMU boots the Debian kernel with the agent as /init in
// plain QEMU (TCG, user-mode networking, no libvirt), and checks against
// the embedded control plane: the Node registers with the guest's real
// boot ID, a KMM worker pod loads a module over the real kernel (its
// dependency first) and reports that boot, a module loads through the
// control API with its dependency first, and a guest reboot
// and a kernel panic each bring a new boot ID and an empty module table.
func TestVMBootRebootQEMU(t *testing.T) {
	if os.Getenv(vmTestEnv) == "" {
		t.Skipf("boots a real VM: set %s=1 (needs qemu-system-x86_64, socat, the guest %s prepares, bin/kube-apiserver and bin/etcd)", vmTestEnv, vmtest.PrepareCommand)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	fx := newVMFixture(ctx, t)
	cache, kernel, img, admin := fx.cache, fx.kernel, fx.img, fx.admin
	const node = "vm-0"
	cfg := fx.agentConfig(t, node)
	dir := t.TempDir()
	initrd := filepath.Join(dir, node+".initrd")
	if err := vmprovision.WriteBootInitramfs(initrd, img, cfg); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	// The same restricted network as a libvirt domain: the control port
	// forwarded in, only the API server forwarded out.
	netdev, err := vmprovision.NetdevSpec{ID: "n0", ControlPort: port, APIServer: fx.apiTarget, Forwarder: fx.forwarder}.Netdev()
	if err != nil {
		t.Fatal(err)
	}
	serial := filepath.Join(dir, node+".serial.log")
	// The guest a libvirt domain boots (DomainXML): QEMU's default CPU
	// model (qemu64 under TCG) and DefaultKernelCmdline. "-cpu max" once
	// hung this test's guest in its reboot (a soft lockup in ksoftirqd,
	// never seen with the domains' CPU model).
	qemu := exec.CommandContext(ctx, "qemu-system-x86_64",
		"-machine", "pc,accel=tcg", "-m", "512", "-smp", "1",
		"-display", "none", "-nodefaults", "-no-user-config",
		"-serial", "file:"+serial,
		"-kernel", kernel.Vmlinuz(), "-initrd", initrd,
		"-append", vmprovision.DefaultKernelCmdline,
		"-netdev", netdev,
		"-device", "virtio-net-pci,netdev=n0,romfile=")
	qemu.Stderr = os.Stderr
	if err := qemu.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		_ = qemu.Process.Kill()
		_ = qemu.Wait()
		b, _ := os.ReadFile(serial)
		if t.Failed() {
			t.Logf("serial console:\n%s", b)
		}
		keep := filepath.Join(cache, "vm", node+".serial.log")
		if err := os.WriteFile(keep, b, 0o644); err == nil {
			t.Logf("serial console kept in %s", keep)
		}
	}()
	base := fmt.Sprintf("http://127.0.0.1:%d", port)

	boot := func(notBoot string) agentapi.State {
		t.Helper()
		start := time.Now()
		for {
			var s agentapi.State
			err := getJSON(ctx, cfg.ControlSecret, base+"/state", &s)
			if err == nil && s.BootID != notBoot {
				t.Logf("boot %s up after %s, modules %v", s.BootID, time.Since(start).Round(time.Millisecond), s.Modules)
				return s
			}
			if time.Since(start) > 3*time.Minute {
				t.Fatalf("no new boot (after %s) within 3m: %v", notBoot, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	nodeBoot := func(bootID string) {
		t.Helper()
		start := time.Now()
		for {
			n, err := admin.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
			if err == nil && n.Status.NodeInfo.BootID == bootID {
				t.Logf("Node %s reports boot %s (kernel %s) after %s", node, bootID, n.Status.NodeInfo.KernelVersion, time.Since(start).Round(time.Millisecond))
				return
			}
			if time.Since(start) > 2*time.Minute {
				t.Fatalf("Node %s does not report boot %s: %v", node, bootID, err)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}

	s1 := boot("")
	if s1.KernelVersion != kernel.Version {
		t.Errorf("guest kernel %s, want %s", s1.KernelVersion, kernel.Version)
	}
	for _, m := range []string{"virtio_pci", "virtio_net"} {
		if !slices.Contains(s1.Modules, m) {
			t.Errorf("boot modules %v lack %s", s1.Modules, m)
		}
	}
	nodeBoot(s1.BootID)

	// The kubelet's real path: a KMM worker pod loads a module over the
	// real kernel and reports the boot it ran in.
	worker := runWorkerPod(ctx, t, admin, node, kernel.Version, "team_mode_roundrobin")
	if worker.BootID != s1.BootID || worker.KernelVersion != kernel.Version {
		t.Errorf("worker termination message %+v, want boot %s kernel %s", worker, s1.BootID, kernel.Version)
	}
	var sw agentapi.State
	if err := getJSON(ctx, cfg.ControlSecret, base+"/state", &sw); err != nil {
		t.Fatal(err)
	}
	if it, im := slices.Index(sw.Modules, "team"), slices.Index(sw.Modules, "team_mode_roundrobin"); it < 0 || im < 0 || it > im {
		t.Errorf("after the worker pod: modules %v, want team loaded before team_mode_roundrobin", sw.Modules)
	}

	if err := do(ctx, cfg.ControlSecret, http.MethodPut, base+"/modules/bonding"); err != nil {
		t.Fatal(err)
	}
	var s agentapi.State
	if err := getJSON(ctx, cfg.ControlSecret, base+"/state", &s); err != nil {
		t.Fatal(err)
	}
	it, ib := slices.Index(s.Modules, "tls"), slices.Index(s.Modules, "bonding")
	if it < 0 || ib < 0 || it > ib {
		t.Errorf("after loading bonding: modules %v, want tls loaded before bonding", s.Modules)
	}
	if err := do(ctx, cfg.ControlSecret, http.MethodPut, base+"/modules/nosuchmod"); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("unknown module: %v, want 404", err)
	}

	for _, action := range []string{"reboot", "panic"} {
		if err := do(ctx, cfg.ControlSecret, http.MethodPost, base+"/"+action); err != nil {
			t.Fatal(err)
		}
		s2 := boot(s1.BootID)
		if slices.Contains(s2.Modules, "bonding") {
			t.Errorf("after %s: bonding still loaded: %v", action, s2.Modules)
		}
		nodeBoot(s2.BootID)
		s1 = s2
	}
}

// vmFixture is what a VM test needs: the kernel, the image and a running
// control plane, whose API the guest reaches only through its forward.
type vmFixture struct {
	cache  string
	kernel vmprovision.KernelTree
	// pvh is the kernel the libvirt domains boot (vmprovision.PVHKernel).
	pvh   string
	img   *vmprovision.Image
	cp    *controlplane.ControlPlane
	admin kubernetes.Interface
	// apiURL is the API server as the host reaches it; guestURL and
	// serverName as the guest does, through the forward to apiTarget.
	apiURL, guestURL, serverName, apiTarget string
	forwarder                               string
}

func newVMFixture(ctx context.Context, t *testing.T) *vmFixture {
	t.Helper()
	if _, err := exec.LookPath("qemu-system-x86_64"); err != nil {
		t.Fatalf("%s is set but: %v (apt-get install qemu-system-x86)", vmTestEnv, err)
	}
	// Prepared before the test ('make guest-image'): no download or build
	// spends the test's time.
	g := vmtest.Prepared(t)
	cache, kernel, img := g.Cache, g.Kernel, g.Image
	t.Logf("kernel %s, image %s, modules %v", kernel.Version, img.Path, img.Manifest.Modules)
	cp, err := controlplane.Start(ctx, controlplane.Config{BinDir: "../bin"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cp.Stop)
	fx := &vmFixture{cache: cache, kernel: kernel, pvh: g.PVH, img: img, cp: cp,
		admin: kubernetes.NewForConfigOrDie(cp.RESTConfig()), apiURL: cp.APIServerURL()}
	if fx.guestURL, fx.serverName, fx.apiTarget, err = vmprovision.GuestAPIServer(fx.apiURL); err != nil {
		t.Fatal(err)
	}
	if fx.forwarder, err = exec.LookPath(vmprovision.DefaultForwarder); err != nil {
		t.Fatalf("%s is set but: %v (hack/deps-libvirt.sh installs socat)", vmTestEnv, err)
	}
	return fx
}

func (fx *vmFixture) agentConfig(t *testing.T, node string) guest.AgentConfig {
	t.Helper()
	creds, err := fx.cp.NodeCredentials(node)
	if err != nil {
		t.Fatal(err)
	}
	secret, err := agentapi.NewSecret()
	if err != nil {
		t.Fatal(err)
	}
	return guest.AgentConfig{
		NodeName: node, APIServer: fx.guestURL, TLSServerName: fx.serverName, Timing: "fast", ControlSecret: secret,
		CAData: string(creds.RESTConfig.CAData), CertData: string(creds.RESTConfig.CertData), KeyData: string(creds.RESTConfig.KeyData),
	}
}

// runWorkerPod creates a KMM worker pod that loads module on node and
// returns its termination message once it succeeded.
func runWorkerPod(ctx context.Context, t *testing.T, admin kubernetes.Interface, node, kernelVersion, module string) *contract.WorkerTerminationMessage {
	t.Helper()
	const ns = "vm-worker-test"
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "load-" + strings.ReplaceAll(module, "_", "-"), Namespace: ns,
			Labels:      map[string]string{contract.WorkerActionLabel: contract.ActionLoad},
			Annotations: map[string]string{contract.WorkerConfigAnnotation: "kernelVersion: " + kernelVersion + "\nmodprobe:\n  moduleName: " + module + "\n"}},
		Spec: corev1.PodSpec{NodeName: node, RestartPolicy: corev1.RestartPolicyNever, AutomountServiceAccountToken: new(bool),
			Tolerations: contract.SimulatedTolerations(), // the node's kubelet taints it NoExecute
			Containers:  []corev1.Container{{Name: contract.WorkerContainerName, Image: "bootproof.invalid/worker"}}},
	}
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("create worker pod: %v", err)
		}
		time.Sleep(200 * time.Millisecond) // the default ServiceAccount may not exist yet
	}
	for {
		p, err := admin.CoreV1().Pods(ns).Get(ctx, pod.Name, metav1.GetOptions{})
		if err == nil && p.Status.Phase == corev1.PodSucceeded && len(p.Status.ContainerStatuses) > 0 && p.Status.ContainerStatuses[0].State.Terminated != nil {
			m, err := contract.ParseWorkerTerminationMessage(p.Status.ContainerStatuses[0].State.Terminated.Message)
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("worker pod %s succeeded: %s", pod.Name, m)
			return &m
		}
		if err == nil && p.Status.Phase == corev1.PodFailed {
			t.Fatalf("worker pod %s failed: %+v", pod.Name, p.Status)
		}
		if time.Now().After(deadline) {
			t.Fatalf("worker pod %s did not succeed: %v %+v", pod.Name, err, p)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// httpClient polls with a short timeout: while the guest boots, QEMU
// accepts the forwarded connection but nothing answers.
var httpClient = &http.Client{Timeout: time.Second}

func getJSON(ctx context.Context, secret, url string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	agentapi.SetAuthorization(req, secret)
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func do(ctx context.Context, secret, method, url string) error {
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	if err != nil {
		return err
	}
	agentapi.SetAuthorization(req, secret)
	resp, err := httpClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 {
		return fmt.Errorf("%s %s: %s", method, url, resp.Status)
	}
	return nil
}
