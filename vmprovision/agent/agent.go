//go:build linux

package agent

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/go-logr/logr/funcr"
	"golang.org/x/sys/unix"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/bootproof/bootproof/fakes"
	"github.com/bootproof/bootproof/vmprovision/agentapi"
	"github.com/bootproof/bootproof/vmprovision/guest"
)

// Options are the agent's command-line options; the defaults are right for
// /init in a bootproof VM.
type Options struct {
	// ConfigPath is the agent configuration (guest.AgentConfigPath).
	ConfigPath string
	// Root is the kernel's root for tests; empty means "/".
	Root string
	// SetupSystem mounts the pseudo file systems and configures the network
	// (true when running as PID 1). It also reads the kernel log for the
	// boot's milestones (agentapi.BootTimes).
	SetupSystem bool

	// mainAt is the boot clock when Main began; zero: when Run began.
	mainAt time.Duration
}

// Main runs the agent with command-line arguments and returns the exit
// code. As PID 1 it never returns on failure: it logs the error and
// reboots after a pause, so a guest whose API server is not up yet
// retries in a new boot.
func Main(args []string) int {
	mainAt := bootClock()
	fs := flag.NewFlagSet("bootproof-agent", flag.ContinueOnError)
	opts := Options{SetupSystem: os.Getpid() == 1, mainAt: mainAt}
	fs.StringVar(&opts.ConfigPath, "config", guest.AgentConfigPath, "agent configuration file")
	fs.StringVar(&opts.Root, "root", "", "root of /proc and /lib/modules (tests)")
	fs.BoolVar(&opts.SetupSystem, "setup-system", opts.SetupSystem, "mount /proc, /sys, /dev and configure the network (default: when PID 1)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if opts.SetupSystem {
		if err := mountPseudoFS(); err != nil {
			fmt.Fprintf(os.Stderr, "bootproof-agent: %v\n", err)
		}
	}
	console := openConsole()
	if opts.SetupSystem {
		// The image has no /dev/console, so the kernel started us without
		// stdio; now that devtmpfs is mounted, make the console ours.
		if f, ok := console.(*os.File); ok && f != os.Stderr {
			for fd := 0; fd <= 2; fd++ {
				_ = unix.Dup3(int(f.Fd()), fd, 0)
			}
		}
	}
	log := newLogger(console)
	err := Run(logr.NewContext(context.Background(), log), opts)
	if err == nil {
		return 0
	}
	log.Error(err, "agent failed")
	if os.Getpid() == 1 {
		time.Sleep(5 * time.Second)
		log.Info("rebooting after failure")
		if err := rebootNow(); err != nil {
			log.Error(err, "reboot")
		}
		select {}
	}
	return 1
}

// openConsole is /dev/console for writing, else stderr.
func openConsole() io.Writer {
	if f, err := os.OpenFile("/dev/console", os.O_WRONLY|os.O_APPEND, 0); err == nil {
		return f
	}
	return os.Stderr
}

func newLogger(w io.Writer) logr.Logger {
	var mu sync.Mutex
	return funcr.New(func(prefix, args string) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(w, "%s bootproof-agent %s %s\n", time.Now().UTC().Format(time.RFC3339Nano), prefix, args)
	}, funcr.Options{Verbosity: 1})
}

