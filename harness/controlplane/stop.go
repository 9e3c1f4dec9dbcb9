package controlplane

import (
	"os"
	"slices"
	"syscall"
	"time"
)

// Stop terminates kube-controller-manager, kube-apiserver and etcd in that
// order (SIGTERM to each process group, SIGKILL after Config.StopTimeout)
// and removes the run directory if Start created it. It is safe to call
// more than once.
func (cp *ControlPlane) Stop() {
	cp.stopOnce.Do(func() {
		// The forced-exit cleanup stays registered until everything is
		// gone: a second SIGINT during Stop still removes the directory.
		defer func() {
			if cp.unregister != nil {
				cp.unregister()
			}
		}()
		// No restart begins after this; one under way has finished.
		cp.restartMu.Lock()
		close(cp.stopping)
		cp.restartMu.Unlock()
		cp.mu.Lock()
		procs := slices.Clone(cp.procs)
		cp.mu.Unlock()
		for i := len(procs) - 1; i >= 0; i-- {
			procs[i].stop(cp.cfg.StopTimeout)
		}
		if cp.ownDir {
			_ = os.RemoveAll(cp.dir)
		}
	})
}

// kill is the forced-exit cleanup: SIGKILL to every process group, and the
// run directory removed if Start created it.
func (cp *ControlPlane) kill() {
	cp.mu.Lock()
	procs := slices.Clone(cp.procs)
	cp.mu.Unlock()
	for _, p := range procs {
		_ = syscall.Kill(-p.Pid(), syscall.SIGKILL)
	}
	for _, p := range procs {
		select {
		case <-p.done:
		case <-time.After(5 * time.Second):
		}
	}
	if cp.ownDir {
		_ = os.RemoveAll(cp.dir)
	}
}
