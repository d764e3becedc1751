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
	seq  uint64        // messages for the key so far
	wake chan struct{} // made by wakeAfter, closed (and cleared) by the next message
	gen  uint64        // the latest pause generation a message announced
}

// closed is a channel that is closed.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// add registers a waiter on key, before the decision it waits after, and
// returns the count of the key's messages so far, so that no message that
// comes later is missed (see wakeAfter).
func (ws *watches) add(key string) (*watch, uint64) {
	ws.mu.Lock()
	w := ws.m[key]
	if w == nil {
		if ws.m == nil {
			ws.m = make(map[string]*watch)
		}
		w = &watch{}
		ws.m[key] = w
	}
	w.refs++
	seq := w.seq
	ws.mu.Unlock()
	return w, seq
}

// done unregisters a waiter on key.
func (ws *watches) done(key string, w *watch) {
	ws.mu.Lock()
	if w.refs--; w.refs == 0 {
		delete(ws.m, key)
	}
	ws.mu.Unlock()
}

// wakeAfter returns a channel that the first message for the key after
// the seq-th closes (already closed if one came since), the count of
// messages now, and the latest pause generation announced.
func (ws *watches) wakeAfter(w *watch, seq uint64) (wake <-chan struct{}, now, gen uint64) {
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if w.seq != seq {
		return closed, w.seq, w.gen
	}
	if w.wake == nil {
		w.wake = make(chan struct{})
	}
	return w.wake, w.seq, w.gen
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
		w.seq++
		if w.wake != nil {
			close(w.wake)
			w.wake = nil
		}
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
