package controlplane

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Defaults. The grace and monitor periods are the upstream defaults of
// kube-controller-manager since Kubernetes 1.32; harness runs usually choose
// shorter ones.
const (
	DefaultGracePeriod   = 50 * time.Second
	DefaultMonitorPeriod = 5 * time.Second
	DefaultStartTimeout  = 2 * time.Minute
	DefaultStopTimeout   = 10 * time.Second
	DefaultMaxRestarts   = 5
	// DefaultCertValidity is how long an embedded cluster's certificates
	// (CAs, serving and client certificates) are valid: a week covers a
	// long soak; a cluster lives for one run.
	DefaultCertValidity = 7 * 24 * time.Hour
	// MinCertValidity and MaxCertValidity bound Config.CertValidity.
	MinCertValidity = time.Hour
	MaxCertValidity = 366 * 24 * time.Hour
	// DefaultControllerManagerQPS and DefaultControllerManagerBurst are
	// kube-controller-manager's client limits (--kube-api-qps,
	// --kube-api-burst), 10x its own defaults of 20 and 30 (kubeadm's too).
	// A catalog registers dozens of simulated nodes within a second, and
	// every new Node carries the node.kubernetes.io/not-ready:NoSchedule
	// taint that kube-apiserver's TaintNodesByCondition admission adds; the
	// node lifecycle controller removes it once the node is Ready. At 20
	// requests a second those removals queued behind the controller's own
	// rate limiter for up to 23 s, and no operator may place a worker pod
	// on a tainted node: the first load of every case in the first parallel
	// batch waited for it (the "first-load stall"). A real cluster's nodes
	// join over minutes, not all in one second; this keeps the plane's
	// reaction to a node as prompt as on an idle cluster.
	DefaultControllerManagerQPS   = 200
	DefaultControllerManagerBurst = 400
)

// DefaultControllers are the kube-controller-manager controllers that shape
// node and pod state: the node lifecycle controller (Ready=Unknown and the
// unreachable taints), taint-based eviction, the garbage collector (owner
// references) and pod GC, plus the service-account controller that creates
// the "default" ServiceAccount pods need in every namespace, and the CSR
// signer, so identities can be issued as on a kubeadm cluster.
var DefaultControllers = []string{
	"node-lifecycle-controller",
	"taint-eviction-controller",
	"garbage-collector-controller",
	"pod-garbage-collector-controller",
	"serviceaccount-controller",
	"namespace-controller",
	"certificatesigningrequest-signing-controller",
}

// KnownControllers lists the kube-controller-manager v1.37 controller names
// that bootproof accepts in Config.Controllers. Older aliases (e.g.
// "nodelifecycle") are accepted too and mapped through controllerAliases.
var KnownControllers = []string{
	"bootstrap-signer-controller",
	"certificatesigningrequest-approving-controller",
	"certificatesigningrequest-cleaner-controller",
	"certificatesigningrequest-signing-controller",
	"clusterrole-aggregation-controller",
	"cronjob-controller",
	"daemonset-controller",
	"deployment-controller",
	"device-taint-eviction-controller",
	"disruption-controller",
	"endpoints-controller",
	"endpointslice-controller",
	"endpointslice-mirroring-controller",
	"ephemeral-volume-controller",
	"garbage-collector-controller",
	"horizontal-pod-autoscaler-controller",
	"job-controller",
	"kube-apiserver-serving-clustertrustbundle-publisher-controller",
	"legacy-serviceaccount-token-cleaner-controller",
	"namespace-controller",
	"node-ipam-controller",
	"node-lifecycle-controller",
	"persistentvolume-attach-detach-controller",
	"persistentvolume-binder-controller",
	"persistentvolume-expander-controller",
	"persistentvolume-protection-controller",
	"persistentvolumeclaim-protection-controller",
	"pod-garbage-collector-controller",
	"podcertificaterequest-cleaner-controller",
	"podgroup-protection-controller",
	"replicaset-controller",
	"replicationcontroller-controller",
	"resourceclaim-controller",
	"resourcepoolstatusrequest-controller",
	"resourcequota-controller",
	"root-ca-certificate-publisher-controller",
	"selinux-warning-controller",
	"service-cidr-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"statefulset-controller",
	"storage-version-migrator-controller",
	"storageversion-garbage-collector-controller",
	"taint-eviction-controller",
	"token-cleaner-controller",
	"ttl-after-finished-controller",
	"ttl-controller",
	"validatingadmissionpolicy-status-controller",
	"volumeattributesclass-protection-controller",
}

