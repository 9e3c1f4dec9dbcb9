package kindhost

import (
	"fmt"
	"os"
	"testing"
)

// fakeEnv names the command this test binary plays when it is set
// (TestMain): the shim itself (ShimMain), and in TestDepsKindScript the
// commands hack/deps-kind.sh runs.
const fakeEnv = "BOOTPROOF_KINDHOST_FAKE"

// fakes are the commands this test binary can play, by name.
var fakes = map[string]func(args []string) int{
	"shim": func(args []string) int { return ShimMain(append([]string{"runc-shim"}, args...)) },
}

func TestMain(m *testing.M) {
	if name := os.Getenv(fakeEnv); name != "" {
		fake, ok := fakes[name]
		if !ok {
			fmt.Fprintf(os.Stderr, "%s=%s: no such fake command\n", fakeEnv, name)
			os.Exit(127)
		}
		os.Exit(fake(os.Args[1:]))
	}
	os.Exit(m.Run())
}

func testBinary(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}
