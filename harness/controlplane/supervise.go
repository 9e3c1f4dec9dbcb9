package controlplane

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// restartBackoff is how long the supervisor waits before starting a
// process that exited again.
const restartBackoff = 500 * time.Millisecond

// Outage is a period in which a control-plane process was down: from
// when it exited to when it answered its health check again after a
// restart (End is zero while it is still down).
type Outage struct {
	Process string
	Start   time.Time
	End     time.Time
	// Detail says how it ended, e.g. "signal: killed".
	Detail string
}

// Outages returns every outage since Start, in order.
func (cp *ControlPlane) Outages() []Outage {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return slices.Clone(cp.outages)
}

// Died is closed when the plane is dead: a process that ended on its own
// could not be started again, or more processes ended than
// Config.MaxRestarts allows (see Outages for those restarted). Err then
// says which and why.
func (cp *ControlPlane) Died() <-chan struct{} { return cp.died }

// Err returns why the control plane died, or nil.
func (cp *ControlPlane) Err() error {
	select {
	case <-cp.died:
		return cp.diedErr
	default:
		return nil
	}
}

// supervise starts again a process that ends on its own, up to
// Config.MaxRestarts times in all, and records each outage. When a
// process cannot be started again, or past the limit, the plane is dead:
// Died is closed and Err says why.
func (cp *ControlPlane) supervise() {
	exits := make(chan *process)
	watch := func(p *process) {
		go func() {
			select {
			case <-p.done:
				exits <- p
			case <-cp.stopping:
			}
		}()
	}
	cp.mu.Lock()
	for _, p := range cp.procs {
		watch(p)
	}
	cp.mu.Unlock()
	for {
		var p *process
		select {
		case p = <-exits:
		case <-cp.stopping:
			return
		}
		select {
		case <-cp.stopping:
			return
		default:
		}
		next, err := cp.restart(p)
		if err != nil {
			cp.diedOnce.Do(func() {
				cp.diedErr = err
				close(cp.died)
			})
			return
		}
		if next == nil {
			return // stopping
		}
		watch(next)
	}
}

// restart records p's outage and starts it again; it returns nil, nil
// when the plane is stopping.
func (cp *ControlPlane) restart(p *process) (*process, error) {
	exitErr := p.exitError()
	cp.mu.Lock()
	i := len(cp.outages)
	cp.outages = append(cp.outages, Outage{Process: p.name, Start: time.Now(), Detail: exitStatus(p)})
	cp.restarts++
	n := cp.restarts
	cp.mu.Unlock()
	if n > cp.cfg.MaxRestarts {
		return nil, fmt.Errorf("%w (no restart: %d processes exited already, the limit is %d)", exitErr, n-1, cp.cfg.MaxRestarts)
	}
	select {
	case <-time.After(restartBackoff):
	case <-cp.stopping:
		return nil, nil
	}
	cp.restartMu.Lock()
	defer cp.restartMu.Unlock()
	select {
	case <-cp.stopping:
		return nil, nil
	default:
	}
	ctx, cancel := context.WithTimeout(context.Background(), cp.cfg.StartTimeout)
	defer cancel()
	next, err := cp.spawnReady(ctx, p.spec)
	if err != nil {
		return nil, fmt.Errorf("%s exited (%s) and did not come back: %w", p.name, exitStatus(p), err)
	}
	cp.mu.Lock()
	cp.outages[i].End = time.Now()
	cp.mu.Unlock()
	return next, nil
}

// exitStatus is how p ended, e.g. "signal: killed".
func exitStatus(p *process) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waitErr == nil {
		return "exited with status 0"
	}
	return p.waitErr.Error()
}
