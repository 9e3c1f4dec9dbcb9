package kindimage

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Result is what Build made.
type Result struct {
	Tag string
	// KubernetesVersion is kubeadm's version, written to /kind/version.
	KubernetesVersion string
	// Images are the control-plane images imported into the node.
	Images []string
	// Steps are the build's steps with their durations, in order.
	Steps []Step
}

// Step is one timed step of a build.
type Step struct {
	Name     string
	Cached   bool
	Duration time.Duration
}

// builder carries one build.
type builder struct {
	cfg Config
	r   Runner
	res Result
}

// Build builds the node image cfg.Tag with docker, replacing an image of
// that name. The caller decides whether a build is needed
// (hack/kind-image.sh keys the tag by the pins). It removes every
// container and intermediate image it made, on error too.
func Build(ctx context.Context, cfg Config, r Runner) (Result, error) {
	cfg.Default()
	if err := cfg.Validate(); err != nil {
		return Result{}, err
	}
	if os.Geteuid() != 0 {
		return Result{}, ErrNotRoot
	}
	workDir, err := CheckWorkDir(cfg.WorkDir)
	if err != nil {
		return Result{}, err
	}
	cfg.WorkDir = workDir
	unlock, err := lockWorkDir(ctx, workDir, func() {
		fmt.Fprintf(cfg.Progress, "kind-image: waiting for another build using %s to end\n", workDir)
	})
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	b := &builder{cfg: cfg, r: r, res: Result{Tag: cfg.Tag}}
	plan, err := b.planImages(ctx)
	if err != nil {
		return b.res, err
	}
	var nodeRoot, userland string
	if err := b.step("debootstrap the node's Debian "+cfg.Suite, func() (cached bool, err error) {
		nodeRoot, cached, err = Debootstrap(ctx, r, cfg.WorkDir, b.rootfs("node", NodePackages), cfg.Progress)
		return cached, err
	}); err != nil {
		return b.res, err
	}
	if err := b.step("debootstrap kube-proxy's userland", func() (cached bool, err error) {
		var dir string
		if dir, cached, err = Debootstrap(ctx, r, cfg.WorkDir, b.rootfs("proxy", ProxyPackages), cfg.Progress); err != nil {
			return false, err
		}
		userland, err = b.userlandLayer(ctx, dir)
		return cached, err
	}); err != nil {
		return b.res, err
	}
	archives, err := b.writeArchives(plan, userland)
	if err != nil {
		return b.res, err
	}
	return b.res, b.assemble(ctx, nodeRoot, plan, archives)
}

func (b *builder) step(name string, f func() (cached bool, err error)) error {
	fmt.Fprintf(b.cfg.Progress, "kind-image: %s ...\n", name)
	start := time.Now()
	cached, err := f()
	s := Step{Name: name, Cached: cached, Duration: time.Since(start)}
	b.res.Steps = append(b.res.Steps, s)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	state := "done"
	if cached {
		state = "cached"
	}
	fmt.Fprintf(b.cfg.Progress, "kind-image: %s: %s in %s\n", name, state, s.Duration.Round(100*time.Millisecond))
	return nil
}

func (b *builder) rootfs(name string, packages []string) Rootfs {
	return Rootfs{Name: name, Suite: b.cfg.Suite, Mirror: b.cfg.Mirror, Keyring: b.cfg.Keyring, Packages: packages}
}

func (b *builder) bin(name string) string { return filepath.Join(b.cfg.BinDir, name) }

