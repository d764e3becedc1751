package redislimit

import (
	"context"
	"reflect"
	"time"

	"github.com/redis/go-redis/v9"
)

// The bounds of Options.Timeout. Below 100 µs no round trip to Redis
// fits; above an hour, 8 × Timeout (a warm-up's bound) loses its meaning
// beside a Lease, which is at most an hour too.
const (
	minTimeout = 100 * time.Microsecond
	maxTimeout = time.Hour
)

// isNilPointer reports whether rdb is a nil pointer in an interface (a
// nil *redis.Client, say), which New refuses as it refuses a nil rdb.
func isNilPointer(rdb redis.UniversalClient) bool {
	v := reflect.ValueOf(rdb)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// subscribe subscribes to channel on rdb. go-redis's Ring panics in
// Subscribe when every one of its shards is down ("all ring shards are
// down"); subscribe then returns nil, and listen subscribes again later.
func subscribe(ctx context.Context, rdb redis.UniversalClient, channel string) (ps *redis.PubSub) {
	if _, ok := rdb.(*redis.Ring); ok {
		defer func() {
			if recover() != nil {
				ps = nil
			}
		}()
	}
	return rdb.Subscribe(ctx, channel)
}

// listen runs the subscription to other processes' pauses until Close.
// Without one yet (a Ring with every shard down at New), it subscribes
// every probePoll until it has one.
func (l *Limiter) listen(bound time.Duration) {
	ps := l.ps // set by New before listen starts
	for ps == nil {
		select {
		case <-l.stop:
			close(l.listened)
			return
		case <-time.After(probePoll):
		}
		ctx, cancel := context.WithTimeout(l.stopCtx, bound+bound/2)
		ps = subscribe(ctx, l.rdb, l.channel)
		cancel()
		if ps == nil {
			continue
		}
		l.psMu.Lock()
		closed := l.psClosed
		if !closed {
			l.ps = ps
		}
		l.psMu.Unlock()
		if closed {
			_ = ps.Close()
			close(l.listened)
			return
		}
	}
	l.ws.listen(l.stopCtx, ps, bound, l.stop, l.listened)
}
