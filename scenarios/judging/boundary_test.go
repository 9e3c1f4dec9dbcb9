package judging

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// allowedImports are the only packages judging may import (depguard's
// rule in .golangci.yml says the same for make verify).
var allowedImports = []string{"cmp", "encoding/json", "fmt", "maps", "math", "slices", "sort", "strings", "time",
	"github.com/bootproof/bootproof/nodeapi"}

// clockCalls read or wait for the wall clock: a judgement is a function
// of its Facts and Record, whose times the engine took.
var clockCalls = []string{"Now", "Since", "Until", "Sleep", "After", "AfterFunc", "Tick", "NewTimer", "NewTicker"}

// worldPackages are standard packages that reach outside the process or
// run others; none may be in judging's dependency graph.
var worldPackages = []string{"net", "net/http", "os/exec", "os/signal", "crypto/tls"}

type listed struct {
	ImportPath string
	Dir        string
	Standard   bool
	GoFiles    []string
	Imports    []string
}

// TestImportsNoWorld: judging imports no client, no I/O and no clock.
// Its direct imports are allowedImports; its dependency graph holds no
// k8s.io or network package and no bootproof package but nodeapi; and
// no bootproof package in it calls the clock.
func TestImportsNoWorld(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-json", ".").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []listed
	for dec.More() {
		var p listed
		if err := dec.Decode(&p); err != nil {
			t.Fatalf("go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	self := pkgs[len(pkgs)-1] // -deps lists the package itself last
	if !strings.HasSuffix(self.ImportPath, "/scenarios/judging") {
		t.Fatalf("go list -deps ended with %s, want judging", self.ImportPath)
	}
	for _, imp := range self.Imports {
		if !slices.Contains(allowedImports, imp) {
			t.Errorf("judging imports %s: allowed are %v", imp, allowedImports)
		}
	}
	for _, p := range pkgs {
		switch {
		case p.Standard && slices.Contains(worldPackages, p.ImportPath):
			t.Errorf("judging depends on %s, which reaches outside the process", p.ImportPath)
		case p.Standard:
		case strings.HasPrefix(p.ImportPath, "github.com/bootproof/bootproof/"):
			if p.ImportPath != self.ImportPath && !strings.HasSuffix(p.ImportPath, "/nodeapi") {
				t.Errorf("judging depends on %s: it may read only nodeapi of bootproof", p.ImportPath)
			}
			for _, f := range p.GoFiles {
				for _, call := range clockCallsIn(t, filepath.Join(p.Dir, f)) {
					t.Errorf("%s: %s calls the clock (time.%s)", p.ImportPath, f, call)
				}
			}
		default:
			t.Errorf("judging depends on %s: no module outside the standard library (client-go, apimachinery) may be in its graph", p.ImportPath)
		}
	}
}

// clockCallsIn lists the clock functions of package time that file
// refers to.
func clockCallsIn(t *testing.T, file string) []string {
	f, err := parser.ParseFile(token.NewFileSet(), file, nil, 0)
	if err != nil {
		t.Fatalf("parse %s: %v", file, err)
	}
	timeName := ""
	for _, imp := range f.Imports {
		if imp.Path.Value == `"time"` {
			timeName = "time"
			if imp.Name != nil {
				timeName = imp.Name.Name
			}
		}
	}
	if timeName == "" {
		return nil
	}
	var found []string
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		if id, ok := sel.X.(*ast.Ident); ok && id.Name == timeName && slices.Contains(clockCalls, sel.Sel.Name) {
			found = append(found, sel.Sel.Name)
		}
		return true
	})
	return found
}

// TestClockCallsInCatchesTheClock: the clock check finds a call, also
// under another import name.
func TestClockCallsInCatchesTheClock(t *testing.T) {
	dir := t.TempDir()
	for name, src := range map[string]string{
		"plain.go":   "package p\nimport \"time\"\nfunc f() time.Time { return time.Now() }\n",
		"renamed.go": "package p\nimport clk \"time\"\nfunc f() clk.Duration { return clk.Since(clk.Time{}) }\n",
		"pure.go":    "package p\nimport \"time\"\nfunc f(t time.Time) time.Time { return t.Add(time.Second) }\n",
	} {
		path := filepath.Join(dir, name)
		if err := writeFile(path, src); err != nil {
			t.Fatal(err)
		}
		got := clockCallsIn(t, path)
		want := map[string][]string{"plain.go": {"Now"}, "renamed.go": {"Since"}, "pure.go": nil}[name]
		if !slices.Equal(got, want) {
			t.Errorf("%s: clock calls %v, want %v", name, got, want)
		}
	}
}

func writeFile(path, content string) error { return os.WriteFile(path, []byte(content), 0o600) }
