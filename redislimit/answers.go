package redislimit

import (
	"hash/maphash"
	"sync"

	"github.com/pacehttp/pace/internal/quickest"
)

// answerSlots bounds the keys whose answer times a Limiter remembers.
const answerSlots = 1024

// answers is how quickly each key's server answers this process (package
// pace's margin.answer). Round trips are this machine's, so they are not
// shared through Redis. A key holds one of answerSlots slots, by hash; a
// key that takes a slot over starts it afresh, so memory stays bounded
// whatever the keys. Safe for concurrent use.
type answers struct {
	seed  maphash.Seed
	mu    sync.Mutex
	slots [answerSlots]quick
}

// quick is one key's answer times.
type quick struct {
	key uint64 // the key's hash; 0: none
	w   quickest.Window
}

// late records an answer to key that came rtt (ns) after its request was
// written. It returns how much later than the key's quickest recent answer
// it came. That is a request the server got to late, which it may also
// have counted late.
func (a *answers) late(key string, rtt int64) int64 {
	if rtt < 0 {
		return 0
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.slot(key).w.Late(rtt)
}

// known reports whether this process knows how quickly key's server
// answers (quickest.Window.Known). Until then, a late answer cannot show
// its lateness: a server's first answers often come late.
func (a *answers) known(key string) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.slot(key).w.Known()
}

// slot returns key's slot, started afresh if another key held it. The
// caller holds a.mu.
func (a *answers) slot(key string) *quick {
	h := maphash.String(a.seed, key) | 1
	q := &a.slots[h%answerSlots]
	if q.key != h {
		*q = quick{key: h}
	}
	return q
}
