package fakes

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
