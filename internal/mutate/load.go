package mutate

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// loaded is one package, parsed and type-checked.
type loaded struct {
	fset  *token.FileSet
	types *types.Package
	info  *types.Info
	files []*ast.File
	rel   []string // the files' paths in the module
	src   [][]byte
}

// listed is what 'go list -json' says of a package (the fields read).
type listed struct {
	ImportPath string
	Dir        string
	GoFiles    []string
	Export     string
	DepOnly    bool
	Error      *struct{ Err string }
}

// loadPackages parses and type-checks the packages patterns name (in
// the module at dir) from source, and the packages they import from the
// export data the go command compiles for them ('go list -export'), as
// the compiler sees them. (golang.org/x/tools/go/packages does the same,
// but linking it would put the module at another version than the control
// plane links; see TestSharedModuleVersions.)
func loadPackages(dir string, patterns []string) ([]*loaded, error) {
	args := append([]string{"list", "-e", "-export", "-deps", "-json=ImportPath,Dir,GoFiles,Export,DepOnly,Error"}, patterns...)
	cmd := exec.Command(goCommand(), args...)
	cmd.Dir = dir
	// The builds' flags, so that the export data the go command compiles
	// for this is the build cache's: a first run compiles it once.
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-trimpath")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list %s in %s: %w: %s", strings.Join(patterns, " "), dir, err, strings.TrimSpace(stderr.String()))
	}
	exports := map[string]string{}
	var roots []listed
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		var p listed
		if err := dec.Decode(&p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list %s: %w", strings.Join(patterns, " "), err)
		}
		if p.Error != nil {
			return nil, fmt.Errorf("package %s: %s", p.ImportPath, p.Error.Err)
		}
		exports[p.ImportPath] = p.Export
		if !p.DepOnly {
			roots = append(roots, p)
		}
	}
	fset := token.NewFileSet()
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, ok := exports[path]
		if !ok || f == "" {
			return nil, fmt.Errorf("no export data for %s", path)
		}
		return os.Open(f)
	})
	var out2 []*loaded
	for _, r := range roots {
		l := &loaded{fset: fset, info: &types.Info{Types: map[ast.Expr]types.TypeAndValue{}, Defs: map[*ast.Ident]types.Object{},
			Uses: map[*ast.Ident]types.Object{}, Implicits: map[ast.Node]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}}
		for _, name := range r.GoFiles {
			path := filepath.Join(r.Dir, name)
			src, err := os.ReadFile(path)
			if err != nil {
				return nil, err
			}
			f, err := parser.ParseFile(fset, path, src, parser.ParseComments|parser.SkipObjectResolution)
			if err != nil {
				return nil, err
			}
			rel, err := filepath.Rel(dir, path)
			if err != nil {
				return nil, err
			}
			l.files, l.src, l.rel = append(l.files, f), append(l.src, src), append(l.rel, filepath.ToSlash(rel))
		}
		conf := types.Config{Importer: imp}
		if l.types, err = conf.Check(r.ImportPath, fset, l.files, l.info); err != nil {
			return nil, fmt.Errorf("type-check %s: %w", r.ImportPath, err)
		}
		out2 = append(out2, l)
	}
	return out2, nil
}

// goCommand is the go command: $GO, else go on the PATH.
func goCommand() string {
	if g := os.Getenv("GO"); g != "" {
		return g
	}
	return "go"
}
