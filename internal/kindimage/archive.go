package kindimage

import (
	"archive/tar"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// File is one file an image layer holds.
type File struct {
	// Path inside the image, absolute.
	Path string
	// Source is the file on this machine whose bytes it takes.
	Source string
	// Mode of the file in the image.
	Mode int64
}

// ImageSpec describes one image archive: its name (what kubeadm asks
// for), an optional base layer (a tar file), the files of its own layer,
// and its configuration.
type ImageSpec struct {
	Ref        string
	BaseLayer  string
	Files      []File
	Entrypoint []string
	User       string
	Env        []string
	// Arch is the image's architecture (GOARCH names: amd64, arm64);
	// default amd64.
	Arch string
}

// epoch is the fixed time of every layer entry and image, so an archive
// depends only on its inputs.
var epoch = time.Unix(0, 0).UTC()

// WriteImageArchive writes spec as a docker image archive (what 'docker
// save' writes and 'ctr images import' reads) at path.
func WriteImageArchive(spec ImageSpec, path string) error {
	ref, err := name.ParseReference(spec.Ref, name.WithDefaultRegistry(""))
	if err != nil {
		return fmt.Errorf("image %s: %w", spec.Ref, err)
	}
	img := empty.Image
	var layers []v1.Layer
	if spec.BaseLayer != "" {
		base, err := tarball.LayerFromFile(spec.BaseLayer)
		if err != nil {
			return fmt.Errorf("image %s: base layer %s: %w", spec.Ref, spec.BaseLayer, err)
		}
		layers = append(layers, base)
	}
	own, err := filesLayer(spec.Files, filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("image %s: %w", spec.Ref, err)
	}
	defer os.Remove(own)
	l, err := tarball.LayerFromFile(own)
	if err != nil {
		return fmt.Errorf("image %s: %w", spec.Ref, err)
	}
	layers = append(layers, l)
	if img, err = mutate.AppendLayers(img, layers...); err != nil {
		return fmt.Errorf("image %s: %w", spec.Ref, err)
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS, cf.Created = "amd64", "linux", v1.Time{Time: epoch}
	if spec.Arch != "" {
		cf.Architecture = spec.Arch
	}
	cf.Config.Entrypoint = spec.Entrypoint
	cf.Config.User = spec.User
	cf.Config.Env = append([]string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}, spec.Env...)
	if img, err = mutate.ConfigFile(img, cf); err != nil {
		return fmt.Errorf("image %s: %w", spec.Ref, err)
	}
	tmp := path + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("write image %s to %s: %w", spec.Ref, path, err)
	}
	return os.Rename(tmp, path)
}

// filesLayer writes the files, with their parent directories, as an
// uncompressed layer tar in dir and returns its path.
func filesLayer(files []File, dir string) (string, error) {
	f, err := os.CreateTemp(dir, "layer-*.tar")
	if err != nil {
		return "", err
	}
	ok := false
	defer func() {
		f.Close()
		if !ok {
			os.Remove(f.Name())
		}
	}()
	tw := tar.NewWriter(f)
	dirs := map[string]bool{}
	for _, file := range files {
		if err := addParents(tw, filepath.Dir(file.Path), dirs); err != nil {
			return "", err
		}
		if err := addFile(tw, file); err != nil {
			return "", err
		}
	}
	if err := tw.Close(); err != nil {
		return "", err
	}
	ok = true
	return f.Name(), f.Close()
}

func addParents(tw *tar.Writer, dir string, seen map[string]bool) error {
	if dir == "/" || dir == "." || seen[dir] {
		return nil
	}
	if err := addParents(tw, filepath.Dir(dir), seen); err != nil {
		return err
	}
	seen[dir] = true
	return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: dir[1:] + "/", Mode: 0o755, ModTime: epoch, Format: tar.FormatPAX})
}

func addFile(tw *tar.Writer, file File) error {
	src, err := os.Open(file.Source)
	if err != nil {
		return err
	}
	defer src.Close()
	st, err := src.Stat()
	if err != nil {
		return err
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: file.Path[1:], Mode: file.Mode, Size: st.Size(), ModTime: epoch, Format: tar.FormatPAX}); err != nil {
		return err
	}
	_, err = io.Copy(tw, src)
	return err
}