// Run configures the guest and runs the kubelet until ctx ends.
func Run(ctx context.Context, opts Options) error {
	log := logr.FromContextOrDiscard(ctx)
	f, err := os.Open(opts.ConfigPath)
	if err != nil {
		return fmt.Errorf("read agent config: %w", err)
	}
	cfg, err := guest.DecodeAgentConfig(f)
	f.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", opts.ConfigPath, err)
	}
	kernel, err := guest.NewRealKernel(guest.RealKernelConfig{Root: opts.Root})
	if err != nil {
		return fmt.Errorf("node %s: %w", cfg.NodeName, err)
	}
	log.Info("boot", "node", cfg.NodeName, "bootID", kernel.BootID(), "kernel", kernel.Version())
	kmsg := ""
	if opts.SetupSystem {
		kmsg = "/dev/kmsg"
	}
	boot := newBootMilestones(kmsg, func(err error) { log.Error(err, "boot milestones") })
	if opts.mainAt > 0 {
		boot.agentMain = opts.mainAt
	}
	for _, m := range cfg.Modules {
		start := time.Now()
		if err := kernel.Load(m); err != nil {
			return fmt.Errorf("node %s: boot modules: %w", cfg.NodeName, err)
		}
		log.Info("module loaded", "module", m, "took", time.Since(start).String())
	}
	if opts.SetupSystem {
		if err := setupNetwork(ctx, cfg.Network); err != nil {
			return fmt.Errorf("node %s: %w", cfg.NodeName, err)
		}
		log.Info("network up", "interface", cfg.Network.Interface, "address", cfg.Network.Address, "gateway", cfg.Network.Gateway)
	}
	client, err := kubernetes.NewForConfig(RestConfig(cfg))
	if err != nil {
		return fmt.Errorf("node %s: api client: %w", cfg.NodeName, err)
	}
	addr := cfg.Network.Address
	if ip, _, err := net.ParseCIDR(addr); err == nil {
		addr = ip.String()
	}
	kubelet, err := fakes.New(fakes.Config{
		NodeName: cfg.NodeName, Client: client, Kernel: kernel, Timing: cfg.TimingValue(),
		Labels: cfg.Labels, Address: addr, OSImage: "bootproof VM (" + kernel.Version() + ")",
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ln, err := net.Listen("tcp", ":"+strconv.Itoa(cfg.ControlPort))
	if err != nil {
		return fmt.Errorf("node %s: control api: %w", cfg.NodeName, err)
	}
	srv := &http.Server{Handler: ControlHandler(cfg.ControlSecret, kernel, bootMachine{SystemMachine{}, boot}, kubelet, log), ReadHeaderTimeout: 5 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	defer srv.Close()
	log.Info("control api listening", "addr", ln.Addr().String())
	go func() {
		select {
		case <-kubelet.Registered():
			boot.set(&boot.registered)
		case <-ctx.Done():
		}
	}()
	boot.set(&boot.kubeletStart)
	return kubelet.Start(ctx)
}

// RestConfig is the API client configuration of the node.
func RestConfig(cfg guest.AgentConfig) *rest.Config {
	return &rest.Config{
		Host: cfg.APIServer,
		TLSClientConfig: rest.TLSClientConfig{
			CAData: []byte(cfg.CAData), CertData: []byte(cfg.CertData), KeyData: []byte(cfg.KeyData),
			ServerName: cfg.TLSServerName,
		},
		UserAgent: "bootproof-agent/" + cfg.NodeName,
		Timeout:   15 * time.Second,
		QPS:       50, Burst: 100,
	}
}

// Machine is what the control API does to the guest.
type Machine interface {
	// Reboot restarts the machine with reboot(2); it does not return on
	// success.
	Reboot() error
	// Panic crashes the kernel (sysrq c); with panic=1 it reboots.
	Panic() error
}

// SystemMachine is the running guest.
type SystemMachine struct{}

// Reboot implements Machine.
func (SystemMachine) Reboot() error { return rebootNow() }

// Panic implements Machine.
func (SystemMachine) Panic() error {
	if err := os.WriteFile("/proc/sysrq-trigger", []byte("c"), 0); err != nil {
		return fmt.Errorf("sysrq panic: %w", err)
	}
	return nil
}

// KubeletControl restarts the agent's kubelet in the same boot, and has
// it reject worker pods at admission.
type KubeletControl interface {
	RestartKubelet(ctx context.Context, downtime time.Duration) error
	RejectWorkerPods(n int)
}

// ControlHandler serves the agent's control API (package agentapi) to
// requests that carry secret (agentapi.Authorized); any other request is
// answered 401 and does nothing. An empty secret refuses every request.
//
//	GET  /state   the boot ID, kernel release and /proc/modules (JSON agentapi.State),
//	              and the boot's milestones when m is a BootTimer
//	POST /reboot  reboot(2) after the answer is sent
//	POST /panic   kernel panic through sysrq after the answer is sent
//	POST /restart-kubelet?downtime=D  stop the kubelet, wait D, start it
//	              again in the same boot; answers once it runs again
//	POST /reject-pods?count=N  the kubelet rejects its next N worker pods
//	              at admission
//	PUT    /modules/{name}  load a module like modprobe (a manual check;
//	                        the kubelet's worker pods are the real path)
//	DELETE /modules/{name}  unload it like modprobe -r
//	POST /dial?addr=H:P&timeout=D  dial H:P from the guest (a diagnostic
//	              of what the guest reaches; agentapi.DialResult)
func ControlHandler(secret string, k fakes.Kernel, m Machine, kl KubeletControl, log logr.Logger) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST "+agentapi.PathDial, dialHandler(log))
	mux.HandleFunc("GET "+agentapi.PathState, func(w http.ResponseWriter, r *http.Request) {
		s := agentapi.State{BootID: k.BootID(), KernelVersion: k.Version(), Modules: []string{}}
		for _, lm := range k.Loaded() {
			s.Modules = append(s.Modules, lm.Name)
		}
		if bt, ok := m.(BootTimer); ok {
			s.Boot = bt.BootTimes()
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(s)
	})
	act := func(name string, do func() error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			log.Info("control request", "action", name, "bootID", k.BootID(), "from", r.RemoteAddr)
			w.WriteHeader(http.StatusAccepted)
			fmt.Fprintf(w, "%s of boot %s accepted\n", name, k.BootID())
			if f, ok := w.(http.Flusher); ok {
				f.Flush()
			}
			go func() {
				time.Sleep(100 * time.Millisecond) // let the answer leave
				if err := do(); err != nil {
					log.Error(err, "control action failed", "action", name)
				}
			}()
		}
	}
	module := func(name string, do func(string) error) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			mod := r.PathValue("name")
			start := time.Now()
			if err := do(mod); err != nil {
				log.Error(err, "control request failed", "action", name, "module", mod)
				code := http.StatusInternalServerError
				if errors.Is(err, fakes.ErrUnknownModule) {
					code = http.StatusNotFound
				} else if errors.Is(err, fakes.ErrModuleInUse) {
					code = http.StatusConflict
				}
				http.Error(w, err.Error(), code)
				return
			}
			log.Info("control request", "action", name, "module", mod, "took", time.Since(start).String())
			fmt.Fprintf(w, "%s %s in boot %s\n", name, mod, k.BootID())
		}
	}
	mux.HandleFunc("PUT "+agentapi.PathModules+"{name}", module("load", k.Load))
	mux.HandleFunc("DELETE "+agentapi.PathModules+"{name}", module("unload", k.Unload))
	mux.HandleFunc("POST "+agentapi.PathReboot, act("reboot", m.Reboot))
	mux.HandleFunc("POST "+agentapi.PathPanic, act("panic", m.Panic))
	mux.HandleFunc("POST "+agentapi.PathRestartKubelet, func(w http.ResponseWriter, r *http.Request) {
		d, err := time.ParseDuration(r.URL.Query().Get(agentapi.QueryDowntime))
		if err != nil || d < 0 {
			http.Error(w, fmt.Sprintf("query downtime=%q: accepted: a non-negative Go duration such as 15s", r.URL.Query().Get(agentapi.QueryDowntime)), http.StatusBadRequest)
			return
		}
		log.Info("control request", "action", "restart-kubelet", "downtime", d.String(), "bootID", k.BootID())
		if err := kl.RestartKubelet(r.Context(), d); err != nil {
			log.Error(err, "control request failed", "action", "restart-kubelet")
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		fmt.Fprintf(w, "kubelet restarted in boot %s\n", k.BootID())
	})
	mux.HandleFunc("POST "+agentapi.PathRejectPods, func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query().Get(agentapi.QueryCount)
		n, err := strconv.Atoi(q)
		if err != nil || n < 0 || n > agentapi.MaxRejectPods {
			http.Error(w, fmt.Sprintf("query count=%q: accepted: a whole number from 0 to %d", q, agentapi.MaxRejectPods), http.StatusBadRequest)
			return
		}
		log.Info("control request", "action", "reject-pods", "count", n, "bootID", k.BootID())
		kl.RejectWorkerPods(n)
		fmt.Fprintf(w, "the kubelet rejects its next %d worker pod(s) at admission\n", n)
	})
	return requireSecret(secret, mux, log)
}

