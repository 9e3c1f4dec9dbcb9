package fakes

import "context"

// Down reports whether the kubelet process is down and no reboot or
// restart is stopping or starting it (one may be waiting out its
// downtime).
func (k *Kubelet) Down() bool {
	if !k.life.TryLock() {
		return false
	}
	defer k.life.Unlock()
	return k.current() == nil
}

// RenewLease writes the node's Lease once, renewing it, as the renewal
// loop and a reboot's last renewal do.
func (k *Kubelet) RenewLease(ctx context.Context) error { return k.lease.renew(ctx, true) }