// planImages asks the built kubeadm which images it needs and checks each
// built binary's version against its image tag.
func (b *builder) planImages(ctx context.Context) ([]PlannedImage, error) {
	out, err := b.r.Output(ctx, b.bin("kubeadm"), "version", "-o", "short")
	if err != nil {
		return nil, fmt.Errorf("kubeadm version: %w: %s", err, out)
	}
	b.res.KubernetesVersion = strings.TrimSpace(string(out))
	out, err = b.r.Output(ctx, b.bin("kubeadm"), "config", "images", "list", "--kubernetes-version", b.res.KubernetesVersion)
	if err != nil {
		return nil, fmt.Errorf("kubeadm config images list: %w: %s", err, out)
	}
	plan, err := PlanImages(strings.Split(string(out), "\n"))
	if err != nil {
		return nil, err
	}
	if b.cfg.EtcdVersion != "" {
		for i := range plan {
			if plan[i].Component.Repo == "etcd" {
				plan[i].Ref.Tag = EtcdImageTag(b.cfg.EtcdVersion)
			}
		}
	}
	if !slices.ContainsFunc(plan, func(p PlannedImage) bool { return p.Component.Repo == "pause" }) {
		return nil, errors.New("kubeadm config images list named no pause image: the node's containerd needs one as its sandbox image")
	}
	for _, p := range plan {
		out, err := b.r.Output(ctx, b.bin(p.Component.Binary), p.Component.VersionArgs...)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w: %s", p.Component.Binary, strings.Join(p.Component.VersionArgs, " "), err, out)
		}
		if !VersionMatches(p.Ref.Tag, string(out)) {
			return nil, fmt.Errorf("kubeadm asks for %s, but %s in %s says %q: pin the version kubeadm asks for under tools/ (tools/kindnode/build.sh), or for etcd give the binary's version (EtcdVersion, --etcd-version)",
				p.Ref, p.Component.Binary, b.cfg.BinDir, strings.TrimSpace(lastLines(out, 3)))
		}
		b.res.Images = append(b.res.Images, p.Ref.String())
	}
	return plan, nil
}

// userlandLayer tars the kube-proxy userland as a layer, once per
// root filesystem.
func (b *builder) userlandLayer(ctx context.Context, dir string) (string, error) {
	layer := dir + ".layer.tar"
	if _, err := os.Stat(layer); err == nil {
		return layer, nil
	}
	tmp := layer + ".tmp"
	if out, err := b.r.Output(ctx, "tar", "--numeric-owner", "--sort=name", "--mtime=@0", "-C", dir, "-cf", tmp, "."); err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("tar %s: %w: %s", dir, err, out)
	}
	return layer, os.Rename(tmp, layer)
}

func (b *builder) writeArchives(plan []PlannedImage, userland string) (map[string]string, error) {
	archives := map[string]string{}
	err := b.step(fmt.Sprintf("write %d control-plane image archives", len(plan)), func() (bool, error) {
		dir, err := privateSubdir(b.cfg.WorkDir, "images")
		if err != nil {
			return false, err
		}
		for _, p := range plan {
			path := filepath.Join(dir, p.ArchiveName())
			if err := WriteImageArchive(p.Spec(b.cfg.BinDir, userland), path); err != nil {
				return false, err
			}
			archives[p.Ref.String()] = path
		}
		return false, nil
	})
	return archives, err
}

// assemble makes the node's filesystem, imports it, imports the image
// archives into its containerd and commits the node image.
func (b *builder) assemble(ctx context.Context, nodeRoot string, plan []PlannedImage, archives map[string]string) error {
	// One build at a time holds the work directory: a staging tree left
	// by a killed build is removed here.
	staging := filepath.Join(b.cfg.WorkDir, "staging")
	defer os.RemoveAll(staging)
	intermediate := b.cfg.Tag + "-build"
	if err := b.step("lay out the node's filesystem", func() (bool, error) {
		return false, b.stage(ctx, nodeRoot, staging, plan)
	}); err != nil {
		return err
	}
	if err := b.step("import the node's filesystem into docker", func() (bool, error) {
		return false, b.importStaging(ctx, staging, intermediate)
	}); err != nil {
		return err
	}
	defer func() { _, _ = b.r.Output(context.WithoutCancel(ctx), b.cfg.Docker, "rmi", intermediate) }()
	if err := b.step("import the images into the node's containerd and commit "+b.cfg.Tag, func() (bool, error) {
		return false, b.loadAndCommit(ctx, intermediate, plan, archives)
	}); err != nil {
		return err
	}
	if !b.cfg.Prune {
		return nil
	}
	return b.step("remove the images this build supersedes", func() (bool, error) {
		b.pruneSuperseded(ctx)
		return false, nil
	})
}

