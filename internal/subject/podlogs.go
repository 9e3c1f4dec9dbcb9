package subject

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// podLogs keeps the logs of a Deployment subject's pods in one file, as
// an exec subject's output is kept: every container instance of every
// pod seen during the run (a restarted container's earlier instance
// too), each line stamped by the kubelet and prefixed with pod/container.
// Lines written before the run are left out.
type podLogs struct {
	cs    kubernetes.Interface
	ns    string
	path  string
	since time.Time

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// opening counts the streams asked for and not open yet: Close lets
	// them open (up to closeGrace) before it cancels, so a container
	// instance seen just before the end still has its log kept.
	opening sync.WaitGroup

	mu   sync.Mutex
	f    *os.File
	seen map[string]bool // container instances followed: pod/container/containerID
	// closing: Close began, nothing more is followed.
	closing bool
}

// newPodLogs opens path (appending) for the logs of namespace ns's pods
// from since.
func newPodLogs(cs kubernetes.Interface, ns, path string, since time.Time) (*podLogs, error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	l := &podLogs{cs: cs, ns: ns, path: path, since: since, ctx: ctx, cancel: cancel, f: f, seen: map[string]bool{}}
	l.note("# bootproof: logs of the pods of the subject's Deployment in namespace %s from %s, each line '<kubelet time> <pod>/<container>: <line>'",
		ns, since.UTC().Format(time.RFC3339))
	return l, nil
}

// observe starts following each container instance of p not followed
// yet: the running one, and the one before a restart.
func (l *podLogs) observe(p *corev1.Pod) {
	for _, cs := range p.Status.ContainerStatuses {
		if t := cs.LastTerminationState.Terminated; t != nil && t.ContainerID != "" {
			l.follow(p.Name, cs.Name, t.ContainerID, true)
		}
		if cs.ContainerID != "" && (cs.State.Running != nil || cs.State.Terminated != nil) {
			l.follow(p.Name, cs.Name, cs.ContainerID, false)
		}
	}
}

// follow streams one container instance's log into the file: the current
// instance followed until it ends, or (previous) the one before a
// restart, once.
func (l *podLogs) follow(pod, container, id string, previous bool) {
	key := pod + "/" + container + "/" + id
	l.mu.Lock()
	if l.seen[key] || l.closing {
		l.mu.Unlock()
		return
	}
	l.seen[key] = true
	l.opening.Add(1)
	l.mu.Unlock()
	l.wg.Go(func() {
		opts := &corev1.PodLogOptions{Container: container, Timestamps: true, Previous: previous, Follow: !previous,
			SinceTime: &metav1.Time{Time: l.since}}
		rc, err := l.cs.CoreV1().Pods(l.ns).GetLogs(pod, opts).Stream(l.ctx)
		l.opening.Done()
		if err != nil {
			if l.ctx.Err() == nil {
				l.note("# bootproof: cannot read the log of %s/%s (container %s): %v", pod, container, id, err)
			}
			return
		}
		defer rc.Close()
		l.copy(pod+"/"+container, rc)
	})
}

// copy writes r's lines, "<time> <line>", as "<time> <who>: <line>".
func (l *podLogs) copy(who string, r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		ts, line, ok := strings.Cut(sc.Text(), " ")
		if !ok {
			ts, line = "", ts
		}
		l.mu.Lock()
		fmt.Fprintf(l.f, "%s %s: %s\n", ts, who, line)
		l.mu.Unlock()
	}
}

func (l *podLogs) note(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.f, format+"\n", args...)
}

// closeGrace is how long Close waits for the streams asked for to open.
const closeGrace = 5 * time.Second

// Close stops following, once the streams asked for opened (at most
// closeGrace), waits for the streams and closes the file.
func (l *podLogs) Close() error {
	l.mu.Lock()
	l.closing = true
	l.mu.Unlock()
	opened := make(chan struct{})
	go func() {
		l.opening.Wait()
		close(opened)
	}()
	t := time.NewTimer(closeGrace)
	select {
	case <-opened:
	case <-t.C:
	}
	t.Stop()
	l.cancel()
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}
