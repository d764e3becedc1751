package redislimit

import (
	"strconv"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"
)

// watches wakes the requests of this process that wait on a key when
// another process (or this one) changes the key's throttle: settleScript
// publishes "p <gen> <key>" when it pauses the key and "a <probes> <key>"
// when its probe role ends, on the Limiter's channel. Pub/sub delivers at
// most once: a message lost while the subscription reconnects leaves a
// waiter on its timer, so waits behind a probe poll Redis as well
// (probePoll).
type watches struct {
	mu sync.Mutex
	m  map[string]*watch
}

// watch is the state of one key that requests of this process wait on.
type watch struct {
	refs int
	wake chan struct{} // closed, and replaced, on every message for the key
	gen  uint64        // the latest pause generation a message announced
}

// add registers a waiter on key, before the decision it waits after, so
// that no message that comes later is missed.
func (ws *watches) add(key string) *watch {
	ws.mu.Lock()
	w := ws.m[key]
	if w == nil {
		if ws.m == nil {
			ws.m = make(map[string]*watch)
		}
		w = &watch{wake: make(chan struct{})}
		ws.m[key] = w
	}
	w.refs++
	ws.mu.Unlock()
	return w
}

// done unregisters a waiter on key.
func (ws *watches) done(key string, w *watch) {
	ws.mu.Lock()
	if w.refs--; w.refs == 0 {
		delete(ws.m, key)
	}
	ws.mu.Unlock()
}

// state returns the channel the key's next message closes and the latest
// pause generation announced.
func (ws *watches) state(w *watch) (<-chan struct{}, uint64) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	return w.wake, w.gen
}

// deliver handles one message of the channel.
func (ws *watches) deliver(payload string) {
	kind, rest, ok := strings.Cut(payload, " ")
	if !ok {
		return
	}
	num, key, ok := strings.Cut(rest, " ")
	if !ok {
		return
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return
	}
	ws.mu.Lock()
	if w := ws.m[key]; w != nil {
		if kind == "p" {
			w.gen = max(w.gen, n)
		}
		close(w.wake)
		w.wake = make(chan struct{})
	}
	ws.mu.Unlock()
}

// listen delivers the messages of ps until it is closed.
func (ws *watches) listen(ps *redis.PubSub, done chan<- struct{}) {
	defer close(done)
	for msg := range ps.Channel() {
		ws.deliver(msg.Payload)
	}
}