// pruneSuperseded removes the images of Tag's repository that carry
// every label of Labels and are not Tag. An image it cannot remove (a
// container still uses it) stays, with a line saying why: the build
// itself succeeded.
func (b *builder) pruneSuperseded(ctx context.Context) {
	repo := b.cfg.Tag
	if i := strings.LastIndex(repo, ":"); i > strings.LastIndex(repo, "/") {
		repo = repo[:i]
	}
	args := []string{"image", "ls", "--format", "{{.Repository}}:{{.Tag}}"}
	for _, k := range slices.Sorted(maps.Keys(b.cfg.Labels)) {
		args = append(args, "--filter", "label="+k+"="+b.cfg.Labels[k])
	}
	out, err := b.r.Output(ctx, b.cfg.Docker, append(args, repo)...)
	if err != nil {
		fmt.Fprintf(b.cfg.Progress, "kind-image: not pruning: list %s's images: %v: %s\n", repo, err, lastLines(out, 3))
		return
	}
	for _, img := range strings.Fields(string(out)) {
		if img == b.cfg.Tag || !strings.HasPrefix(img, repo+":") {
			continue
		}
		if out, err := b.r.Output(ctx, b.cfg.Docker, "rmi", img); err != nil {
			fmt.Fprintf(b.cfg.Progress, "kind-image: %s stays: %v: %s\n", img, err, lastLines(out, 3))
			continue
		}
		fmt.Fprintf(b.cfg.Progress, "kind-image: removed %s, which %s supersedes\n", img, b.cfg.Tag)
	}
}

func (b *builder) stage(ctx context.Context, nodeRoot, staging string, plan []PlannedImage) error {
	if err := os.RemoveAll(staging); err != nil {
		return err
	}
	if out, err := b.r.Output(ctx, "cp", "-a", nodeRoot, staging); err != nil {
		return fmt.Errorf("copy %s: %w: %s", nodeRoot, err, out)
	}
	// Every write below goes through an os.Root of the staging tree: no
	// path and no link in the Debian tree can lead a write out of it.
	root, err := os.OpenRoot(staging)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := writeKindBase(root); err != nil {
		return fmt.Errorf("kind's base files: %w", err)
	}
	var pause string
	for _, p := range plan {
		if p.Component.Repo == "pause" {
			pause = p.Ref.String()
		}
	}
	raw, err := root.ReadFile("etc/containerd/config.toml")
	if err != nil {
		return err
	}
	toml, err := ContainerdConfig(raw, pause)
	if err != nil {
		return err
	}
	specOut, err := b.r.Output(ctx, b.bin("ctr"), "oci", "spec")
	if err != nil {
		return fmt.Errorf("ctr oci spec: %w: %s", err, specOut)
	}
	criBase, err := CRIBaseSpec(specOut)
	if err != nil {
		return err
	}
	cni, err := CNIConfig(b.cfg.PodSubnet)
	if err != nil {
		return err
	}
	generated := map[string][]byte{
		"/etc/containerd/config.toml":            toml,
		"/etc/containerd/cri-base.json":          criBase,
		"/etc/cni/net.d/10-bootproof.conflist":   cni,
		"/kind/manifests/default-cni.yaml":       []byte(defaultCNIManifest),
		"/kind/version":                          []byte(b.res.KubernetesVersion),
		"/etc/kubernetes/manifests/.bootproof":   nil, // the directory kubeadm's packages would make
		"/etc/bootproof-kind-node-image.release": []byte(releaseNote(b.res)),
	}
	for p, data := range generated {
		if err := writeFile(root, p, data, 0o644); err != nil {
			return err
		}
	}
	for bin, p := range nodeBinaryPaths {
		if err := copyFile(b.bin(bin), root, p, 0o755); err != nil {
			return fmt.Errorf("install %s: %w", bin, err)
		}
	}
	return systemdSetup(root)
}

func releaseNote(r Result) string {
	return fmt.Sprintf("built by bootproof (internal/kindimage) with no registry\nkubernetes %s\nimages %s\n", r.KubernetesVersion, strings.Join(r.Images, " "))
}

// importStaging imports the node's filesystem as an image: tar writes it
// to an archive beside the staging directory, which docker imports (no
// shell, so no path is ever parsed by one). kind's base image also sets
// STOPSIGNAL SIGRTMIN+3 (systemd's clean halt), which 'docker import'
// cannot set; kind removes its nodes with 'docker rm -f' and never sends
// the image's stop signal.
func (b *builder) importStaging(ctx context.Context, staging, image string) error {
	archive := staging + ".tar"
	defer os.Remove(archive)
	if out, err := b.r.Output(ctx, "tar", "--numeric-owner", "-C", staging, "-cf", archive, "."); err != nil {
		return fmt.Errorf("tar %s: %w: %s", staging, err, lastLines(out, 10))
	}
	if out, err := b.r.Output(ctx, b.cfg.Docker, "import", "--change", "ENV container=docker",
		"--change", `ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]`, archive, image); err != nil {
		return fmt.Errorf("docker import: %w: %s", err, lastLines(out, 10))
	}
	return nil
}

