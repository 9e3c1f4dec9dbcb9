// Package shutdown keeps the cleanups that must run even when bootproof is
// forced to exit (a second SIGINT or SIGTERM while it stops): killing the
// process groups it started, destroying its VMs, removing temporary
// directories that hold keys. The parts that own such resources register
// a cleanup when they acquire them and unregister it when they release
// them in the ordinary way.
package shutdown

import (
	"slices"
	"sync"
	"time"
)

type entry struct {
	id   int
	name string
	f    func()
}

var (
	mu      sync.Mutex
	entries []entry
	nextID  int
)

// Register adds f, named name in messages, to the forced-exit cleanups.
// The returned function removes it; call it once the resource is released.
func Register(name string, f func()) (unregister func()) {
	mu.Lock()
	defer mu.Unlock()
	nextID++
	id := nextID
	entries = append(entries, entry{id: id, name: name, f: f})
	return func() {
		mu.Lock()
		defer mu.Unlock()
		entries = slices.DeleteFunc(entries, func(e entry) bool { return e.id == id })
	}
}

// Run runs every registered cleanup at once and waits for them, at most
// timeout; it returns the names of those that had not finished (or
// panicked). Each cleanup runs at most once.
func Run(timeout time.Duration) (unfinished []string) {
	mu.Lock()
	todo := slices.Clone(entries)
	entries = nil
	mu.Unlock()
	done := make(chan int, len(todo))
	for i, e := range todo {
		go func() {
			defer func() {
				if recover() != nil {
					return // counted as unfinished
				}
				done <- i
			}()
			e.f()
		}()
	}
	finished := make([]bool, len(todo))
	deadline := time.After(timeout)
	for n := 0; n < len(todo); n++ {
		select {
		case i := <-done:
			finished[i] = true
		case <-deadline:
			n = len(todo)
		}
	}
	for i, e := range todo {
		if !finished[i] {
			unfinished = append(unfinished, e.name)
		}
	}
	return unfinished
}