// requireSecret passes on only the requests that carry secret.
func requireSecret(secret string, next http.Handler, log logr.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !agentapi.Authorized(r, secret) {
			log.Info("control request refused: no valid secret", "method", r.Method, "path", r.URL.Path, "from", r.RemoteAddr)
			w.Header().Set("WWW-Authenticate", agentapi.AuthScheme)
			http.Error(w, "unauthorized: the node's secret is required", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// dialHandler opens a TCP connection from the guest and reports whether
// it was established.
func dialHandler(log logr.Logger) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		addr := r.URL.Query().Get(agentapi.QueryAddr)
		timeout := agentapi.DefaultDialTimeout
		if q := r.URL.Query().Get(agentapi.QueryTimeout); q != "" {
			d, err := time.ParseDuration(q)
			if err != nil || d <= 0 || d > agentapi.MaxDialTimeout {
				http.Error(w, fmt.Sprintf("query timeout=%q: accepted: a Go duration in (0, %s]", q, agentapi.MaxDialTimeout), http.StatusBadRequest)
				return
			}
			timeout = d
		}
		if _, _, err := net.SplitHostPort(addr); err != nil {
			http.Error(w, fmt.Sprintf("query addr=%q: accepted: host:port", addr), http.StatusBadRequest)
			return
		}
		start := time.Now()
		res := agentapi.DialResult{Addr: addr}
		d := net.Dialer{Timeout: timeout}
		c, err := d.DialContext(r.Context(), "tcp", addr)
		res.Took = time.Since(start)
		if err != nil {
			res.Error = err.Error()
		} else {
			res.Connected = true
			_ = c.Close()
		}
		log.Info("control request", "action", "dial", "addr", addr, "connected", res.Connected, "error", res.Error, "took", res.Took.String())
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(res)
	}
}

// errNotPID1 guards the host from the reboot of a test.
var errNotPID1 = errors.New("not PID 1")
