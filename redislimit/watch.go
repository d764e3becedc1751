package redislimit

import (
	"context"
	"errors"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// watches wakes the requests of this process that wait on a key when
// another process (or this one) changes the key's throttle. settleScript
// publishes on the Limiter's channel. It publishes "p <gen> <tag>" when it
// pauses the key, and "a <probes> <tag>" when its probe role ends. The tag
// is keyTag's, of bounded length whatever the key. Waiters are registered
// by it. Pub/sub delivers at most once. A message lost while the
// subscription reconnects leaves a waiter on its timer. So waits behind a
// probe poll Redis as well (probePoll).
type watches struct {
	mu sync.Mutex
	m  map[string]*watch
	// onPause, if set before listen starts, is told of each pause
	// announced (Options.Lease: see leaser.pause).
	onPause func(tag string, gen uint64)
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

// add registers a waiter on the key of tag, before the decision it waits
// after. It returns the count of the key's messages so far. So no message
// that comes later is missed (see wakeAfter).
func (ws *watches) add(tag string) (*watch, uint64) {
	ws.mu.Lock()
	w := ws.m[tag]
	if w == nil {
		if ws.m == nil {
			ws.m = make(map[string]*watch)
		}
		w = &watch{}
		ws.m[tag] = w
	}
	w.refs++
	seq := w.seq
	ws.mu.Unlock()
	return w, seq
}

// done unregisters a waiter on the key of tag.
func (ws *watches) done(tag string, w *watch) {
	ws.mu.Lock()
	if w.refs--; w.refs == 0 {
		delete(ws.m, tag)
	}
	ws.mu.Unlock()
}

// wakeAfter returns a channel that the first message for the key after the
// seq-th closes (already closed if one came since). It also returns the
// count of messages now, and the latest pause generation announced.
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
	num, tag, ok := strings.Cut(rest, " ")
	if !ok {
		return
	}
	n, err := strconv.ParseUint(num, 10, 64)
	if err != nil {
		return
	}
	ws.mu.Lock()
	if w := ws.m[tag]; w != nil {
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
	if kind == "p" && ws.onPause != nil {
		ws.onPause(tag, n)
	}
}

// pingEvery is how long the subscription may stay silent before listen
// sends a PING, as go-redis's own PubSub.Channel does (every 3 s). So a
// connection that broke is noticed when writing to it fails.
const pingEvery = 3 * time.Second

// listen delivers the messages of ps until it is closed, or stop is
// closed. go-redis holds ps's lock while it (re)connects, and PubSub.Close
// waits for it. A Limiter's client has ContextTimeoutEnabled, so the
// context's deadline is the connection's only bound. Every call into ps is
// bounded by bound, the Limiter's Timeout. A read waits bound, its
// reconnection warmTimes × bound, as the link's warm-up. So Close returns
// however Redis behaves, and at once: every call's context derives from
// base, which Close cancels. Errors
// other than an idle read's timeout wait probePoll before the next try.
func (ws *watches) listen(base context.Context, ps *redis.PubSub, bound time.Duration, stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	quiet := time.Duration(0) // since the last message of any kind
	for {
		ctx, cancel := context.WithTimeout(base, warmTimes*bound)
		var (
			msg any
			err error
		)
		if quiet >= pingEvery {
			err, quiet = ps.Ping(ctx), 0
		} else {
			msg, err = ps.ReceiveTimeout(ctx, bound)
		}
		cancel()
		var ne net.Error
		switch {
		case err == nil:
			quiet = 0
			if m, ok := msg.(*redis.Message); ok {
				ws.deliver(m.Payload)
			}
			continue
		case errors.Is(err, redis.ErrClosed):
			return
		case errors.As(err, &ne) && ne.Timeout():
			quiet += bound
			continue
		}
		select {
		case <-stop:
			return
		case <-time.After(probePoll):
		}
	}
}