// controllerAliases maps the pre-1.28 short names to the current names.
var controllerAliases = map[string]string{
	"nodelifecycle":        "node-lifecycle-controller",
	"garbagecollector":     "garbage-collector-controller",
	"podgc":                "pod-garbage-collector-controller",
	"serviceaccount":       "serviceaccount-controller",
	"namespace":            "namespace-controller",
	"tainteviction":        "taint-eviction-controller",
	"ttl":                  "ttl-controller",
	"daemonset":            "daemonset-controller",
	"deployment":           "deployment-controller",
	"replicaset":           "replicaset-controller",
	"job":                  "job-controller",
	"csrsigning":           "certificatesigningrequest-signing-controller",
	"csrapproving":         "certificatesigningrequest-approving-controller",
	"serviceaccount-token": "serviceaccount-token-controller",
}

// Config configures an embedded control plane. The zero value is usable:
// Default fills every unset field.
type Config struct {
	// Dir is the run directory for PKI, kubeconfigs, data and logs. Empty
	// means a new temporary directory that Stop removes; a directory given
	// here is kept.
	Dir string
	// BinDir holds etcd, kube-apiserver and kube-controller-manager. Empty
	// means: $BOOTPROOF_BIN_DIR, then $KUBEBUILDER_ASSETS, then ./bin and the
	// directory of the running executable.
	BinDir string
	// GracePeriod is kube-controller-manager's --node-monitor-grace-period.
	GracePeriod time.Duration
	// MonitorPeriod is kube-controller-manager's --node-monitor-period.
	MonitorPeriod time.Duration
	// Controllers is kube-controller-manager's --controllers list.
	Controllers []string
	// StartTimeout bounds Start, from the first process start to ready.
	StartTimeout time.Duration
	// StopTimeout is how long Stop waits after SIGTERM before SIGKILL.
	StopTimeout time.Duration
	// CertValidity is how long the cluster's certificates are valid, from
	// its start (default DefaultCertValidity): the cluster stops working
	// once they expire.
	CertValidity time.Duration
	// MaxRestarts is how many times in all a process that exits on its
	// own is started again (default DefaultMaxRestarts); past it, or with
	// a negative value at the first exit, the plane is dead (Died).
	MaxRestarts int
	// ControllerManagerQPS and ControllerManagerBurst are
	// kube-controller-manager's --kube-api-qps and --kube-api-burst
	// (defaults DefaultControllerManagerQPS, DefaultControllerManagerBurst).
	ControllerManagerQPS   float32
	ControllerManagerBurst int
	// ExtraArgs are added to a process's flags, by process name (etcd,
	// kube-apiserver, kube-controller-manager); a later flag wins. For
	// tests that need another behaviour, e.g. kube-apiserver's
	// --watch-cache=false.
	ExtraArgs map[string][]string
}

// ConfigError is a configuration value that was not accepted. It is a
// contract.FieldError: a command line maps Field to the flag that sets
// it, so its users see what to change; the message names only the field.
type ConfigError struct {
	// Field is the Config field: GracePeriod, MonitorPeriod,
	// Controllers[i], StartTimeout, StopTimeout, CertValidity,
	// ExtraArgs[process] or BinDir.
	Field *field.Path
	// Value is the value not accepted (for Controllers the one name, for
	// ExtraArgs the process name).
	Value string
	// Accepted says, in words, what would be.
	Accepted string
}

func (e *ConfigError) Error() string { return e.Render(e.Field.String()) }

// FieldPath implements contract.FieldError.
func (e *ConfigError) FieldPath() *field.Path { return e.Field }

// Render writes the error naming the setting name (a flag, or the field).
func (e *ConfigError) Render(name string) string {
	return fmt.Sprintf("invalid %s %q: accepted: %s", name, e.Value, e.Accepted)
}

// Default returns a copy of c with every unset field filled in.
func (c Config) Default() Config {
	if c.GracePeriod == 0 {
		c.GracePeriod = DefaultGracePeriod
	}
	if c.MonitorPeriod == 0 {
		c.MonitorPeriod = DefaultMonitorPeriod
	}
	if len(c.Controllers) == 0 {
		c.Controllers = slices.Clone(DefaultControllers)
	}
	if c.StartTimeout == 0 {
		c.StartTimeout = DefaultStartTimeout
	}
	if c.MaxRestarts == 0 {
		c.MaxRestarts = DefaultMaxRestarts
	}
	if c.StopTimeout == 0 {
		c.StopTimeout = DefaultStopTimeout
	}
	if c.CertValidity == 0 {
		c.CertValidity = DefaultCertValidity
	}
	if c.ControllerManagerQPS == 0 {
		c.ControllerManagerQPS = DefaultControllerManagerQPS
	}
	if c.ControllerManagerBurst == 0 {
		c.ControllerManagerBurst = DefaultControllerManagerBurst
	}
	if c.BinDir == "" {
		c.BinDir = os.Getenv(EnvBinDir)
	}
	return c
}

