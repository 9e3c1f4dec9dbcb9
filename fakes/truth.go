package fakes

import (
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/bootproof/bootproof/contract"
)

func snapshot(node string, k Kernel, acts *actionCounts, now time.Time) contract.GroundTruth {
	mods := k.Loaded()
	if mods == nil {
		mods = []contract.LoadedModule{}
	}
	boot := k.BootID()
	return contract.GroundTruth{Node: node, BootID: boot, KernelVersion: k.Version(), Modules: mods, Actions: acts.in(boot), PublishedAt: now}
}

// actionCounts counts worker actions per module in one boot: a count
// of another boot is dropped when the first action of a new boot is
// counted. It is safe for concurrent use.
type actionCounts struct {
	mu     sync.Mutex
	boot   string
	counts map[string]*contract.ModuleActions
}

// add counts one load (or unload) of module in boot.
func (a *actionCounts) add(boot, module string, load bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.boot != boot || a.counts == nil {
		a.boot, a.counts = boot, map[string]*contract.ModuleActions{}
	}
	c := a.counts[module]
	if c == nil {
		c = &contract.ModuleActions{Module: module}
		a.counts[module] = c
	}
	if load {
		c.Loads++
	} else {
		c.Unloads++
	}
}

// in returns the counts of boot, sorted by module (nil: none).
func (a *actionCounts) in(boot string) []contract.ModuleActions {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.boot != boot || len(a.counts) == 0 {
		return nil
	}
	out := make([]contract.ModuleActions, 0, len(a.counts))
	for _, c := range a.counts {
		out = append(out, *c)
	}
	slices.SortFunc(out, func(x, y contract.ModuleActions) int { return strings.Compare(x.Module, y.Module) })
	return out
}