func (b *builder) loadAndCommit(ctx context.Context, image string, plan []PlannedImage, archives map[string]string) error {
	name := fmt.Sprintf("bootproof-kind-build-%d", os.Getpid())
	d := b.cfg.Docker
	if out, err := b.r.Output(ctx, d, "run", "-d", "--name", name, "--entrypoint=sleep", "--security-opt", "seccomp=unconfined", image, "infinity"); err != nil {
		return fmt.Errorf("start the build container: %w: %s", err, out)
	}
	defer func() { _, _ = b.r.Output(context.WithoutCancel(ctx), d, "rm", "-f", "-v", name) }()
	// The scripts run in the build container are constants: nothing of
	// the host or the configuration is spliced into them.
	if out, err := b.r.Output(ctx, d, "exec", name, "bash", "-c", "nohup containerd > /var/log/containerd-build.log 2>&1 &"); err != nil {
		return fmt.Errorf("start containerd in the build container: %w: %s", err, out)
	}
	wait := `for i in $(seq 100); do [ -S /run/containerd/containerd.sock ] && ctr version >/dev/null 2>&1 && exit 0; sleep 0.2; done; cat /var/log/containerd-build.log; exit 1`
	if out, err := b.r.Output(ctx, d, "exec", name, "bash", "-c", wait); err != nil {
		return fmt.Errorf("containerd did not answer in the build container: %w: %s", err, lastLines(out, 20))
	}
	for _, p := range plan {
		f, err := os.Open(archives[p.Ref.String()])
		if err != nil {
			return err
		}
		out, err := b.r.Pipe(ctx, f, d, "exec", "-i", name, "ctr", "--namespace=k8s.io", "images", "import",
			"--label=io.cri-containerd.pinned=pinned", "--all-platforms", "--no-unpack", "--digests", "-")
		f.Close()
		if err != nil {
			return fmt.Errorf("import %s: %w: %s", p.Ref, err, out)
		}
	}
	out, err := b.r.Output(ctx, d, "exec", name, "ctr", "--namespace=k8s.io", "images", "list", "-q")
	if err != nil {
		return fmt.Errorf("list the node's images: %w: %s", err, out)
	}
	have := strings.Fields(string(out))
	for _, p := range plan {
		if !slices.Contains(have, p.Ref.String()) {
			return fmt.Errorf("image %s is not in the node's containerd after import (have %v)", p.Ref, have)
		}
	}
	// containerd's parent is the container's sleep, which reaps no
	// child: once it exits it stays a zombie, so wait for that state.
	stop := `pkill -x containerd; for i in $(seq 100); do
  live=0; for p in $(pgrep -x containerd); do grep -q '^State:[[:space:]]*Z' /proc/$p/status || live=1; done
  [ $live = 0 ] && exit 0; sleep 0.2
done; ps -ef; exit 1`
	if out, err := b.r.Output(ctx, d, "exec", name, "bash", "-c", stop); err != nil {
		return fmt.Errorf("stop containerd in the build container: %w: %s", err, out)
	}
	changes := []string{"--change", `ENTRYPOINT [ "/usr/local/bin/entrypoint", "/sbin/init" ]`,
		"--change", "LABEL " + LabelSkipPhases + "=" + strings.Join(SkipPhases(), ",")}
	if b.cfg.EtcdVersion != "" {
		changes = append(changes, "--change", "LABEL "+LabelEtcdImageTag+"="+EtcdImageTag(b.cfg.EtcdVersion))
	}
	for _, k := range slices.Sorted(maps.Keys(b.cfg.Labels)) {
		changes = append(changes, "--change", "LABEL "+k+"="+b.cfg.Labels[k])
	}
	if out, err := b.r.Output(ctx, d, append(append([]string{"commit"}, changes...), name, b.cfg.Tag)...); err != nil {
		return fmt.Errorf("docker commit %s: %w: %s", b.cfg.Tag, err, out)
	}
	return nil
}
