// Package cpbuild builds the embedded control plane's binaries - etcd,
// kube-apiserver and kube-controller-manager - from the module pins that
// travel inside bootproof (pins/, generated from tools/controlplane by
// 'make generate'), so an installed bootproof needs no checkout of its
// repository: 'bootproof controlplane build' writes them to CacheDir, the
// per-user cache, and 'make controlplane' to the checkout's bin/, through
// the same Build.
//
// Each binary is built with the go command on $PATH, statically
// (CGO_ENABLED=0, -trimpath, the ldflags Ldflags returns), in a temporary
// module holding its pins, and stamped with what it was built from; Build
// skips a binary whose stamp is current. It says what it builds, prints a
// progress line every Options.ProgressEvery (a progress bar on a
// terminal) and how long each binary took.
package cpbuild