// Validate reports the first value that cannot work. Call it on a
// defaulted Config.
func (c Config) Validate() error {
	if c.GracePeriod < time.Second {
		return &ConfigError{Field: field.NewPath("GracePeriod"), Value: c.GracePeriod.String(),
			Accepted: "a duration of at least 1s, longer than the monitor period (e.g. 8s; Kubernetes' default is 50s)"}
	}
	if c.MonitorPeriod <= 0 || c.MonitorPeriod >= c.GracePeriod {
		return &ConfigError{Field: field.NewPath("MonitorPeriod"), Value: c.MonitorPeriod.String(),
			Accepted: fmt.Sprintf("a positive duration shorter than the grace period %s (e.g. 1s; Kubernetes' default is 5s)", c.GracePeriod)}
	}
	for i, name := range c.Controllers {
		if _, err := canonicalController(name); err != nil {
			var ce *ConfigError
			if errors.As(err, &ce) {
				ce.Field = field.NewPath("Controllers").Index(i)
			}
			return err
		}
	}
	if c.StartTimeout <= 0 {
		return &ConfigError{Field: field.NewPath("StartTimeout"), Value: c.StartTimeout.String(), Accepted: "a positive duration"}
	}
	if c.StopTimeout <= 0 {
		return &ConfigError{Field: field.NewPath("StopTimeout"), Value: c.StopTimeout.String(), Accepted: "a positive duration"}
	}
	if c.CertValidity < MinCertValidity || c.CertValidity > MaxCertValidity {
		return &ConfigError{Field: field.NewPath("CertValidity"), Value: c.CertValidity.String(),
			Accepted: fmt.Sprintf("a duration from %s to %s that outlasts the run (default %s)", MinCertValidity, MaxCertValidity, DefaultCertValidity)}
	}
	if c.ControllerManagerQPS < 0 {
		return &ConfigError{Field: field.NewPath("ControllerManagerQPS"), Value: fmt.Sprint(c.ControllerManagerQPS),
			Accepted: fmt.Sprintf("a positive number of requests a second (default %d; kube-controller-manager's own is 20)", DefaultControllerManagerQPS)}
	}
	if c.ControllerManagerBurst < 0 {
		return &ConfigError{Field: field.NewPath("ControllerManagerBurst"), Value: strconv.Itoa(c.ControllerManagerBurst),
			Accepted: fmt.Sprintf("a positive number of requests (default %d; kube-controller-manager's own is 30)", DefaultControllerManagerBurst)}
	}
	for name := range c.ExtraArgs {
		if name != BinEtcd && name != BinKubeAPIServer && name != BinKubeControllerManager {
			return &ConfigError{Field: field.NewPath("ExtraArgs").Key(name), Value: name,
				Accepted: strings.Join([]string{BinEtcd, BinKubeAPIServer, BinKubeControllerManager}, ", ")}
		}
	}
	if c.BinDir != "" {
		st, err := os.Stat(c.BinDir)
		if err != nil || !st.IsDir() {
			return &ConfigError{Field: field.NewPath("BinDir"), Value: c.BinDir,
				Accepted: "an existing directory holding etcd, kube-apiserver and kube-controller-manager (build them with 'bootproof controlplane build', or 'make controlplane' in a checkout); the value may come from $" + EnvBinDir}
		}
	}
	return nil
}

// canonicalController maps a controller name (or a "-name" exclusion, or
// "*") to the name kube-controller-manager v1.37 knows.
func canonicalController(name string) (string, error) {
	if name == "*" {
		return name, nil
	}
	neg := strings.HasPrefix(name, "-")
	base := strings.TrimPrefix(name, "-")
	if alias, ok := controllerAliases[base]; ok {
		base = alias
	}
	if !slices.Contains(KnownControllers, base) {
		return "", &ConfigError{Field: field.NewPath("Controllers"), Value: name,
			Accepted: "'*' or these names, each optionally prefixed with '-': " + strings.Join(KnownControllers, ", ")}
	}
	if neg {
		return "-" + base, nil
	}
	return base, nil
}

func (c Config) controllersFlag() string {
	out := make([]string, 0, len(c.Controllers))
	for _, n := range c.Controllers {
		cn, _ := canonicalController(n)
		out = append(out, cn)
	}
	return strings.Join(out, ",")
}
